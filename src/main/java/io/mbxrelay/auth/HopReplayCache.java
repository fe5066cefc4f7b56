package io.mbxrelay.auth;

import io.mbxrelay.wire.Hashes;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Replay protection beyond the reference (issue 3 item 7; wire.md §2 "No nonce, no replay cache"): remembers every
 * accepted state-changing hop for as long as its {@code x-mbx-ts} keeps it fresh, so an exact replay (same key, same
 * signed text) inside the ±window is refused with 401 {@code bad relay hop}. A client's legitimate retry is signed
 * with a fresh {@code ts}, which changes the signed text, so it passes (and the store's dedup answers it).
 *
 * <p>The entry key is SHA-256 over the caller's key and the signed text, not the signature string: base64 decoding
 * is lenient (wire.md §1), so one signature has many spellings, while the signed text of an exact replay is identical.
 * An entry lives until {@code ts + windowMs}; after that the hop is stale anyway.
 *
 * <p>Bounded: at most {@code maxEntries}. Expired entries are swept at most once a second on insert, and always before
 * refusing for capacity. When the cache is full of live entries a new hop is refused ({@link Result#FULL}, answered
 * 503) rather than accepted without protection. Thread-safe (shared by every HTTP verticle instance); methods are
 * short and synchronized, O(1) except the sweep (O(size), at most once a second).
 */
public final class HopReplayCache {
  /** What {@link #admit} decided. */
  public enum Result {
    /** First time seen: remembered. */
    FRESH,
    /** Seen before inside its freshness window: refuse (401 {@code bad relay hop}). */
    REPLAY,
    /** Cache full of live entries: refuse with 503, try again later. */
    FULL
  }

  private final int maxEntries;
  private final long windowMs;
  private final Map<String, Long> seen = new HashMap<>();
  private long lastSweep = Long.MIN_VALUE;
  private final AtomicLong replays = new AtomicLong();
  private final AtomicLong refusedFull = new AtomicLong();

  /**
   * @param maxEntries most hops remembered (config {@code trust.replayCacheMaxEntries})
   * @param windowMs the hop freshness window, ms (config {@code limits.hopWindowMs}, wire.md §2: 300,000)
   */
  public HopReplayCache(int maxEntries, long windowMs) {
    if (maxEntries < 1 || windowMs < 1) {
      throw new IllegalArgumentException("maxEntries and windowMs must be positive");
    }
    this.maxEntries = maxEntries;
    this.windowMs = windowMs;
  }

  /**
   * Records a verified hop and says whether it was seen before.
   *
   * @param callerKey the authenticated caller's key (base64)
   * @param signedText the exact signed hop text (wire.md §2)
   * @param tsMs the hop's parsed {@code x-mbx-ts}, epoch ms
   * @param nowMs now, epoch ms
   * @return {@link Result#FRESH}, {@link Result#REPLAY} or {@link Result#FULL}
   */
  public synchronized Result admit(String callerKey, String signedText, long tsMs, long nowMs) {
    String id = Hashes.sha256Hex((callerKey + "\n" + signedText).getBytes(StandardCharsets.UTF_8));
    Long until = seen.get(id);
    if (until != null && until >= nowMs) {
      replays.incrementAndGet();
      return Result.REPLAY;
    }
    if (nowMs - lastSweep >= 1000 || seen.size() >= maxEntries) {
      sweep(nowMs);
    }
    if (until == null && seen.size() >= maxEntries) {
      refusedFull.incrementAndGet();
      return Result.FULL;
    }
    seen.put(id, tsMs + windowMs);
    return Result.FRESH;
  }

  /**
   * Drops entries whose hop is no longer fresh.
   *
   * @param nowMs now, epoch ms
   * @return entries dropped
   */
  public synchronized int sweep(long nowMs) {
    lastSweep = nowMs;
    int dropped = 0;
    Iterator<Long> it = seen.values().iterator();
    while (it.hasNext()) {
      if (it.next() < nowMs) {
        it.remove();
        dropped++;
      }
    }
    return dropped;
  }

  /** Hops remembered right now (for a gauge). */
  public synchronized int size() {
    return seen.size();
  }

  /** Replays refused since start (for a counter). */
  public long replaysRefused() {
    return replays.get();
  }

  /** Hops refused because the cache was full, since start (for a counter). */
  public long refusedFull() {
    return refusedFull.get();
  }
}
