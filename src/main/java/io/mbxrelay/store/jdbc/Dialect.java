package io.mbxrelay.store.jdbc;

/**
 * The statements whose text differs between SQLite and PostgreSQL, and why ({@link SqlCatalogue} holds the rest).
 * Each text is built once, when the enum is initialised.
 *
 * <ul>
 *   <li>case folding of host names: SQLite's {@code lower} folds ASCII only; PostgreSQL's folds by the database
 *       collation unless told {@code COLLATE "C"}, which folds ASCII only too;</li>
 *   <li>locking: PostgreSQL writers share-lock the enrolment rows they read (a rotation elsewhere waits), SQLite has one
 *       writer;</li>
 *   <li>{@code max(a, b)} of two values is {@code greatest} in PostgreSQL;</li>
 *   <li>a physical row id is {@code rowid} in SQLite, {@code ctid} in PostgreSQL;</li>
 *   <li>an update that would break a key: SQLite {@code UPDATE OR IGNORE}, PostgreSQL a {@code NOT EXISTS} guard.</li>
 * </ul>
 */
public enum Dialect {
  SQLITE(
      "",
      "max",
      "rowid",
      "UPDATE OR IGNORE dedup SET target_pubkey = ?, seq = ? WHERE sender_pubkey = ? AND item_id = ?"
          + " AND target_pubkey = ?",
      "UPDATE OR IGNORE dedup SET target_pubkey = ? WHERE target_pubkey = ?",
      "lower(host_name) = lower(?)"),
  POSTGRES(
      " FOR SHARE",
      "greatest",
      "ctid",
      "UPDATE dedup SET target_pubkey = ?, seq = ? WHERE sender_pubkey = ? AND item_id = ? AND target_pubkey = ?"
          + " AND NOT EXISTS (SELECT 1 FROM dedup d WHERE d.sender_pubkey = ? AND d.item_id = ?"
          + " AND d.target_pubkey = ?)",
      "UPDATE dedup SET target_pubkey = ? WHERE target_pubkey = ? AND NOT EXISTS (SELECT 1 FROM dedup d"
          + " WHERE d.sender_pubkey = dedup.sender_pubkey AND d.item_id = dedup.item_id AND d.target_pubkey = ?)",
      "lower(host_name COLLATE \"C\") = lower(? COLLATE \"C\")");

  /**
   * Whether a live host of the account (not null) other than a key carries the name, case-insensitively:
   * {@code (account, host_name, except_key)}.
   */
  public final String nameTaken;
  /** The writer's read of an enrolment row: {@code (host_pubkey)}. */
  public final String writerEnrolment;
  /** Raises a target's acked position, returning it: {@code (target_pubkey, through)}. */
  public final String raiseAcked;
  /** Deletes dedup rows accepted before a time whose item is gone: {@code (before, limit)}. */
  public final String pruneDedup;
  /**
   * Rotation: points one dedup row at the new target unless it has the key already. SQLite
   * {@code (to, seq, sender, item, from)}; PostgreSQL the same, then {@code (sender, item, to)}.
   */
  public final String moveDedup;
  /** Rotation: points the remaining dedup rows at the new target where it has no such key. SQLite {@code (to, from)}; PostgreSQL {@code (to, from, to)}. */
  public final String moveRemainingDedup;
  /** Live enrolments with a name, newest first: {@code (host_name, limit)}. */
  public final String liveByName;

  Dialect(String lockShare, String greatest, String rowId, String moveDedup,
      String moveRemainingDedup, String nameMatch) {
    this.nameTaken = "SELECT 1 FROM enrolments WHERE account = ? AND " + nameMatch + " AND revoked_at IS NULL"
        + " AND host_pubkey <> ?";
    this.writerEnrolment = SqlCatalogue.ENROLMENT + lockShare;
    this.raiseAcked = "INSERT INTO acked(target_pubkey, acked_through) VALUES(?, ?) ON CONFLICT(target_pubkey)"
        + " DO UPDATE SET acked_through = " + greatest + "(acked.acked_through, excluded.acked_through)"
        + " RETURNING acked_through";
    this.pruneDedup = "DELETE FROM dedup WHERE " + rowId + " IN (SELECT d." + rowId + " FROM dedup d"
        + " WHERE d.accepted_at < ? AND NOT EXISTS (SELECT 1 FROM items i WHERE i.target_pubkey = d.target_pubkey"
        + " AND i.seq = d.seq) LIMIT ?)";
    this.moveDedup = moveDedup;
    this.moveRemainingDedup = moveRemainingDedup;
    this.liveByName = "SELECT " + SqlCatalogue.ENROLMENT_COLUMNS + " FROM enrolments WHERE " + nameMatch
        + " AND revoked_at IS NULL ORDER BY enrolled_at DESC LIMIT ?";
  }
}
