package io.mbxrelay.store.model;

import java.util.Objects;

/**
 * One dedup row (docs/protocol.md §5): unique by (sender, item id, target); it outlives its item as a tombstone
 * until the dedup horizon.
 *
 * @param sender the sender key
 * @param itemId the item id
 * @param target the target key
 * @param wireHash lowercase hex SHA-256 of the accepted wire
 * @param seq the seq the item got
 * @param acceptedAt ISO time accepted
 */
public record DedupRow(String sender, String itemId, String target, String wireHash, long seq, String acceptedAt) {
  public DedupRow {
    Objects.requireNonNull(sender);
    Objects.requireNonNull(itemId);
    Objects.requireNonNull(target);
  }
}
