package io.mbxrelay.store.jdbc;

/**
 * Every SQL statement the SQLite and PostgreSQL backends both run, written once (docs/architecture.md "Store: ledger
 * and backends"). The tables have the same shape on both (store/sqlite/Schema, store/postgres/PgSchema); where the
 * two dialects really differ the text is in {@link Dialect}. Parameters are JDBC {@code ?} placeholders, named in
 * each constant's comment in binding order. Constants only: nothing is built per call.
 */
public final class SqlCatalogue {
  private SqlCatalogue() {}

  /** The columns of an enrolment row, in {@code Enrolment}'s order. */
  public static final String ENROLMENT_COLUMNS = "host_pubkey, host_name, owner_fp, account, authorized_by,"
      + " enrolled_at, revoked_at";
  /** The columns of an item row, in {@code ItemRow}'s order. */
  public static final String ITEM_COLUMNS = "target_pubkey, seq, kind, item_id, sender_pubkey, sender_host, wire,"
      + " wire_hash, bytes, accepted_at, expires_at";

  // ---- enrolments ----

  /** An enrolment row, live or revoked: {@code (host_pubkey)}. */
  public static final String ENROLMENT = "SELECT " + ENROLMENT_COLUMNS + " FROM enrolments WHERE host_pubkey = ?";
  /** Every enrolment row. */
  public static final String ALL_ENROLMENTS = "SELECT " + ENROLMENT_COLUMNS + " FROM enrolments";
  /**
   * Inserts an enrolment or replaces it as live: {@code (host_pubkey, host_name, owner_fp, account, authorized_by,
   * enrolled_at)}.
   */
  public static final String UPSERT_ENROLMENT = "INSERT INTO enrolments(" + ENROLMENT_COLUMNS + ")"
      + " VALUES(?, ?, ?, ?, ?, ?, NULL) ON CONFLICT(host_pubkey) DO UPDATE SET host_name = excluded.host_name,"
      + " owner_fp = excluded.owner_fp, account = excluded.account, authorized_by = excluded.authorized_by,"
      + " enrolled_at = excluded.enrolled_at, revoked_at = NULL";
  /** Live enrolments. */
  public static final String LIVE_ENROLMENT_COUNT = "SELECT count(*) FROM enrolments WHERE revoked_at IS NULL";
  /** Live keys, ascending. */
  public static final String LIVE_KEYS = "SELECT host_pubkey FROM enrolments WHERE revoked_at IS NULL"
      + " ORDER BY host_pubkey";
  /** Revokes one live key: {@code (at, host_pubkey)}. */
  public static final String REVOKE = "UPDATE enrolments SET revoked_at = ? WHERE host_pubkey = ? AND revoked_at IS NULL";
  /** Revokes the live keys enrolled by a client, returning them: {@code (at, client_id)}. */
  public static final String REVOKE_BY_CLIENT = "UPDATE enrolments SET revoked_at = ? WHERE revoked_at IS NULL"
      + " AND host_pubkey IN (SELECT host_pubkey FROM enrolment_clients WHERE client_id = ?) RETURNING host_pubkey";
  /** The client id a key was enrolled by: {@code (host_pubkey)}. */
  public static final String CLIENT_ID = "SELECT client_id FROM enrolment_clients WHERE host_pubkey = ?";
  /** {@code (host_pubkey, client_id, org, at)}. */
  public static final String RECORD_CLIENT = "INSERT INTO enrolment_clients(host_pubkey, client_id, org, at)"
      + " VALUES(?, ?, ?, ?) ON CONFLICT(host_pubkey) DO UPDATE SET client_id = excluded.client_id,"
      + " org = excluded.org, at = excluded.at";
  /** {@code (to, at, from)}. */
  public static final String COPY_CLIENT = "INSERT INTO enrolment_clients(host_pubkey, client_id, org, at)"
      + " SELECT ?, client_id, org, ? FROM enrolment_clients WHERE host_pubkey = ? ON CONFLICT(host_pubkey)"
      + " DO UPDATE SET client_id = excluded.client_id, org = excluded.org, at = excluded.at";

  // ---- deny list ----

  /** {@code (kind, value)}. */
  public static final String DENIED = "SELECT 1 FROM deny_list WHERE kind = ? AND value = ?";
  /** {@code (kind, value, note, added_at)}; 0 rows when the entry exists. */
  public static final String ADD_DENY = "INSERT INTO deny_list(kind, value, note, added_at) VALUES(?, ?, ?, ?)"
      + " ON CONFLICT(kind, value) DO NOTHING";
  /** {@code (kind, value)}. */
  public static final String REMOVE_DENY = "DELETE FROM deny_list WHERE kind = ? AND value = ?";
  /** The whole list, oldest first. */
  public static final String DENY_LIST = "SELECT kind, value, note, added_at FROM deny_list"
      + " ORDER BY added_at, kind, value";

