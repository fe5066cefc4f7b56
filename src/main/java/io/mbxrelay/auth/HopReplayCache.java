package io.mbxrelay.auth;

import java.nio.charset.StandardCharsets;
import java.util.HashMap;
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
 * it never refuses anyone). Stale entries are dropped from the oldest end as hops arrive, and all of them (a full pass,
 * at most once a second) before a fresh entry would be evicted for room. Thread-safe (shared by every
 * HTTP verticle instance); methods are short and synchronized, O(1) amortized except {@link #sweep} (O(size)).
 */
public final class HopReplayCache {
  /** What {@link #admit} decided. */
  public enum Result {
    /** First time seen: remembered. */
    FRESH,
    /** Seen before inside its freshness window: refuse (401 {@code bad relay hop}). */
    REPLAY
  }

  /** No slot. */
  private static final int NIL = -1;
  /** Slots a new cache starts with; they double as it fills, up to {@code maxEntries + 1} (the index: 2–4 × slots). */
  private static final int INITIAL_SLOTS = 1024;
  /** Least time between two full sweeps before an eviction for room, ms. */
  private static final long FULL_SWEEP_EVERY_MS = 1000;

  /** One caller's remembered hops: a doubly linked list through the slots, oldest first. */
  private static final class Owner {
    final String key;
    int oldest = NIL;
    int newest = NIL;
    int count;

    Owner(String key) {
      this.key = key;
    }
  }

  private final int maxEntries;
  private final int maxPerKey;
  private final long windowMs;
  // The entries live in parallel arrays ("slots"), not in a map of objects per hop: at goal 5's load of issue 18
  // (~3,000 state-changing hops a second, the cache full at 200,000) the map's strings, records and nodes (~250 bytes
  // a hop, each living about a minute) were most of what survived the young collections (G1's age table: ~15 MB over
  // five ages before, ~4.6 MB after) and then died in the old generation (mixed collections in a two-minute run:
  // 13-15 before, 2-9 after; docs/performance.md). A slot is 44 bytes in arrays that grow by doubling, plus 8-16
  // bytes of index, plus one Owner and map node (~70 bytes) per caller key with entries. Own code: no library offers
  // a bounded, insertion-ordered set of 128-bit ids with per-owner quotas and no per-entry objects.
  /** The first and second 8 bytes of a hop's id (the 128 leading bits of {@link #hopId}). */
  private long[] idHi = new long[0];
  private long[] idLo = new long[0];
  /** When each slot's hop stops being fresh, epoch ms. */
  private long[] until = new long[0];
  private Owner[] owner = new Owner[0];
  /** Insertion order over all slots (older, newer); the free list through {@link #newer}. */
  private int[] older = new int[0];
  private int[] newer = new int[0];
  /** Insertion order within the slot's owner. */
  private int[] ownerOlder = new int[0];
  private int[] ownerNewer = new int[0];
  private int oldest = NIL;
  private int newest = NIL;
  private int size;
  /** Slots handed out at least once; those below it and not live are on the free list. */
  private int used;
  private int free = NIL;
  /** When {@link #sweep} last ran, epoch ms (half of Long.MIN_VALUE: no overflow in {@code now - lastFullSweep}). */
  private long lastFullSweep = Long.MIN_VALUE / 2;
  /** Open addressing with linear probing by {@link #idLo}: slot + 1 per position, 0 = empty. */
  private int[] index;
  private final Map<String, Owner> owners = new HashMap<>();
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
    allocate((int) Math.min(INITIAL_SLOTS, maxEntries + 1L));
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
    return admitId(callerKey, hopId(callerKey, signedText), tsMs, nowMs);
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
    Result here = admitId(callerKey, id, tsMs, nowMs);
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

  private synchronized Result admitId(String callerKey, byte[] id, long tsMs, long nowMs) {
    // 128 of the id's 256 bits: a false REPLAY needs two of at most 10^8 remembered hops to share them (p < 10^-22)
    long hi = leading(id, 0);
    long lo = leading(id, 8);
    int e = find(hi, lo);
    if (e != NIL && until[e] >= nowMs) {
      replays.incrementAndGet();
      return Result.REPLAY;
    }
    dropExpiredOldest(nowMs);
    if (e != NIL && owner[e] != null) { // expired, and not dropped just now: replaced by the new entry
      remove(e);
    }
    Owner o = owners.computeIfAbsent(callerKey, Owner::new);
    int slot = take();
    idHi[slot] = hi;
    idLo[slot] = lo;
    until[slot] = tsMs + windowMs;
    owner[slot] = o;
    link(slot, o);
    addToIndex(slot);
    if (o.count > maxPerKey) {
      evict(o.oldest, nowMs);
    }
    if (size > maxEntries && nowMs - lastFullSweep >= FULL_SWEEP_EVERY_MS) {
      // stale entries behind a fresher one (a host whose clock runs ahead holds back everyone's at the oldest end) go
      // before a fresh one is evicted for room
      sweep(nowMs);
    }
    if (size > maxEntries) {
      evict(oldest, nowMs);
    }
    return Result.FRESH;
  }

  /** Removes an entry for room; counted as evicted only while its hop is still fresh. */
  private void evict(int slot, long nowMs) {
    if (until[slot] >= nowMs) {
      evicted.incrementAndGet();
    }
    remove(slot);
  }

  private static long leading(byte[] id, int from) {
    long v = 0;
    for (int i = from; i < from + 8; i++) {
      v = (v << 8) | (id[i] & 0xff);
    }
    return v;
  }

  /**
   * Drops entries from the oldest end while their hop is stale: amortized O(1) per admitted hop. An entry behind a
   * fresher one (behind the entry of a host whose clock runs ahead, which stays up to twice the window) stays until it
   * reaches the oldest end or a full {@link #sweep} (at most once a second, when the cache is full) drops it; it is
   * never taken for a replay meanwhile ({@link #admitId} compares its time).
   */
  private void dropExpiredOldest(long nowMs) {
    while (oldest != NIL && until[oldest] < nowMs) {
      remove(oldest);
    }
  }

  /** A free slot, growing the arrays (doubling, up to {@code maxEntries + 1}) when none is left. */
  private int take() {
    if (free != NIL) {
      int slot = free;
      free = newer[slot];
      return slot;
    }
    if (used == idHi.length) {
      allocate((int) Math.min((long) idHi.length * 2, maxEntries + 1L));
    }
    return used++;
  }

  /** (Re)allocates the slot arrays for {@code slots} slots and rebuilds the index. */
  private void allocate(int slots) {
    idHi = java.util.Arrays.copyOf(idHi, slots);
    idLo = java.util.Arrays.copyOf(idLo, slots);
    until = java.util.Arrays.copyOf(until, slots);
    owner = java.util.Arrays.copyOf(owner, slots);
    older = java.util.Arrays.copyOf(older, slots);
    newer = java.util.Arrays.copyOf(newer, slots);
    ownerOlder = java.util.Arrays.copyOf(ownerOlder, slots);
    ownerNewer = java.util.Arrays.copyOf(ownerNewer, slots);
    index = new int[Integer.highestOneBit(Math.max(2, slots) - 1) << 2]; // a power of two ≥ 2 × slots: load ≤ ½
    for (int slot = 0; slot < used; slot++) {
      if (owner[slot] != null) {
        addToIndex(slot);
      }
    }
  }

  /** Appends a new slot at the newest end of both orders. */
  private void link(int slot, Owner o) {
    older[slot] = newest;
    newer[slot] = NIL;
    if (newest != NIL) {
      newer[newest] = slot;
    } else {
      oldest = slot;
    }
    newest = slot;
    ownerOlder[slot] = o.newest;
    ownerNewer[slot] = NIL;
    if (o.newest != NIL) {
      ownerNewer[o.newest] = slot;
    } else {
      o.oldest = slot;
    }
    o.newest = slot;
    o.count++;
    size++;
  }

  private void remove(int slot) {
    int a = older[slot];
    int b = newer[slot];
    if (a != NIL) {
      newer[a] = b;
    } else {
      oldest = b;
    }
    if (b != NIL) {
      older[b] = a;
    } else {
      newest = a;
    }
    Owner o = owner[slot];
    a = ownerOlder[slot];
    b = ownerNewer[slot];
    if (a != NIL) {
      ownerNewer[a] = b;
    } else {
      o.oldest = b;
    }
    if (b != NIL) {
      ownerOlder[b] = a;
    } else {
      o.newest = a;
    }
    if (--o.count == 0) {
      owners.remove(o.key);
    }
    removeFromIndex(slot);
    owner[slot] = null;
    newer[slot] = free;
    free = slot;
    size--;
  }

  private int home(long lo) {
    return (int) (lo ^ (lo >>> 32)) & (index.length - 1);
  }

  private int find(long hi, long lo) {
    int mask = index.length - 1;
    for (int i = home(lo); index[i] != 0; i = (i + 1) & mask) {
      int slot = index[i] - 1;
      if (idLo[slot] == lo && idHi[slot] == hi) {
        return slot;
      }
    }
    return NIL;
  }

  private void addToIndex(int slot) {
    int mask = index.length - 1;
    int i = home(idLo[slot]);
    while (index[i] != 0) {
      i = (i + 1) & mask;
    }
    index[i] = slot + 1;
  }

  /** Linear probing's deletion by backward shift (Knuth, TAOCP vol. 3, 6.4 algorithm R): no tombstones. */
  private void removeFromIndex(int slot) {
    int mask = index.length - 1;
    int i = home(idLo[slot]);
    while (index[i] != slot + 1) {
      i = (i + 1) & mask;
    }
    index[i] = 0;
    for (int j = (i + 1) & mask; index[j] != 0; j = (j + 1) & mask) {
      int h = home(idLo[index[j] - 1]);
      boolean stays = j > i ? h > i && h <= j : h > i || h <= j; // its home lies cyclically in (i, j]
      if (!stays) {
        index[i] = index[j];
        index[j] = 0;
        i = j;
      }
    }
  }

  /**
   * Drops every entry whose hop is no longer fresh (a full pass; {@link #admit} drops from the oldest end, and runs
   * this at most once a second when the cache is full, before it evicts a fresh entry for room).
   *
   * @param nowMs now, epoch ms
   * @return entries dropped
   */
  public synchronized int sweep(long nowMs) {
    lastFullSweep = nowMs;
    int dropped = 0;
    for (int slot = oldest; slot != NIL; ) {
      int next = newer[slot];
      if (until[slot] < nowMs) {
        remove(slot);
        dropped++;
      }
      slot = next;
    }
    return dropped;
  }

  /** Hops remembered right now (for a gauge). */
  public synchronized int size() {
    return size;
  }

  /** Replays refused since start (for a counter). */
  public long replaysRefused() {
    return replays.get();
  }

  /** Entries evicted while still fresh to stay within the bounds, since start (for a counter). */
  public long evicted() {
    return evicted.get();
  }
}
