package io.mbxrelay.store.memory;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.mbxrelay.config.ConfigLoader;
import io.mbxrelay.crypto.Ed25519KeyPair;
import io.mbxrelay.store.RelayLedger;
import io.mbxrelay.store.StoreCommand;
import io.mbxrelay.store.StoreException;
import io.mbxrelay.store.model.EnrolOutcome;
import io.mbxrelay.store.model.PushOutcome;
import io.mbxrelay.store.spi.LedgerBackend;
import io.mbxrelay.wire.Hashes;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;

/**
 * The ledger's new-items signal when a COMMIT fails after every statement ran: the database may have committed, so the
 * heads are signalled anyway (the empty-page cache must never keep answering empty over a stored item). The failure is
 * injected at {@code commit()} of the in-memory backend, which cannot fail there on its own.
 */
class CommitSignalTest {

  @Test
  void a_commit_that_fails_still_signals_the_heads_it_may_have_stored() throws Exception {
    boolean[] failCommit = {false};
    Setup t = setup(real -> {
      if (failCommit[0]) {
        failCommit[0] = false;
        real.rollback(); // as a COMMIT that never reached the disk; the ledger cannot tell which it was
        throw new StoreException(StoreException.Kind.UNAVAILABLE, "commit failed", null);
      }
      real.commit();
    });

    failCommit[0] = true;
    assertThatThrownBy(() -> t.ledger().execute(push(t.sender(), t.target(), "m1"))).isInstanceOf(StoreException.class);
    assertThat(t.signals()).hasSize(1);
    assertThat(t.signals().get(0)).containsOnlyKeys(t.target());
    long signalled = t.signals().get(0).get(t.target());

    // here the COMMIT had not happened: the retry stores the item, at a seq no lower than the one signalled
    PushOutcome retry = t.ledger().execute(push(t.sender(), t.target(), "m1"));
    assertThat(retry).isInstanceOf(PushOutcome.Stored.class);
    long stored = ((PushOutcome.Stored) retry).targets().get(0).seq();
    assertThat(stored).isGreaterThanOrEqualTo(signalled);
    assertThat(t.signals()).hasSize(2);
    assertThat(t.signals().get(1)).isEqualTo(Map.of(t.target(), stored));
  }

  @Test
  void a_failure_after_a_commit_that_took_effect_still_signals_the_stored_head() throws Exception {
    boolean[] failAfterCommit = {false};
    Setup t = setup(real -> {
      real.commit();
      if (failAfterCommit[0]) {
        failAfterCommit[0] = false;
        throw new IllegalStateException("bookkeeping after COMMIT failed"); // the rows are committed
      }
    });

    failAfterCommit[0] = true;
    assertThatThrownBy(() -> t.ledger().execute(push(t.sender(), t.target(), "m1"))).isInstanceOf(StoreException.class);
    assertThat(t.signals()).hasSize(1);
    // the item is stored at the head signalled: a retry is its duplicate
    PushOutcome retry = t.ledger().execute(push(t.sender(), t.target(), "m1"));
    assertThat(retry).isInstanceOfSatisfying(PushOutcome.Stored.class, st -> {
      assertThat(st.fresh()).isFalse();
      assertThat(t.signals().get(0)).isEqualTo(Map.of(t.target(), st.targets().get(0).seq()));
    });
  }

  /** What the backend's {@code commit()} does instead, given the real in-memory backend. */
  @FunctionalInterface
  private interface Commit {
    void run(LedgerBackend real) throws Exception;
  }

  /** A ledger over an in-memory backend whose {@code commit()} is {@code commit}, two hosts enrolled, signals recorded. */
  private record Setup(RelayLedger ledger, String sender, String target, List<Map<String, Long>> signals) {}

  private Setup setup(Commit commit) throws Exception {
    LedgerBackend real = new MemoryStore(Ed25519KeyPair.generate().publicKeyB64()).newBackend();
    LedgerBackend backend = (LedgerBackend) Proxy.newProxyInstance(getClass().getClassLoader(),
        new Class<?>[] {LedgerBackend.class}, (proxy, method, args) -> {
          if (method.getName().equals("commit")) {
            commit.run(real);
            return null;
          }
          try {
            return method.invoke(real, args);
          } catch (InvocationTargetException e) {
            throw e.getCause();
          }
        });
    RelayLedger ledger = new RelayLedger(backend, Clock.systemUTC(), ConfigLoader.load(null, Map.of()).limits());
    String sender = Ed25519KeyPair.generate().publicKeyB64();
    String target = Ed25519KeyPair.generate().publicKeyB64();
    assertThat(ledger.execute(new StoreCommand.Enrol("s", sender, "", null, null))).isEqualTo(EnrolOutcome.OK);
    assertThat(ledger.execute(new StoreCommand.Enrol("t", target, "", null, null))).isEqualTo(EnrolOutcome.OK);
    List<Map<String, Long>> signals = new CopyOnWriteArrayList<>();
    ledger.onNewItems(signals::add);
    return new Setup(ledger, sender, target, signals);
  }

  private static StoreCommand.Push push(String sender, String target, String id) {
    byte[] wire = ("wire " + id).getBytes(StandardCharsets.UTF_8);
    return new StoreCommand.Push(sender, "s", "envelope", id,
        List.of(new StoreCommand.Target(target, wire, Hashes.sha256Hex(wire), null)));
  }
}
