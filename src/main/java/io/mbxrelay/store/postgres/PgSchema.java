package io.mbxrelay.store.postgres;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;

/**
 * The PostgreSQL schema of the relay store (docs/scale-out.md "Schema"): the SQLite tables of
 * {@code io.mbxrelay.store.sqlite.Schema} with PostgreSQL types, plus the tables that several relay processes share
 * instead of per-process memory.
 *
 * <p>Differences from the SQLite schema, none visible on the wire:
 * <ul>
 *   <li>{@code meta} also holds the relay key seed ({@code relay_key_seed}), so every instance serves the same key.</li>
 *   <li>Usage counters are tables every writer updates inside its transaction: {@code queue_usage} (per target),
 *       {@code sender_usage} (per target and sender; SQLite counts these from the queue in writer memory),
 *       {@code sender_totals} (per sender), {@code store_totals} (one row per shard, summed).</li>
 *   <li>Host names are compared with {@code lower(host_name COLLATE "C")}, which folds ASCII letters only, like
 *       SQLite's {@code lower()}.</li>
 * </ul>
 *
 * <p>Versioned by {@code meta.schema_version} ({@link #VERSION}); {@link #migrate} runs under a transaction-scoped
 * advisory lock, so instances starting together migrate once.
 */
public final class PgSchema {
  private PgSchema() {}

  /** Schema version this code writes (2: the shared replay and rate tables, {@link #V2}). */
  public static final int VERSION = 2;

  /** Advisory lock keys (the first argument of {@code pg_advisory_xact_lock(int, int)}: a namespace of ours). */
  /** Advisory-lock namespace of the relay's PostgreSQL locks. */
  public static final int LOCK_NAMESPACE = 0x6d62_7872; // "mbxr"
  /** Schema creation and migration, and the open-time identity checks. */
  /** Advisory-lock key held while a store is opened or migrated. */
  public static final int LOCK_OPEN = 1;
  /** The expiry sweep: one instance sweeps at a time. */
  static final int LOCK_SWEEP = 2;
  /** The heartbeat: one instance writes it per interval. */
  static final int LOCK_HEARTBEAT = 3;

  /** Number of {@code store_totals} rows; a writer session adds to the row of its own shard. */
  static final int TOTAL_SHARDS = 16;

