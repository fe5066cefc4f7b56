package io.mbxrelay.store.postgres;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.mbxrelay.crypto.Ed25519KeyPair;
import io.mbxrelay.testing.ChildRelay;
import io.mbxrelay.testing.Envelopes;
import io.mbxrelay.testing.Http;
import io.mbxrelay.testing.QueuePuller;
import io.mbxrelay.testing.TestHost;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReferenceArray;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Three relay processes on one PostgreSQL database behind no load balancer at all: every request of every host goes to
 * a random live instance, while a killer SIGKILLs a random instance and starts a new one in its place, 30 times
 * (docs/scale-out.md "Failure behaviour"). Afterwards every sender retries what it holds no accept for, and each
 * target pulls its queue to the end. What must hold: every item accepted (or answered duplicate) is delivered exactly
 * once, with its exact bytes, at the seq its accept named; each target's seqs come strictly increasing across pages
 * from all instances; a second push of an accepted item id with other bytes is never accepted (always
 * {@code conflict}); all instances serve one relay key and one epoch.
 */
class MultiInstanceDrillIT {
  private static final int INSTANCES = 3;
  private static final int KILLS = 30;
  private static final int SENDERS = 4;
  private static final int TARGETS = 3;
  private static final int PER_SENDER_AND_TARGET = 40;

  private final AtomicReferenceArray<ChildRelay> slots = new AtomicReferenceArray<>(INSTANCES);
  private Map<String, String> env;
  private Path base;

  private ChildRelay startInstance(int slot) throws Exception {
    Path dir = Files.createDirectories(base.resolve("instance-" + slot)); // unused by the PostgreSQL store
    return ChildRelay.start(dir, env);
  }

  /** A random live instance's URL (every request picks again, as a load balancer without affinity would). */
  private String anyUrl() {
    List<ChildRelay> live = new ArrayList<>();
    for (int i = 0; i < INSTANCES; i++) {
      ChildRelay r = slots.get(i);
      if (r != null && r.process.isAlive()) {
        live.add(r);
      }
    }
    if (live.isEmpty()) {
      return "http://127.0.0.1:1"; // refused: the caller retries
    }
    return live.get(ThreadLocalRandom.current().nextInt(live.size())).url();
  }

  @Test
  void three_instances_on_one_database_lose_nothing_duplicate_nothing_and_keep_seq_order_through_30_sigkills(
      @TempDir Path dir) throws Exception {
    base = dir;
    String url = PgTestServer.shared().createDatabase();
    env = Map.of("MBX_RELAY_STORE_BACKEND", "postgresql", "MBX_RELAY_STORE_URL", url,
        "MBX_RELAY_STORE_USER", PgTestServer.SUPERUSER, "MBX_RELAY_STORE_POOL_SIZE", "6",
        "MBX_RELAY_LIMITS_PUSH_REQUESTS_PER_MINUTE", "1000000", "MBX_RELAY_HTTP_INSTANCES", "1",
        "MBX_RELAY_STORE_READ_POOL_SIZE", "2");
    for (int i = 0; i < INSTANCES; i++) {
      slots.set(i, startInstance(i));
    }
    try {
      run();
    } finally {
      for (int i = 0; i < INSTANCES; i++) {
        ChildRelay r = slots.get(i);
        if (r != null) {
          r.close();
        }
      }
    }
  }

