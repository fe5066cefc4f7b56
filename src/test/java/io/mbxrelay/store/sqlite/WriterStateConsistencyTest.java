package io.mbxrelay.store.sqlite;

import static org.assertj.core.api.Assertions.assertThat;

import io.mbxrelay.config.ConfigLoader;
import io.mbxrelay.config.RelayConfig;
import io.mbxrelay.crypto.Ed25519KeyPair;
import io.mbxrelay.store.model.AckOutcome;
import io.mbxrelay.store.model.PushOutcome;
import io.mbxrelay.store.RelayStore;
import io.mbxrelay.store.StoreCommand;
import io.mbxrelay.testing.MutableClock;
import io.mbxrelay.wire.Hashes;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.OptionalLong;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The writer's in-memory state (seqs, queue usage, sender shares, account usage, allowlists, enrolments; issue 9) never
 * changes an answer: the same random history of grouped transactions — pushes (one and several targets, retries,
 * conflicts, quota refusals), acks, rotations, denies, allowlists, sweeps — gives the same outcomes on a store that
 * stays open (warm state) and on one closed and opened again before every transaction (everything read from the
 * tables), and after every transaction {@code queue_usage} equals a recount of {@code items} and every target's
 * {@code next_seq} is above its highest stored seq.
 */
class WriterStateConsistencyTest {
  private static final String[] NAMES = {"alpha", "beta", "gamma", "delta", "eps", "zeta"};

  @Test
  void warm_and_cold_writer_state_answer_every_command_alike(@TempDir Path dir) throws Exception {
    history(dir, -1, -1);
  }

