package io.mbxrelay.auth;

import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.UnaryOperator;

/**
 * A sliding-window rate limit per key: at most {@code limit} calls in any {@code windowMs} (docs/protocol.md §3: 120 push
 * requests per sender key per minute; 30 enrolment calls per client address per minute). Each key keeps the times
 * of its calls inside the window (at most {@code limit}) in a ring that grows with use.
 *
 * <p>The table is hard-capped at {@code maxKeys} and never locks anyone out (issue 11 item 6): when a new key finds
 * it full, keys with no call inside the window are dropped, and if it is still full the <em>least recently active</em>
 * key (its last call, allowed or refused, is the oldest) is shed. A key that keeps calling stays at the recent end
 * and keeps its window; only idle keys lose theirs. The earlier design refused new keys when full, so 50,000 junk
 * calls from distinct addresses answered 429 to every newcomer.
 *
 * <p>Keys may be mapped before counting ({@link #forClientAddresses}: IPv6 addresses grouped by prefix).
 *
 * <p>Several instances on one PostgreSQL share their windows ({@link #share}, docs/scale-out.md "What is shared"): each
 * publishes its changed windows ({@link #changes}) and counts the others' published sums ({@link #elsewhere}) in every
 * decision, so a key's calls on all instances count against one limit, within the sync lag. The request path never
 * waits for the database. Unshared (SQLite) the others' sum is always empty.
 *
 * <p>Own code rather than a rate-limit library (Bucket4j, Resilience4j): the exact sliding-window count is part of the
 * wire contract and token buckets would let a burst through that the reference refuses; the bounded, shedding key
 * table is the memory bound.
 *
 * <p>Thread-safe (shared by every HTTP verticle instance); {@link #tryAcquire} is O(1) amortized (idle keys are
 * taken from the least recently active end).
 */
public final class SlidingWindowLimiter {
  private final int limit;
  private final long windowMs;
  private final int maxKeys;
  private final UnaryOperator<String> keyMapper;
  /** Access order: the head is the least recently active key. */
  private final LinkedHashMap<String, Window> calls = new LinkedHashMap<>(16, 0.75f, true);
  private final AtomicLong shed = new AtomicLong();
  /** Other instances' calls per (mapped) key, replaced by each read of the shared table; empty unless shared. */
  private volatile Map<String, Elsewhere> elsewhere = Map.of();
  /** Windows whose count changed since last published, and those published non-zero; null unless shared. */
  private Map<String, Window> tracked;

  /**
   * One key's window as this instance publishes it to the others (docs/scale-out.md "What is shared").
   *
   * @param key the mapped key (a sender key, or a client address's rate key)
   * @param calls calls inside the window now (0: the window drained)
   * @param firstExpiresMs when the oldest of them leaves the window, epoch ms
   * @param lastExpiresMs when the newest leaves it (the whole entry is stale after this), epoch ms
   */
  public record Published(String key, int calls, long firstExpiresMs, long lastExpiresMs) {}

  /**
   * What the other instances hold for one key, summed.
   *
   * @param calls their calls inside their windows
   * @param firstExpiresMs when the first of them leaves its window, epoch ms
   */
  public record Elsewhere(int calls, long firstExpiresMs) {}

  /**
   * The times of a key's calls inside the window, oldest first: a ring that grows with use (up to {@code limit}), so a
   * key costs memory for the calls it made, not for the limit (a lifted limit of a million calls a minute once cost
   * 8 MB per key).
   */
  private static final class Window {
    long[] ring = new long[4];
    int head;
    int size;
    long last = Long.MIN_VALUE;
    /** The count and the newest call last published to the other instances (shared windows only). */
    int published;
    long publishedNewest;

    /** Drops calls that left the window. */
    void expire(long nowMs, long windowMs) {
      while (size > 0 && nowMs - ring[head] >= windowMs) {
        head = (head + 1) % ring.length;
        size--;
      }
    }