  private void run() throws Exception {
    // one relay key and one epoch on every instance
    Set<String> keys = ConcurrentHashMap.newKeySet();
    Set<String> epochs = ConcurrentHashMap.newKeySet();
    for (int i = 0; i < INSTANCES; i++) {
      JsonNode info = Http.send(slots.get(i).url(), "GET", "/v2/relay/info", null).json();
      keys.add(info.get("relay_pubkey").asText());
      epochs.add(info.get("epoch").asText());
    }
    assertThat(keys).hasSize(1);
    assertThat(epochs).hasSize(1);
    String epoch = epochs.iterator().next();

    // Enrolment on one instance (challenges are shared since issue 20: PgSharedStateTest enrols across instances).
    List<TestHost> senders = new ArrayList<>();
    List<TestHost> targets = new ArrayList<>();
    for (int i = 0; i < SENDERS; i++) {
      senders.add(new TestHost(slots.get(0).url(), "sender" + i, Ed25519KeyPair.generate()).enrol());
    }
    for (int i = 0; i < TARGETS; i++) {
      targets.add(new TestHost(slots.get(0).url(), "target" + i, Ed25519KeyPair.generate()).enrol());
    }
    // every item: sender, target, id, bytes
    record Item(int sender, int target, String id, byte[] wire) {}
    List<Item> items = new ArrayList<>();
    for (int s = 0; s < SENDERS; s++) {
      for (int t = 0; t < TARGETS; t++) {
        for (int i = 0; i < PER_SENDER_AND_TARGET; i++) {
          String id = Envelopes.newId();
          items.add(new Item(s, t, id, Envelopes.sealed(id)));
        }
      }
    }
    Map<String, Long> acceptedSeq = new ConcurrentHashMap<>(); // id -> seq of an accept or duplicate answer
    Map<String, byte[]> byId = new HashMap<>();
    items.forEach(it -> byId.put(it.id(), it.wire()));
    List<String> violations = java.util.Collections.synchronizedList(new ArrayList<>());
    AtomicBoolean stop = new AtomicBoolean();
    AtomicInteger conflictsChecked = new AtomicInteger();

    List<Thread> workers = new ArrayList<>();
    for (int s = 0; s < SENDERS; s++) {
      int sender = s;
      workers.add(new Thread(() -> {
        List<Item> mine = items.stream().filter(it -> it.sender() == sender).toList();
        while (!stop.get()) {
          for (Item it : mine) {
            if (stop.get()) {
              return;
            }
            if (acceptedSeq.containsKey(it.id())) {
              continue;
            }
            pushOnce(senders.get(sender), targets.get(it.target()), it.id(), it.wire(), acceptedSeq, violations);
            // now and then: the same id with other bytes must never be accepted
            if (acceptedSeq.containsKey(it.id()) && ThreadLocalRandom.current().nextInt(8) == 0) {
              byte[] other = Envelopes.sealed(it.id());
              try {
                TestHost h = new TestHost(anyUrl(), senders.get(sender).name, senders.get(sender).key);
                JsonNode r = h.pushEnvelope(targets.get(it.target()), it.id(), other).json().get("results").get(0);
                String st = r.get("status").asText();
                if (st.equals("accepted") || st.equals("duplicate")) {
                  violations.add("other bytes under accepted id " + it.id() + " answered " + st);
                }
                conflictsChecked.incrementAndGet();
              } catch (Exception lost) {
                // instance killed under us
              }
            }
          }
          sleepQuietly(20);
        }
      }, "drill-sender-" + s));
    }
    Map<Integer, QueuePuller> pullers = new HashMap<>();
    for (int t = 0; t < TARGETS; t++) {
      QueuePuller p = new QueuePuller(targets.get(t), this::anyUrl, epoch, byId, violations, r -> { });
      pullers.put(t, p);
      workers.add(new Thread(() -> {
        while (!stop.get()) {
          p.pageOnce();
          sleepQuietly(30);
        }
      }, "drill-puller-" + t));
    }
    workers.forEach(Thread::start);

    // the killer: SIGKILL a random live instance while at least two are live, start a new one in its slot
    List<Thread> restarts = new ArrayList<>();
    int kills = 0;
    long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(3);
    while (kills < KILLS && System.nanoTime() < deadline) {
      sleepQuietly(200 + ThreadLocalRandom.current().nextInt(400));
      List<Integer> live = new ArrayList<>();
      for (int i = 0; i < INSTANCES; i++) {
        ChildRelay r = slots.get(i);
        if (r != null && r.process.isAlive()) {
          live.add(i);
        }
      }
      if (live.size() < 2) {
        continue;
      }
      int slot = live.get(ThreadLocalRandom.current().nextInt(live.size()));
      ChildRelay victim = slots.getAndSet(slot, null);
      victim.kill();
      kills++;
      Thread restart = new Thread(() -> {
        try {
          slots.set(slot, startInstance(slot));
        } catch (Exception e) {
          violations.add("instance " + slot + " did not restart: " + e);
        }
      }, "drill-restart-" + slot);
      restart.start();
      restarts.add(restart);
    }
    for (Thread r : restarts) {
      r.join(TimeUnit.MINUTES.toMillis(2));
    }
    stop.set(true);
    for (Thread w : workers) {
      w.join(TimeUnit.MINUTES.toMillis(1));
    }
    assertThat(kills).as("SIGKILLs").isGreaterThanOrEqualTo(KILLS);
    int acceptedDuringKills = acceptedSeq.size();

    // every sender retries what it holds no accept for; the answers must be accepted or duplicate now
    for (Item it : items) {
      for (int attempt = 0; !acceptedSeq.containsKey(it.id()); attempt++) {
        assertThat(attempt).as("retries of " + it.id()).isLessThan(20);
        pushOnce(senders.get(it.sender()), targets.get(it.target()), it.id(), it.wire(), acceptedSeq, violations);
      }
    }
    // every target pulls to the end
    for (Map.Entry<Integer, QueuePuller> e : pullers.entrySet()) {
      long expected = items.stream().filter(it -> it.target() == e.getKey()).count();
      for (int round = 0; round < 200; round++) { // items accepted by the retries came after the last page
        e.getValue().pageOnce();
        if (e.getValue().drained() && e.getValue().delivered.size() >= expected) {
          break;
        }
      }
    }
    assertThat(violations).isEmpty();
    assertThat(acceptedDuringKills).as("items accepted while instances were killed").isPositive();
    assertThat(conflictsChecked.get()).as("other-bytes pushes checked").isPositive();
    for (int t = 0; t < TARGETS; t++) {
      int target = t;
      Map<String, Long> expected = new HashMap<>();
      items.stream().filter(it -> it.target() == target).forEach(it -> expected.put(it.id(), acceptedSeq.get(it.id())));
      assertThat(pullers.get(t).delivered).as("target %d: each item once, at its accepted seq", t)
          .isEqualTo(expected);
    }
    System.out.printf("drill: %d kills, %d items (%d accepted while killing), %d other-bytes pushes refused%n", kills,
        items.size(), acceptedDuringKills, conflictsChecked.get());
  }

  private void pushOnce(TestHost sender, TestHost target, String id, byte[] wire, Map<String, Long> acceptedSeq,
      List<String> violations) {
    try {
      TestHost h = new TestHost(anyUrl(), sender.name, sender.key);
      Http.Resp resp = h.pushEnvelope(target, id, wire);
      if (resp.status() != 200) {
        return; // 503 while a database connection broke, and the like: retried
      }
      JsonNode r = resp.json().get("results").get(0);
      String st = r.get("status").asText();
      if (st.equals("accepted") || st.equals("duplicate")) {
        long seq = r.get("targets").get(0).get("seq").asLong();
        Long before = acceptedSeq.putIfAbsent(id, seq);
        if (before != null && before != seq) {
          violations.add(id + " accepted at seq " + before + " and later at " + seq);
        }
      } else {
        violations.add(id + " answered " + st + ": " + r);
      }
    } catch (Exception lost) {
      // the instance was killed under the request: no answer, the sender retries
    }
  }

  private static void sleepQuietly(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
