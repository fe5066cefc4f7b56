package io.mbxrelay.store.spi;

import io.mbxrelay.store.EnrolmentCache;
import io.mbxrelay.store.StoreException;
import io.mbxrelay.store.model.DedupRow;
import io.mbxrelay.store.model.Enrolment;
import io.mbxrelay.store.model.ItemRow;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * The table operations a store backend gives the {@link RelayLedger} (docs/architecture.md "Store: ledger and
 * backends"). The ledger holds every protocol rule (admission order, wire texts, the seq rule, quotas, expiry
 * notices, rotation); a backend only stores and finds rows, keeps its usage counters equal to its rows, and makes a
 * transaction durable. A backend knows nothing of HTTP, signatures or reject texts.
 *
 * <p><b>Transactions.</b> The ledger calls {@link #begin()}, then table operations, then {@link #commit()} (or
 * {@link #rollback()}); every table operation between them belongs to that one transaction, and what the ledger
 * answers is handed out only after {@code commit()} returned. Savepoints nest ({@link #savepoint()} …
 * {@link #release()} / {@link #rollbackToSavepoint()}): rolling back to a savepoint must undo every row and every
 * counter change since it, including seq advances ({@link #useSeq}). A backend that several processes write at once
 * must make the transaction behave as if it ran alone for the rows it touched: the per-target seq counter read by
 * {@link #nextSeq} stays locked (or the transaction fails to commit) until commit; quota counters read by the usage
 * methods are the committed values plus this transaction's own changes, and a concurrent change to them must either
 * wait or fail the transaction with {@link StoreException#conflict}; the ledger then rolls back and runs the whole
 * batch again.
 *
 * <p><b>Errors.</b> Every operation throws {@link StoreException}: {@code UNAVAILABLE} (I/O, disk full, busy: the whole
 * transaction is given up), {@code CORRUPT} (fail-stop), {@code INTERNAL} (a bug or a constraint the ledger did not
 * expect: only the running command is rolled back to its savepoint and answered with the error), or a
 * {@linkplain StoreException#retryable() retryable} conflict.
 *
 * <p><b>Threading.</b> One backend session is used by one thread at a time (the writer); a backend for several writer
 * threads gives each its own session and its own ledger.
 */
public interface LedgerBackend extends AutoCloseable {

  // ---- identity ----

  /** The relay public key this store is pinned to (base64, 44 chars); every instance on the store serves it. */
  String relayPubkey();

  /** The store epoch (a UUID v4 string, docs/protocol.md §5), fixed while the store is open. */
  String epoch();

  /**
   * The committed live enrolments in memory, for hop checks off the writer thread. The backend updates it after each
   * {@link #commit()} that changed enrolment rows and on {@link #refresh()}.
   *
   * @return the shared cache
   */
  EnrolmentCache enrolmentCache();

  // ---- transaction control ----

  /** Begins a write transaction (SQLite: {@code BEGIN IMMEDIATE}, the write lock). */
  void begin() throws StoreException;

  /** Opens a (nested) savepoint. */
  void savepoint() throws StoreException;

  /** Releases the innermost savepoint, keeping its changes in the transaction. */
  void release() throws StoreException;

  /** Undoes every change since the innermost savepoint (rows, counters, seq advances) and releases it. */
  void rollbackToSavepoint() throws StoreException;

  /**
   * Makes the transaction durable (SQLite: WAL fsync under {@code synchronous=FULL}; PostgreSQL:
   * {@code synchronous_commit=on}). Deferred writes (seq counters, usage counters) are written first, in the same
   * transaction. Returns only after the commit is durable.
   */
  void commit() throws StoreException;

  /** Abandons the transaction; nothing of it stays. Never throws. */
  void rollback();

  /** Picks up changes other writers committed (cached rows are dropped). Outside a transaction. */
  void refresh() throws StoreException;

  /**
   * Readiness probe of the write path that writes nothing: takes the write lock, reads one row, rolls back.
   *
   * @return true when the lock was taken and the row read
   */
  boolean probeWriter() throws StoreException;

  // ---- meta and ops log ----

  /** Writes the heartbeat (ms since the epoch) of this relay (docs/protocol.md §5). */
  void putHeartbeat(long nowMs) throws StoreException;

  /** Appends to the ops log, keeping the newest 1,000 entries. */
  void logOp(String op, String receiptJson, String atIso) throws StoreException;

  // ---- enrolments ----

  /** The enrolment of a key, live or revoked, as this transaction sees it. */
  Optional<Enrolment> enrolment(String hostPubkey) throws StoreException;

  /** Live enrolments in the store. */
  long liveEnrolmentCount() throws StoreException;

  /** True when another live key of {@code account} carries {@code hostName} (case-insensitive). */
  boolean nameTaken(String account, String hostName, String exceptKey) throws StoreException;

  /** Inserts or replaces (by key) a live enrolment row ({@code revokedAt} is ignored: the row is live). */
  void upsertEnrolment(Enrolment row) throws StoreException;

  /** Marks a live key revoked; false (no effect) when it is not live. */
  boolean revoke(String hostPubkey, String atIso) throws StoreException;

  /** True when one of the keys has a revoked enrolment row. */
  boolean anyRevoked(List<String> keys) throws StoreException;

  /** The keys of every live enrolment (deny by fingerprint scans them). */
  List<String> liveKeys() throws StoreException;

  /** The token client recorded for an enrolment, or empty. */
  Optional<String> clientIdOf(String hostPubkey) throws StoreException;

  /** Records (replaces) the token client of an enrolment. */
  void recordClient(String hostPubkey, String clientId, String org, String atIso) throws StoreException;

  /** Copies the token client record of {@code from} to {@code to}, when {@code from} has one. */
  void copyClient(String from, String to, String atIso) throws StoreException;

  /** Revokes the live enrolments recorded with this token client; returns how many. */
  int revokeByClient(String clientId, String atIso) throws StoreException;

  // ---- deny list ----

  /** True when the entry exists. */
  boolean denied(String kind, String value) throws StoreException;

  /** Adds an entry; false when it existed (unchanged). */
  boolean addDeny(String kind, String value, String note, String atIso) throws StoreException;

  /** Removes an entry; false when there was none. */
  boolean removeDeny(String kind, String value) throws StoreException;

  // ---- sender allowlists and enc-key ads ----

  /** A target's allowlist with each key in its canonical spelling, or empty when it has none. */
  Optional<Set<String>> allowlist(String target) throws StoreException;

  /** The stored list's {@code iat} text, or empty when there is no list. */
  Optional<String> allowlistIat(String target) throws StoreException;

  /** Stores (replaces) a target's allowlist. */
  void putAllowlist(String target, List<String> senders, String iat, String record, String sig)
      throws StoreException;

  /** Rotation: the old key's list (if any) replaces the new key's; every list naming an old spelling names new. */
  void moveAllowlists(String oldKey, List<String> oldSpellings, String newKey) throws StoreException;

  /** Stores (replaces) a v1 enc-key ad. */
  void putEncAdV1(String hostPubkey, String hostName, String encPub, String sig, String atIso) throws StoreException;

  /** The stored v2 ad record, or empty. */
  Optional<String> encAdV2(String hostPubkey) throws StoreException;

  /** Stores (replaces) a v2 enc-key ad record. */
  void putEncAdV2(String hostPubkey, String record, String sig, String atIso) throws StoreException;

  /** Drops both ads of a key. */
  void dropEncAds(String hostPubkey) throws StoreException;

  // ---- seqs (the rule cur = max(next_seq, now_ms) is the ledger's) ----

  /**
   * The next seq the target would get ({@code 1} when none was ever allocated). A concurrent backend locks the
   * target's counter here until the transaction ends, so two transactions never allocate the same seq. Also called
   * outside a transaction ({@link RelayLedger#headSeq}): then a plain read of the committed value.
   */
  long nextSeq(String target) throws StoreException;

  /**
   * Whether this backend locks per-target rows until COMMIT (several writers on one database): then the ledger calls
   * {@link #lockTargets} with each batch's targets before the batch's first command. False (the default) for a
   * backend with one writer, which then pays nothing for it.
   */
  default boolean locksTargets() {
    return false;
  }

  /**
   * Locks the counters of {@code targets}, in the order given (ascending {@link String} order, the canonical lock
   * order shared by every writer: issue 20 item 3), as {@link #nextSeq} would one by one. A target without a counter
   * row gets one when it is a live enrolment; any other key is left to {@link #nextSeq} (its push is refused, or it
   * locks one more target later: the rare rest the ledger's retries cover). Called only when {@link #locksTargets()};
   * inside a transaction.
   *
   * @param targets distinct target keys, ascending
   */
  default void lockTargets(java.util.SortedSet<String> targets) throws StoreException {
    // one writer: nothing to order
  }

  /** Records that {@code seq} was allocated to the target: {@code next_seq = seq + 1}; never moves it back. */
  void useSeq(String target, long seq) throws StoreException;

  // ---- dedup (a unique key (sender, item id, target)) ----

  /** Inserts the dedup row unless one with the same key exists; true when inserted. */
  boolean insertDedup(DedupRow row) throws StoreException;

  /** The dedup row of (sender, item id, target), or empty. */
  Optional<DedupRow> dedup(String sender, String itemId, String target) throws StoreException;

  /**
   * Rotation: points the dedup row of (sender, item, from) at {@code to} with {@code newSeq}; when {@code to} already
   * has that row, nothing changes.
   */
  void moveDedup(String sender, String itemId, String from, String to, long newSeq) throws StoreException;

  /** Rotation: points the remaining rows of {@code from} at {@code to} (rows {@code to} has win), drops the rest. */
  void moveRemainingDedup(String from, String to) throws StoreException;

  /** Deletes up to {@code maxRows} dedup rows accepted before {@code beforeIso} whose item is gone. */
  int pruneDedup(String beforeIso, int maxRows) throws StoreException;

  // ---- items (every change counted in the usage counters, in the same transaction) ----

  /**
   * Inserts an item row and counts it for its target, its sender, the target's account (while the target is live)
   * and the store.
   *
   * @param target the target's enrolment as the ledger read it (a target without a row: key only, no account)
   * @param item the row
   */
  void insertItem(Enrolment target, ItemRow item) throws StoreException;

  /** Deletes the target's items with {@code seq <= through}, uncounting them; returns how many. */
  int deleteThrough(String target, long through) throws StoreException;

  /** Deletes one item, uncounting it; true when it existed. */
  boolean deleteItem(String target, long seq) throws StoreException;

  /** Every item of a target in seq order (rotation moves them; bounded by the queue caps). */
  List<ItemRow> queue(String target) throws StoreException;

  /** Deletes every item of a target, uncounting them; returns how many. */
  int deleteQueue(String target) throws StoreException;

  /** The stored item, or empty. */
  Optional<ItemRow> item(String target, long seq) throws StoreException;

  /** Moves an item into {@code damaged_items} (kept for analysis) and out of the queue, uncounting it. */
  void setAside(String target, long seq, String foundAtIso) throws StoreException;

  /** Sweep: up to {@code maxRows} items with {@code expires_at <= atIso}, by expires_at, target, seq (no wire). */
  List<ItemRow> expiring(String atIso, int maxRows) throws StoreException;

  /** {@code acked_through = max(stored, through)}; returns the stored value after. */
  long raiseAcked(String target, long through) throws StoreException;

  // ---- usage counters (committed + this transaction's changes) ----

  /** Items and bytes queued for a target. */
  Usage targetUsage(String target) throws StoreException;

  /** Items and bytes one sender holds in a target's queue. */
  Usage senderShare(String target, String sender) throws StoreException;

  /** Items and bytes queued for the live enrolments of an account. */
  Usage accountUsage(String account) throws StoreException;

  /** Items and bytes one sender holds over all targets. */
  Usage senderTotal(String sender) throws StoreException;

  /** Items and bytes of the whole store. */
  Usage storeTotals() throws StoreException;

  /**
   * Queued items and bytes.
   *
   * @param items rows
   * @param bytes wire bytes
   */
  record Usage(long items, long bytes) {
    /** Nothing queued. */
    public static final Usage NONE = new Usage(0, 0);
  }

  /** Closes the backend session (releases the write connection). */
  @Override
  void close();
}