  // ---- sender allowlists and enc-key ads ----

  /** {@code (target_pubkey)}. */
  public static final String ALLOWLIST = "SELECT senders FROM sender_lists WHERE target_pubkey = ?";
  /** {@code (target_pubkey)}. */
  public static final String ALLOWLIST_EXISTS = "SELECT 1 FROM sender_lists WHERE target_pubkey = ?";
  /** {@code (target_pubkey)}. */
  public static final String ALLOWLIST_IAT = "SELECT iat FROM sender_lists WHERE target_pubkey = ?";
  /** {@code (target_pubkey, senders, iat, record, sig)}. */
  public static final String PUT_ALLOWLIST = "INSERT INTO sender_lists(target_pubkey, senders, iat, record, sig)"
      + " VALUES(?, ?, ?, ?, ?) ON CONFLICT(target_pubkey) DO UPDATE SET senders = excluded.senders,"
      + " iat = excluded.iat, record = excluded.record, sig = excluded.sig";
  /** {@code (target_pubkey)}. */
  public static final String DELETE_ALLOWLIST = "DELETE FROM sender_lists WHERE target_pubkey = ?";
  /** {@code (new target_pubkey, old target_pubkey)}. */
  public static final String MOVE_ALLOWLIST = "UPDATE sender_lists SET target_pubkey = ? WHERE target_pubkey = ?";
  /** {@code (host_pubkey, host_name, enc_pub, sig, at)}. */
  public static final String PUT_ENC_AD_V1 = "INSERT INTO enc_ads(host_pubkey, host_name, enc_pub, sig, at)"
      + " VALUES(?, ?, ?, ?, ?) ON CONFLICT(host_pubkey) DO UPDATE SET host_name = excluded.host_name,"
      + " enc_pub = excluded.enc_pub, sig = excluded.sig, at = excluded.at";
  /** {@code (host_pubkey)}. */
  public static final String ENC_AD_V2 = "SELECT record FROM enc_ad_records WHERE host_pubkey = ?";
  /** {@code (host_pubkey, record, sig, at)}. */
  public static final String PUT_ENC_AD_V2 = "INSERT INTO enc_ad_records(host_pubkey, record, sig, at)"
      + " VALUES(?, ?, ?, ?) ON CONFLICT(host_pubkey) DO UPDATE SET record = excluded.record, sig = excluded.sig,"
      + " at = excluded.at";
  /** {@code (host_pubkey)}. */
  public static final String DELETE_ENC_AD_V1 = "DELETE FROM enc_ads WHERE host_pubkey = ?";
  /** {@code (host_pubkey)}. */
  public static final String DELETE_ENC_AD_V2 = "DELETE FROM enc_ad_records WHERE host_pubkey = ?";
  /** A live host's name and both ads: {@code (host_pubkey)}. */
  public static final String ENC_ADS = "SELECT e.host_name, e.host_pubkey, a.enc_pub, a.sig, r.record, r.sig"
      + " FROM enrolments e LEFT JOIN enc_ads a ON a.host_pubkey = e.host_pubkey"
      + " LEFT JOIN enc_ad_records r ON r.host_pubkey = e.host_pubkey"
      + " WHERE e.host_pubkey = ? AND e.revoked_at IS NULL";

  // ---- seqs, acks, host state ----

  /**
   * The next seq of a target (no row: none allocated yet): {@code (target_pubkey)}. PostgreSQL keeps it exact; a v5
   * SQLite store keeps only a floor there and reads {@code store.sqlite.SqliteReads.NEXT_SEQ}.
   */
  public static final String NEXT_SEQ = "SELECT next_seq FROM seqs WHERE target_pubkey = ?";
  /** Next seq, acked position and both ads of a host (PostgreSQL; see {@link #NEXT_SEQ}): {@code (host_pubkey × 4)}. */
  public static final String HOST_STATE = "SELECT (SELECT next_seq FROM seqs WHERE target_pubkey = ?),"
      + " (SELECT acked_through FROM acked WHERE target_pubkey = ?),"
      + " (SELECT enc_pub FROM enc_ads WHERE host_pubkey = ?),"
      + " (SELECT record FROM enc_ad_records WHERE host_pubkey = ?)";

  // ---- dedup ----

