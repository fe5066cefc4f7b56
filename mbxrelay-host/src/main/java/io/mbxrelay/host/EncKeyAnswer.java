package io.mbxrelay.host;

import com.fasterxml.jackson.databind.JsonNode;

/**
 * The relay's answer to an enc-key look-up ({@code GET /v2/relay/enc-key?pubkey=}, docs/protocol.md §4.2): {@link
 * Found} with the answer as served (not yet trusted: {@link PeerEncKeys} verifies the signed ad against the peer's
 * pinned host key), {@link Refused} (404 = the relay holds no ad for that key) or {@link BadAnswer}. Immutable.
 */
public sealed interface EncKeyAnswer permits EncKeyAnswer.Found, Refused, BadAnswer {

  /**
   * The relay served something for that key.
   *
   * @param answer {@code {host, host_pubkey, enc_pub, sig?, ad?, ad_sig?}} exactly as parsed
   */
  record Found(JsonNode answer) implements EncKeyAnswer {}
}
