package io.mbxrelay.host;

import static org.assertj.core.api.Assertions.assertThat;

import io.mbxrelay.crypto.Ed25519KeyPair;
import io.mbxrelay.crypto.Fingerprint;
import io.mbxrelay.crypto.RelayKeys;
import io.mbxrelay.testing.ChildRelay;
import io.mbxrelay.testing.Envelopes;
import io.mbxrelay.testing.MutableClock;
import io.mbxrelay.testing.RelayHarness;
import io.vertx.core.Vertx;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.RepeatedTest;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Several relays per host with a real relay child process SIGKILLed mid-run (issue 21 part 1): two hosts on a relay
 * child ({@code target/mbxrelay.jar}) and an in-process relay keep exchanging mail while the child is killed during a
 * push, stays down, and comes back on its port with its store. Every message reaches the application exactly once
 * and settles exactly once.
 */
@Timeout(value = 240, unit = TimeUnit.SECONDS)
class MultiRelayCrashIT {

  @TempDir Path dir;
  Vertx vertx;
  ChildRelay child;
  int childPort;
  String childPub;
  RelayHarness inProcess;
  final List<AutoCloseable> closing = new ArrayList<>();

  @BeforeEach
  void start() throws Exception {
    vertx = Vertx.vertx();
    try (ServerSocket s = new ServerSocket(0)) {
      childPort = s.getLocalPort();
    }
    child = ChildRelay.start(dir.resolve("child"), Map.of("MBX_RELAY_LIMITS_PUSH_REQUESTS_PER_MINUTE", "100000"),
        childPort);
    childPub = RelayKeys.parse(Files.readString(dir.resolve("child").resolve("relay.key"))).publicKeyB64();
    inProcess = RelayHarness.start(dir.resolve("in-process"));
  }

  @AfterEach
  void stop() throws Exception {
    for (int i = closing.size() - 1; i >= 0; i--) {
      closing.get(i).close();
    }
    child.close();
    inProcess.close();
    vertx.close().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
  }

  String childUrl() {
    return "http://127.0.0.1:" + childPort;
  }

  final class Host {
    final String name;
    final Ed25519KeyPair key = Ed25519KeyPair.generate();
    final MutableClock clock = new MutableClock(Instant.now());
    final HostStore store;
    final HostAgent agent;
    final List<String> received = new ArrayList<>();
    int receipts;

    Host(String name) throws Exception {
      this.name = name;
      store = HostStore.open(dir.resolve(name + ".db"));
      closing.add(store);
      HostAgent.pin(store, childUrl(), childPub, Fingerprint.ofB64(childPub), false, clock.millis());
      HostAgent.pin(store, inProcess.url(), inProcess.relayKey.publicKeyB64(),
          Fingerprint.ofB64(inProcess.relayKey.publicKeyB64()), false, clock.millis());
      agent = new HostAgent(store, key, List.of(childUrl(), inProcess.url()), new HostAgent.Options(name, "", clock,
          new Random(3), null), (u, n, rp) -> new VertxRelayTransport(vertx, u, n, key, rp, 5_000, 10_000,
              Clock.systemUTC()), d -> {
                received.add(d.msgId());
                return new HostApplication.Verdict.Accepted(null);
              });
      closing.add(agent);
    }

    TickReport tick() throws Exception {
      TickReport r = agent.tick();
      receipts += r.receipts();
      return r;
    }

    void later() {
      clock.advance(Duration.ofMinutes(20)); // past every push and session backoff
    }
  }

  /** Repeated: each run kills the child at another point (0–30 ms into alpha's push of 40 items and beta's pull). */
  @RepeatedTest(3)
  void aRelayKilledMidRunLosesNothingAndDuplicatesNothingAndTheOtherKeepsDelivering() throws Exception {
    Host a = new Host("alpha");
    Host b = new Host("beta");
    a.agent.addPeer(b.key.publicKeyB64(), "beta");
    b.agent.addPeer(a.key.publicKeyB64(), "alpha");
    assertThat(a.tick().session()).isEqualTo("ok");
    assertThat(b.tick().session()).isEqualTo("ok");
    List<String> sent = new ArrayList<>();
    for (int round = 0; round < 3; round++) { // both relays up
      sent.addAll(send(a, b, 5));
      assertThat(a.tick().accepted()).isEqualTo(10);
      b.tick();
    }
    String epochBefore = a.store.relay(childUrl()).orElseThrow().epoch();

    sent.addAll(send(a, b, 40));
    CompletableFuture<Void> kill = CompletableFuture.runAsync(() -> {
      try {
        Thread.sleep(new Random().nextInt(30));
        child.kill(); // SIGKILL, at whatever point of alpha's push and beta's pull it is
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    });
    a.tick();
    b.tick();
    kill.get(30, TimeUnit.SECONDS);
    assertThat(child.process.isAlive()).isFalse();

    for (int round = 0; round < 3; round++) { // the child stays down: the in-process relay carries everything
      sent.addAll(send(a, b, 5));
      TickReport ta = a.tick();
      assertThat(ta.relays().get(0).session()).isIn("unreachable", "backoff");
      assertThat(ta.relays().get(1).session()).isEqualTo("ok");
      b.tick();
      a.later();
      b.later();
    }
    for (int round = 0; round < 3; round++) {
      b.tick();
      a.tick();
      a.later();
      b.later();
    }
    assertThat(new HashSet<>(b.received)).as("everything arrived while the child was down").containsAll(sent);
    assertThat(HostAgent.doctor(a.store, List.of(childUrl()))).anyMatch(l -> l.startsWith("last relay problem:"));

    child = ChildRelay.start(dir.resolve("child"), Map.of("MBX_RELAY_LIMITS_PUSH_REQUESTS_PER_MINUTE", "100000"),
        childPort); // back on its port with its store: the items it held before the kill are still there
    for (int round = 0; round < 4; round++) {
      a.later();
      b.later();
      TickReport tb = b.tick();
      TickReport ta = a.tick();
      if (round > 0) {
        assertThat(ta.session()).isEqualTo("ok");
        assertThat(tb.session()).isEqualTo("ok");
      }
    }
    assertThat(a.store.relay(childUrl()).orElseThrow().epoch()).as("a kill keeps the epoch").isEqualTo(epochBefore);
    assertThat(b.received).as("each message handed over exactly once").doesNotHaveDuplicates()
        .containsExactlyInAnyOrderElementsOf(sent);
    for (String id : sent) {
      assertThat(a.store.outboxFor(id)).filteredOn(r -> r.kind().equals("envelope"))
          .extracting(HostStore.OutboxRow::state).containsOnly("settled");
    }
    assertThat(a.receipts).as("each message settled exactly once").isEqualTo(sent.size());
    assertThat(a.agent.doctor()).isEmpty();
    Set<String> quarantined = new HashSet<>();
    b.store.quarantine().forEach(q -> quarantined.add(q.itemId()));
    assertThat(quarantined).isEmpty();
  }

  static List<String> send(Host from, Host to, int n) throws Exception {
    List<String> ids = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      String id = Envelopes.newId();
      from.agent.send(id, to.key.publicKeyB64(), Envelopes.sealed(id));
      ids.add(id);
    }
    return ids;
  }
}
