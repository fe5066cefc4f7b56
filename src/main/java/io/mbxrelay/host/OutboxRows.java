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
   * Due pending envelopes on {@code relays} that could be resealed (no relay can hold their bytes, the plaintext is
   * kept): {@code [id, target_pubkey, enc_pub, plain, msg_id]}, oldest first, at most {@code limit}.
   */
  List<String[]> resealable(List<String> relays, long now, int limit) throws SQLException {
    return store.query("SELECT id, target_pubkey, enc_pub, plain, msg_id FROM outbox WHERE kind='envelope' AND"
        + " state='pending' AND unsure=0 AND plain IS NOT NULL AND enc_pub IS NOT NULL AND next_at<=? AND relay IN "
        + marks(relays.size()) + " ORDER BY id LIMIT ?", rs -> new String[] {rs.getString(1), rs.getString(2),
            rs.getString(3), rs.getString(4), rs.getString(5)}, concat(new Object[] {now}, relays, List.of(),
                limit));
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

  /** The wire hash of an already queued envelope with this id for this target (on any relay); empty when none. */
  Optional<String> wireHash(String itemId, String targetPubkey) throws SQLException {
    return store.one("SELECT wire_hash FROM outbox WHERE kind='envelope' AND item_id=? AND target_pubkey=? ORDER BY id"
        + " LIMIT 1", rs -> rs.getString(1), itemId, targetPubkey);
  }

  /** {@code (?, ?, …)} for {@code n} values. */
  private static String marks(int n) {
    return "(" + String.join(", ", java.util.Collections.nCopies(n, "?")) + ")";
  }

  /**
   * Gives {@code relay} a {@code pending} row, due now, for every live envelope (a row pending, to re-push, accepted
   * or dropped; none settled) it has no row for: the bytes (and the plaintext kept for a reseal) of a row that can
   * still be resealed, else of the newest. Returns the rows added.
   */
  int copyLiveEnvelopesTo(String relay, long now) throws SQLException {
    return store.update("INSERT INTO outbox(relay, kind, item_id, msg_id, target_pubkey, wire, wire_hash, state,"
        + " attempts, next_at, created_at, enc_pub, plain, unsure) SELECT ?, o.kind, o.item_id, o.msg_id,"
        + " o.target_pubkey, o.wire, o.wire_hash, 'pending', 0, ?, ?, o.enc_pub, o.plain, 0 FROM outbox o"
        + " WHERE o.kind='envelope' AND o.state IN ('pending', 'repush', 'relay-accepted', 'dropped')"
        + " AND o.id=(SELECT x.id FROM outbox x WHERE x.kind='envelope' AND"
        + " x.item_id=o.item_id AND x.target_pubkey=o.target_pubkey AND x.state IN ('pending', 'repush',"
        + " 'relay-accepted', 'dropped') ORDER BY (x.plain IS NOT NULL) DESC, x.id DESC LIMIT 1)"
        + " AND NOT EXISTS (SELECT 1 FROM outbox y WHERE y.relay=? AND y.item_id=o.item_id AND"
        + " y.target_pubkey=o.target_pubkey)"
        + " AND NOT EXISTS (SELECT 1 FROM outbox z WHERE z.item_id=o.item_id AND z.target_pubkey=o.target_pubkey"
        + " AND +z.kind='envelope' AND +z.state='settled')", relay, now, now, relay); // (+: by item, not by state)
  }

  /**
   * A delivery receipt still to be pushed only on relays outside {@code relays} gets a {@code pending} row on the
   * first of them (same signed bytes). Returns the rows added.
   */
  int moveWaitingReceiptsTo(List<String> relays, long now) throws SQLException {
    String in = marks(relays.size());
    return store.update("INSERT INTO outbox(relay, kind, item_id, msg_id, target_pubkey, wire, wire_hash, state,"
        + " attempts, next_at, created_at) SELECT ?, o.kind, o.item_id, o.msg_id, o.target_pubkey, o.wire,"
        + " o.wire_hash, 'pending', 0, ?, ? FROM outbox o WHERE o.kind='receipt' AND o.state IN ('pending',"
        + " 'dropped') AND o.relay NOT IN " + in + " AND o.id=(SELECT max(x.id) FROM outbox x WHERE"
        + " x.kind='receipt' AND x.item_id=o.item_id AND x.target_pubkey=o.target_pubkey AND x.state IN"
        + " ('pending', 'dropped')) AND NOT EXISTS (SELECT 1 FROM outbox y WHERE y.kind='receipt' AND"
        + " y.item_id=o.item_id AND y.target_pubkey=o.target_pubkey AND y.relay IN " + in + ")",
        concat(new Object[] {relays.get(0), now, now}, relays, relays));
  }

  private static Object[] concat(Object[] head, List<String> a, List<String> b, Object... tail) {
    List<Object> out = new java.util.ArrayList<>(List.of(head));
    out.addAll(a);
    out.addAll(b);
    out.addAll(List.of(tail));
    return out.toArray();
  }

  /** Dropped rows on relays in use again are revived ({@code repush} when once accepted); returns the count. */
  int reviveDropped(List<String> relays, long now) throws SQLException {
    return store.update("UPDATE outbox SET state=CASE WHEN seq IS NULL THEN 'pending' ELSE 'repush' END, next_at=?"
        + " WHERE state='dropped' AND relay IN " + marks(relays.size()), concat(new Object[] {now}, relays,
            List.of()));
  }

  /** Live rows on relays outside {@code relays} become {@code dropped}; returns the count. */
  int dropOutside(List<String> relays) throws SQLException {
    return store.update("UPDATE outbox SET state='dropped' WHERE state IN ('pending', 'repush', 'relay-accepted') AND"
        + " relay NOT IN " + marks(relays.size()), relays.toArray());
  }

  /** The rows of a message to one target still carried by a relay (pending, to re-push, accepted). */
  int liveRows(String msgId, String targetPubkey) throws SQLException {
    return store.one("SELECT count(*) FROM outbox WHERE kind='envelope' AND msg_id=? AND target_pubkey=? AND state IN"
        + " ('pending', 'repush', 'relay-accepted')", rs -> rs.getInt(1), msgId, targetPubkey).orElse(0);
  }

  /** Whether a row of a message to one target is in {@code state}. */
  boolean anyInState(String msgId, String targetPubkey, String state) throws SQLException {
    return store.one("SELECT 1 FROM outbox WHERE kind='envelope' AND msg_id=? AND target_pubkey=? AND state=? LIMIT 1",
        rs -> 1, msgId, targetPubkey, state).isPresent();
  }

  /** Settles a message's envelope rows for one target; returns the rows changed. */
  int markSettled(String msgId, String targetPubkey, long now) throws SQLException {
    return store.update("UPDATE outbox SET state='settled', done_at=?, plain=NULL WHERE kind='envelope' AND msg_id=?"
        + " AND target_pubkey=? AND state<>'settled'", now, msgId, targetPubkey);
  }

  /** Envelope rows accepted by a relay (or to re-push) whose deadline has passed at {@code now}. */
  List<HostStore.OutboxRow> pastDeadline(long now) throws SQLException {
    return store.query("SELECT * FROM outbox WHERE kind='envelope' AND state IN ('relay-accepted', 'repush') AND"
        + " deadline_at IS NOT NULL AND deadline_at<=? ORDER BY id", HostStore.OUTBOX, now);
  }

  /** Whether the peer ever sent a delivery receipt. */
  boolean everReceiptFrom(String hostPubkey) throws SQLException {
    return store.one("SELECT 1 FROM peer_receipts WHERE host_pubkey=?", rs -> 1, hostPubkey).isPresent();
  }

  /** Marks a row {@code unconfirmed} (deadline passed without a receipt). */
  void markUnconfirmed(long id, long now) throws SQLException {
    store.update("UPDATE outbox SET state='unconfirmed', done_at=?, plain=NULL WHERE id=?", now, id);
  }

  /**
   * Pending envelope rows no relay accepted within its retention (that relay's {@code retention_days}, 14 before any
   * info) plus {@code graceMs}.
   */
  List<HostStore.OutboxRow> pendingPastRetention(long now, long graceMs) throws SQLException {
    return store.query("SELECT o.* FROM outbox o LEFT JOIN relays r ON r.url=o.relay WHERE o.kind='envelope' AND"
        + " o.state='pending' AND o.created_at<=? - coalesce(r.retention_days, 14) * 86400000 - ? ORDER BY o.id",
        HostStore.OUTBOX, now, graceMs);
  }

  /** Marks a row {@code undelivered} (the relay never accepted it). */
  void markUndelivered(long id, long now) throws SQLException {
    store.update("UPDATE outbox SET state='undelivered', done_at=?, plain=NULL WHERE id=?", now, id);
  }

  /**
   * Due drafts (whatever relay they were queued with: a draft is sealed once for every relay in use), oldest first,
   * at most {@code limit}: {@code [id, msg_id, target_pubkey, envelope, attempts]}.
   */
  List<String[]> draftsDue(long now, int limit) throws SQLException {
    return store.query("SELECT id, msg_id, target_pubkey, envelope, attempts FROM drafts WHERE next_at<=? ORDER BY id"
        + " LIMIT ?", rs -> new String[] {rs.getString(1), rs.getString(2), rs.getString(3), rs.getString(4),
            rs.getString(5)}, now, limit);
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

  /** Ids of the receipt rows queued on {@code relay} for a message to its sender. */
  List<Long> receiptIds(String relay, String msgId, String targetPubkey) throws SQLException {
    return store.query("SELECT id FROM outbox WHERE relay=? AND kind='receipt' AND msg_id=? AND"
        + " target_pubkey=?", rs -> rs.getLong(1), relay, msgId, targetPubkey);
  }

  /**
   * Gives {@code relay} a {@code pending} copy of a receipt for that message already queued on another relay (the
   * same signed bytes: the sender settles once). Returns the rows added (0 when there is none).
   */
  int copyReceiptTo(String relay, String msgId, String targetPubkey, long now) throws SQLException {
    return store.update("INSERT OR IGNORE INTO outbox(relay, kind, item_id, msg_id, target_pubkey, wire, wire_hash,"
        + " state, next_at, created_at) SELECT ?, kind, item_id, msg_id, target_pubkey, wire, wire_hash, 'pending', ?,"
        + " ? FROM outbox WHERE id=(SELECT min(id) FROM outbox WHERE kind='receipt' AND msg_id=? AND"
        + " target_pubkey=?)", relay, now, now, msgId, targetPubkey);
  }

  /** Puts a sent row back to {@code pending}, due at {@code now}. */
  void requeueSent(long id, long now) throws SQLException {
    store.update("UPDATE outbox SET state='pending', next_at=? WHERE id=? AND state='sent'", now, id);
  }

  /** Whether this host queued an envelope of that message for that target (on any relay). */
  boolean sentEnvelope(String msgId, String targetPubkey) throws SQLException {
    return store.one("SELECT 1 FROM outbox WHERE kind='envelope' AND msg_id=? AND target_pubkey=? LIMIT 1",
        rs -> 1, msgId, targetPubkey).isPresent();
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

  /** Whether an outbox row (pending or re-push) of one of {@code relays}, or any draft, is due at {@code now}. */
  boolean anyDue(List<String> relays, long now) throws SQLException {
    return store.one("SELECT 1 FROM outbox WHERE state IN ('pending', 'repush') AND next_at<=? AND relay IN "
        + marks(relays.size()) + " UNION ALL SELECT 1 FROM drafts WHERE next_at<=? LIMIT 1", rs -> rs.getInt(1),
        concat(new Object[] {now}, relays, List.of(), now)).isPresent();
  }

  /** Rows per unsettled or failed state as {@code [state, count]} (status report). */
  List<String[]> countsByState(String relay) throws SQLException {
    return store.query("SELECT state, count(*) FROM outbox WHERE relay=? AND state IN ('pending',"
        + " 'repush', 'unconfirmed', 'expired', 'undelivered') GROUP BY state", rs -> new String[] {rs.getString(1),
            rs.getString(2)}, relay);
  }

  /** Drafts per target as {@code [target_pubkey, count, last error]} (status report). */
  List<String[]> draftsByTarget() throws SQLException {
    return store.query("SELECT target_pubkey, count(*), max(last_error) FROM drafts GROUP BY target_pubkey",
        rs -> new String[] {rs.getString(1), rs.getString(2), rs.getString(3)});
  }
}
