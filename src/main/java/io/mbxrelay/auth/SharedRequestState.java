package io.mbxrelay.auth;

import io.vertx.core.Verticle;

/**
 * The request state that every relay instance on one store shares (issue 20 items 5–7; docs/scale-out.md "What is
 * shared, and what stays per instance"): enrolment challenges, the replay record of state-changing hops, and the rate
 * windows. Given by a store that several processes serve (PostgreSQL); a store one process serves (SQLite) gives none,
 * and the relay keeps all three in memory.
 */
public interface SharedRequestState extends Challenges, SharedReplays {
  /**
   * Connects the in-memory replay cache and rate limiters to the shared state.
   *
   * @param replay the instance's replay cache (answers first; a hop fresh there is recorded in the shared state)
   * @param enrolRate the enrolment-call window per client address
   * @param pushRate the push window per sender
   * @return the verticle that synchronises the windows and sweeps expired rows; the caller deploys it
   */
  Verticle attach(HopReplayCache replay, SlidingWindowLimiter enrolRate, SlidingWindowLimiter pushRate);
}
