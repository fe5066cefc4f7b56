package io.mbxrelay.host;

import static org.assertj.core.api.Assertions.assertThat;

import io.mbxrelay.auth.ClientAddress;
import io.mbxrelay.crypto.Ed25519KeyPair;
import io.mbxrelay.crypto.Fingerprint;
import io.mbxrelay.server.CrashPoint;
import io.mbxrelay.server.RelayServer;
import io.mbxrelay.store.sqlite.SqliteOps;
import io.mbxrelay.testing.Envelopes;
import io.mbxrelay.testing.MutableClock;
import io.mbxrelay.testing.RelayHarness;
import java.lang.reflect.Proxy;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.function.Function;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Several relays per host (issue 21 part 1) with two real relays in this JVM: every message goes to every relay, each
 * relay keeps its own pin, enrolment, epoch and position, a relay that is down, refuses, changes its key, rotates its
 * epoch or is restored from a backup affects only its own part, and every message reaches the application once and
 * settles once.
 */
class MultiRelayTest extends RealRelayTest {

  RelayHarness relay2;

  @BeforeEach
  void startSecondRelay() throws Exception {
    relay2 = RelayHarness.start(dir.resolve("relay2"));
  }

  @AfterEach
  void stopSecondRelay() {
    if (relay2 != null) {
      relay2.close();
    }
  }

  /** One host on a list of relays, with a recording application and per-relay transport wrappers. */
  final class Host {
    final String name;
    final Ed25519KeyPair key = Ed25519KeyPair.generate();
    final MutableClock clock = new MutableClock(Instant.now());
    final HostStore store;
    final List<String> received = new ArrayList<>();
    final List<String> viaRelay = new ArrayList<>();
    int receiptsApplied;
    /** Wraps the transport of a relay URL (default: as is). */
    Function<RelayTransport, RelayTransport> wrap2 = t -> t;
    HostAgent agent;

    Host(String name, List<String> urls) throws Exception {
      this.name = name;
      store = HostStore.open(dir.resolve(name + ".db"));
      closing.add(store);
      for (RelayHarness r : List.of(relay, relay2)) {
        HostAgent.pin(store, r.url(), r.relayKey.publicKeyB64(), Fingerprint.ofB64(r.relayKey.publicKeyB64()), false,
            clock.millis());
      }
      agent = agent(urls);
    }

    HostAgent agent(List<String> urls) throws Exception {
      HostAgent a = new HostAgent(store, key, urls, new HostAgent.Options(name, "", clock, new Random(11), null),
          (u, n, rp) -> {
            RelayTransport t = new VertxRelayTransport(vertx, u, n, key, rp, 10_000, 15_000, Clock.systemUTC());
            return u.equals(relay2.url()) ? wrap2.apply(t) : t;
          }, d -> {
            received.add(d.msgId());
            viaRelay.add(d.relay());
            return new HostApplication.Verdict.Accepted(null);
          });
      closing.add(a);
      return a;
    }

    String pub() {
      return key.publicKeyB64();
    }

    TickReport tick() throws Exception {
      TickReport r = agent.tick();
      receiptsApplied += r.receipts();
      return r;
    }

    List<HostStore.OutboxRow> rows(String msgId) throws Exception {
      return store.outboxFor(msgId).stream().filter(r -> r.kind().equals("envelope")).toList();
    }

    HostStore.OutboxRow row(String msgId, String url) throws Exception {
      return rows(msgId).stream().filter(r -> r.relay().equals(url)).findFirst().orElseThrow();
    }

    TickReport.Relay part(TickReport r, String url) {
      return r.relays().stream().filter(x -> x.url().equals(url)).findFirst().orElseThrow();
    }
  }

  List<String> both() {
    return List.of(relay.url(), relay2.url());
  }

  Host[] pair() throws Exception {
    Host a = new Host("alpha", both());
    Host b = new Host("beta", both());
    a.agent.addPeer(b.pub(), "beta");
    b.agent.addPeer(a.pub(), "alpha");
    assertThat(a.tick().session()).isEqualTo("ok");
    assertThat(b.tick().session()).isEqualTo("ok");
    return new Host[] {a, b};
  }

