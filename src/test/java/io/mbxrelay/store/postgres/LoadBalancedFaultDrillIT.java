package io.mbxrelay.store.postgres;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.mbxrelay.crypto.Ed25519KeyPair;
import io.mbxrelay.testing.ChildRelay;
import io.mbxrelay.testing.Envelopes;
import io.mbxrelay.testing.Http;
import io.mbxrelay.testing.Nginx;
import io.mbxrelay.testing.QueuePuller;
import io.mbxrelay.testing.TestHost;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 20 item 9: three relay instances on one PostgreSQL behind one URL, a real nginx balancing round robin with no
 * affinity, while the database suffers what operators see: every session terminated, the database set read-only, a
 * fast restart, an immediate stop with crash recovery after 3 s down. Hosts enrol through the balancer (a challenge
 * answered at whichever instance the balancer picks) and push multi-target items that name their targets in random
 * orders (the lock-order case). What must hold: every item accepted (or answered duplicate) is delivered to each of its
 * targets exactly once, with its bytes, at the seq the accept named; no request is answered 500 or 502; every
 * instance's {@code /ready} turns 503 while the database is read-only and 200 again afterwards; PostgreSQL logs no
 * deadlock.
 */
class LoadBalancedFaultDrillIT {
  private static final int INSTANCES = 3;
  private static final int SENDERS = 4;
  private static final int TARGETS = 3;
  private static final int ITEMS_PER_SENDER = 150;
  /** Pause between a sender's pushes, ms: the items spread over the whole fault sequence (about 25 s). */
  private static final int PUSH_PAUSE_MS = 120;

  private final Map<Integer, Integer> statuses = new ConcurrentHashMap<>();
  private final List<String> violations = Collections.synchronizedList(new ArrayList<>());

  private static void sql(String adminUrl, String statement) throws Exception {
    try (Connection c = DriverManager.getConnection(adminUrl, PgTestServer.SUPERUSER, "");
        Statement st = c.createStatement()) {
      st.execute(statement);
    }
  }

  private void count(Http.Resp r) {
    statuses.merge(r.status(), 1, Integer::sum);
    if (r.status() == 500 || r.status() == 502) {
      violations.add("answered " + r.status() + ": " + r.raw());
    }
    if (r.status() == 503 && r.raw().startsWith("{") && !r.raw().contains("retry later")) {
      violations.add("503 without the retry text: " + r.raw());
    }
  }

  @Test
  void three_instances_behind_nginx_lose_nothing_and_answer_honestly_through_database_faults(@TempDir Path dir)
      throws Exception {
    assumeTrue(Nginx.installed(), "nginx is not installed (.ci/run installs Debian's nginx)");
    try (PgTestServer pg = PgTestServer.start(false)) {
      String url = pg.createDatabase();
      String db = url.substring(url.lastIndexOf('/') + 1);
      String admin = pg.jdbcUrl("postgres");
      Map<String, String> env = Map.of("MBX_RELAY_STORE_BACKEND", "postgresql", "MBX_RELAY_STORE_URL", url,
          "MBX_RELAY_STORE_USER", PgTestServer.SUPERUSER, "MBX_RELAY_STORE_POOL_SIZE", "6",
          "MBX_RELAY_LIMITS_PUSH_REQUESTS_PER_MINUTE", "1000000", "MBX_RELAY_LIMITS_ENROL_CALLS_PER_MINUTE", "100000",
          "MBX_RELAY_HTTP_INSTANCES", "1", "MBX_RELAY_STORE_READ_POOL_SIZE", "2");
      List<ChildRelay> relays = new ArrayList<>();
      try {
        for (int i = 0; i < INSTANCES; i++) {
          relays.add(ChildRelay.start(Files.createDirectories(dir.resolve("instance-" + i)), env));
        }
        try (Nginx lb = Nginx.start(Files.createDirectories(dir.resolve("nginx")),
            relays.stream().map(r -> r.port).toList())) {
          run(pg, lb, relays, admin, db);
          assertThat(lb.errorLog()).as("nginx saw no upstream failure").doesNotContain("upstream prematurely closed");
        }
      } finally {
        for (ChildRelay r : relays) {
          r.close();
        }
      }
      String log = Files.readString(pg.logFile());
      assertThat(log).as("PostgreSQL logged no deadlock").doesNotContain("deadlock detected");
    }
  }

