package io.mbxrelay.store.sqlite;

import io.mbxrelay.wire.IsoTime;
import io.mbxrelay.wire.KeySpelling;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Rewrites host keys stored in a non-canonical base64 spelling to the canonical one (issue 11 item 4; {@link
 * KeySpelling}). The relay now canonicalises every key at the edge, but a store written before (by an earlier
 * mbxrelay or by the reference, which compared keys as strings) may hold a key under another of its 4 spellings —
 * typically a host that enrolled a second spelling of its own key, e.g. to get around a revocation. Runs at every open
 * inside the open's {@code BEGIN IMMEDIATE} transaction; idempotent.
 *
 * <p><b>Guard.</b> Every key column gets its value from an enrolment: an item's target and sender, a dedup row, a
 * seq, ack, ad or allowlist row all name a key that was enrolled under exactly that string (pushes and hops look
 * enrolments up by the exact string, and enrolments are never deleted). So a store whose {@code enrolments} table has
 * no non-canonical key has none anywhere, and the migration costs one scan of that table (at most
 * {@code limits.maxEnrolments} short rows; the enrolment cache reads the whole table at open anyway) and nothing else.
 *
 * <p><b>Merges.</b> When both a spelling {@code b} and its canonical {@code c} have rows (a key enrolled twice):
 * <ul>
 *   <li>enrolments: {@code c} is kept and revoked when either row was (at the earlier time) — a revocation under any
 *       spelling is a revocation of the key; {@code b} is deleted; the token client row likewise;</li>
 *   <li>enc-key ads and allowlists: the newer one (by {@code at} / {@code iat}) is kept under {@code c};</li>
 *   <li>queue: when {@code c} already has a queue (or seqs or an ack), {@code b}'s items are appended after
 *       {@code c}'s head in their order with new seqs (so nothing is hidden below an ack of {@code c}) and their dedup
 *       rows follow; otherwise the queue, its seqs and its ack are renamed unchanged;</li>
 *   <li>dedup rows of both spellings for one item: the one moved from {@code b} replaces the other.</li>
 * </ul>
 * Tables keyed by {@code host_pubkey}/{@code target_pubkey} are changed per key through their primary key; the
 * columns no index leads with ({@code items.sender_pubkey}, {@code dedup}) are rewritten in one SQL pass per table.
 * Signed records ({@code enc_ad_records.record}, {@code sender_lists.record}) are kept as signed.
 */
final class KeySpellingMigration {
  private static final Logger LOG = LoggerFactory.getLogger(KeySpellingMigration.class);
  private static final String ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

  private KeySpellingMigration() {}

  /** SQL: whether column {@code c} holds a key field whose 43rd character has its 2 unused bits set. */
  static String nonCanonical(String c) {
    return "(length(" + c + ") = 44 AND substr(" + c + ", 44, 1) = '=' AND (instr('" + ALPHABET + "', substr(" + c
        + ", 43, 1)) - 1) % 4 > 0)";
  }

  /** SQL: the canonical spelling of a key in column {@code c} (only meaningful where {@link #nonCanonical} holds). */
  static String canonical(String c) {
    return "(substr(" + c + ", 1, 42) || substr('" + ALPHABET + "', ((instr('" + ALPHABET + "', substr(" + c
        + ", 43, 1)) - 1) / 4) * 4 + 1, 1) || '=')";
  }

  /**
   * Rewrites every non-canonical key.
   *
   * @param conn the writer connection inside an open transaction
   * @return the number of enrolment keys rewritten (0 on a clean store)
   * @throws SQLException when a step fails (the caller rolls the whole open back)
   */
  static int run(Connection conn) throws SQLException {
    Map<String, String> bad = new LinkedHashMap<>();
    try (Statement st = conn.createStatement();
        ResultSet rs = st.executeQuery("SELECT host_pubkey FROM enrolments WHERE " + nonCanonical("host_pubkey"))) {
      while (rs.next()) {
        String b = rs.getString(1);
        KeySpelling.canonical(b).filter(c -> !c.equals(b)).ifPresent(c -> bad.put(b, c));
      }
    }
    if (bad.isEmpty()) {
      return 0;
    }
    try (Statement st = conn.createStatement()) {
      st.execute("CREATE TEMP TABLE IF NOT EXISTS key_seq_map(target_pubkey TEXT NOT NULL, old_seq INTEGER NOT NULL,"
          + " new_seq INTEGER NOT NULL, PRIMARY KEY(target_pubkey, old_seq))");
      st.execute("DELETE FROM temp.key_seq_map");
    }
    for (Map.Entry<String, String> e : bad.entrySet()) {
      String b = e.getKey();
      String c = e.getValue();
      enrolment(conn, b, c);
      byKey(conn, "enrolment_clients", b, c, null);
      byKey(conn, "enc_ads", b, c, "at");
      byKey(conn, "enc_ad_records", b, c, "at");
      allowlist(conn, b, c);
      queue(conn, b, c);
    }
    try (Statement st = conn.createStatement()) {
      st.executeUpdate("UPDATE items SET sender_pubkey = " + canonical("sender_pubkey") + " WHERE "
          + nonCanonical("sender_pubkey"));
      st.executeUpdate("UPDATE OR REPLACE dedup SET"
          + " seq = coalesce((SELECT m.new_seq FROM temp.key_seq_map m WHERE m.target_pubkey = dedup.target_pubkey"
          + " AND m.old_seq = dedup.seq), seq),"
          + " sender_pubkey = CASE WHEN " + nonCanonical("sender_pubkey") + " THEN " + canonical("sender_pubkey")
          + " ELSE sender_pubkey END,"
          + " target_pubkey = CASE WHEN " + nonCanonical("target_pubkey") + " THEN " + canonical("target_pubkey")
          + " ELSE target_pubkey END"
          + " WHERE " + nonCanonical("sender_pubkey") + " OR " + nonCanonical("target_pubkey"));
      st.execute("DROP TABLE temp.key_seq_map");
    }
    senderTotals(conn, bad.values());
    LOG.warn("rewrote host keys stored in a non-canonical base64 spelling [keys: {}]; a key enrolled under two"
        + " spellings is now one enrolment, revoked if either was", bad.size());
    return bad.size();
  }