  /**
   * Version 1 DDL, in order. Every text column compares bytewise ({@code COLLATE "C"}), as SQLite does: keys, ISO
   * times and names then sort and match the same on any server locale.
   */
  static final List<String> V1 = List.of(
      "CREATE TABLE meta(k TEXT PRIMARY KEY, v TEXT NOT NULL)",
      "CREATE TABLE enrolments(host_pubkey TEXT PRIMARY KEY, host_name TEXT NOT NULL, owner_fp TEXT NOT NULL,"
          + " account TEXT, authorized_by TEXT, enrolled_at TEXT NOT NULL, revoked_at TEXT)",
      "CREATE INDEX enrolments_live_name ON enrolments(lower(host_name COLLATE \"C\")) WHERE revoked_at IS NULL",
      "CREATE UNIQUE INDEX enrolments_account_name ON enrolments(account, lower(host_name COLLATE \"C\"))"
          + " WHERE revoked_at IS NULL AND account IS NOT NULL",
      "CREATE INDEX enrolments_live_account ON enrolments(account) WHERE revoked_at IS NULL AND account IS NOT NULL",
      "CREATE TABLE enc_ads(host_pubkey TEXT PRIMARY KEY, host_name TEXT NOT NULL, enc_pub TEXT NOT NULL,"
          + " sig TEXT NOT NULL, at TEXT NOT NULL)",
      "CREATE TABLE enc_ad_records(host_pubkey TEXT PRIMARY KEY, record TEXT NOT NULL, sig TEXT NOT NULL,"
          + " at TEXT NOT NULL)",
      "CREATE TABLE items(target_pubkey TEXT NOT NULL, seq BIGINT NOT NULL, kind TEXT NOT NULL,"
          + " item_id TEXT NOT NULL, sender_pubkey TEXT NOT NULL, sender_host TEXT NOT NULL,"
          + " wire_hash TEXT NOT NULL, bytes BIGINT NOT NULL, accepted_at TEXT NOT NULL, expires_at TEXT,"
          + " wire BYTEA NOT NULL, PRIMARY KEY(target_pubkey, seq))",
      "CREATE INDEX items_expires ON items(expires_at) WHERE expires_at IS NOT NULL",
      "CREATE TABLE dedup(sender_pubkey TEXT NOT NULL, item_id TEXT NOT NULL, target_pubkey TEXT NOT NULL,"
          + " wire_hash TEXT NOT NULL, seq BIGINT NOT NULL, accepted_at TEXT NOT NULL,"
          + " PRIMARY KEY(sender_pubkey, item_id, target_pubkey))",
      "CREATE INDEX dedup_accepted ON dedup(accepted_at)",
      "CREATE INDEX dedup_target ON dedup(target_pubkey)",
      "CREATE TABLE seqs(target_pubkey TEXT PRIMARY KEY, next_seq BIGINT NOT NULL)",
      "CREATE TABLE acked(target_pubkey TEXT PRIMARY KEY, acked_through BIGINT NOT NULL)",
      "CREATE TABLE sender_lists(target_pubkey TEXT PRIMARY KEY, senders TEXT NOT NULL, iat TEXT NOT NULL,"
          + " record TEXT NOT NULL, sig TEXT NOT NULL)",
      "CREATE TABLE ops(id BIGSERIAL PRIMARY KEY, at TEXT NOT NULL, op TEXT NOT NULL, receipt TEXT NOT NULL)",
      "CREATE TABLE deny_list(kind TEXT NOT NULL, value TEXT NOT NULL, note TEXT NOT NULL, added_at TEXT NOT NULL,"
          + " PRIMARY KEY(kind, value))",
      "CREATE TABLE enrolment_clients(host_pubkey TEXT PRIMARY KEY, client_id TEXT NOT NULL, org TEXT,"
          + " at TEXT NOT NULL)",
      "CREATE INDEX enrolment_clients_client ON enrolment_clients(client_id)",
      "CREATE TABLE queue_usage(target_pubkey TEXT PRIMARY KEY, items BIGINT NOT NULL, bytes BIGINT NOT NULL)",
      "CREATE TABLE sender_usage(target_pubkey TEXT NOT NULL, sender_pubkey TEXT NOT NULL, items BIGINT NOT NULL,"
          + " bytes BIGINT NOT NULL, PRIMARY KEY(target_pubkey, sender_pubkey))",
      "CREATE TABLE sender_totals(sender_pubkey TEXT PRIMARY KEY, items BIGINT NOT NULL, bytes BIGINT NOT NULL)",
      "CREATE TABLE store_totals(shard INT PRIMARY KEY, items BIGINT NOT NULL, bytes BIGINT NOT NULL)",
      "CREATE TABLE damaged_items(target_pubkey TEXT NOT NULL, seq BIGINT NOT NULL, kind TEXT NOT NULL,"
          + " item_id TEXT NOT NULL, sender_pubkey TEXT NOT NULL, sender_host TEXT NOT NULL, wire_hash TEXT NOT NULL,"
          + " bytes BIGINT NOT NULL, accepted_at TEXT NOT NULL, expires_at TEXT, wire BYTEA NOT NULL,"
          + " found_at TEXT NOT NULL)",
      // Open enrolment challenges, shared so that a challenge issued by one instance is answered at another
      // (docs/scale-out.md "What is shared").
      "CREATE TABLE challenges(host_pubkey TEXT PRIMARY KEY, nonce TEXT NOT NULL, expires_at_ms BIGINT NOT NULL)",
      "CREATE INDEX challenges_expiry ON challenges(expires_at_ms)")
      .stream().map(ddl -> ddl.replace(" TEXT", " TEXT COLLATE \"C\"")).toList();