  /** {@code (sender_pubkey, item_id, target_pubkey, wire_hash, seq, accepted_at)}; 0 rows when the key exists. */
  public static final String INSERT_DEDUP = "INSERT INTO dedup(sender_pubkey, item_id, target_pubkey, wire_hash, seq,"
      + " accepted_at) VALUES(?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING";
  /** {@code (sender_pubkey, item_id, target_pubkey)}. */
  public static final String DEDUP = "SELECT wire_hash, seq, accepted_at FROM dedup WHERE sender_pubkey = ?"
      + " AND item_id = ? AND target_pubkey = ?";
  /** {@code (target_pubkey)}. */
  public static final String DELETE_DEDUP_OF_TARGET = "DELETE FROM dedup WHERE target_pubkey = ?";

  // ---- items ----

  /** A pull page's plan ({@link JdbcPage}): {@code (target, after, limit + 1)}. */
  public static final String PAGE_PLAN = "SELECT seq, bytes FROM items WHERE target_pubkey = ? AND seq > ?"
      + " ORDER BY seq LIMIT ?";
  /** A pull page's rows ({@link JdbcPage}): {@code (target, after, through)}. */
  public static final String PAGE_FETCH = "SELECT seq, kind, item_id, sender_pubkey, wire, sender_host, wire_hash"
      + " FROM items WHERE target_pubkey = ? AND seq > ? AND seq <= ? ORDER BY seq";

  /** A target's queue in seq order: {@code (target_pubkey)}. */
  public static final String QUEUE = "SELECT " + ITEM_COLUMNS + " FROM items WHERE target_pubkey = ? ORDER BY seq";
  /** {@code (target_pubkey, seq)}. */
  public static final String ITEM = "SELECT " + ITEM_COLUMNS + " FROM items WHERE target_pubkey = ? AND seq = ?";
  /** Items due for expiry (no wire): {@code (at, limit)}. */
  public static final String EXPIRING = "SELECT target_pubkey, seq, kind, item_id, sender_pubkey, sender_host, NULL,"
      + " wire_hash, bytes, accepted_at, expires_at FROM items WHERE expires_at IS NOT NULL AND expires_at <= ?"
      + " ORDER BY expires_at, target_pubkey, seq LIMIT ?";
  /** Deletes and returns {@code (sender_pubkey, bytes)}: {@code (target_pubkey, through)}. */
  public static final String DELETE_THROUGH = "DELETE FROM items WHERE target_pubkey = ? AND seq <= ?"
      + " RETURNING sender_pubkey, bytes";
  /** Deletes and returns {@code (sender_pubkey, bytes)}: {@code (target_pubkey, seq)}. */
  public static final String DELETE_ITEM = "DELETE FROM items WHERE target_pubkey = ? AND seq = ?"
      + " RETURNING sender_pubkey, bytes";
  /** Deletes and returns {@code (sender_pubkey, bytes)}: {@code (target_pubkey)}. */
  public static final String DELETE_QUEUE = "DELETE FROM items WHERE target_pubkey = ? RETURNING sender_pubkey, bytes";
  /** Copies an item into {@code damaged_items}: {@code (found_at, target_pubkey, seq)}. */
  public static final String COPY_TO_DAMAGED = "INSERT INTO damaged_items(" + ITEM_COLUMNS + ", found_at) SELECT "
      + ITEM_COLUMNS + ", ? FROM items WHERE target_pubkey = ? AND seq = ?";

  // ---- usage counters ----

  /** {@code (target_pubkey)}. */
  public static final String QUEUE_USAGE = "SELECT items, bytes FROM queue_usage WHERE target_pubkey = ?";
  /** {@code (sender_pubkey)}. */
  public static final String SENDER_TOTAL = "SELECT items, bytes FROM sender_totals WHERE sender_pubkey = ?";
  /** Items and bytes queued for the live hosts of an account: {@code (account)}. */
  public static final String ACCOUNT_USAGE = "SELECT coalesce(sum(q.items), 0), coalesce(sum(q.bytes), 0)"
      + " FROM enrolments e JOIN queue_usage q ON q.target_pubkey = e.host_pubkey WHERE e.account = ?"
      + " AND e.revoked_at IS NULL";
  /** Totals and the largest queue. */
  public static final String QUEUE_STATS = "SELECT coalesce(sum(items), 0), coalesce(sum(bytes), 0),"
      + " coalesce(max(items), 0), coalesce(max(bytes), 0) FROM queue_usage";

  // ---- ops log ----

  /** {@code (at, op, receipt)}. */
  public static final String INSERT_OP = "INSERT INTO ops(at, op, receipt) VALUES(?, ?, ?)";
  /** Keeps the newest 1,000 rows. */
  public static final String TRIM_OPS = "DELETE FROM ops WHERE id <= (SELECT max(id) FROM ops) - 1000";

  /** A read that touches no table (readiness). */
  public static final String PROBE = "SELECT 1";
}
