package io.mbxrelay.auth;

import io.vertx.core.Future;

/**
 * The replay protection several relay instances share (docs/scale-out.md "What is shared"): a state-changing hop that
 * one instance accepted is refused by every other within its freshness window. Consulted by {@link HopReplayCache}
 * only after its own memory found the hop fresh, so a replay on the same instance never reaches it.
 *
 * <p>Safe on any event loop; the future completes on the caller's context.
 */
public interface SharedReplays {
  /**
   * Records a hop's id unless another instance (or this one) recorded it before and it has not expired.
   *
   * @param id SHA-256 over the caller's key and the hop's decoded signature (32 bytes, {@link HopReplayCache#hopId})
   * @param untilMs when the hop stops being fresh ({@code x-mbx-ts} + {@code limits.hopWindowMs}), epoch ms
   * @param nowMs now, epoch ms (an expired row with the same id is replaced)
   * @return true when first seen (recorded now), false for a replay; failed when the shared store is unreachable
   */
  Future<Boolean> firstSeen(byte[] id, long untilMs, long nowMs);
}
