package io.mbxrelay.store.sqlite;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;

/**
 * Schema migrations (docs/protocol.md §7.2: "migrate older versions in a transaction; a migration keeps the epoch"). Runs
 * inside the caller's open {@code BEGIN IMMEDIATE} transaction, so a failed migration leaves the store untouched.
 */
final class Migrations {
  private Migrations() {}

  /**
   * Brings a store from {@code from} up to the current version.
   *
   * @param conn the writer connection inside an open transaction
   * @param from the stored version (≥ 1, &lt; current)
   * @throws SQLException when a step fails (the caller rolls back)
   */
  static void migrate(Connection conn, int from) throws SQLException {
    if (from == 1) {
      v1ToV2(conn);
    }
    if (from <= 2) {
      v2ToV3(conn);
    }
    if (from <= 3) {
      v3ToV4(conn);
    }
    if (from <= 4) {
      v4ToV5(conn);
    }
  }

  /**
   * v4 → v5: the seq floor trigger ({@link Schema#SEQ_FLOOR_TRIGGER}). A v4 writer kept {@code seqs.next_seq} exact, so
   * every existing row is already a valid floor; no row changes.
   */
  private static void v4ToV5(Connection conn) throws SQLException {
    try (Statement st = conn.createStatement()) {
      st.execute(Schema.SEQ_FLOOR_TRIGGER.replace("CREATE TRIGGER ", "CREATE TRIGGER IF NOT EXISTS "));
    }
  }

  /**
   * v3 → v4: {@code dedup} rebuilt with its key in the order {@code (item_id, sender_pubkey, target_pubkey)} (the same
   * columns and rows). Item ids are ULIDs (time-ordered), so new rows land at the end of the key's index instead of
   * in one place per sender: a transaction of items from many senders dirtied one index page per sender, and that was
   * most of the write-ahead log of a small push (issue 18: the writer's time per single-item push 106 → 81 µs in the
   * microbenchmark, docs/performance.md). Every lookup names all three columns, so none gets slower.
   */
  private static void v3ToV4(Connection conn) throws SQLException {
    String create = Schema.CURRENT.stream().filter(s -> s.startsWith("CREATE TABLE dedup(")).findFirst().orElseThrow();
    String index = Schema.CURRENT.stream().filter(s -> s.startsWith("CREATE INDEX dedup_")).findFirst().orElseThrow();
    String columns = "sender_pubkey, item_id, target_pubkey, wire_hash, seq, accepted_at";
    try (Statement st = conn.createStatement()) {
      st.execute("ALTER TABLE dedup RENAME TO dedup_v3");
      st.execute(create);
      st.execute("INSERT INTO dedup(" + columns + ") SELECT " + columns
          + " FROM dedup_v3 ORDER BY item_id, sender_pubkey, target_pubkey");
      st.execute("DROP TABLE dedup_v3"); // its accepted_at index with it
      st.execute(index);
    }
  }

  /** v2 → v3 (trust): adds the deny list and the enrolment clients tables; no existing row changes. */
  private static void v2ToV3(Connection conn) throws SQLException {
    try (Statement st = conn.createStatement()) {
      st.execute(Schema.DENY_LIST.replace("CREATE TABLE ", "CREATE TABLE IF NOT EXISTS "));
      st.execute(Schema.ENROLMENT_CLIENTS.replace("CREATE TABLE ", "CREATE TABLE IF NOT EXISTS "));
    }
  }

  /**
   * v1 → v2 (docs/protocol.md §5): {@code items} recreated with a BLOB {@code wire} column (v1 stored text), the v1 global
   * unique-name index dropped (names are labels; unique only inside an account), and the v2 indexes created.
   */
  private static void v1ToV2(Connection conn) throws SQLException {
    try (Statement st = conn.createStatement()) {
      st.execute("DROP INDEX IF EXISTS enrolments_name_unique");
      st.execute("ALTER TABLE items RENAME TO items_v1");
      st.execute(Schema.CURRENT.stream().filter(s -> s.startsWith("CREATE TABLE items(")).findFirst().orElseThrow());
      st.execute("INSERT INTO items(target_pubkey, seq, kind, item_id, sender_pubkey, sender_host, wire, wire_hash,"
          + " bytes, accepted_at, expires_at) SELECT target_pubkey, seq, kind, item_id, sender_pubkey, sender_host,"
          + " CAST(wire AS BLOB), wire_hash, bytes, accepted_at, expires_at FROM items_v1");
      st.execute("DROP TABLE items_v1");
      for (String ddl : Schema.CURRENT) {
        if (ddl.startsWith("CREATE INDEX items_") || ddl.startsWith("CREATE INDEX enrolments_")
            || ddl.startsWith("CREATE UNIQUE INDEX enrolments_")) {
          st.execute(ddl.replace("CREATE INDEX ", "CREATE INDEX IF NOT EXISTS ")
              .replace("CREATE UNIQUE INDEX ", "CREATE UNIQUE INDEX IF NOT EXISTS "));
        }
      }
      for (String ddl : Schema.CURRENT) {
        if (ddl.startsWith("CREATE TABLE ")) {
          st.execute(ddl.replace("CREATE TABLE ", "CREATE TABLE IF NOT EXISTS "));
        }
      }
    }
  }
}