  /**
   * Version 2 DDL: state several instances share instead of per-process memory ({@link PgSharedState},
   * docs/scale-out.md "What is shared"). Every row expires; {@link PgSharedState} sweeps them. Nothing in them is
   * durable relay state: {@code mbxrelay migrate-store} copies none of it and {@code mbxrelay check} ignores it.
   */
  static final List<String> V2 = List.of(
      // state-changing hops accepted by any instance: SHA-256 of the caller's key and the decoded signature
      "CREATE TABLE hop_replays(id BYTEA PRIMARY KEY, expires_at_ms BIGINT NOT NULL)",
      "CREATE INDEX hop_replays_expiry ON hop_replays(expires_at_ms)",
      // each instance's rate window per key (kind 1: enrolment calls per address, 2: pushes per sender)
      "CREATE TABLE rate_windows(kind SMALLINT NOT NULL, key TEXT NOT NULL, instance TEXT NOT NULL,"
          + " calls INT NOT NULL, first_expires_ms BIGINT NOT NULL, last_expires_ms BIGINT NOT NULL,"
          + " PRIMARY KEY(kind, key, instance))",
      "CREATE INDEX rate_windows_expiry ON rate_windows(last_expires_ms)")
      .stream().map(ddl -> ddl.replace(" TEXT", " TEXT COLLATE \"C\"")).toList();

  /**
   * Creates the schema on an empty database or migrates an older one, inside one transaction under the open lock.
   *
   * @param c a connection in auto-commit mode (left in auto-commit mode)
   * @return the version found before (0 = the database had no relay schema)
   * @throws SQLException on failure (nothing of the migration stays)
   * @throws IllegalStateException when the database holds a newer schema than this code knows
   */
  public static int migrate(Connection c) throws SQLException {
    c.setAutoCommit(false);
    try (Statement st = c.createStatement()) {
      st.execute("SELECT pg_advisory_xact_lock(" + LOCK_NAMESPACE + ", " + LOCK_OPEN + ")");
      int found = version(c);
      if (found > VERSION) {
        throw new IllegalStateException("the database holds relay schema version " + found
            + ", newer than this mbxrelay knows (" + VERSION + "): run the newer mbxrelay");
      }
      if (found == 0) {
        for (String ddl : V1) {
          st.execute(ddl);
        }
        try (PreparedStatement ps = c.prepareStatement("INSERT INTO store_totals(shard, items, bytes) VALUES(?, 0, 0)")) {
          for (int i = 0; i < TOTAL_SHARDS; i++) {
            ps.setInt(1, i);
            ps.addBatch();
          }
          ps.executeBatch();
        }
        st.execute("INSERT INTO meta(k, v) VALUES('schema_version', '1')");
      }
      if (found < 2) {
        // version 1 -> 2 (issue 20 items 6 and 7): new tables only; an instance of the older code refuses the newer
        // schema at start, so upgrade every instance together
        for (String ddl : V2) {
          st.execute(ddl);
        }
      }
      if (found < VERSION) {
        st.execute("UPDATE meta SET v = '" + VERSION + "' WHERE k = 'schema_version'");
      }
      c.commit();
      return found;
    } catch (SQLException | RuntimeException e) {
      c.rollback();
      throw e;
    } finally {
      c.setAutoCommit(true);
    }
  }

  /** {@code meta.schema_version}, or 0 when there is no {@code meta} table. */
  static int version(Connection c) throws SQLException {
    try (Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT to_regclass('meta') IS NOT NULL")) {
      rs.next();
      if (!rs.getBoolean(1)) {
        return 0;
      }
    }
    try (Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT v FROM meta WHERE k = 'schema_version'")) {
      if (!rs.next()) {
        throw new IllegalStateException("the database has a meta table without schema_version: not a relay store");
      }
      return Integer.parseInt(rs.getString(1));
    }
  }
}
