package io.mbxrelay.host;


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
    InboxRows.insertInbox(d.connection(), d.relay(), d.senderPubkey(), d.msgId(), d.wire(), atMs,
        opened == null ? null : opened.from(), opened == null ? null : opened.subject(),
        opened == null ? null : opened.body());
  }
}
