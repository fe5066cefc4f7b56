package io.mbxrelay.auth;

import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;

/**
 * A sliding-window rate limit per key: at most {@code limit} calls in any {@code windowMs} (wire.md §3: 120 push
 * requests per sender key per minute; 30 enrolment calls per client address per minute). Each key keeps the times
 * of its last {@code limit} calls in a ring. The table is hard-capped at {@code maxKeys}: keys with no call inside
 * the window are dropped first; when the table is still full, calls from new keys are refused (fail closed) rather
 * than evicting the windows of active keys.
 *
 * <p>Own code rather than a rate-limit library (Bucket4j, Resilience4j): the exact sliding-window count and the
 * fail-closed hard cap on keys are part of the wire contract and the memory bound, and token buckets would let a
 * burst through that the reference refuses.
 *
 * <p>Thread-safe (shared by every HTTP verticle instance).
 */
public final class SlidingWindowLimiter {
  private final int limit;
  private final long windowMs;
  private final int maxKeys;
  private final Map<String, long[]> calls = new HashMap<>();
  private final Map<String, Integer> heads = new HashMap<>();

  /**
   * @param limit calls allowed per window
   * @param windowMs window length
   * @param maxKeys most keys tracked
   */
  public SlidingWindowLimiter(int limit, long windowMs, int maxKeys) {
    this.limit = limit;
    this.windowMs = windowMs;
    this.maxKeys = maxKeys;
  }

  /**
   * Counts a call if the key has room.
   *
   * @param key sender key or client address
   * @param nowMs now
   * @return true when the call is within the limit (and was counted)
   */
  public synchronized boolean tryAcquire(String key, long nowMs) {
    long[] ring = calls.get(key);
    if (ring == null) {
      if (calls.size() >= maxKeys) {
        purge(nowMs);
        if (calls.size() >= maxKeys) {
          return false;
        }
      }
      ring = new long[limit];
      java.util.Arrays.fill(ring, Long.MIN_VALUE);
      calls.put(key, ring);
      heads.put(key, 0);
    }
    int head = heads.get(key);
    // ring[head] is the oldest of the last `limit` calls
    if (ring[head] != Long.MIN_VALUE && nowMs - ring[head] < windowMs) {
      return false;
    }
    ring[head] = nowMs;
    heads.put(key, (head + 1) % limit);
    return true;
  }

  /** Keys tracked right now (metrics). */
  public synchronized int size() {
    return calls.size();
  }

  private void purge(long nowMs) {
    Iterator<Map.Entry<String, long[]>> it = calls.entrySet().iterator();
    while (it.hasNext()) {
      Map.Entry<String, long[]> e = it.next();
      int head = heads.get(e.getKey());
      long newest = e.getValue()[(head - 1 + limit) % limit];
      if (newest == Long.MIN_VALUE || nowMs - newest >= windowMs) {
        it.remove();
        heads.remove(e.getKey());
      }
    }
  }
}
