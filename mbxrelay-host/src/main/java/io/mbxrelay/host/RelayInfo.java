package io.mbxrelay.host;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.Optional;

/**
 * The relay's {@code GET /v2/relay/info} answer (docs/protocol.md §4.7). Immutable.
 *
 * @param v protocol version, always 2 here
 * @param relayPubkey the relay's base64 signing key
 * @param epoch the relay epoch (UUID string)
 * @param version the relay software version text ("" when absent)
 * @param limits the relay limits
 * @param you this host's state on the relay; present only when the signed hop verified (i.e. this host is enrolled
 *     and its key is live)
 * @param pullWaitMaxSeconds the longest {@code wait} the relay grants a pull ({@code info.features
 *     .pull_wait_max_seconds}, an mbxrelay extension that other relays do not send), 0 when it offers none
 */
public record RelayInfo(int v, String relayPubkey, String epoch, String version, Limits limits, Optional<You> you,
    int pullWaitMaxSeconds) {

  /** Info from a relay without long-poll pulls. */
  public RelayInfo(int v, String relayPubkey, String epoch, String version, Limits limits, Optional<You> you) {
    this(v, relayPubkey, epoch, version, limits, you, 0);
  }

  /**
   * The {@code limits} object (docs/protocol.md §4.7; defaults in that order 524288, 200, 500, 8388608, 64, 14, 10000,
   * 52428800, 2000, 20971520, 10000, 52428800). A member missing or not a number reads as -1.
   *
   * @param maxItemBytes bytes per wire
   * @param maxBatch items per push request
   * @param maxPull items per pull page
   * @param maxPullBytes bytes per pull page
   * @param maxTargets targets per item
   * @param retentionDays days an item is kept
   * @param maxQueueItems items per target queue
   * @param maxQueueBytes bytes per target queue
   * @param maxSenderItems items per sender per target
   * @param maxSenderBytes bytes per sender per target
   * @param maxOwnerItems items per owner account
   * @param maxOwnerBytes bytes per owner account
   */
  public record Limits(long maxItemBytes, long maxBatch, long maxPull, long maxPullBytes, long maxTargets,
      long retentionDays, long maxQueueItems, long maxQueueBytes, long maxSenderItems, long maxSenderBytes,
      long maxOwnerItems, long maxOwnerBytes) {

    static Limits of(JsonNode l) {
      return new Limits(n(l, "max_item_bytes"), n(l, "max_batch"), n(l, "max_pull"), n(l, "max_pull_bytes"),
          n(l, "max_targets"), n(l, "retention_days"), n(l, "max_queue_items"), n(l, "max_queue_bytes"),
          n(l, "max_sender_items"), n(l, "max_sender_bytes"), n(l, "max_owner_items"), n(l, "max_owner_bytes"));
    }

    private static long n(JsonNode l, String name) {
      JsonNode x = l.get(name);
      return x != null && x.isNumber() ? x.asLong() : -1;
    }
  }

  /**
   * This host as the relay sees it.
   *
   * @param host the enrolled name
   * @param pubkey the enrolled key (base64)
   * @param headSeq last seq allocated for this host
   * @param ackedThrough highest acked seq
   * @param encAd the {@code enc_ad} summary as received ({@code null} node when the host published no ad)
   */
  public record You(String host, String pubkey, long headSeq, long ackedThrough, JsonNode encAd) {}
}
