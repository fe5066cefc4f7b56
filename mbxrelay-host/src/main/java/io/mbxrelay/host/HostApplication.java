package io.mbxrelay.host;

import java.sql.Connection;

/**
 * The application a {@link HostAgent} delivers envelopes to (docs/protocol.md §6 "Receiver", §7.4).
 *
 * <p><b>Transaction contract.</b> {@link #receive} runs inside the host store's SQLite transaction for that item, on
 * the agent's tick thread. Whatever the application writes through {@link Delivery#connection()} commits atomically
 * with the library's own effects: the received-id dedup row, the queued delivery receipt and {@code
 * received_through}. The library commits, then acks the relay. If the process dies before that commit, the item is
 * pulled again and handed over again — so writes made elsewhere (another database, a file) must themselves be
 * idempotent by message id, and the application should answer {@link Verdict.Duplicate} for an id it already holds.
 * Do not call {@code commit}, {@code rollback} or {@code close} on the connection.
 *
 * <p><b>Outcomes.</b> {@link Verdict.Accepted} and {@link Verdict.Duplicate}: the item is done, a delivery receipt is
 * queued for the sender. {@link Verdict.Refused}: the item goes to quarantine with the reason and is done. A thrown
 * exception is treated as a local failure (bug or I/O): the transaction rolls back, the tick stops pulling, and the
 * item is offered again on the next tick — it is neither quarantined nor acked.
 */
@FunctionalInterface
public interface HostApplication {

  /**
   * One envelope pulled from the relay.
   *
   * @param relay relay URL
   * @param epoch relay epoch
   * @param seq the item's seq for this host
   * @param msgId the envelope id (= item id)
   * @param senderPubkey the pushing host's key (base64); it is an accepted peer
   * @param senderName the peer's name as recorded by {@link HostAgent#addPeer}
   * @param wire the exact wire bytes (the sealed envelope; not copied — do not modify)
   * @param connection the host store connection inside the item's transaction (see the class comment)
   */
  record Delivery(String relay, String epoch, long seq, String msgId, String senderPubkey, String senderName,
      byte[] wire, Connection connection) {}

  /** What the application did with a delivery. */
  sealed interface Verdict permits Verdict.Accepted, Verdict.Duplicate, Verdict.Refused {
    /**
     * Taken in.
     *
     * @param recipient the {@code name@host} the delivery receipt names ({@code docs/protocol.md §4.8}), or null for
     *     {@code owner@<this host>}
     */
    record Accepted(String recipient) implements Verdict {}

    /** Already held (e.g. stored before a crash); the receipt is queued again. */
    record Duplicate() implements Verdict {}

    /**
     * Refused (undecryptable, bad signature, …): quarantined with this reason.
     *
     * @param reason short text, no secrets
     */
    record Refused(String reason) implements Verdict {}
  }

  /**
   * Takes one envelope (see the class comment for the transaction contract).
   *
   * @param delivery the envelope
   * @return the verdict
   * @throws Exception for local failures (rolled back, offered again next tick)
   */
  Verdict receive(Delivery delivery) throws Exception;
}
