package io.mbxrelay.host;

import java.sql.SQLException;
import java.util.List;
import java.util.Optional;

/**
 * Typed SQL on the host store's {@code outbox} and {@code drafts} tables (docs/host-library.md). Each method is one
 * statement on the store's connection: the caller holds the store lock and, where several must commit together,
 * runs them inside one {@link HostStore#tx}. Times are epoch ms.
 */
final class OutboxRows {

  private final HostStore store;

  OutboxRows(HostStore store) {
    this.store = store;
  }

  /** Queues a message waiting for its peer's encryption key (plaintext envelope JSON, never sent as is). */
  void insertDraft(String relay, String msgId, String targetPubkey, String envelopeJson, String lastError, long now)
      throws SQLException {
    store.update("INSERT INTO drafts(relay, msg_id, target_pubkey, envelope, last_error, next_at, created_at)"
        + " VALUES(?, ?, ?, ?, ?, ?, ?)", relay, msgId, targetPubkey, envelopeJson, lastError, now, now);
  }

  /**
   * Queues a sealed envelope as {@code pending}, due now ({@code wireHash}: SHA-256 hex of {@code wire};
   * {@code encPub}: the key it is sealed for and {@code plainJson}: the plaintext envelope, both null for bytes the
   * application sealed).
   */
  void insertEnvelope(String relay, String msgId, String targetPubkey, byte[] wire, String wireHash, String encPub,
      String plainJson, long now) throws SQLException {
    store.update("INSERT INTO outbox(relay, kind, item_id, msg_id, target_pubkey, wire, wire_hash, state,"
        + " next_at, created_at, enc_pub, plain) VALUES(?, 'envelope', ?, ?, ?, ?, ?, 'pending', ?, ?, ?, ?)", relay,
        msgId, msgId, targetPubkey, wire, wireHash, now, now, encPub, plainJson);
  }

  /**
   * Due pending envelopes that could be resealed (the relay cannot hold their bytes, the plaintext is kept):
   * {@code [id, target_pubkey, enc_pub, plain]}, oldest first, at most {@code limit}.
   */
  List<String[]> resealable(String relay, long now, int limit) throws SQLException {
    return store.query("SELECT id, target_pubkey, enc_pub, plain FROM outbox WHERE relay=? AND kind='envelope' AND"
        + " state='pending' AND unsure=0 AND plain IS NOT NULL AND enc_pub IS NOT NULL AND next_at<=? ORDER BY id"
        + " LIMIT ?", rs -> new String[] {rs.getString(1), rs.getString(2), rs.getString(3), rs.getString(4)}, relay,
        now, limit);
  }

  /** Replaces a resealable row's bytes with ones sealed for {@code encPub}; returns the rows changed. */
  int reseal(long id, byte[] wire, String wireHash, String encPub) throws SQLException {
    return store.update("UPDATE outbox SET wire=?, wire_hash=?, enc_pub=? WHERE id=? AND state='pending' AND"
        + " unsure=0", wire, wireHash, encPub, id);
  }

  /** The relay may hold this row's bytes (an unknown push outcome): they are never resealed; the plaintext goes. */
  void markUnsure(long id) throws SQLException {
    store.update("UPDATE outbox SET unsure=1, plain=NULL WHERE id=?", id);
  }

  /** The wire hash of an already queued item with this id for this target; empty when none. */
  Optional<String> wireHash(String relay, String itemId, String targetPubkey) throws SQLException {
    return store.one("SELECT wire_hash FROM outbox WHERE relay=? AND item_id=? AND target_pubkey=?",
        rs -> rs.getString(1), relay, itemId, targetPubkey);
  }

  /** Settles a message's envelope rows for one target; returns the rows changed. */
  int markSettled(String msgId, String targetPubkey, long now) throws SQLException {
    return store.update("UPDATE outbox SET state='settled', done_at=?, plain=NULL WHERE kind='envelope' AND msg_id=?"
        + " AND target_pubkey=? AND state<>'settled'", now, msgId, targetPubkey);
  }

  /** Moves live outbox rows of other relay URLs to {@code relay} (relay-accepted ones to re-push); returns count. */
  int adoptOutboxRows(String relay, long now) throws SQLException {
    return store.update("UPDATE OR IGNORE outbox SET relay=?, next_at=?, state=CASE WHEN state='relay-accepted'"
        + " THEN 'repush' ELSE state END WHERE relay<>? AND state IN ('pending', 'repush', 'relay-accepted')",
        relay, now, relay);
  }

