package io.mbxrelay.host;

/**
 * Outcome of {@link RelayClient#ack(String, long)} (docs/protocol.md §3 ack v2): {@link Acked}; {@link EpochChanged} (409
 * {@code EPOCH}); {@link BadAck} (400 {@code BAD_ACK}: ack beyond head — the client rewinds, docs/protocol.md §6);
 * {@link Refused}; {@link BadAnswer}.
 */
public sealed interface AckResult permits AckResult.Acked, AckResult.BadAck, EpochChanged, Refused, BadAnswer {

  /**
   * The relay deleted this host's items up to {@code ackedThrough}.
   *
   * @param ackedThrough the stored acked position (max of old and new)
   * @param deleted number of items deleted by this call
   * @param headSeq last seq allocated for this host
   */
  record Acked(long ackedThrough, long deleted, long headSeq) implements AckResult {}

  /**
   * {@code through} was above the relay's head: treat as an epoch change (rewind to 0).
   *
   * @param headSeq the relay's head seq for this host
   */
  record BadAck(long headSeq) implements AckResult {}
}
