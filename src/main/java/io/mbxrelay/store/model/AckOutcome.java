package io.mbxrelay.store.model;

/** The stored outcome of a transport ack (docs/protocol.md §3 ack v2). */
public sealed interface AckOutcome {

  /**
   * Items with {@code seq <= through} were deleted.
   *
   * @param ackedThrough {@code max(old acked_through, through)}
   * @param deleted rows deleted by this ack
   * @param headSeq last allocated seq for the target (0 if none)
   */
  record Done(long ackedThrough, long deleted, long headSeq) implements AckOutcome {}

  /**
   * The caller named another epoch: 409 EPOCH.
   *
   * @param epoch the current epoch
   * @param headSeq last allocated seq for the target
   */
  record EpochChanged(String epoch, long headSeq) implements AckOutcome {}

  /**
   * {@code through} is not a safe integer, negative, or beyond {@code head_seq}: 400 BAD_ACK.
   *
   * @param epoch the current epoch
   * @param headSeq last allocated seq for the target
   */
  record BadAck(String epoch, long headSeq) implements AckOutcome {}
}
