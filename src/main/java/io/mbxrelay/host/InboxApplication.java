package io.mbxrelay.host;

import java.sql.PreparedStatement;

/**
 * A {@link HostApplication} that stores every envelope in the host store's {@code inbox} table, in the item's
 * transaction (used by {@code mbxrelay host run}). It does not decrypt or verify envelopes. Read the inbox with
 * {@link HostStore#inbox()}. Stateless; runs on the agent's tick thread.
 */
public final class InboxApplication implements HostApplication {

  /**
   * One stored message.
   *
   * @param senderPubkey sender host key (base64)
   * @param msgId envelope id
   * @param wire the wire bytes
   * @param at when stored, ms since the epoch
   * @param from the sender address of an opened envelope, or null (stored by {@link InboxApplication})
   * @param subject the subject of an opened envelope, or null
   * @param body the opened plaintext body, or null
   */
  public record Message(String senderPubkey, String msgId, byte[] wire, long at, String from, String subject,
      String body) {}

  private final java.time.Clock clock;

  /**
   * @param clock time source for {@link Message#at()}
   */
  public InboxApplication(java.time.Clock clock) {
    this.clock = clock;
  }

  @Override
  public Verdict receive(Delivery d) throws Exception {
    store(d, clock.millis(), null);
    return new Verdict.Accepted(null);
  }

  /** Inserts an inbox row in the delivery's transaction; {@code opened} adds the opened envelope's fields. */
  static void store(Delivery d, long atMs, io.mbxrelay.host.seal.SealedEnvelope.Opened opened)
      throws java.sql.SQLException {
    try (PreparedStatement ps = d.connection().prepareStatement("INSERT INTO inbox(relay, sender_pubkey, msg_id, wire,"
        + " at, from_addr, subject, body) VALUES(?, ?, ?, ?, ?, ?, ?, ?)")) {
      ps.setString(1, d.relay());
      ps.setString(2, d.senderPubkey());
      ps.setString(3, d.msgId());
      ps.setBytes(4, d.wire());
      ps.setLong(5, atMs);
      ps.setString(6, opened == null ? null : opened.from());
      ps.setString(7, opened == null ? null : opened.subject());
      ps.setString(8, opened == null ? null : opened.body());
      ps.executeUpdate();
    }
  }
}