  /**
   * Per-sender totals over all targets ({@code sender_totals}, kept by the writer where that table exists): the rows
   * of every spelling of a rewritten key are recomputed from {@code items} under the canonical key (one pass).
   */
  private static void senderTotals(Connection conn, java.util.Collection<String> canonicalKeys) throws SQLException {
    try (PreparedStatement ps = conn.prepareStatement(
        "SELECT 1 FROM sqlite_master WHERE type='table' AND name='sender_totals'"); ResultSet rs = ps.executeQuery()) {
      if (!rs.next()) {
        return;
      }
    }
    try (Statement st = conn.createStatement()) {
      st.executeUpdate("DELETE FROM sender_totals WHERE " + nonCanonical("sender_pubkey"));
    }
    String marks = String.join(",", java.util.Collections.nCopies(canonicalKeys.size(), "?"));
    List<String> keys = new ArrayList<>(canonicalKeys);
    update(conn, "DELETE FROM sender_totals WHERE sender_pubkey IN (" + marks + ")", keys.toArray(new String[0]));
    update(conn, "INSERT INTO sender_totals(sender_pubkey, items, bytes) SELECT sender_pubkey, count(*),"
        + " coalesce(sum(bytes), 0) FROM items WHERE sender_pubkey IN (" + marks + ") GROUP BY sender_pubkey",
        keys.toArray(new String[0]));
  }