    long oldest() {
      return ring[head];
    }

    long newest() {
      return ring[(head + size - 1) % ring.length];
    }

    void add(long nowMs, int limit) {
      if (size == ring.length) {
        long[] bigger = new long[Math.min(limit, ring.length * 2)];
        for (int i = 0; i < size; i++) {
          bigger[i] = ring[(head + i) % ring.length];
        }
        ring = bigger;
        head = 0;
      }
      ring[(head + size) % ring.length] = nowMs;
      size++;
    }
  }

  /**
   * @param limit calls allowed per window, at least 1
   * @param windowMs window length, ms
   * @param maxKeys most keys tracked, at least 1 (config {@code limits.rateTableMaxKeys})
   */
  public SlidingWindowLimiter(int limit, long windowMs, int maxKeys) {
    this(limit, windowMs, maxKeys, UnaryOperator.identity());
  }

  private SlidingWindowLimiter(int limit, long windowMs, int maxKeys, UnaryOperator<String> keyMapper) {
    if (limit < 1 || windowMs < 1 || maxKeys < 1) {
      throw new IllegalArgumentException("limit, windowMs and maxKeys must be positive");
    }
    this.limit = limit;
    this.windowMs = windowMs;
    this.maxKeys = maxKeys;
    this.keyMapper = Objects.requireNonNull(keyMapper);
  }

  /**
   * A limiter keyed by client address (the enrolment calls, docs/protocol.md §3): IPv6 addresses count per network of
   * {@code ipv6PrefixBits} (one host usually holds a whole /64), IPv4 per address ({@link ClientAddress#rateKey}).
   *
   * @param limit calls allowed per window
   * @param windowMs window length, ms
   * @param maxKeys most keys tracked
   * @param ipv6PrefixBits IPv6 prefix length that forms one key (config {@code trust.ipv6PrefixBits}), 1..128
   * @return the limiter
   */
  public static SlidingWindowLimiter forClientAddresses(int limit, long windowMs, int maxKeys, int ipv6PrefixBits) {
    if (ipv6PrefixBits < 1 || ipv6PrefixBits > 128) {
      throw new IllegalArgumentException("ipv6PrefixBits must be 1..128");
    }
    return new SlidingWindowLimiter(limit, windowMs, maxKeys, a -> ClientAddress.rateKey(a, ipv6PrefixBits));
  }

  /**
   * Counts a call if the key has room.
   *
   * @param key sender key or client address (mapped first for a {@link #forClientAddresses} limiter)
   * @param nowMs now, epoch ms
   * @return true when the call is within the limit (and was counted)
   */
  public synchronized boolean tryAcquire(String key, long nowMs) {
    String k = keyMapper.apply(key);
    Window w = calls.get(k); // access order: moves k to the recent end
    if (w == null) {
      if (calls.size() >= maxKeys) {
        makeRoom(nowMs);
      }
      w = new Window();
      calls.put(k, w);
    }
    w.last = nowMs;
    w.expire(nowMs, windowMs);
    if (w.size + callsElsewhere(k) >= limit) {
      return false;
    }
    w.add(nowMs, limit);
    if (tracked != null) {
      tracked.put(k, w);
    }
    return true;
  }

  private int callsElsewhere(String mappedKey) {
    Elsewhere e = elsewhere.get(mappedKey);
    return e == null ? 0 : e.calls();
  }

  /**
   * Makes this window one of several instances' (PostgreSQL, docs/scale-out.md "What is shared"): from now on it
   * remembers which keys changed for {@link #changes}, and counts what {@link #elsewhere} last said the other instances
   * hold. Without it (SQLite) nothing of this runs.
   */
  public synchronized void share() {
    if (tracked == null) {
      tracked = new java.util.HashMap<>();
    }
  }