  private void run(PgTestServer pg, Nginx lb, List<ChildRelay> relays, String admin, String db) throws Exception {
    String base = lb.url();
    // enrolments through the balancer: the challenge and its answer may reach different instances
    List<TestHost> senders = new ArrayList<>();
    List<TestHost> targets = new ArrayList<>();
    for (int i = 0; i < SENDERS; i++) {
      senders.add(new TestHost(base, "sender" + i, Ed25519KeyPair.generate()).enrol());
    }
    for (int i = 0; i < TARGETS; i++) {
      targets.add(new TestHost(base, "target" + i, Ed25519KeyPair.generate()).enrol());
    }
    String epoch = Http.send(base, "GET", "/v2/relay/info", null).json().get("epoch").asText();
    record Item(int sender, String id, byte[] wire) {}
    List<Item> items = new ArrayList<>();
    for (int s = 0; s < SENDERS; s++) {
      for (int i = 0; i < ITEMS_PER_SENDER; i++) {
        String id = Envelopes.newId();
        items.add(new Item(s, id, Envelopes.sealed(id)));
      }
    }
    Map<String, byte[]> byId = new ConcurrentHashMap<>();
    items.forEach(it -> byId.put(it.id(), it.wire()));
    // id -> (target key -> seq) of an accept or duplicate answer
    Map<String, Map<String, Long>> accepted = new ConcurrentHashMap<>();
    AtomicBoolean stop = new AtomicBoolean();
    List<Thread> workers = new ArrayList<>();
    for (int s = 0; s < SENDERS; s++) {
      int sender = s;
      workers.add(new Thread(() -> {
        List<Item> mine = items.stream().filter(it -> it.sender() == sender).toList();
        while (!stop.get()) {
          for (Item it : mine) {
            if (!stop.get() && !accepted.containsKey(it.id())) {
              pushOnce(senders.get(sender), targets, it.id(), it.wire(), accepted);
              sleepQuietly(PUSH_PAUSE_MS);
            }
          }
          sleepQuietly(20);
        }
      }, "lb-drill-sender-" + s));
    }
    List<QueuePuller> pullers = new ArrayList<>();
    for (TestHost t : targets) {
      QueuePuller p = new QueuePuller(t, () -> base, epoch, byId, violations, this::count);
      pullers.add(p);
      workers.add(new Thread(() -> {
        while (!stop.get()) {
          p.pageOnce();
          sleepQuietly(30);
        }
      }, "lb-drill-puller-" + t.name));
    }
    workers.forEach(Thread::start);
    String others = "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '" + db + "'"
        + " AND pid <> pg_backend_pid()";

    sleepQuietly(1500);
    // 1. every client session terminated
    sql(admin, others);
    sleepQuietly(2000);
    // 2. the database set read-only for a while: every instance's /ready must say so
    sql(admin, "ALTER DATABASE " + db + " SET default_transaction_read_only = on");
    sql(admin, others);
    Set<Integer> sawNotReady = ConcurrentHashMap.newKeySet();
    long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(8);
    while (System.nanoTime() < until && sawNotReady.size() < INSTANCES) {
      for (int i = 0; i < INSTANCES; i++) {
        Http.Resp r = Http.send(relays.get(i).adminUrl(), "GET", "/ready", null);
        if (r.status() == 503 && r.raw().contains("store not writable")) {
          sawNotReady.add(i);
        }
      }
      sleepQuietly(200);
    }
    sql(admin, "ALTER DATABASE " + db + " RESET default_transaction_read_only");
    sql(admin, others);
    assertThat(sawNotReady).as("instances whose /ready said 'store not writable' while read-only")
        .hasSize(INSTANCES);
    sleepQuietly(2000);
    // 3. a fast restart
    pg.stopServer(false);
    pg.startServer();
    sleepQuietly(2000);
    // 4. an immediate stop (crash), 3 s down, crash recovery
    pg.stopServer(true);
    sleepQuietly(3000);
    pg.startServer();
    sleepQuietly(2000);

    // every instance ready again
    for (int i = 0; i < INSTANCES; i++) {
      int inst = i;
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
      Http.Resp r;
      do {
        r = Http.send(relays.get(inst).adminUrl(), "GET", "/ready", null);
      } while (r.status() != 200 && System.nanoTime() < deadline && sleepQuietly(200));
      assertThat(r.status()).as("instance %d ready after the faults: %s", inst, r.raw()).isEqualTo(200);
    }
    stop.set(true);
    for (Thread w : workers) {
      w.join(TimeUnit.MINUTES.toMillis(1));
    }
    int acceptedDuringFaults = accepted.size();
    // every sender retries what it holds no accept for
    for (Item it : items) {
      for (int attempt = 0; !accepted.containsKey(it.id()); attempt++) {
        assertThat(attempt).as("retries of " + it.id()).isLessThan(20);
        pushOnce(senders.get(it.sender()), targets, it.id(), it.wire(), accepted);
      }
    }
    // every target pulls to the end: items accepted by the retries above came after its last page
    for (QueuePuller p : pullers) {
      for (int round = 0; round < 200; round++) {
        p.pageOnce();
        if (p.drained() && p.delivered.size() >= accepted.size()) {
          break;
        }
      }
    }
    assertThat(violations).isEmpty();
    for (QueuePuller p : pullers) {
      Map<String, Long> expected = new TreeMap<>();
      accepted.forEach((id, seqs) -> expected.put(id, seqs.get(p.host().pub())));
      assertThat(new TreeMap<>(p.delivered)).as("%s: each item once, at its accepted seq", p.host().name)
          .isEqualTo(expected);
    }
    System.out.printf("load-balanced drill: %d items x %d targets (%d accepted during the faults), statuses %s%n",
        items.size(), TARGETS, acceptedDuringFaults, new TreeMap<>(statuses));
  }