  /** Moves drafts of other relay URLs to {@code relay}, due now; returns count. */
  int adoptDrafts(String relay, long now) throws SQLException {
    return store.update("UPDATE drafts SET relay=?, next_at=? WHERE relay<>?", relay, now, relay);
  }

  /** Accepted (or re-push) envelopes whose deadline has passed at {@code now}. */
  List<HostStore.OutboxRow> pastDeadline(String relay, long now) throws SQLException {
    return store.query("SELECT * FROM outbox WHERE relay=? AND kind='envelope' AND state IN"
        + " ('relay-accepted', 'repush') AND deadline_at IS NOT NULL AND deadline_at<=?", HostStore.OUTBOX, relay, now);
  }

  /** Whether the peer ever sent a delivery receipt. */
  boolean everReceiptFrom(String hostPubkey) throws SQLException {
    return store.one("SELECT 1 FROM peer_receipts WHERE host_pubkey=?", rs -> 1, hostPubkey).isPresent();
  }

  /** Marks a row {@code unconfirmed} (deadline passed without a receipt). */
  void markUnconfirmed(long id, long now) throws SQLException {
    store.update("UPDATE outbox SET state='unconfirmed', done_at=?, plain=NULL WHERE id=?", now, id);
  }

  /** Pending envelopes created at or before {@code createdBefore} (never accepted within the retention). */
  List<HostStore.OutboxRow> pendingCreatedBy(String relay, long createdBefore) throws SQLException {
    return store.query("SELECT * FROM outbox WHERE relay=? AND kind='envelope' AND"
        + " state='pending' AND created_at<=?", HostStore.OUTBOX, relay, createdBefore);
  }

  /** Marks a row {@code undelivered} (the relay never accepted it). */
  void markUndelivered(long id, long now) throws SQLException {
    store.update("UPDATE outbox SET state='undelivered', done_at=?, plain=NULL WHERE id=?", now, id);
  }

  /** Due drafts, oldest first, at most {@code limit}: {@code [id, msg_id, target_pubkey, envelope, attempts]}. */
  List<String[]> draftsDue(String relay, long now, int limit) throws SQLException {
    return store.query("SELECT id, msg_id, target_pubkey, envelope, attempts FROM drafts WHERE relay=?"
        + " AND next_at<=? ORDER BY id LIMIT ?", rs -> new String[] {rs.getString(1), rs.getString(2), rs.getString(3),
            rs.getString(4), rs.getString(5)}, relay, now, limit);
  }

  /**
   * Drafts created at or before {@code createdBefore} that raised no key-wait alert yet: {@code [id, msg_id,
   * target_pubkey, created_at, last_error]}.
   */
  List<String[]> draftsWaitingSince(long createdBefore) throws SQLException {
    return store.query("SELECT id, msg_id, target_pubkey, created_at, last_error FROM drafts WHERE created_at<=? AND"
        + " alerted_at IS NULL ORDER BY id", rs -> new String[] {rs.getString(1), rs.getString(2), rs.getString(3),
            rs.getString(4), rs.getString(5)}, createdBefore);
  }

  /** Records that a draft raised its key-wait alert. */
  void markDraftAlerted(long id, long now) throws SQLException {
    store.update("UPDATE drafts SET alerted_at=? WHERE id=?", now, id);
  }

  /** Deletes a draft (it was sealed into the outbox). */
  void deleteDraft(long id) throws SQLException {
    store.update("DELETE FROM drafts WHERE id=?", id);
  }

  /** Backs a draft off: one more attempt, next try at {@code nextAt}, with the reason. */
  void deferDraft(long id, long nextAt, String why) throws SQLException {
    store.update("UPDATE drafts SET attempts=attempts+1, next_at=?, last_error=? WHERE id=?", nextAt, why, id);
  }

  /** Rows due for a push at {@code now} (pending or re-push), oldest first, at most {@code limit}. */
  List<HostStore.OutboxRow> outboxDue(String relay, long now, int limit) throws SQLException {
    return store.query("SELECT * FROM outbox WHERE relay=? AND state IN ('pending',"
        + " 'repush') AND next_at<=? ORDER BY id LIMIT ?", HostStore.OUTBOX, relay, now, limit);
  }

  /** The stored wire bytes of a row; empty when the row is gone. */
  Optional<byte[]> wire(long id) throws SQLException {
    return store.one("SELECT wire FROM outbox WHERE id=?", rs -> rs.getBytes(1), id);
  }

