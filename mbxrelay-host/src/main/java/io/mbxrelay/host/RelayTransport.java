package io.mbxrelay.host;

import io.mbxrelay.host.BlockingRelayClient.RelayUnreachable;
import java.util.Collection;
import java.util.List;

/**
 * The blocking relay calls a {@link HostAgent} makes (docs/protocol.md §3, §4.3, §6), one instance per (relay URL, pinned relay
 * key). Every method blocks until the outcome is known and returns the same sealed outcomes as {@link RelayClient};
 * {@link RelayUnreachable} means the outcome is unknown (connection error, idle timeout or overall deadline). The
 * default implementation is {@link VertxRelayTransport}; tests wrap it to lose responses. Called by one thread at a
 * time (the agent's tick thread).
 */
public interface RelayTransport extends AutoCloseable {

  /**
   * Makes a transport for a relay whose key is pinned.
   */
  @FunctionalInterface
  interface Factory {
    /**
     * @param relayUrl normalized relay base URL
     * @param hostName this host's name (sent as {@code x-mbx-host}, used to enrol)
     * @param relayPubkey the pinned base64 relay key (receipts are verified against it)
     * @return a new transport (closed by the caller)
     */
    RelayTransport open(String relayUrl, String hostName, String relayPubkey);
  }

  /** @return signed info (docs/protocol.md §4.7) @throws RelayUnreachable on I/O */
  InfoResult info() throws RelayUnreachable;

  /** @param ownerFp owner fingerprint or "" @return enrolment outcome (docs/protocol.md §4.1) @throws RelayUnreachable on I/O */
  EnrolResult enrol(String ownerFp) throws RelayUnreachable;

  /** @param items items to push @return push outcome (docs/protocol.md §3) @throws RelayUnreachable on I/O (unknown outcome) */
  PushResult push(List<PushItem> items) throws RelayUnreachable;

  /**
   * @param after seq to pull after @param limit page size @param epoch position epoch or null
   * @return page outcome @throws RelayUnreachable on I/O
   */
  PullResult pull(long after, int limit, String epoch) throws RelayUnreachable;

  /**
   * A pull the relay may hold until an item arrives ({@link RelayClient#pull(long, int, String, int)}); transports
   * without long-poll pull at once.
   *
   * @param after seq to pull after @param limit page size @param epoch position epoch or null
   * @param waitSeconds longest hold, s (0 = none)
   * @return page outcome @throws RelayUnreachable on I/O
   */
  default PullResult pull(long after, int limit, String epoch, int waitSeconds) throws RelayUnreachable {
    return pull(after, limit, epoch);
  }

  /**
   * {@link #pull(long, int, String, int)} that the caller may give up on while the relay holds it: {@code giveUp} is
   * asked about every 200 ms, and when it answers true the call returns empty at once. The request itself is left to
   * end on its own (at most {@code waitSeconds}) and its page is dropped; nothing was acked, so nothing is lost.
   * Transports that cannot give up early wait for the answer.
   *
   * @param giveUp asked on the calling thread while the pull is held (e.g. "the outbox has mail to push")
   * @return the page outcome, or empty when given up
   * @throws RelayUnreachable on I/O
   */
  default java.util.Optional<PullResult> pull(long after, int limit, String epoch, int waitSeconds,
      java.util.function.BooleanSupplier giveUp) throws RelayUnreachable {
    return java.util.Optional.of(pull(after, limit, epoch, waitSeconds));
  }

  /** @param epoch epoch @param through seq @return ack outcome @throws RelayUnreachable on I/O */
  AckResult ack(String epoch, long through) throws RelayUnreachable;

  /**
   * @param senders accepted sender keys @param iatMs list time, ms
   * @return publish outcome (docs/protocol.md §4.3) @throws RelayUnreachable on I/O
   */
  SendersResult publishSenders(Collection<String> senders, long iatMs) throws RelayUnreachable;

  /**
   * @param hostName the enrolled name @param encPub base64 X25519 key @param iatMs issue time, ms
   * @return v2 ad outcome (docs/protocol.md §4.2) @throws RelayUnreachable on I/O
   */
  EncAdResult publishEncAd(String hostName, String encPub, long iatMs) throws RelayUnreachable;

  /**
   * @param hostName the enrolled name @param encPub base64 X25519 key
   * @return v1 ad outcome (docs/protocol.md §4.2) @throws RelayUnreachable on I/O
   */
  EncAdResult publishEncAdV1(String hostName, String encPub) throws RelayUnreachable;

  /**
   * @param hostPubkey the peer's host key (base64)
   * @return the relay's enc-key answer for that key, unverified (docs/protocol.md §4.2)
   * @throws RelayUnreachable on I/O
   */
  EncKeyAnswer encKey(String hostPubkey) throws RelayUnreachable;

  /** Releases the connection pool. */
  @Override
  void close();
}
