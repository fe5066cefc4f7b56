package io.mbxrelay.store.sqlite;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.mbxrelay.config.ConfigLoader;
import io.mbxrelay.crypto.Ed25519KeyPair;
import io.mbxrelay.store.model.EnrolOutcome;
import io.mbxrelay.store.spi.LedgerBackend;
import io.mbxrelay.store.model.PushOutcome;
import io.mbxrelay.store.RelayLedger;
import io.mbxrelay.store.StoreCommand;
import io.mbxrelay.store.StoreException;
import io.mbxrelay.wire.Hashes;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A transaction that loses a race with another writer ({@link StoreException#conflict}, what a backend several relays
 * write at once reports) is run again whole by the {@link RelayLedger}, and nothing of the lost attempt stays. The
 * race is injected at the real SQLite backend's commit: the attempt's rows and seqs are rolled back for real.
 */
class LedgerRetryTest {
  private static final Clock ZERO = Clock.fixed(Instant.EPOCH, ZoneOffset.UTC);
  private final String relay = Ed25519KeyPair.generate().publicKeyB64();
  private final String a = Ed25519KeyPair.generate().publicKeyB64();
  private final String b = Ed25519KeyPair.generate().publicKeyB64();

  /** The backend, with its next {@code conflicts} commits refused as lost races (the transaction is not committed). */
  private static LedgerBackend losingRaces(SqliteBackend real, AtomicInteger conflicts) {
    return (LedgerBackend) Proxy.newProxyInstance(LedgerBackend.class.getClassLoader(),
        new Class<?>[] {LedgerBackend.class}, (proxy, m, args) -> {
          if (m.getName().equals("commit") && conflicts.getAndDecrement() > 0) {
            throw StoreException.conflict("could not serialize access", null);
          }
          try {
            return m.invoke(real, args);
          } catch (InvocationTargetException e) {
            throw e.getCause();
          }
        });
  }

  private static StoreCommand.Push push(String sender, String id, String target) {
    byte[] w = id.getBytes(StandardCharsets.UTF_8);
    return new StoreCommand.Push(sender, "s", "envelope", id, List.of(new StoreCommand.Target(target, w,
        Hashes.sha256Hex(w), null)));
  }

  @Test
  void a_lost_race_runs_the_batch_again_and_the_lost_attempt_leaves_no_row_and_no_seq(@TempDir Path dir)
      throws Exception {
    AtomicInteger conflicts = new AtomicInteger();
    try (RelayLedger ledger = new RelayLedger(losingRaces(SqliteOpener.open(dir, relay, ZERO, 5000, 0, false).backend(),
        conflicts), ZERO, ConfigLoader.load(null, Map.of()).limits())) {
      assertThat(ledger.execute(new StoreCommand.Enrol("alpha", a, "", null, null))).isEqualTo(EnrolOutcome.OK);
      assertThat(ledger.execute(new StoreCommand.Enrol("beta", b, "", null, null))).isEqualTo(EnrolOutcome.OK);
      conflicts.set(2);
      PushOutcome.Stored s = (PushOutcome.Stored) ledger.execute(push(a, "m1", b));
      assertThat(s.fresh()).isTrue();
      assertThat(s.targets().get(0).seq()).isEqualTo(1); // not 3: the lost attempts' seqs were rolled back
      assertThat(conflicts.get()).isEqualTo(-1); // two lost, the third committed
      assertThat(ledger.headSeq(b)).isEqualTo(1);

      conflicts.set(Integer.MAX_VALUE);
      assertThatThrownBy(() -> ledger.execute(push(a, "m2", b))).isInstanceOfSatisfying(StoreException.class,
          e -> assertThat(e.retryable()).isTrue());
      conflicts.set(0);
      assertThat(ledger.headSeq(b)).isEqualTo(1);
      assertThat(((PushOutcome.Stored) ledger.execute(push(a, "m2", b))).targets().get(0).seq()).isEqualTo(2);
    }
  }
}