  /** Records a relay accept on a pending or re-push row (state {@code relay-accepted} or {@code sent}). */
  void markAccepted(long id, String state, long seq, String epoch, String acceptJson, String acceptSig,
      long acceptedAt, long deadlineAt, String lastError) throws SQLException {
    store.update("UPDATE outbox SET state=?, seq=?, epoch=?, accept=?, accept_sig=?, accepted_at=?, deadline_at=?,"
        + " last_error=?, unsure=1, plain=NULL WHERE id=? AND state IN ('pending', 'repush')", state, seq,
        epoch, acceptJson, acceptSig, acceptedAt, deadlineAt, lastError, id);
  }

  /** Keeps a row pending: one more attempt, next try at {@code nextAt}, with the reason. */
  void deferRow(long id, long nextAt, String why) throws SQLException {
    store.update("UPDATE outbox SET attempts=attempts+1, next_at=?, last_error=? WHERE id=?", nextAt, why, id);
  }

  /** Queues a signed delivery receipt as {@code pending}, due now; a second one for the same id is ignored. */
  void insertReceipt(String relay, String itemId, String msgId, String targetPubkey, byte[] wire, String wireHash,
      long now) throws SQLException {
    store.update("INSERT OR IGNORE INTO outbox(relay, kind, item_id, msg_id, target_pubkey, wire, wire_hash, state,"
        + " next_at, created_at) VALUES(?, 'receipt', ?, ?, ?, ?, ?, 'pending', ?, ?)", relay, itemId, msgId,
        targetPubkey, wire, wireHash, now, now);
  }

  /** Ids of the receipt rows queued for a message to its sender. */
  List<Long> receiptIds(String relay, String msgId, String targetPubkey) throws SQLException {
    return store.query("SELECT id FROM outbox WHERE relay=? AND kind='receipt' AND msg_id=? AND"
        + " target_pubkey=?", rs -> rs.getLong(1), relay, msgId, targetPubkey);
  }

  /** Puts a sent row back to {@code pending}, due at {@code now}. */
  void requeueSent(long id, long now) throws SQLException {
    store.update("UPDATE outbox SET state='pending', next_at=? WHERE id=? AND state='sent'", now, id);
  }

  /** Whether this host queued an envelope of that message for that target. */
  boolean sentEnvelope(String relay, String msgId, String targetPubkey) throws SQLException {
    return store.one("SELECT 1 FROM outbox WHERE relay=? AND kind='envelope' AND msg_id=? AND target_pubkey=?",
        rs -> 1, relay, msgId, targetPubkey).isPresent();
  }

  /** The envelope row with that item id for that target; empty when none. */
  Optional<HostStore.OutboxRow> envelope(String relay, String itemId, String targetPubkey) throws SQLException {
    return store.one("SELECT * FROM outbox WHERE relay=? AND kind='envelope' AND"
        + " item_id=? AND target_pubkey=?", HostStore.OUTBOX, relay, itemId, targetPubkey);
  }

  /** Marks a row {@code expired} (the relay expired it before the target pulled it). */
  void markExpired(long id, long now) throws SQLException {
    store.update("UPDATE outbox SET state='expired', done_at=?, plain=NULL WHERE id=?", now, id);
  }

  /** Whether an outbox row (pending or re-push) or a draft of {@code relay} is due at {@code now}. */
  boolean anyDue(String relay, long now) throws SQLException {
    return store.one("SELECT 1 FROM outbox WHERE relay=? AND state IN ('pending', 'repush') AND next_at<=? UNION ALL"
        + " SELECT 1 FROM drafts WHERE relay=? AND next_at<=? LIMIT 1", rs -> rs.getInt(1), relay, now, relay, now)
        .isPresent();
  }

  /** Rows per unsettled or failed state as {@code [state, count]} (status report). */
  List<String[]> countsByState(String relay) throws SQLException {
    return store.query("SELECT state, count(*) FROM outbox WHERE relay=? AND state IN ('pending',"
        + " 'repush', 'unconfirmed', 'expired', 'undelivered') GROUP BY state", rs -> new String[] {rs.getString(1),
            rs.getString(2)}, relay);
  }

  /** Drafts per target as {@code [target_pubkey, count, last error]} (status report). */
  List<String[]> draftsByTarget(String relay) throws SQLException {
    return store.query("SELECT target_pubkey, count(*), max(last_error) FROM drafts WHERE relay=? GROUP BY"
        + " target_pubkey", rs -> new String[] {rs.getString(1), rs.getString(2), rs.getString(3)}, relay);
  }
}
