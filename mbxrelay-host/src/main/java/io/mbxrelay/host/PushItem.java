package io.mbxrelay.host;

import java.util.List;
import java.util.Objects;

/**
 * One item to push (docs/protocol.md §3 PushItem {@code {kind, item_id, targets:[{host_pubkey, wire_b64}]}}). For an envelope
 * the item id must be the envelope id; each target gets its own wire bytes (sealed for that target). Immutable
 * (the wire arrays are copied in and not exposed for modification by this class).
 *
 * @param kind {@code envelope} or {@code receipt}
 * @param itemId the item id (1–300 UTF-16 units)
 * @param targets 1–64 targets, distinct keys
 */
public record PushItem(String kind, String itemId, List<Target> targets) {

  /**
   * One target of an item.
   *
   * @param hostPubkey the target host's base64 public key
   * @param wire the exact bytes to store for that target (≤ 524,288 bytes); their SHA-256 is checked against the
   *     receipt's {@code wire_hash}
   */
  public record Target(String hostPubkey, byte[] wire) {
    /** Copies the bytes. */
    public Target {
      Objects.requireNonNull(hostPubkey);
      wire = wire.clone();
    }

    /**
     * The wire bytes.
     *
     * @return a copy
     */
    @Override
    public byte[] wire() {
      return wire.clone();
    }
  }

  /** Copies the list. */
  public PushItem {
    Objects.requireNonNull(kind);
    Objects.requireNonNull(itemId);
    targets = List.copyOf(targets);
  }

  /**
   * An envelope item for one target.
   *
   * @param envelopeId the envelope id (= item id)
   * @param targetPubkey the target's base64 key
   * @param wire the sealed envelope bytes
   * @return the item
   */
  public static PushItem envelope(String envelopeId, String targetPubkey, byte[] wire) {
    return new PushItem("envelope", envelopeId, List.of(new Target(targetPubkey, wire)));
  }
}
