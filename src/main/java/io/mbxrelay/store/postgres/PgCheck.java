package io.mbxrelay.store.postgres;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.mbxrelay.wire.Hashes;
import io.mbxrelay.wire.Json;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;

/**
 * {@code mbxrelay check} on a PostgreSQL store (docs/scale-out.md "Backup, restore, check"): reads only, safe while the
 * relays run. Checks the schema version, that the relay key and epoch are stored, that every usage counter equals its
 * rows, that no target's counter is at or below a stored seq; with {@code full}, every item's wire bytes against its
 * {@code wire_hash}. The database's own page checks are PostgreSQL's business ({@code pg_amcheck}).
 */
public final class PgCheck {
  private PgCheck() {}

  /**
   * Runs the check.
   *
   * @param s connection settings
   * @param full also hash every item's wire
   * @return the receipt: {@code ok}, {@code problems}, counts
   * @throws SQLException when the database cannot be read
   */
  public static ObjectNode check(PgStore.Settings s, boolean full) throws SQLException {
    long started = System.nanoTime();
    ObjectNode r = Json.MAPPER.createObjectNode().put("v", 1).put("type", "relay-store-check")
        .put("store", s.url().replaceAll("\\?.*$", ""));
    ArrayNode problems = r.putArray("problems");
    try (Connection c = DriverManager.getConnection(s.url(), s.properties("mbxrelay-check"))) {
      c.setAutoCommit(false);
      c.setTransactionIsolation(Connection.TRANSACTION_REPEATABLE_READ); // one snapshot for every comparison
      c.setReadOnly(true);
      int version = PgSchema.version(c);
      r.put("schema_version", version);
      if (version == 0) {
        problems.add("no relay store in this database");
      } else {
        for (String k : new String[] {"relay_key", "relay_pubkey", "epoch"}) {
          if (PgStore.meta(c, k).isEmpty()) {
            problems.add("meta." + k + " is missing");
          }
        }
        String[][] comparisons = {
            {"queue_usage", "SELECT count(*) FROM (SELECT target_pubkey, count(*) n, sum(bytes) b FROM items GROUP BY"
                + " target_pubkey) i FULL JOIN (SELECT * FROM queue_usage WHERE items <> 0 OR bytes <> 0) q USING"
                + " (target_pubkey) WHERE i.n IS DISTINCT FROM q.items OR i.b IS DISTINCT FROM q.bytes"},
            {"sender_usage", "SELECT count(*) FROM (SELECT target_pubkey, sender_pubkey, count(*) n, sum(bytes) b FROM"
                + " items GROUP BY 1, 2) i FULL JOIN (SELECT * FROM sender_usage WHERE items <> 0 OR bytes <> 0) q"
                + " USING (target_pubkey, sender_pubkey) WHERE i.n IS DISTINCT FROM q.items"
                + " OR i.b IS DISTINCT FROM q.bytes"},
            {"sender_totals", "SELECT count(*) FROM (SELECT sender_pubkey, count(*) n, sum(bytes) b FROM items GROUP"
                + " BY 1) i FULL JOIN (SELECT * FROM sender_totals WHERE items <> 0 OR bytes <> 0) q"
                + " USING (sender_pubkey) WHERE i.n IS DISTINCT FROM q.items OR i.b IS DISTINCT FROM q.bytes"},
            {"store_totals", "SELECT count(*) FROM (SELECT count(*) n, coalesce(sum(bytes), 0) b FROM items) i,"
                + " (SELECT sum(items) n, sum(bytes) b FROM store_totals) q WHERE i.n <> q.n OR i.b <> q.b"},
            {"seqs", "SELECT count(*) FROM (SELECT target_pubkey, max(seq) m FROM items GROUP BY 1) i"
                + " LEFT JOIN seqs s USING (target_pubkey) WHERE s.next_seq IS NULL OR s.next_seq <= i.m"}};
        try (Statement st = c.createStatement()) {
          for (String[] cmp : comparisons) {
            try (ResultSet rs = st.executeQuery(cmp[1])) {
              rs.next();
              if (rs.getLong(1) != 0) {
                problems.add(cmp[0] + " disagrees with the items in " + rs.getLong(1) + " rows");
              }
            }
          }
          try (ResultSet rs = st.executeQuery("SELECT count(*) FROM items")) {
            rs.next();
            r.put("items", rs.getLong(1));
          }
          if (full) {
            long checked = 0;
            st.setFetchSize(500);
            try (ResultSet rs = st.executeQuery("SELECT target_pubkey, seq, wire, wire_hash FROM items")) {
              while (rs.next()) {
                checked++;
                if (!Hashes.sha256Hex(rs.getBytes(3)).equals(rs.getString(4))) {
                  problems.add("item " + rs.getString(1) + " seq " + rs.getLong(2) + ": wire does not match wire_hash");
                }
              }
            }
            r.put("items_hashed", checked);
          }
        }
      }
      c.rollback();
    }
    r.put("ok", problems.isEmpty());
    r.put("took_ms", (System.nanoTime() - started) / 1_000_000);
    return r;
  }
}