  /**
   * The same with the warm store writing every usage change through the usage log and folding it in sweeps of three
   * transactions (a live relay does so above {@link WriterCounters#DIRECT_KEYS} keys per transaction): after every
   * transaction the tables overlaid with each key's newest log row equal the recount, and the log is folded at close.
   */
  @Test
  void warm_state_through_the_usage_log_answers_every_command_alike(@TempDir Path dir) throws Exception {
    history(dir, 0, 3);
    try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + dir.resolve("warm").resolve(SqliteSettings.DB_FILE));
        Statement st = c.createStatement(); ResultSet rs = st.executeQuery("SELECT count(*) FROM usage_log")) {
      rs.next();
      assertThat(rs.getLong(1)).as("log rows left after a clean close").isZero();
    }
    assertThat(logSizes).as("the log grew and sweeps shrank it").contains(0L).anyMatch(n -> n > 0);
    assertThat(logShrank).as("a sweep deleted superseded rows while others stayed").isTrue();
    assertThat(logSizes.stream().mapToLong(Long::longValue).max().orElseThrow())
        .as("the log stays within about two sweeps of rows").isLessThanOrEqualTo(40 * 3);
  }

  /**
   * Between the two: transactions of up to 4 keys go straight to the tables, larger ones through the log (its
   * "everything unfolded is small again" path included), sweeps of 16 transactions.
   */
  @Test
  void warm_state_switching_between_direct_writes_and_the_usage_log_answers_every_command_alike(@TempDir Path dir)
      throws Exception {
    history(dir, 4, 16);
    assertThat(logSizes).as("the log was used and emptied again").contains(0L).anyMatch(n -> n > 0);
    assertThat(logSizes.stream().mapToLong(Long::longValue).max().orElseThrow())
        .as("the log stays within about two sweeps of rows").isLessThanOrEqualTo(40 * 16);
  }

  /** Log rows seen after each transaction of the last history. */
  private final List<Long> logSizes = new ArrayList<>();
  private boolean logShrank;

  /** The highest seq each target was given (push answers, and what its queue held after each transaction). */
  private final Map<String, Long> given = new HashMap<>();

  /** @param directKeys, sweepTransactions the warm store's usage log settings, -1 for the defaults */
  private void history(Path dir, int directKeys, int sweepTransactions) throws Exception {
    RelayConfig.Limits limits = ConfigLoader.load(null, Map.of(
        "MBX_RELAY_LIMITS_MAX_QUEUE_ITEMS", "25", "MBX_RELAY_LIMITS_MAX_SENDER_ITEMS", "9",
        "MBX_RELAY_LIMITS_MAX_OWNER_ITEMS", "40", "MBX_RELAY_LIMITS_MAX_QUEUE_BYTES", "4096",
        "MBX_RELAY_LIMITS_MAX_SENDER_BYTES", "2048", "MBX_RELAY_LIMITS_MAX_SENDER_TOTAL_ITEMS", "20",
        "MBX_RELAY_LIMITS_MAX_STORE_ITEMS", "70",
        "MBX_RELAY_LIMITS_RETENTION_DAYS", "1")).limits();
    String relayKey = Ed25519KeyPair.generate().publicKeyB64();
    MutableClock warmClock = new MutableClock(1_700_000_000_000L);
    MutableClock coldClock = new MutableClock(1_700_000_000_000L);
    Path warmDir = dir.resolve("warm");
    Path coldDir = dir.resolve("cold");
    List<String> keys = new ArrayList<>();
    for (int i = 0; i < 8; i++) {
      keys.add(Ed25519KeyPair.generate().publicKeyB64());
    }
    Random random = new Random(42);
    retired.clear();
    try (SqliteRelayStore warm = SqliteRelayStore.open(warmDir, relayKey, warmClock, limits, 5000, 0)) {
      if (directKeys >= 0) {
        warm.usageLog(directKeys, sweepTransactions);
      }
      SqliteRelayStore.open(coldDir, relayKey, coldClock, limits, 5000, 0).close();
      List<StoreCommand<?>> setup = new ArrayList<>();
      for (int i = 0; i < keys.size(); i++) {
        setup.add(new StoreCommand.Enrol(NAMES[i % NAMES.length], keys.get(i), "", i < 3 ? "acct" : null,
            i < 3 ? "test" : null));
      }
      run(warm, coldDir, relayKey, coldClock, limits, setup);
      List<StoreCommand.Push> history = new ArrayList<>();
      Map<String, Integer> seen = new HashMap<>();
      for (int tx = 0; tx < 300; tx++) {
        List<StoreCommand<?>> commands = new ArrayList<>();
        int n = 1 + random.nextInt(6);
        for (int c = 0; c < n; c++) {
          commands.add(randomCommand(random, keys, history, warm.epoch(), warmClock.millis()));
        }
        long step = random.nextInt(50) == 0 ? 2 * 86_400_000L : 1 + random.nextInt(5);
        warmClock.advance(step);
        coldClock.advance(step);
        if (random.nextInt(40) == 0) {
          commands.add(new StoreCommand.SweepBatch(warmClock.millis(), 50, bytes -> "c2ln"));
        }
        List<RelayStore.CommandResult> w = warm.execute(commands);
        tally(w, seen);
        for (RelayStore.CommandResult r : w) {
          if (r.value() instanceof PushOutcome.Stored s) {
            s.targets().forEach(t -> given.merge(t.hostPubkey(), t.seq(), Math::max));
          }
        }
        assertNoSeqGivenTwice(warmDir.resolve(SqliteSettings.DB_FILE));
        List<RelayStore.CommandResult> c;
        try (SqliteRelayStore cold = SqliteRelayStore.open(coldDir, relayKey, coldClock, limits, 5000, 0)) {
          c = cold.execute(epochOf(commands, cold.epoch()));
          assertThat(normalise(c, cold.epoch())).as("transaction %d: %s", tx, commands)
              .isEqualTo(normalise(w, warm.epoch()));
        }
        long logged = assertUsageMatchesItems(warmDir.resolve(SqliteSettings.DB_FILE));
        if (!logSizes.isEmpty() && logged > 0 && logged < logSizes.get(logSizes.size() - 1)) {
          logShrank = true;
        }
        logSizes.add(logged);
      }
      // the history went through every path the in-memory state must follow
      assertThat(seen).as("outcomes seen").containsKeys("fresh", "fresh multi-target", "duplicate", "rejected quota",
          "rejected conflict", "rejected sender", "rejected sender total", "rejected store full", "ack deleted",
          "rotated", "rotation refused", "denied a live host", "swept");
    }
    assertUsageMatchesItems(coldDir.resolve(SqliteSettings.DB_FILE));
  }

  private static void run(SqliteRelayStore warm, Path coldDir, String relayKey, MutableClock clock,
      RelayConfig.Limits limits, List<StoreCommand<?>> commands) throws Exception {
    warm.execute(commands);
    try (SqliteRelayStore cold = SqliteRelayStore.open(coldDir, relayKey, clock, limits, 5000, 0)) {
      cold.execute(commands);
    }
  }

  /** Keys revoked by an applied (or attempted) rotation: a later rotation onto one is refused. */
  private static final List<String> retired = new ArrayList<>();

  private static StoreCommand<?> randomCommand(Random r, List<String> keys, List<StoreCommand.Push> history,
      String epoch, long nowMs) {
    String sender = keys.get(r.nextInt(keys.size()));
    int kind = r.nextInt(100);
    if (kind < 60) {
      List<StoreCommand.Push> items = new ArrayList<>();
      int n = 1 + r.nextInt(4);
      for (int i = 0; i < n; i++) {
        if (!history.isEmpty() && r.nextInt(4) == 0) { // a retry: mostly the same bytes (duplicate), else a conflict
          StoreCommand.Push old = history.get(r.nextInt(history.size()));
          if (r.nextInt(5) == 0) {
            List<StoreCommand.Target> changed = new ArrayList<>();
            for (StoreCommand.Target t : old.targets()) {
              byte[] w = ("changed:" + r.nextInt(1000)).getBytes(StandardCharsets.UTF_8);
              changed.add(new StoreCommand.Target(t.hostPubkey(), w, Hashes.sha256Hex(w), null));
            }
            old = new StoreCommand.Push(old.senderPubkey(), old.senderHost(), old.kind(), old.itemId(), changed);
          }
          items.add(old);
          continue;
        }
        String id = "id" + history.size();
        int targets = r.nextInt(5) == 0 ? 2 + r.nextInt(2) : 1;
        List<StoreCommand.Target> list = new ArrayList<>();
        List<String> shuffled = new ArrayList<>(keys);
        java.util.Collections.shuffle(shuffled, r);
        for (int t = 0; t < targets; t++) {
          byte[] w = ("wire:" + id + ":" + t + "x".repeat(r.nextInt(300))).getBytes(StandardCharsets.UTF_8);
          list.add(new StoreCommand.Target(shuffled.get(t), w, Hashes.sha256Hex(w), null));
        }
        StoreCommand.Push p = new StoreCommand.Push(sender, "s", "envelope", id, list);
        history.add(p);
        items.add(p);
      }
      return new StoreCommand.PushBatch(items);
    }
    if (kind < 80) { // mostly within the head, sometimes past it (BAD_ACK)
      return new StoreCommand.Ack(sender, epoch, OptionalLong.of(nowMs - 200 + r.nextInt(220)));
    }
    if (kind < 86) {
      List<String> senders = new ArrayList<>(keys.subList(0, 2 + r.nextInt(keys.size() - 2)));
      return new StoreCommand.PublishSenders(sender, senders, "2026-01-01T00:00:0" + r.nextInt(10) + ".000Z",
          1_767_225_600_000L + r.nextInt(10) * 1000L, "{}", "sig");
    }
    if (kind < 87) { // refused rotations: nothing may move (onto a revoked key, a key not enrolled, another name)
      int which = r.nextInt(3);
      if (which == 0 && !retired.isEmpty()) {
        return new StoreCommand.Rotate(sender, retired.get(r.nextInt(retired.size())),
            NAMES[keys.indexOf(sender) % NAMES.length]);
      }
      if (which == 1) {
        return new StoreCommand.Rotate(Ed25519KeyPair.generate().publicKeyB64(),
            Ed25519KeyPair.generate().publicKeyB64(), "nobody");
      }
      return new StoreCommand.Rotate(sender, Ed25519KeyPair.generate().publicKeyB64(), "not-" + NAMES[0]);
    }
    if (kind < 90) {
      int i = keys.indexOf(sender);
      retired.add(sender);
      String fresh = Ed25519KeyPair.generate().publicKeyB64();
      keys.set(i, fresh); // later commands use the new key; the old one is revoked if the rotation applied
      return new StoreCommand.Rotate(sender, fresh, NAMES[i % NAMES.length]);
    }
    if (kind < 92) { // mostly no match; now and then a live host's key (revoked with its queue left in place)
      if (r.nextInt(4) == 0) {
        return new StoreCommand.Deny("host_fp", io.mbxrelay.crypto.Fingerprint.ofB64(sender), "test");
      }
      return new StoreCommand.Deny("client_id", "nobody-" + r.nextInt(3), "test");
    }
    return new StoreCommand.Enrol(NAMES[keys.indexOf(sender) % NAMES.length], sender, "", null, null);
  }

  private static void tally(List<RelayStore.CommandResult> results, Map<String, Integer> seen) {
    for (RelayStore.CommandResult r : results) {
      List<Object> values = r.value() instanceof List<?> l ? new ArrayList<>(l) : List.of(Objects.toString(r.value()));
      for (Object v : values) {
        String k = null;
        if (v instanceof PushOutcome.Stored s) {
          k = !s.fresh() ? "duplicate" : s.targets().size() > 1 ? "fresh multi-target" : "fresh";
        } else if (v instanceof PushOutcome.Rejected rj) {
          k = rj.wireText().equals("quota:sender total exceeded") ? "rejected sender total"
              : rj.wireText().equals("quota:relay store full") ? "rejected store full"
              : rj.wireText().startsWith("quota:") ? "rejected quota" : rj.wireText().equals("conflict") ? "rejected conflict"
              : rj.wireText().startsWith("sender not accepted") ? "rejected sender" : "rejected other";
        } else if (r.value() instanceof AckOutcome.Done d && d.deleted() > 0) {
          k = "ack deleted";
        } else if (r.value() instanceof io.mbxrelay.store.model.RotateOutcome.Moved) {
          k = "rotated";
        } else if (r.value() instanceof io.mbxrelay.store.model.RotateOutcome) {
          k = "rotation refused";
        } else if (r.value() instanceof io.mbxrelay.store.model.DenyOutcome d && d.revoked() > 0) {
          k = "denied a live host";
        } else if (r.value() instanceof io.mbxrelay.store.model.SweepCounts sc && sc.rows() > 0) {
          k = "swept";
        }
        if (k != null) {
          seen.merge(k, 1, Integer::sum);
          if (k.equals("fresh") && values.size() > 1) {
            seen.merge("fresh", 0, Integer::sum);
          }
        }
      }
    }
  }

  /** The same commands with an ack's epoch replaced by the other store's epoch. */
  private static List<StoreCommand<?>> epochOf(List<StoreCommand<?>> commands, String epoch) {
    List<StoreCommand<?>> out = new ArrayList<>();
    for (StoreCommand<?> c : commands) {
      out.add(c instanceof StoreCommand.Ack a ? new StoreCommand.Ack(a.targetPubkey(), epoch, a.through()) : c);
    }
    return out;
  }

  private static List<Object> normalise(List<RelayStore.CommandResult> results, String epoch) {
    List<Object> out = new ArrayList<>();
    for (RelayStore.CommandResult r : results) {
      Object v = r.value();
      if (v instanceof List<?> list) {
        List<Object> items = new ArrayList<>();
        for (Object o : list) {
          items.add(o instanceof PushOutcome.Stored s ? new PushOutcome.Stored(s.fresh(), s.targets(), s.at(), "E") : o);
        }
        v = items;
      } else if (v instanceof AckOutcome.EpochChanged || v instanceof AckOutcome.BadAck) {
        v = v.getClass().getSimpleName();
      }
      out.add(r.error() != null ? "error " + r.error().kind() : Objects.toString(v).replace(epoch, "E"));
    }
    return out;
  }

  /**
   * A usage table as the store's state has it: the table's rows overlaid with each key's newest usage log row
   * ({@link UsageLog}).
   */
  private static String current(String table, String key, int kind) {
    String newest = "SELECT key, items, bytes FROM usage_log WHERE kind = " + kind
        + " AND id IN (SELECT max(id) FROM usage_log GROUP BY kind, key)";
    return "(SELECT " + key + ", items, bytes FROM " + table + " WHERE " + key + " NOT IN (SELECT key FROM usage_log"
        + " WHERE kind = " + kind + ") UNION ALL SELECT key AS " + key + ", items, bytes FROM (" + newest + "))";
  }

  /**
   * Every target's next seq ({@link SqliteReads#NEXT_SEQ}) is above every seq it was ever given: in a push answer, or
   * (moved by a rotation) in its queue after some transaction.
   */
  private void assertNoSeqGivenTwice(Path db) throws Exception {
    try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + db); Statement st = c.createStatement()) {
      try (ResultSet rs = st.executeQuery("SELECT target_pubkey, max(seq) FROM items GROUP BY target_pubkey")) {
        while (rs.next()) {
          given.merge(rs.getString(1), rs.getLong(2), Math::max);
        }
      }
      try (java.sql.PreparedStatement ps = c.prepareStatement(SqliteReads.NEXT_SEQ)) {
        for (Map.Entry<String, Long> e : given.entrySet()) {
          ps.setString(1, e.getKey());
          try (ResultSet rs = ps.executeQuery()) {
            rs.next();
            assertThat(rs.getLong(1)).as("next seq of %s", e.getKey()).isGreaterThan(e.getValue());
          }
        }
      }
    }
  }

  /** Checks the counters against a recount of the items; returns the usage log's rows. */
  private static long assertUsageMatchesItems(Path db) throws Exception {
    String queueUsage = current("queue_usage", "target_pubkey", UsageLog.QUEUE);
    String senderTotals = current("sender_totals", "sender_pubkey", UsageLog.SENDER);
    try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + db); Statement st = c.createStatement()) {
      try (ResultSet rs = st.executeQuery("SELECT q.target_pubkey, q.items, q.bytes, count(i.seq),"
          + " coalesce(sum(i.bytes), 0) FROM " + queueUsage + " q LEFT JOIN items i ON i.target_pubkey = q.target_pubkey"
          + " GROUP BY q.target_pubkey")) {
        while (rs.next()) {
          assertThat(new long[] {rs.getLong(2), rs.getLong(3)}).as("queue_usage of %s", rs.getString(1))
              .containsExactly(rs.getLong(4), rs.getLong(5));
        }
      }
      try (ResultSet rs = st.executeQuery("SELECT count(*) FROM (SELECT DISTINCT target_pubkey FROM items)"
          + " WHERE target_pubkey NOT IN (SELECT target_pubkey FROM " + queueUsage + ")")) {
        rs.next();
        assertThat(rs.getLong(1)).as("targets with items but no queue_usage row").isZero();
      }
      try (ResultSet rs = st.executeQuery("SELECT t.sender_pubkey, t.items, t.bytes, (SELECT count(*) FROM items i"
          + " WHERE i.sender_pubkey = t.sender_pubkey), (SELECT coalesce(sum(bytes), 0) FROM items i"
          + " WHERE i.sender_pubkey = t.sender_pubkey) FROM " + senderTotals + " t")) {
        while (rs.next()) {
          assertThat(new long[] {rs.getLong(2), rs.getLong(3)}).as("sender_totals of %s", rs.getString(1))
              .containsExactly(rs.getLong(4), rs.getLong(5));
        }
      }
      try (ResultSet rs = st.executeQuery("SELECT count(*) FROM (SELECT DISTINCT sender_pubkey FROM items)"
          + " WHERE sender_pubkey NOT IN (SELECT sender_pubkey FROM " + senderTotals + ")")) {
        rs.next();
        assertThat(rs.getLong(1)).as("senders with items but no sender_totals row").isZero();
      }
      try (ResultSet rs = st.executeQuery("SELECT count(*) FROM usage_log")) {
        rs.next();
        return rs.getLong(1);
      }
    }
  }
}