  private void pushOnce(TestHost sender, List<TestHost> targets, String id, byte[] wire,
      Map<String, Map<String, Long>> accepted) {
    List<TestHost> order = new ArrayList<>(targets);
    Collections.shuffle(order); // targets named in random orders: two batches may lock them in opposite orders
    try {
      Http.Resp resp = sender.push(TestHost.item("envelope", id, order.stream().map(TestHost::pub).toList(),
          order.stream().map(t -> wire).toList()));
      count(resp);
      if (resp.status() != 200) {
        return; // 503 while the database is away: retried
      }
      JsonNode r = resp.json().get("results").get(0);
      String st = r.get("status").asText();
      if (!st.equals("accepted") && !st.equals("duplicate")) {
        violations.add(id + " answered " + st + ": " + r);
        return;
      }
      Map<String, Long> seqs = new TreeMap<>();
      for (JsonNode t : r.get("targets")) {
        seqs.put(t.get("host_pubkey").asText(), t.get("seq").asLong());
      }
      Map<String, Long> before = accepted.putIfAbsent(id, seqs);
      if (before != null && !before.equals(seqs)) {
        violations.add(id + " accepted at " + before + " and later at " + seqs);
      }
    } catch (Exception lost) {
      // no answer (a connection reset): the sender retries
    }
  }

  private static boolean sleepQuietly(long ms) {
    try {
      Thread.sleep(ms);
      return true;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }
}