  List<String> send(Host from, Host to, int n) throws Exception {
    List<String> ids = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      String id = Envelopes.newId();
      assertThat(from.agent.send(id, to.pub(), Envelopes.sealed(id))).isEqualTo(HostAgent.SendOutcome.QUEUED);
      ids.add(id);
    }
    return ids;
  }

  /** Ticks both hosts until every message of {@code ids} is settled at the sender (at most {@code rounds}). */
  void settle(Host a, Host b, List<String> ids, int rounds) throws Exception {
    for (int i = 0; i < rounds; i++) {
      b.tick();
      a.tick();
      boolean all = true;
      for (String id : ids) {
        all &= a.rows(id).stream().allMatch(r -> r.state().equals("settled"));
      }
      if (all) {
        return;
      }
      a.clock.advance(Duration.ofMinutes(20)); // past any push backoff
      b.clock.advance(Duration.ofMinutes(20));
    }
    throw new AssertionError("not settled after " + rounds + " rounds: " + a.store.outbox());
  }

  @Test
  void everyMessageGoesToEveryRelayReachesTheApplicationOnceAndSettlesOnce() throws Exception {
    Host[] h = pair();
    Host a = h[0];
    Host b = h[1];
    assertThat(a.store.relay(relay.url()).orElseThrow().epoch()).isEqualTo(relay.server.epoch());
    assertThat(a.store.relay(relay2.url()).orElseThrow().epoch()).isEqualTo(relay2.server.epoch());
    List<String> ids = send(a, b, 5);
    for (String id : ids) {
      assertThat(a.rows(id)).extracting(HostStore.OutboxRow::relay).containsExactly(relay.url(), relay2.url());
    }
    TickReport ta = a.tick();
    assertThat(ta.accepted()).isEqualTo(10);
    for (String id : ids) { // both accept receipts verified and kept, each with its relay's epoch
      assertThat(a.row(id, relay.url()).state()).isEqualTo("relay-accepted");
      assertThat(a.row(id, relay.url()).epoch()).isEqualTo(relay.server.epoch());
      assertThat(a.row(id, relay2.url()).state()).isEqualTo("relay-accepted");
      assertThat(a.row(id, relay2.url()).epoch()).isEqualTo(relay2.server.epoch());
      assertThat(a.store.outboxWire(a.row(id, relay.url()).id())).isPresent();
    }
    TickReport tb = b.tick();
    assertThat(tb.delivered()).isEqualTo(5);
    assertThat(tb.duplicates()).as("the second relay's copies, acked there, not handed over").isEqualTo(5);
    assertThat(b.received).containsExactlyElementsOf(ids);
    for (TickReport.Relay part : tb.relays()) {
      assertThat(part.session()).isEqualTo("ok");
      assertThat(part.ackedThrough()).isEqualTo(part.receivedThrough()).isPositive();
    }
    assertThat(b.tick().accepted()).as("the receipt through each relay the message came from").isEqualTo(10);
    a.tick();
    for (String id : ids) {
      assertThat(a.rows(id)).extracting(HostStore.OutboxRow::state).containsOnly("settled");
    }
    assertThat(a.receiptsApplied).as("settled once per message").isEqualTo(5);
    assertThat(b.received).containsExactlyElementsOf(ids);
    assertThat(a.agent.doctor()).isEmpty();
    assertThat(b.agent.doctor()).isEmpty();
  }

  @Test
  void aRelayThatIsDownAffectsOnlyItsOwnRowAndTheOtherDelivers() throws Exception {
    Host[] h = pair();
    Host a = h[0];
    Host b = h[1];
    int port2 = relay2.server.port();
    Path dir2 = relay2.dir;
    Ed25519KeyPair key2 = relay2.relayKey;
    relay2.close();
    relay2 = null;
    List<String> ids = send(a, b, 3);
    TickReport ta = a.tick();
    assertThat(ta.session()).isEqualTo("unreachable");
    assertThat(a.part(ta, relay.url()).session()).isEqualTo("ok");
    assertThat(a.part(ta, "http://127.0.0.1:" + port2).session()).isEqualTo("unreachable");
    assertThat(ta.accepted()).isEqualTo(3);
    assertThat(ta.notes()).anyMatch(n -> n.startsWith("relay http://127.0.0.1:" + port2 + ": relay unreachable"));
    assertThat(a.agent.doctor()).anyMatch(l -> l.startsWith("relay http://127.0.0.1:" + port2
        + ": last relay problem: relay unreachable"));
    assertThat(a.agent.doctor()).noneMatch(l -> l.startsWith("relay " + relay.url()));
    TickReport tb = b.tick();
    assertThat(tb.delivered()).isEqualTo(3);
    assertThat(b.part(tb, relay.url()).session()).isEqualTo("ok");
    b.tick();
    a.tick();
    for (String id : ids) { // the receipt through the working relay settles the row of the down one too
      assertThat(a.rows(id)).extracting(HostStore.OutboxRow::state).containsOnly("settled");
    }
    // the relay comes back: nothing is owed to it any more, and it serves the hosts again
    relay2 = RelayHarness.start(dir2, Map.of(), key2, new RelayServer.Options(port2, "127.0.0.1", dir2,
        ClientAddress.SOCKET, CrashPoint.NONE, Clock.systemUTC()));
    a.clock.advance(Duration.ofMinutes(2));
    b.clock.advance(Duration.ofMinutes(2));
    TickReport back = a.tick();
    assertThat(back.session()).isEqualTo("ok");
    assertThat(back.accepted()).isZero();
    assertThat(a.agent.doctor()).isEmpty();
    assertThat(b.received).containsExactlyElementsOf(ids);
    assertThat(a.receiptsApplied).isEqualTo(3);
  }

  @Test
  void aRelayThatRefusesAffectsOnlyItsOwnRow() throws Exception {
    Host[] h = pair();
    Host a = h[0];
    Host b = h[1];
    a.wrap2 = t -> (RelayTransport) Proxy.newProxyInstance(RelayTransport.class.getClassLoader(),
        new Class<?>[] {RelayTransport.class}, (p, m, args) -> m.getName().equals("info")
            ? new Refused(403, "this host key was revoked on this relay", "REVOKED") : m.invoke(t, args));
    a.agent.close();
    a.agent = a.agent(both());
    List<String> ids = send(a, b, 2);
    TickReport ta = a.tick();
    assertThat(a.part(ta, relay.url()).session()).isEqualTo("ok");
    assertThat(a.part(ta, relay2.url()).session()).isEqualTo("refused");
    assertThat(ta.accepted()).isEqualTo(2);
    assertThat(a.agent.doctor()).anyMatch(l -> l.startsWith("relay " + relay2.url() + ": last relay problem: relay"
        + " info refused: 403 this host key was revoked on this relay"));
    settle(a, b, ids, 3);
    assertThat(b.received).containsExactlyElementsOf(ids);
    assertThat(a.receiptsApplied).isEqualTo(2);
  }

  @Test
  void aRelayThatChangesItsKeyIsNotUsedAndTheOtherDelivers() throws Exception {
    Host[] h = pair();
    Host a = h[0];
    Host b = h[1];
    int port2 = relay2.server.port();
    Path dir2 = dir.resolve("relay2-new");
    relay2.close();
    relay2 = RelayHarness.start(dir2, Map.of(), Ed25519KeyPair.generate(), new RelayServer.Options(port2,
        "127.0.0.1", dir2, ClientAddress.SOCKET, CrashPoint.NONE, Clock.systemUTC()));
    List<String> ids = send(a, b, 2);
    TickReport ta = a.tick();
    assertThat(a.part(ta, relay.url()).session()).isEqualTo("ok");
    assertThat(a.part(ta, relay2.url()).session()).isEqualTo("relay-key-changed");
    assertThat(ta.accepted()).isEqualTo(2);
    assertThat(a.agent.doctor()).anyMatch(l -> l.startsWith("relay " + relay2.url() + ": relay key changed for "
        + relay2.url()));
    assertThat(a.store.alerts()).singleElement().satisfies(al -> {
      assertThat(al.kind()).isEqualTo("relay-key-changed");
      assertThat(al.relay()).isEqualTo(relay2.url());
    });
    settle(a, b, ids, 3);
    assertThat(b.received).containsExactlyElementsOf(ids);
    assertThat(a.rows(ids.get(0))).extracting(HostStore.OutboxRow::state).containsOnly("settled");
  }

  @Test
  void aRelayWithARotatedEpochRepushesOnlyItsOwnRowsAndNothingIsDeliveredTwice() throws Exception {
    Host[] h = pair();
    Host a = h[0];
    Host b = h[1];
    List<String> ids = send(a, b, 3);
    assertThat(a.tick().accepted()).isEqualTo(6);
    long seq1 = a.row(ids.get(0), relay.url()).seq();
    String old2 = relay2.server.epoch();
    int port2 = relay2.server.port();
    Path dir2 = relay2.dir;
    Ed25519KeyPair key2 = relay2.relayKey;
    relay2.close();
    SqliteOps.rotateEpoch(dir2, Clock.systemUTC());
    relay2 = RelayHarness.start(dir2, Map.of(), key2, new RelayServer.Options(port2, "127.0.0.1", dir2,
        ClientAddress.SOCKET, CrashPoint.NONE, Clock.systemUTC()));
    assertThat(relay2.server.epoch()).isNotEqualTo(old2);

    TickReport ta = a.tick();
    assertThat(a.part(ta, relay2.url()).epochChanged()).isTrue();
    assertThat(a.part(ta, relay.url()).epochChanged()).isFalse();
    assertThat(ta.accepted()).as("only the rotated relay's rows are re-pushed").isEqualTo(3);
    assertThat(a.row(ids.get(0), relay.url()).seq()).isEqualTo(seq1);
    assertThat(a.row(ids.get(0), relay2.url()).epoch()).isEqualTo(relay2.server.epoch());
    assertThat(a.store.relay(relay.url()).orElseThrow().epoch()).isEqualTo(relay.server.epoch());
    settle(a, b, ids, 3);
    assertThat(b.received).containsExactlyElementsOf(ids);
    assertThat(a.receiptsApplied).isEqualTo(3);
  }

  @Test
  void aRelayRestoredFromABackupLosesMailThatTheSendersRepushAndNothingIsDeliveredTwice() throws Exception {
    Host[] h = pair();
    Host a = h[0];
    Host b = h[1];
    List<String> before = send(a, b, 2);
    settle(a, b, before, 3);
    Path backup = dir.resolve("relay2-backup.db");
    SqliteOps.backup(relay2.dir, backup, Clock.systemUTC());
    List<String> after = send(a, b, 3); // accepted by both relays after the backup, not yet pulled
    assertThat(a.tick().accepted()).isEqualTo(6);
    int port2 = relay2.server.port();
    Path dir2 = relay2.dir;
    Ed25519KeyPair key2 = relay2.relayKey;
    String old2 = relay2.server.epoch();
    relay2.close();
    SqliteOps.restore(dir2, backup, true, Clock.systemUTC(), false); // the post-backup mail is gone from it
    relay2 = RelayHarness.start(dir2, Map.of(), key2, new RelayServer.Options(port2, "127.0.0.1", dir2,
        ClientAddress.SOCKET, CrashPoint.NONE, Clock.systemUTC()));
    assertThat(relay2.server.epoch()).isNotEqualTo(old2);

    TickReport ta = a.tick();
    assertThat(a.part(ta, relay2.url()).epochChanged()).isTrue();
    assertThat(a.part(ta, relay.url()).epochChanged()).isFalse();
    settle(a, b, after, 4);
    List<String> all = new ArrayList<>(before);
    all.addAll(after);
    assertThat(b.received).containsExactlyElementsOf(all);
    assertThat(a.receiptsApplied).isEqualTo(5);
    assertThat(b.store.relay(relay2.url()).orElseThrow().epoch()).isEqualTo(relay2.server.epoch());
  }

  @Test
  void aPeerOnOnlyOneOfTheRelaysStillGetsEverythingAndTheOtherRowsSettleWithTheReceipt() throws Exception {
    Host a = new Host("alpha", both());
    Host b = new Host("beta", List.of(relay.url())); // beta uses only the first relay
    a.agent.addPeer(b.pub(), "beta");
    b.agent.addPeer(a.pub(), "alpha");
    b.tick();
    a.tick();
    List<String> ids = send(a, b, 2);
    TickReport ta = a.tick();
    assertThat(ta.accepted()).isEqualTo(2);
    assertThat(a.row(ids.get(0), relay2.url()).lastError()).isEqualTo("rejected:target not enrolled");
    settle(a, b, ids, 3);
    assertThat(b.received).containsExactlyElementsOf(ids);
    assertThat(b.viaRelay).containsOnly(relay.url());
    assertThat(a.rows(ids.get(1))).extracting(HostStore.OutboxRow::state).containsOnly("settled");
  }

  @Test
  void aRelayTakenOutOfTheListHasItsRowsDroppedAndItsMessagesGoThroughTheOthers() throws Exception {
    Host[] h = pair();
    Host a = h[0];
    Host b = h[1];
    List<String> ids = send(a, b, 2);
    a.agent.close();
    a.agent = a.agent(List.of(relay2.url())); // the first relay is no longer used
    TickReport ta = a.tick();
    assertThat(ta.notes()).anyMatch(n -> n.startsWith("2 outbox row(s) queued for a relay no longer in use dropped;"
        + " their messages moved to " + relay2.url()));
    assertThat(ta.relays()).extracting(TickReport.Relay::url).containsExactly(relay2.url());
    assertThat(a.row(ids.get(0), relay.url()).state()).isEqualTo("dropped");
    assertThat(a.row(ids.get(0), relay2.url()).state()).isEqualTo("relay-accepted");
    settle(a, b, ids, 3);
    assertThat(b.received).containsExactlyElementsOf(ids);
    assertThat(b.viaRelay).containsOnly(relay2.url());

    List<String> more = send(a, b, 1);
    a.agent.close();
    a.agent = a.agent(both()); // and back: a relay added later gets the live messages too
    assertThat(a.tick().accepted()).isEqualTo(2);
    settle(a, b, more, 3);
    assertThat(b.received).hasSize(3).containsAll(more);
  }
}
