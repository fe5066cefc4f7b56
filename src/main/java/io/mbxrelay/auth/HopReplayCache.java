package io.mbxrelay.auth;

import io.mbxrelay.wire.Hashes;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Replay protection beyond the reference (issue 3 item 7; docs/protocol.md §2 "Verification", §8.4): remembers every
 * accepted state-changing hop for as long as its {@code x-mbx-ts} keeps it fresh, so an exact replay (same key, same
 * signed text) inside the ±window is refused with 401 {@code bad relay hop}. A client's legitimate retry is signed
 * with a fresh {@code ts}, which changes the signed text, so it passes (and the store's dedup answers it).
 *
 * <p>The entry key is SHA-256 over the caller's key and the hop's decoded signature (64 bytes), not the signature
 * string: base64 decoding is lenient (docs/protocol.md §1), so one signature has many spellings, while its bytes are
 * one. A verified Ed25519 signature names its signed text: verification refuses {@code S ≥ L}, and any other {@code R}
 * bytes change the hash that the signature must satisfy, so nobody without the caller's key can make a second valid
 * signature of the same text, and an exact replay carries the same bytes. Keying by the signature instead of the text
 * saves hashing a push's signed text (up to megabytes) per request (issue 18).
 * An entry lives until {@code ts + windowMs}; after that the hop is stale anyway.
 *
 * <p>Bounded, and never a way to lock other hosts out: at most {@code maxPerKey} entries per caller key (a key over its
 * share loses protection for its own oldest entries only) and at most {@code maxEntries} in all (over that, the
 * oldest entry overall is evicted, which at worst falls back to the reference's ±window behaviour for that old hop;
 * it never refuses anyone). Expired entries are swept at most once a second. Thread-safe (shared by every HTTP
 * verticle instance); methods are short and synchronized, O(1) except the sweep (O(size), at most once a second).
 */
public final class HopReplayCache {
  /** What {@link #admit} decided. */
  public enum Result {
    /** First time seen: remembered. */
    FRESH,
    /** Seen before inside its freshness window: refuse (401 {@code bad relay hop}). */
    REPLAY
  }

  private record Entry(String key, long until) {}

  private final int maxEntries;
  private final int maxPerKey;
  private final long windowMs;
  private final LinkedHashMap<String, Entry> seen = new LinkedHashMap<>();
  private final Map<String, LinkedHashSet<String>> byKey = new HashMap<>();
  private long lastSweep = Long.MIN_VALUE;
  private final AtomicLong replays = new AtomicLong();
  private final AtomicLong evicted = new AtomicLong();
  private volatile SharedReplays shared;

  /**
   * @param maxEntries most hops remembered in all (config {@code trust.replayCacheMaxEntries})
   * @param maxPerKey most hops remembered per caller key (config {@code trust.replayCacheMaxPerKey})
   * @param windowMs the hop freshness window, ms (config {@code limits.hopWindowMs}, docs/protocol.md §2: 300,000)
   */
  public HopReplayCache(int maxEntries, int maxPerKey, long windowMs) {
    if (maxEntries < 1 || maxPerKey < 1 || windowMs < 1) {
      throw new IllegalArgumentException("maxEntries, maxPerKey and windowMs must be positive");
    }
    this.maxEntries = maxEntries;
    this.maxPerKey = maxPerKey;
    this.windowMs = windowMs;
  }

  /**
   * Records a verified hop and says whether it was seen before.
   *
   * @param callerKey the authenticated caller's key (base64)
   * @param signedText the exact signed hop text (docs/protocol.md §2)
   * @param tsMs the hop's parsed {@code x-mbx-ts}, epoch ms
   * @param nowMs now, epoch ms
   * @return {@link Result#FRESH} or {@link Result#REPLAY}
   */
  public Result admit(String callerKey, String signedText, long tsMs, long nowMs) {
    return admit(callerKey, signedText.getBytes(StandardCharsets.UTF_8), tsMs, nowMs);
  }

  /**
   * Records a verified hop given by the bytes that identify it: the decoded signature (see the class comment) or, in
   * tests, any text. The hash is computed outside the lock.
   *
   * @param callerKey the authenticated caller's key (base64)
   * @param signedText the hop's decoded signature (64 bytes), or another identifying text
   * @param tsMs the hop's parsed {@code x-mbx-ts}, epoch ms
   * @param nowMs now, epoch ms
   * @return {@link Result#FRESH} or {@link Result#REPLAY}
   */
  public Result admit(String callerKey, byte[] signedText, long tsMs, long nowMs) {
    return admitId(callerKey, java.util.HexFormat.of().formatHex(hopId(callerKey, signedText)), tsMs, nowMs);
  }

  /**
   * The id of a hop: SHA-256 over the caller's key, a newline and the identifying bytes (see the class comment).
   *
   * @param callerKey the authenticated caller's key (base64)
   * @param signedText the hop's decoded signature (64 bytes), or another identifying text
   * @return 32 bytes
   */
  public static byte[] hopId(String callerKey, byte[] signedText) {
    java.security.MessageDigest md;
    try {
      md = java.security.MessageDigest.getInstance("SHA-256");
    } catch (java.security.NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
    md.update((callerKey + "\n").getBytes(StandardCharsets.UTF_8));
    md.update(signedText);
    return md.digest();
  }

  /**
   * Makes {@link #admitEverywhere} also consult the replays shared with other instances (PostgreSQL,
   * docs/scale-out.md "What is shared"). Call once before serving; without it (SQLite) nothing changes.
   *
   * @param replays the shared record
   */
  public void share(SharedReplays replays) {
    this.shared = java.util.Objects.requireNonNull(replays);
  }

  /**
   * {@link #admit(String, byte[], long, long)}, then, for a hop fresh here, the shared record of every instance: a
   * local replay never reaches it. Without {@link #share} (SQLite) the future is already complete.
   *
   * @param callerKey the authenticated caller's key (base64)
   * @param signature the hop's decoded signature (64 bytes)
   * @param tsMs the hop's parsed {@code x-mbx-ts}, epoch ms
   * @param nowMs now, epoch ms
   * @return {@link Result#FRESH} or {@link Result#REPLAY}; failed when the shared record is unreachable (503)
   */
  public io.vertx.core.Future<Result> admitEverywhere(String callerKey, byte[] signature, long tsMs, long nowMs) {
    byte[] id = hopId(callerKey, signature);
    Result here = admitId(callerKey, java.util.HexFormat.of().formatHex(id), tsMs, nowMs);
    SharedReplays everywhere = shared;
    if (here == Result.REPLAY || everywhere == null) {
      return io.vertx.core.Future.succeededFuture(here);
    }
    return everywhere.firstSeen(id, tsMs + windowMs, nowMs).map(first -> {
      if (first) {
        return Result.FRESH;
      }
      replays.incrementAndGet();
      return Result.REPLAY;
    });
  }

  private synchronized Result admitId(String callerKey, String id, long tsMs, long nowMs) {
    Entry e = seen.get(id);
    if (e != null && e.until >= nowMs) {
      replays.incrementAndGet();
      return Result.REPLAY;
    }
    if (nowMs - lastSweep >= 1000) {
      sweep(nowMs);
    }
    if (e != null) {
      remove(id);
    }
    seen.put(id, new Entry(callerKey, tsMs + windowMs));
    LinkedHashSet<String> mine = byKey.computeIfAbsent(callerKey, k -> new LinkedHashSet<>());
    mine.add(id);
    if (mine.size() > maxPerKey) {
      remove(mine.iterator().next());
      evicted.incrementAndGet();
    }
    if (seen.size() > maxEntries) {
      remove(seen.keySet().iterator().next());
      evicted.incrementAndGet();
    }
    return Result.FRESH;
  }

  private void remove(String id) {
    Entry e = seen.remove(id);
    if (e != null) {
      LinkedHashSet<String> ids = byKey.get(e.key);
      if (ids != null) {
        ids.remove(id);
        if (ids.isEmpty()) {
          byKey.remove(e.key);
        }
      }
    }
  }

  /**
   * Drops entries whose hop is no longer fresh.
   *
   * @param nowMs now, epoch ms
   * @return entries dropped
   */
  public synchronized int sweep(long nowMs) {
    lastSweep = nowMs;
    List<String> expired = new ArrayList<>();
    for (Map.Entry<String, Entry> en : seen.entrySet()) {
      if (en.getValue().until < nowMs) {
        expired.add(en.getKey());
      }
    }
    expired.forEach(this::remove);
    return expired.size();
  }

  /** Hops remembered right now (for a gauge). */
  public synchronized int size() {
    return seen.size();
  }

  /** Replays refused since start (for a counter). */
  public long replaysRefused() {
    return replays.get();
  }

  /** Live entries evicted to stay within the bounds, since start (for a counter). */
  public long evicted() {
    return evicted.get();
  }
}
