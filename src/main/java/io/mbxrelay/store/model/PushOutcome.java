package io.mbxrelay.store.model;

import java.util.List;

/** The stored outcome of one pushed item (docs/protocol.md §3 push v2, §7.3). */
public sealed interface PushOutcome {

  /**
   * The item is durably stored for every target.
   *
   * @param fresh true when at least one target got a new seq ({@code accepted}); false when every target already had
   *     a dedup row with the same hash ({@code duplicate})
   * @param targets per target in request order: key, seq, wire hash
   * @param at {@code now} when fresh, else the earliest stored {@code accepted_at} of the dedup rows (ISO)
   * @param epoch the store epoch the seqs belong to
   */
  record Stored(boolean fresh, List<TargetSeq> targets, String at, String epoch) implements PushOutcome {
    public Stored {
      targets = List.copyOf(targets);
    }
  }

  /**
   * Nothing was stored for this item.
   *
   * @param reason why (its enum carries the wire text and the metric label)
   * @param detail the text after the reason's own (a quota's which-and-whom, a bad envelope's shape problem), or null
   */
  record Rejected(RejectReason reason, String detail) implements PushOutcome {
    public Rejected {
      java.util.Objects.requireNonNull(reason);
    }

    /** A rejection found before the store (the HTTP edge's checks). */
    public Rejected(RejectReason.Rejection r) {
      this(r.reason(), r.detail());
    }

    /** The text after {@code rejected:} (e.g. {@code quota:queue depth exceeded for alpha}). */
    public String wireText() {
      return reason.wireText(detail);
    }
  }

  /**
   * One stored target.
   *
   * @param hostPubkey the target key
   * @param seq its seq in the target's queue
   * @param wireHash lowercase hex SHA-256 of the stored wire bytes
   */
  record TargetSeq(String hostPubkey, long seq, String wireHash) {}
}