  private static void enrolment(Connection conn, String b, String c) throws SQLException {
    String bRevoked;
    try (PreparedStatement ps = conn.prepareStatement("SELECT revoked_at FROM enrolments WHERE host_pubkey=?")) {
      ps.setString(1, b);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        bRevoked = rs.getString(1);
      }
    }
    if (!exists(conn, "enrolments", "host_pubkey", c)) {
      update(conn, "UPDATE enrolments SET host_pubkey=? WHERE host_pubkey=?", c, b);
      return;
    }
    if (bRevoked != null) {
      // revoked under any spelling = revoked; keep the earlier time
      update(conn, "UPDATE enrolments SET revoked_at=? WHERE host_pubkey=? AND (revoked_at IS NULL OR revoked_at>?)",
          bRevoked, c, bRevoked);
    }
    update(conn, "DELETE FROM enrolments WHERE host_pubkey=?", b);
  }

  /** A table keyed by {@code host_pubkey}: renamed, or on a clash the newer row by {@code timeColumn} is kept. */
  private static void byKey(Connection conn, String table, String b, String c, String timeColumn)
      throws SQLException {
    if (!exists(conn, table, "host_pubkey", b)) {
      return;
    }
    if (exists(conn, table, "host_pubkey", c)) {
      boolean bNewer = false;
      if (timeColumn != null) {
        try (PreparedStatement ps = conn.prepareStatement("SELECT (SELECT " + timeColumn + " FROM " + table
            + " WHERE host_pubkey=?) > (SELECT " + timeColumn + " FROM " + table + " WHERE host_pubkey=?)")) {
          ps.setString(1, b);
          ps.setString(2, c);
          try (ResultSet rs = ps.executeQuery()) {
            bNewer = rs.next() && rs.getInt(1) == 1;
          }
        }
      }
      if (!bNewer) {
        update(conn, "DELETE FROM " + table + " WHERE host_pubkey=?", b);
        return;
      }
      update(conn, "DELETE FROM " + table + " WHERE host_pubkey=?", c);
    }
    update(conn, "UPDATE " + table + " SET host_pubkey=? WHERE host_pubkey=?", c, b);
  }

  /** {@code sender_lists}: the list with the later parsed {@code iat} is kept under {@code c}. */
  private static void allowlist(Connection conn, String b, String c) throws SQLException {
    String bIat = iat(conn, b);
    if (bIat == null) {
      return;
    }
    String cIat = iat(conn, c);
    if (cIat != null) {
      OptionalLong bt = IsoTime.parse(bIat);
      OptionalLong ct = IsoTime.parse(cIat);
      boolean bNewer = bt.isPresent() && (ct.isEmpty() || bt.getAsLong() > ct.getAsLong());
      update(conn, "DELETE FROM sender_lists WHERE target_pubkey=?", bNewer ? c : b);
      if (!bNewer) {
        return;
      }
    }
    update(conn, "UPDATE sender_lists SET target_pubkey=? WHERE target_pubkey=?", c, b);
  }

  private static String iat(Connection conn, String key) throws SQLException {
    try (PreparedStatement ps = conn.prepareStatement("SELECT iat FROM sender_lists WHERE target_pubkey=?")) {
      ps.setString(1, key);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() ? rs.getString(1) : null;
      }
    }
  }

  /** The queue of {@code b} (items, seqs, ack, usage) joins {@code c}'s; see the class comment. */
  private static void queue(Connection conn, String b, String c) throws SQLException {
    boolean cHasQueue = exists(conn, "items", "target_pubkey", c) || exists(conn, "seqs", "target_pubkey", c)
        || exists(conn, "acked", "target_pubkey", c);
    if (!cHasQueue) {
      update(conn, "UPDATE items SET target_pubkey=? WHERE target_pubkey=?", c, b);
      update(conn, "UPDATE seqs SET target_pubkey=? WHERE target_pubkey=?", c, b);
      update(conn, "UPDATE acked SET target_pubkey=? WHERE target_pubkey=?", c, b);
    } else {
      long next = Math.max(1, Math.max(longOf(conn, "SELECT max(seq) + 1 FROM items WHERE target_pubkey=?", c),
          Math.max(longOf(conn, "SELECT next_seq FROM seqs WHERE target_pubkey=?", c),
              longOf(conn, "SELECT acked_through + 1 FROM acked WHERE target_pubkey=?", c))));
      // b's own next seq, taken before its items move (schema v5: floor, ack or highest queued seq + 1, the largest)
      long bNext = Math.max(longOf(conn, "SELECT next_seq FROM seqs WHERE target_pubkey=?", b),
          Math.max(longOf(conn, "SELECT acked_through + 1 FROM acked WHERE target_pubkey=?", b),
              longOf(conn, "SELECT max(seq) + 1 FROM items WHERE target_pubkey=?", b)));
      List<Long> seqs = new ArrayList<>();
      try (PreparedStatement ps = conn.prepareStatement("SELECT seq FROM items WHERE target_pubkey=? ORDER BY seq")) {
        ps.setString(1, b);
        try (ResultSet rs = ps.executeQuery()) {
          while (rs.next()) {
            seqs.add(rs.getLong(1));
          }
        }
      }
      try (PreparedStatement move = conn.prepareStatement(
              "UPDATE items SET target_pubkey=?, seq=? WHERE target_pubkey=? AND seq=?");
          PreparedStatement map = conn.prepareStatement(
              "INSERT OR REPLACE INTO temp.key_seq_map(target_pubkey, old_seq, new_seq) VALUES (?, ?, ?)")) {
        for (long old : seqs) {
          long fresh = next++;
          move.setString(1, c);
          move.setLong(2, fresh);
          move.setString(3, b);
          move.setLong(4, old);
          move.executeUpdate();
          map.setString(1, b);
          map.setLong(2, old);
          map.setLong(3, fresh);
          map.executeUpdate();
        }
      }
      update(conn, "INSERT INTO seqs(target_pubkey, next_seq) VALUES (?, ?) ON CONFLICT(target_pubkey)"
          + " DO UPDATE SET next_seq = max(next_seq, excluded.next_seq)", c, Long.toString(Math.max(next, bNext)));
      update(conn, "DELETE FROM seqs WHERE target_pubkey=?", b);
      update(conn, "DELETE FROM acked WHERE target_pubkey=?", b); // c's ack stays; b's items now lie above it
    }
    update(conn, "DELETE FROM queue_usage WHERE target_pubkey IN (?, ?)", b, c);
    update(conn, "INSERT INTO queue_usage(target_pubkey, items, bytes) SELECT target_pubkey, count(*),"
        + " coalesce(sum(bytes), 0) FROM items WHERE target_pubkey=? GROUP BY target_pubkey", c);
  }

  private static boolean exists(Connection conn, String table, String column, String key) throws SQLException {
    try (PreparedStatement ps = conn.prepareStatement("SELECT 1 FROM " + table + " WHERE " + column + "=? LIMIT 1")) {
      ps.setString(1, key);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next();
      }
    }
  }

  private static long longOf(Connection conn, String sql, String key) throws SQLException {
    try (PreparedStatement ps = conn.prepareStatement(sql)) {
      ps.setString(1, key);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() ? rs.getLong(1) : 0;
      }
    }
  }

  private static void update(Connection conn, String sql, String... args) throws SQLException {
    try (PreparedStatement ps = conn.prepareStatement(sql)) {
      for (int i = 0; i < args.length; i++) {
        ps.setString(i + 1, args[i]);
      }
      ps.executeUpdate();
    }
  }
}