  /**
   * The windows that changed since the last call (calls added or expired), to publish; a window that drained
   * is listed once with 0 calls. Only after {@link #share}. O(keys changed or still published).
   *
   * @param nowMs now, epoch ms
   * @return the changes, in no order
   */
  public synchronized java.util.List<Published> changes(long nowMs) {
    if (tracked == null || tracked.isEmpty()) {
      return java.util.List.of();
    }
    java.util.List<Published> out = new java.util.ArrayList<>();
    Iterator<Map.Entry<String, Window>> it = tracked.entrySet().iterator();
    while (it.hasNext()) {
      Map.Entry<String, Window> e = it.next();
      Window w = e.getValue();
      w.expire(nowMs, windowMs);
      // a new call changes the newest even when an expiry kept the count: the row's end must follow it
      if (w.size != w.published || (w.size > 0 && w.newest() != w.publishedNewest)) {
        out.add(w.size == 0 ? new Published(e.getKey(), 0, nowMs, nowMs)
            : new Published(e.getKey(), w.size, w.oldest() + windowMs, w.newest() + windowMs));
        w.published = w.size;
        w.publishedNewest = w.size == 0 ? Long.MIN_VALUE : w.newest();
      }
      if (w.size == 0) {
        it.remove();
      }
    }
    return out;
  }

  /**
   * Marks keys whose last {@link #changes} could not be published, so the next call lists them again (a window that
   * drained meanwhile is no longer tracked: its stale row expires by itself).
   *
   * @param keys mapped keys from {@link Published#key}
   */
  public synchronized void republish(java.util.Collection<String> keys) {
    if (tracked == null) {
      return;
    }
    for (String k : keys) {
      Window w = tracked.get(k);
      if (w != null) {
        w.published = -1;
      }
    }
  }

  /**
   * Replaces what the other instances hold (their published windows summed per mapped key); counted by every later
   * {@link #tryAcquire} and {@link #msUntilAllowed}. Safe on any thread.
   *
   * @param others per mapped key; keys absent hold nothing elsewhere
   */
  public void elsewhere(Map<String, Elsewhere> others) {
    this.elsewhere = Map.copyOf(others);
  }

  /**
   * How long until {@code key} may make a call, without counting one: a look before the request's body is read
   * (issue 11 item 2), so a caller over its window is refused from its headers. It changes no window; like any call
   * it marks the key recently active. O(1).
   *
   * @param key sender key or client address (mapped like {@link #tryAcquire})
   * @param nowMs now, epoch ms
   * @return 0 when {@link #tryAcquire} would allow a call now, else the ms until the oldest counted call leaves the
   *     window
   */
  public synchronized long msUntilAllowed(String key, long nowMs) {
    String k = keyMapper.apply(key);
    Window w = calls.get(k);
    Elsewhere e = elsewhere.get(k);
    int there = e == null ? 0 : e.calls();
    if (w != null) {
      w.expire(nowMs, windowMs);
    }
    int here = w == null ? 0 : w.size;
    if (here + there < limit) {
      return 0;
    }
    long wait = here > 0 ? windowMs - (nowMs - w.oldest()) : Long.MAX_VALUE;
    if (there > 0) {
      wait = Math.min(wait, e.firstExpiresMs() - nowMs);
    }
    return Math.max(1, wait);
  }

  /** Keys tracked right now (metrics). */
  public synchronized int size() {
    return calls.size();
  }

  /** Keys whose window was still open when they were shed to make room, since start (metrics, tests). */
  public long shed() {
    return shed.get();
  }

  /** Drops idle keys from the least recently active end, then, if still full, the least recently active key. */
  private void makeRoom(long nowMs) {
    Iterator<Map.Entry<String, Window>> it = calls.entrySet().iterator();
    while (it.hasNext() && calls.size() >= maxKeys) {
      Window w = it.next().getValue();
      if (nowMs - w.last < windowMs) {
        // Least recently active yet inside its window: shed it (the table must not lock newcomers out).
        shed.incrementAndGet();
      }
      it.remove();
    }
  }
}
