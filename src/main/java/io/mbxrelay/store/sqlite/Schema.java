package io.mbxrelay.store.sqlite;

import java.util.List;

/**
 * The SQLite schema of the relay store, version {@link io.mbxrelay.store.RelayStore#SCHEMA_VERSION} (docs/protocol.md §5
 * "Tables"). Tables later features fill (enc-key ads, sender lists, ops) are created from the start.
 *
 * <p>Deviations from the reference, none visible on the wire: {@code items.wire} is the last column, so reading any
 * other column never walks a blob's overflow pages; the sender index also covers {@code bytes}, and an extra
 * {@code (target_pubkey, seq, bytes)} index lets quota sums and pull page planning read only the index.
 */
final class Schema {
  private Schema() {}

  /**
   * v3: operator deny list. {@code kind} is {@code host_fp} (docs/protocol.md §1 fingerprint) or {@code client_id} (account
   * token claim); entries are kept until an operator removes them.
   */
  static final String DENY_LIST = "CREATE TABLE deny_list(kind TEXT NOT NULL, value TEXT NOT NULL,"
      + " note TEXT NOT NULL, added_at TEXT NOT NULL, PRIMARY KEY(kind, value))";

  /**
   * v3: the account-token {@code client_id} and {@code org} an enrolment was granted with, so a {@code client_id}
   * deny entry finds its enrolments. A separate table rather than new {@code enrolments} columns keeps the
   * reference's enrolment row shape (and every reader of it) unchanged.
   */
  static final String ENROLMENT_CLIENTS = "CREATE TABLE enrolment_clients(host_pubkey TEXT PRIMARY KEY,"
      + " client_id TEXT NOT NULL, org TEXT, at TEXT NOT NULL)";

  /**
   * v5: {@code seqs.next_seq} is a floor, not the next seq itself. A push writes no {@code seqs} row (it was one
   * scattered page per target per transaction, issue 18); instead every deleted item above its target's
   * {@code acked_through} raises the target's floor past its seq, in the deleting statement's own transaction, whatever
   * deleted it (expiry, a rotation, an operator's {@code sqlite3}); an ack raises {@code acked_through} before it
   * deletes, so it writes no floor. So every seq ever given out is still queued, at most {@code acked_through} (which
   * never falls, and never passes the head) or below the floor, and a target's next seq is
   * {@code max(floor, acked_through + 1, highest queued seq + 1)} ({@link SqliteReads#NEXT_SEQ}) in any snapshot:
   * never reused, never lower than a seq a host was given.
   */
  static final String SEQ_FLOOR_TRIGGER = "CREATE TRIGGER items_seq_floor AFTER DELETE ON items"
      + " WHEN old.seq > coalesce((SELECT acked_through FROM acked WHERE target_pubkey = old.target_pubkey), 0) BEGIN"
      + " INSERT INTO seqs(target_pubkey, next_seq) VALUES(old.target_pubkey, old.seq + 1)"
      + " ON CONFLICT(target_pubkey) DO UPDATE SET next_seq = excluded.next_seq"
      + " WHERE excluded.next_seq > seqs.next_seq; END";

  /** DDL of the current version, in order. */
  static final List<String> CURRENT = List.of(
      "CREATE TABLE meta(k TEXT PRIMARY KEY, v TEXT NOT NULL)",
      "CREATE TABLE enrolments(host_pubkey TEXT PRIMARY KEY, host_name TEXT NOT NULL, owner_fp TEXT NOT NULL,"
          + " account TEXT, authorized_by TEXT, enrolled_at TEXT NOT NULL, revoked_at TEXT)",
      "CREATE INDEX enrolments_live_name ON enrolments(lower(host_name)) WHERE revoked_at IS NULL",
      "CREATE UNIQUE INDEX enrolments_account_name ON enrolments(account, lower(host_name))"
          + " WHERE revoked_at IS NULL AND account IS NOT NULL",
      "CREATE TABLE enc_ads(host_pubkey TEXT PRIMARY KEY, host_name TEXT NOT NULL, enc_pub TEXT NOT NULL,"
          + " sig TEXT NOT NULL, at TEXT NOT NULL)",
      "CREATE TABLE enc_ad_records(host_pubkey TEXT PRIMARY KEY, record TEXT NOT NULL, sig TEXT NOT NULL,"
          + " at TEXT NOT NULL)",
      "CREATE TABLE items(target_pubkey TEXT NOT NULL, seq INTEGER NOT NULL, kind TEXT NOT NULL,"
          + " item_id TEXT NOT NULL, sender_pubkey TEXT NOT NULL, sender_host TEXT NOT NULL,"
          + " wire_hash TEXT NOT NULL, bytes INTEGER NOT NULL, accepted_at TEXT NOT NULL, expires_at TEXT,"
          + " wire BLOB NOT NULL, PRIMARY KEY(target_pubkey, seq))",
      "CREATE INDEX items_expires ON items(expires_at) WHERE expires_at IS NOT NULL",
      "CREATE TABLE dedup(sender_pubkey TEXT NOT NULL, item_id TEXT NOT NULL, target_pubkey TEXT NOT NULL,"
          + " wire_hash TEXT NOT NULL, seq INTEGER NOT NULL, accepted_at TEXT NOT NULL,"
          + " PRIMARY KEY(item_id, sender_pubkey, target_pubkey))", // v4: item id first (Migrations.v3ToV4)
      "CREATE INDEX dedup_accepted ON dedup(accepted_at)",
      "CREATE TABLE seqs(target_pubkey TEXT PRIMARY KEY, next_seq INTEGER NOT NULL)",
      "CREATE TABLE acked(target_pubkey TEXT PRIMARY KEY, acked_through INTEGER NOT NULL)",
      "CREATE TABLE sender_lists(target_pubkey TEXT PRIMARY KEY, senders TEXT NOT NULL, iat TEXT NOT NULL,"
          + " record TEXT NOT NULL, sig TEXT NOT NULL)",
      "CREATE TABLE ops(id INTEGER PRIMARY KEY AUTOINCREMENT, at TEXT NOT NULL, op TEXT NOT NULL,"
          + " receipt TEXT NOT NULL)",
      // ---- v3 (trust): deny list and the token client of an enrolment (docs/protocol.md §7.8 "Revocation") ----
      DENY_LIST,
      ENROLMENT_CLIENTS,
      // ---- v5: the seq floor (Migrations.v4ToV5) ----
      SEQ_FLOOR_TRIGGER);


