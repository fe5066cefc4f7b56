package io.mbxrelay.store.postgres;

import static org.assertj.core.api.Assertions.assertThat;

import io.mbxrelay.config.ConfigLoader;
import io.mbxrelay.config.RelayConfig;
import io.mbxrelay.crypto.Ed25519KeyPair;
import io.mbxrelay.store.RelayLedger;
import io.mbxrelay.store.StoreCommand;
import io.mbxrelay.store.model.PushOutcome;
import io.mbxrelay.wire.Hashes;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Issue 20 item 3: two relay instances (two {@link PgStore}s on one database) push, round after round and at the same
 * moment, batches over the same targets in opposite orders — and single items naming both ends in opposite orders.
 * Each batch locks its targets' counters in one canonical order, so no batch ever deadlocks and none is run again.
 * Before the canonical order, most rounds deadlocked.
 */
class PgLockOrderTest {
  private static final int TARGETS = 6;
  private static final int ROUNDS = 40;

  private static StoreCommand.Target target(String key, String id) {
    byte[] w = id.getBytes(StandardCharsets.UTF_8);
    return new StoreCommand.Target(key, w, Hashes.sha256Hex(w), null);
  }

  @Test
  void batches_over_the_same_targets_in_opposite_orders_never_deadlock() throws Exception {
    String url = PgTestServer.shared().createDatabase();
    PgStore.Settings settings = new PgStore.Settings(url, PgTestServer.SUPERUSER, "", 2);
    RelayConfig.Limits limits = ConfigLoader.load(null, Map.of()).limits();
    String sender = Ed25519KeyPair.generate().publicKeyB64();
    List<String> targets = new ArrayList<>();
    for (int i = 0; i < TARGETS; i++) {
      targets.add(Ed25519KeyPair.generate().publicKeyB64());
    }
    List<PgStore> stores = new ArrayList<>();
    try {
      stores.add(PgStore.open(settings, null, System::currentTimeMillis, 0));
      try (RelayLedger first = stores.get(0).newLedger(Clock.systemUTC(), limits)) {
        first.execute(new StoreCommand.Enrol("sender", sender, "", null, null));
        for (int i = 0; i < TARGETS; i++) {
          first.execute(new StoreCommand.Enrol("t" + i, targets.get(i), "", null, null));
        }
      }
      // the second instance opens after the enrolments committed: both know every target as live
      stores.add(PgStore.open(settings, null, System::currentTimeMillis, 0));
      CyclicBarrier together = new CyclicBarrier(2);
      List<Throwable> failures = new CopyOnWriteArrayList<>();
      long[] retries = new long[2];
      List<Thread> threads = new ArrayList<>();
      for (int w = 0; w < 2; w++) {
        int writer = w;
        List<String> order = new ArrayList<>(targets);
        if (writer == 1) {
          java.util.Collections.reverse(order);
        }
        threads.add(new Thread(() -> {
          try (RelayLedger ledger = stores.get(writer).newLedger(Clock.systemUTC(), limits)) {
            for (int round = 0; round < ROUNDS; round++) {
              List<StoreCommand.Push> items = new ArrayList<>();
              for (String t : order) {
                String id = "w" + writer + "-r" + round + "-" + items.size();
                items.add(new StoreCommand.Push(sender, "sender", "envelope", id, List.of(target(t, id))));
              }
              String both = "w" + writer + "-r" + round + "-both";
              items.add(new StoreCommand.Push(sender, "sender", "envelope", both,
                  List.of(target(order.get(0), both), target(order.get(order.size() - 1), both))));
              together.await(30, TimeUnit.SECONDS);
              List<PushOutcome> out = ledger.execute(new StoreCommand.PushBatch(items));
              assertThat(out).allSatisfy(o -> assertThat(o).isInstanceOf(PushOutcome.Stored.class));
            }
            retries[writer] = ledger.retries();
          } catch (Throwable e) {
            failures.add(e);
            together.reset();
          }
        }));
      }
      threads.forEach(Thread::start);
      for (Thread t : threads) {
        t.join();
      }
      assertThat(failures).isEmpty();
      assertThat(retries[0] + retries[1]).as("batches run again after a deadlock").isZero();
      assertThat(PgCheck.check(settings, false).get("problems")).isEmpty();
    } finally {
      stores.forEach(PgStore::close);
    }
  }
}
