package io.mbxrelay.host;

import static org.assertj.core.api.Assertions.assertThat;

import io.mbxrelay.crypto.Fingerprint;
import io.mbxrelay.testing.RelayHarness;
import io.vertx.core.Vertx;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Base of the host tests that run against a real relay in this JVM ({@link RelayHarness}): a fresh relay and Vert.x
 * per test, and whatever the test adds to {@link #closing} closed afterwards in reverse order.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
abstract class RealRelayTest {

  @TempDir Path dir;
  Vertx vertx;
  RelayHarness relay;
  final List<AutoCloseable> closing = new ArrayList<>();

  @BeforeEach
  void startRelay() throws Exception {
    vertx = Vertx.vertx();
    relay = RelayHarness.start(dir.resolve("relay"));
  }

  @AfterEach
  void stopRelay() throws Exception {
    for (int i = closing.size() - 1; i >= 0; i--) {
      closing.get(i).close();
    }
    if (relay != null) {
      relay.close();
    }
    vertx.close().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
  }

  /** Pins this test's relay key in a host store, by its fingerprint (no trust on first use). */
  void pinRelay(HostStore store, long nowMs) throws Exception {
    HostAgent.pin(store, relay.url(), relay.relayKey.publicKeyB64(), Fingerprint.ofB64(relay.relayKey.publicKeyB64()),
        false, nowMs);
  }

  /** Each agent accepts the other's key under the given names; one tick each (enrolment, ads) must be ok. */
  static void pairUp(HostAgent a, String aPub, String aName, HostAgent b, String bPub, String bName) throws Exception {
    a.addPeer(bPub, bName);
    b.addPeer(aPub, aName);
    assertThat(a.tick().session()).isEqualTo("ok");
    assertThat(b.tick().session()).isEqualTo("ok");
  }

  /** The envelope row of a message in a host's outbox. */
  static HostStore.OutboxRow envelopeRow(HostStore store, String msgId) throws Exception {
    return store.outboxFor(msgId).stream().filter(r -> r.kind().equals("envelope")).findFirst().orElseThrow();
  }
}