  /**
   * Queue usage per target, one row per target that ever had a queue: what quota checks, the owner quota and the queue
   * gauges read instead of summing a queue. The writer keeps it exact: it writes each touched target's change once per
   * transaction (not per item, and no triggers).
   */
  static final String QUEUE_USAGE = "CREATE TABLE IF NOT EXISTS queue_usage(target_pubkey TEXT PRIMARY KEY,"
      + " items INTEGER NOT NULL, bytes INTEGER NOT NULL)";

  /**
   * Each sender's queued items and bytes over all targets (issue 11 item 8: the per-sender total and, summed, the
   * store-wide bound), kept by the writer like {@code queue_usage}: one write per touched sender per transaction.
   */
  static final String SENDER_TOTALS = "CREATE TABLE IF NOT EXISTS sender_totals(sender_pubkey TEXT PRIMARY KEY,"
      + " items INTEGER NOT NULL, bytes INTEGER NOT NULL)";

  /**
   * Items set aside because their wire no longer matched their {@code wire_hash} when a pull read them (issue 10 item
   * 1): kept for the operator, never served. The columns of {@code items} plus when it was found.
   */
  static final String DAMAGED_ITEMS = "CREATE TABLE IF NOT EXISTS damaged_items(target_pubkey TEXT NOT NULL,"
      + " seq INTEGER NOT NULL, kind TEXT NOT NULL, item_id TEXT NOT NULL, sender_pubkey TEXT NOT NULL,"
      + " sender_host TEXT NOT NULL, wire_hash TEXT NOT NULL, bytes INTEGER NOT NULL, accepted_at TEXT NOT NULL,"
      + " expires_at TEXT, wire BLOB NOT NULL, found_at TEXT NOT NULL)";

  /** Recomputes {@code sender_totals} from {@code items} (one pass over the table). */
  static final List<String> SENDER_TOTALS_BACKFILL = List.of(
      "DELETE FROM sender_totals",
      "INSERT INTO sender_totals(sender_pubkey, items, bytes) SELECT sender_pubkey, count(*), coalesce(sum(bytes), 0)"
          + " FROM items GROUP BY sender_pubkey");

  /** Recomputes {@code queue_usage} from {@code items} (when the table was just created on an existing store). */
  static final List<String> QUEUE_USAGE_BACKFILL = List.of(
      "DELETE FROM queue_usage",
      "INSERT INTO queue_usage(target_pubkey, items, bytes) SELECT target_pubkey, count(*), coalesce(sum(bytes), 0)"
          + " FROM items GROUP BY target_pubkey");

  /**
   * Indexes and derived tables brought to this version's shape at every open (idempotent, no table rewritten), so a
   * store written by the reference or by an earlier mbxrelay gains them and a store opened again by an earlier
   * mbxrelay still works (it re-creates what it needs). Earlier versions kept {@code queue_usage} and
   * {@code sender_usage} with triggers on every item row; the writer now keeps usage in memory and writes
   * {@code queue_usage} once per touched target per transaction (issue 9: two triggers per item cost as much as the
   * item insert); sender shares are counted from the target's rows when first needed. The secondary indexes by
   * sender and by target are gone: each cost a random index page per target per transaction (dropping them took the
   * raw insert rate from 22,000 to 31,000 items/s in the issue 9 measurements); pull page planning reads
   * {@code (seq, bytes)} through the primary key.
   */
  static final List<String> DERIVED = List.of(
      "DROP TRIGGER IF EXISTS items_usage_insert",
      "DROP TRIGGER IF EXISTS items_usage_delete",
      "DROP TRIGGER IF EXISTS items_usage_update",
      "DROP TABLE IF EXISTS sender_usage",
      "DROP INDEX IF EXISTS items_sender_target",
      "DROP INDEX IF EXISTS items_target_seq_bytes",
      "DROP INDEX IF EXISTS items_target_seq_bytes_sender");
}
