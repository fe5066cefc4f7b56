package io.mbxrelay.host;

import java.util.List;

/**
 * Outcome of {@link RelayClient#pull(long, int, String)} (docs/protocol.md §3 pull v2): {@link Page}; {@link EpochChanged}
 * (409, or a page in another epoch than the one asked for); {@link Refused}; {@link BadAnswer}.
 */
public sealed interface PullResult permits PullResult.Page, EpochChanged, Refused, BadAnswer {

  /**
   * One queued item.
   *
   * @param seq its seq for this host
   * @param kind {@code envelope}, {@code receipt} or {@code expired}
   * @param itemId the sender's item id
   * @param senderPubkey the pushing host's base64 key (the relay key for {@code expired} notices)
   * @param wire the exact stored wire bytes (decoded from {@code wire_b64}; not copied — do not modify)
   */
  record PulledItem(long seq, String kind, String itemId, String senderPubkey, byte[] wire) {}

  /**
   * One page, in seq order.
   *
   * @param epoch relay epoch
   * @param headSeq last seq allocated for this host (0 if none)
   * @param items the items, seq ascending
   * @param lastSeq last seq of the page, or the {@code after} asked for when the page is empty
   * @param more whether more items follow {@code lastSeq}
   */
  record Page(String epoch, long headSeq, List<PulledItem> items, long lastSeq, boolean more) implements PullResult {
    /** Copies the list. */
    public Page {
      items = List.copyOf(items);
    }
  }
}
