package io.mbxrelay.store.postgres;

import static org.assertj.core.api.Assertions.assertThat;

import io.mbxrelay.config.ConfigLoader;
import io.mbxrelay.config.RelayConfig;
import io.mbxrelay.crypto.Ed25519KeyPair;
import io.mbxrelay.store.model.PushOutcome;
import io.mbxrelay.store.StoreCommand;
import io.mbxrelay.wire.Hashes;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Clock;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;

/**
 * Four writers, each its own {@link PgStore} (as four relay processes), push at once to the same two targets — single
 * and two-target items, the two-target ones naming the targets in opposite orders (so transactions can deadlock and
 * must be retried) — and all push the same shared item ids: every item is stored once, the shared ids are fresh for
 * exactly one writer and a duplicate at the same seq for the others, each target's seqs are distinct, and the counters
 * equal the rows.
 */
class PgConcurrentWritersTest {
  private static StoreCommand.Target target(String key, String text) {
    byte[] w = text.getBytes(StandardCharsets.UTF_8);
    return new StoreCommand.Target(key, w, Hashes.sha256Hex(w), null);
  }

  @Test
  void concurrent_writers_never_share_a_seq_and_store_each_item_once() throws Exception {
    String url = PgTestServer.shared().createDatabase();
    PgStore.Settings settings = new PgStore.Settings(url, PgTestServer.SUPERUSER, "", 4);
    RelayConfig.Limits limits = ConfigLoader.load(null, Map.of()).limits();
    String s = Ed25519KeyPair.generate().publicKeyB64();
    String x = Ed25519KeyPair.generate().publicKeyB64();
    String y = Ed25519KeyPair.generate().publicKeyB64();
    int writers = 4;
    int perWriter = 24;
    List<PgStore> stores = new ArrayList<>();
    try {
      for (int i = 0; i < writers; i++) {
        stores.add(PgStore.open(settings, null, System::currentTimeMillis, 0));
      }
      try (io.mbxrelay.store.RelayLedger first = stores.get(0).newLedger(Clock.systemUTC(), limits)) {
        first.execute(new StoreCommand.Enrol("sender", s, "", null, null));
        first.execute(new StoreCommand.Enrol("x", x, "", null, null));
        first.execute(new StoreCommand.Enrol("y", y, "", null, null));
      }
      Map<String, List<Long>> sharedSeqs = new ConcurrentHashMap<>();
      Map<String, Integer> fresh = new ConcurrentHashMap<>();
      List<Throwable> failures = new CopyOnWriteArrayList<>();
      List<Thread> threads = new ArrayList<>();
      for (int w = 0; w < writers; w++) {
        int writer = w;
        threads.add(new Thread(() -> {
          try (io.mbxrelay.store.RelayLedger st = stores.get(writer).newLedger(Clock.systemUTC(), limits)) {
            for (int i = 0; i < perWriter; i++) {
              String own = "w" + writer + "-" + i;
              List<StoreCommand.Target> ts = i % 3 == 0
                  ? (writer % 2 == 0 ? List.of(target(x, own), target(y, own)) : List.of(target(y, own), target(x, own)))
                  : List.of(target(i % 2 == 0 ? x : y, own));
              PushOutcome o = st.execute(new StoreCommand.Push(s, "sender", "envelope", own, ts));
              assertThat(o).isInstanceOf(PushOutcome.Stored.class);
              String shared = "shared-" + i;
              PushOutcome d = st.execute(new StoreCommand.Push(s, "sender", "envelope", shared,
                  List.of(target(x, shared))));
              PushOutcome.Stored sd = (PushOutcome.Stored) d;
              sharedSeqs.computeIfAbsent(shared, k -> new CopyOnWriteArrayList<>()).add(sd.targets().get(0).seq());
              if (sd.fresh()) {
                fresh.merge(shared, 1, Integer::sum);
              }
            }
          } catch (Throwable e) {
            failures.add(e);
          }
        }));
      }
      threads.forEach(Thread::start);
      for (Thread t : threads) {
        t.join();
      }
      assertThat(failures).isEmpty();
      for (int i = 0; i < perWriter; i++) {
        assertThat(fresh.get("shared-" + i)).as("shared-%d fresh once", i).isEqualTo(1);
        assertThat(sharedSeqs.get("shared-" + i)).hasSize(writers).containsOnly(sharedSeqs.get("shared-" + i).get(0));
      }
      int twoTarget = (perWriter + 2) / 3;
      try (Connection c = DriverManager.getConnection(url, PgTestServer.SUPERUSER, "");
          Statement st = c.createStatement()) {
        try (ResultSet rs = st.executeQuery("SELECT target_pubkey, count(*), count(DISTINCT seq),"
            + " count(DISTINCT (sender_pubkey, item_id)) FROM items GROUP BY target_pubkey")) {
          long total = 0;
          while (rs.next()) {
            assertThat(rs.getLong(2)).as("seqs distinct").isEqualTo(rs.getLong(3));
            assertThat(rs.getLong(2)).as("items distinct").isEqualTo(rs.getLong(4));
            total += rs.getLong(2);
          }
          // each writer: perWriter own items, twoTarget of them on both targets; plus perWriter shared ones in all
          assertThat(total).isEqualTo(writers * (long) (perWriter + twoTarget) + perWriter);
        }
      }
      assertThat(PgCheck.check(settings, false).get("problems")).isEmpty();
    } finally {
      stores.forEach(PgStore::close);
    }
  }
}
