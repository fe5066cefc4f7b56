package io.mbxrelay.store.sqlite;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Map;

/**
 * The usage log (schema v5): where the writer records a transaction's new {@code queue_usage} and
 * {@code sender_totals} values when it touches many keys, instead of rewriting one scattered table page per key in
 * every transaction (issue 18: with 100,000 hosts those rows were about half of what the writer wrote per command).
 *
 * <p>Each row holds one key's <em>absolute</em> value after its transaction ({@code kind} {@link #QUEUE}: a target's
 * queue usage, {@link #SENDER}: a sender's totals). Rows are appended in id order, so a transaction's rows share a
 * few pages at the end of the table. The writer folds the values into their tables in key order, a slice per
 * transaction ({@link WriterCounters}), and deletes the rows a finished sweep has superseded. Whenever the log has
 * rows, every usage change since its oldest row is in it, so each key's newest row is its true value: folding the log
 * (at open, at a clean close) or replaying it into memory (after a rollback) is exact and can be repeated.
 *
 * <p>Readers outside the writer ({@code queue_stats} gauges) see the tables, which lag the log by at most one sweep.
 */
final class UsageLog {
  private UsageLog() {}

  /** {@code kind} of a target's queue usage row ({@code queue_usage}). */
  static final int QUEUE = 0;
  /** {@code kind} of a sender's totals row ({@code sender_totals}). */
  static final int SENDER = 1;

  /** The table, created at every open when missing (idempotent). */
  static final String TABLE = "CREATE TABLE IF NOT EXISTS usage_log(id INTEGER PRIMARY KEY, kind INTEGER NOT NULL,"
      + " key TEXT NOT NULL, items INTEGER NOT NULL, bytes INTEGER NOT NULL)";

  /** The in-memory key of a logged value: {@code 'q'} + target or {@code 's'} + sender (so one sorted map holds both). */
  static String mapKey(int kind, String key) {
    return (kind == QUEUE ? "q" : "s") + key;
  }

  /** The {@code kind} of an in-memory key. */
  static int kindOf(String mapKey) {
    return mapKey.charAt(0) == 'q' ? QUEUE : SENDER;
  }

  /** Empties the log. */
  static final String DELETE_ALL = "DELETE FROM usage_log";

  private static final String NEWEST = " FROM usage_log WHERE id IN (SELECT max(id) FROM usage_log GROUP BY kind, key)"
      + " AND kind = ";

  /** Writes each key's newest logged value into its table and empties the log: three statements, in order. */
  static final java.util.List<String> FOLD_ALL = java.util.List.of(
      "INSERT INTO queue_usage(target_pubkey, items, bytes) SELECT key, items, bytes" + NEWEST + QUEUE
          + " ORDER BY key ON CONFLICT(target_pubkey) DO UPDATE SET items = excluded.items, bytes = excluded.bytes",
      "INSERT INTO sender_totals(sender_pubkey, items, bytes) SELECT key, items, bytes" + NEWEST + SENDER
          + " ORDER BY key ON CONFLICT(sender_pubkey) DO UPDATE SET items = excluded.items, bytes = excluded.bytes",
      DELETE_ALL);

  /**
   * {@code queue_usage} as the committed state has it, as a subquery {@code (target_pubkey, items, bytes)}: the table's
   * rows overlaid with each target's newest log row.
   */
  static final String QUEUE_USAGE_NOW = "(SELECT target_pubkey, items, bytes FROM queue_usage WHERE target_pubkey NOT IN"
      + " (SELECT key FROM usage_log WHERE kind = " + QUEUE + ") UNION ALL SELECT key, items, bytes" + NEWEST + QUEUE
      + ")";

  /** Queued items and bytes of the whole store with the log overlaid. */
  static final String STORE_TOTALS_NOW = "SELECT coalesce(sum(items), 0), coalesce(sum(bytes), 0) FROM "
      + QUEUE_USAGE_NOW;

  /** {@link io.mbxrelay.store.jdbc.SqlCatalogue#ACCOUNT_USAGE} with the log overlaid: {@code (account)}. */
  static final String ACCOUNT_USAGE_NOW = "SELECT coalesce(sum(q.items), 0), coalesce(sum(q.bytes), 0)"
      + " FROM enrolments e JOIN " + QUEUE_USAGE_NOW + " q ON q.target_pubkey = e.host_pubkey WHERE e.account = ?"
      + " AND e.revoked_at IS NULL";

  /** The log in id order: {@code (id, kind, key, items, bytes)}. */
  static final String REPLAY = "SELECT id, kind, key, items, bytes FROM usage_log ORDER BY id";

  /** The largest row id (0 when empty). */
  static final String LAST_ID = "SELECT coalesce(max(id), 0) FROM usage_log";

  /** Deletes the rows a finished sweep superseded: {@code (through id)}. */
  static final String DELETE_THROUGH = "DELETE FROM usage_log WHERE id <= ?";

  /**
   * Folds the whole log ({@link #FOLD_ALL}) in the caller's transaction: at open, before anything reads the tables.
   *
   * @param conn a connection inside an open write transaction
   * @return the log rows folded (0 when the log was empty)
   * @throws SQLException when a statement fails (the caller rolls back; the log is then still there)
   */
  static int foldAll(Connection conn) throws SQLException {
    try (Statement st = conn.createStatement()) {
      int rows;
      try (ResultSet rs = st.executeQuery("SELECT count(*) FROM usage_log")) {
        rs.next();
        rows = rs.getInt(1);
      }
      if (rows > 0) {
        for (String sql : FOLD_ALL) {
          st.executeUpdate(sql);
        }
      }
      return rows;
    }
  }

  /**
   * Reads the log into {@code into} (newest value per key wins).
   *
   * @param replay prepared {@link #REPLAY}
   * @param into map key ({@link #mapKey}) → {items, bytes}
   * @return the largest row id, 0 when the log is empty
   * @throws SQLException when the read fails
   */
  static long replay(java.sql.PreparedStatement replay, Map<String, long[]> into) throws SQLException {
    long last = 0;
    try (ResultSet rs = replay.executeQuery()) {
      while (rs.next()) {
        last = rs.getLong(1);
        into.put(mapKey(rs.getInt(2), rs.getString(3)), new long[] {rs.getLong(4), rs.getLong(5)});
      }
    }
    return last;
  }
}
