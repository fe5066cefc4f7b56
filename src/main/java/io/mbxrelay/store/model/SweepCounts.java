package io.mbxrelay.store.model;

/**
 * What one sweep transaction did (docs/protocol.md §5 "Sweep" receipt fields).
 *
 * @param rows items deleted (all kinds)
 * @param envelopes expired envelopes deleted
 * @param receipts expired receipts deleted
 * @param expired expired notices deleted
 * @param notices notices enqueued
 * @param skippedNotEnrolled notices skipped because the sender is not live
 * @param skippedOverCap notices skipped because the sender's own queue is at its caps
 * @param freedBytes stored bytes freed
 */
public record SweepCounts(int rows, int envelopes, int receipts, int expired, int notices, int skippedNotEnrolled,
    int skippedOverCap, long freedBytes) {

  /** No work. */
  public static final SweepCounts NONE = new SweepCounts(0, 0, 0, 0, 0, 0, 0, 0);

  /** Sum of two counts. */
  public SweepCounts plus(SweepCounts o) {
    return new SweepCounts(rows + o.rows, envelopes + o.envelopes, receipts + o.receipts, expired + o.expired,
        notices + o.notices, skippedNotEnrolled + o.skippedNotEnrolled, skippedOverCap + o.skippedOverCap,
        freedBytes + o.freedBytes);
  }
}
