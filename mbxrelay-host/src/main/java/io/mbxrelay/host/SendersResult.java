package io.mbxrelay.host;

/**
 * Outcome of {@link RelayClient#publishSenders} (docs/protocol.md §4.3): {@link Published}; {@link Refused} (404 when the relay
 * does not support sender allowlists yet, 409 when a newer list is stored, 400/401 for a bad list); {@link BadAnswer}.
 */
public sealed interface SendersResult permits SendersResult.Published, Refused, BadAnswer {

  /**
   * The relay stored the list.
   *
   * @param senders number of distinct sender keys sent
   */
  record Published(int senders) implements SendersResult {}
}
