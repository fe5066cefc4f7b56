package io.mbxrelay.host;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.Optional;

/**
 * Typed SQL on the host store's receive side: {@code positions}, {@code quarantine}, {@code received},
 * {@code peer_receipts} (docs/host-library.md). Each method is one statement on the store's connection: the caller
 * holds the store lock and, where several must commit together, runs them inside one {@link HostStore#tx}.
 * Times are epoch ms.
 */
final class InboxRows {

  private final HostStore store;

  InboxRows(HostStore store) {
    this.store = store;
  }

  /** Raises the acked position in {@code epoch} to {@code seq} (never lowers it). */
  void markAcked(String relay, String epoch, long seq) throws SQLException {
    store.update("UPDATE positions SET acked_through=max(acked_through, ?) WHERE relay=? AND epoch=?", seq, relay,
        epoch);
  }

  /** Raises the received position in {@code epoch} to {@code seq} (never lowers it). */
  void markReceived(String relay, String epoch, long seq) throws SQLException {
    store.update("UPDATE positions SET received_through=? WHERE relay=? AND epoch=? AND received_through<?", seq,
        relay, epoch, seq);
  }

  /** Keeps a refused item with its reason and bytes ({@code host quarantine} lists it). */
  void quarantine(String relay, String epoch, long seq, String kind, String itemId, String senderPubkey,
      String reason, byte[] wire, long now) throws SQLException {
    store.update("INSERT INTO quarantine(relay, epoch, seq, kind, item_id, sender_pubkey, reason, wire, at)"
        + " VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?)", relay, epoch, seq, kind, itemId, senderPubkey, reason, wire, now);
  }

  /** The name of an accepted peer; empty when the key is not a peer. */
  Optional<String> peerName(String hostPubkey) throws SQLException {
    return store.one("SELECT name FROM peers WHERE host_pubkey=?", rs -> rs.getString(1), hostPubkey);
  }

  /** Whether this sender's message was already received (dedup by sender and message id). */
  boolean wasReceived(String senderPubkey, String msgId) throws SQLException {
    return store.one("SELECT 1 FROM received WHERE sender_pubkey=? AND msg_id=?", rs -> 1, senderPubkey, msgId)
        .isPresent();
  }

  /** Records a received message (for dedup). */
  void markReceivedMessage(String senderPubkey, String msgId, String relay, String epoch, long seq, long now)
      throws SQLException {
    store.update("INSERT INTO received(sender_pubkey, msg_id, relay, epoch, seq, at) VALUES(?, ?, ?, ?, ?, ?)",
        senderPubkey, msgId, relay, epoch, seq, now);
  }

  /** Records that the peer sent a delivery receipt at {@code now}. */
  void notePeerReceipt(String hostPubkey, long now) throws SQLException {
    store.update("INSERT INTO peer_receipts(host_pubkey, last_at) VALUES(?, ?) ON CONFLICT(host_pubkey) DO UPDATE"
        + " SET last_at=excluded.last_at", hostPubkey, now);
  }

  /** Quarantined items of {@code relay}. */
  long quarantineCount(String relay) throws SQLException {
    return store.one("SELECT count(*) FROM quarantine WHERE relay=?", rs -> rs.getLong(1), relay).orElse(0L);
  }

  /**
   * Inserts an {@code inbox} row on {@code c} (the delivery's transaction); {@code from}, {@code subject} and
   * {@code body} are null for a message not opened.
   */
  static void insertInbox(Connection c, String relay, String senderPubkey, String msgId, byte[] wire, long atMs,
      String from, String subject, String body) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement("INSERT INTO inbox(relay, sender_pubkey, msg_id, wire,"
        + " at, from_addr, subject, body) VALUES(?, ?, ?, ?, ?, ?, ?, ?)")) {
      ps.setString(1, relay);
      ps.setString(2, senderPubkey);
      ps.setString(3, msgId);
      ps.setBytes(4, wire);
      ps.setLong(5, atMs);
      ps.setString(6, from);
      ps.setString(7, subject);
      ps.setString(8, body);
      ps.executeUpdate();
    }
  }
}
