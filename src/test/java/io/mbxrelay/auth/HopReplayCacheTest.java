package io.mbxrelay.auth;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** {@link HopReplayCache}: exact replays refused inside the window, bounded per key and in all, swept. */
class HopReplayCacheTest {

  @Test
  void an_exact_replay_is_refused_until_its_ts_leaves_the_window_and_a_re_signed_hop_passes() {
    HopReplayCache c = new HopReplayCache(10, 10, 300_000);
    assertThat(c.admit("k", "text@1000", 1000, 1000)).isEqualTo(HopReplayCache.Result.FRESH);
    assertThat(c.admit("k", "text@1000", 1000, 2000)).isEqualTo(HopReplayCache.Result.REPLAY);
    assertThat(c.admit("other", "text@1000", 1000, 2000)).as("keyed by caller too").isEqualTo(HopReplayCache.Result.FRESH);
    assertThat(c.admit("k", "text@1500", 1500, 2000)).isEqualTo(HopReplayCache.Result.FRESH);
    assertThat(c.replaysRefused()).isEqualTo(1);
    // past ts + window the hop is stale anyway; the entry is swept
    assertThat(c.sweep(301_001)).isEqualTo(2);
    assertThat(c.size()).isEqualTo(1);
  }

  @Test
  void one_key_flooding_the_cache_only_evicts_its_own_entries_and_never_locks_out_another_host() {
    HopReplayCache c = new HopReplayCache(100, 3, 300_000);
    assertThat(c.admit("victim", "v1", 0, 0)).isEqualTo(HopReplayCache.Result.FRESH);
    for (int i = 0; i < 1000; i++) {
      assertThat(c.admit("flooder", "f" + i, 0, 0)).isEqualTo(HopReplayCache.Result.FRESH);
    }
    assertThat(c.size()).isEqualTo(4); // 3 of the flooder's, 1 of the victim's
    assertThat(c.admit("victim", "v1", 0, 1)).as("the victim keeps its protection").isEqualTo(HopReplayCache.Result.REPLAY);
    assertThat(c.admit("victim", "v2", 0, 1)).isEqualTo(HopReplayCache.Result.FRESH);
    assertThat(c.evicted()).isEqualTo(997);
  }

  @Test
  void a_full_cache_evicts_its_oldest_entry_instead_of_refusing() {
    HopReplayCache c = new HopReplayCache(2, 10, 300_000);
    assertThat(c.admit("a", "x", 0, 0)).isEqualTo(HopReplayCache.Result.FRESH);
    assertThat(c.admit("b", "y", 0, 0)).isEqualTo(HopReplayCache.Result.FRESH);
    assertThat(c.admit("c", "z", 0, 0)).isEqualTo(HopReplayCache.Result.FRESH);
    assertThat(c.size()).isEqualTo(2);
    assertThat(c.admit("b", "y", 0, 1)).isEqualTo(HopReplayCache.Result.REPLAY);
    assertThat(c.evicted()).isEqualTo(1);
  }

  @Test
  void a_stale_entry_at_the_oldest_end_is_dropped_as_hops_arrive_and_an_expired_hop_is_admitted_again() {
    HopReplayCache c = new HopReplayCache(10, 10, 1000);
    assertThat(c.admit("k", "a", 0, 0)).isEqualTo(HopReplayCache.Result.FRESH);
    assertThat(c.admit("k", "b", 500, 500)).isEqualTo(HopReplayCache.Result.FRESH);
    assertThat(c.admit("k", "c", 1200, 1200)).as("a's ts + window has passed: dropped").isEqualTo(HopReplayCache.Result.FRESH);
    assertThat(c.size()).isEqualTo(2);
    assertThat(c.admit("k", "b", 500, 1500)).as("b is stale at its until").isEqualTo(HopReplayCache.Result.REPLAY);
    assertThat(c.admit("k", "b", 600, 1501)).as("past it, the same id is admitted again").isEqualTo(HopReplayCache.Result.FRESH);
    assertThat(c.evicted()).isZero();
  }

  @Test
  void a_full_cache_drops_stale_entries_held_back_by_a_fast_clock_before_it_evicts_a_fresh_one() {
    HopReplayCache c = new HopReplayCache(2, 10, 1000);
    assertThat(c.admit("ahead", "a", 1000, 0)).isEqualTo(HopReplayCache.Result.FRESH); // fresh until 2000
    assertThat(c.admit("behind", "b", -1000, 0)).isEqualTo(HopReplayCache.Result.FRESH); // fresh until 0
    assertThat(c.admit("c", "c", 1000, 1000)).as("b is stale behind a: swept, no room needed")
        .isEqualTo(HopReplayCache.Result.FRESH);
    assertThat(c.admit("ahead", "a", 1000, 1001)).as("a kept its protection").isEqualTo(HopReplayCache.Result.REPLAY);
    assertThat(c.evicted()).isZero();
  }

  /**
   * Random admissions (ids, callers, clocks ahead and behind) against a plain model of the rules: the first hop of an id
   * is fresh, the same id again is a replay until its ts + window, a caller over its share loses its own oldest entry,
   * a full cache its oldest overall, and stale entries leave from the oldest end. Exercises the arrays' growth, the free
   * list and the index's deletions far beyond the other tests.
   */
  @Test
  void random_admissions_decide_as_the_plain_rules_do() {
    java.util.Random r = new java.util.Random(18);
    for (int round = 0; round < 20; round++) {
      int max = 1 + r.nextInt(round < 10 ? 50 : 5000);
      int perKey = 1 + r.nextInt(round % 2 == 0 ? 8 : max + 1);
      long window = 1 + r.nextInt(2000);
      HopReplayCache c = new HopReplayCache(max, perKey, window);
      Model m = new Model(max, perKey, window);
      long now = 0;
      for (int i = 0; i < 40_000; i++) {
        now += r.nextInt(3);
        String key = "k" + r.nextInt(1 + round * 3);
        String id = "h" + r.nextInt(max * 3 + 10);
        // callers' clocks anywhere in the window: entries that stay up to twice it hold back the oldest end
        long ts = now - window + r.nextInt((int) (2 * window + 1));
        HopReplayCache.Result got = c.admit(key, id, ts, now);
        assertThat(got).as("round %d, step %d", round, i).isEqualTo(m.admit(key, id, ts, now));
      }
      assertThat(c.size()).as("round %d", round).isEqualTo(m.seen.size());
      assertThat(c.evicted()).as("round %d", round).isEqualTo(m.evicted);
      assertThat(c.replaysRefused()).as("round %d", round).isEqualTo(m.replays);
      assertThat(c.sweep(now + 2 * window + 1)).as("every entry is stale past now + 2 windows").isEqualTo(m.seen.size());
      assertThat(c.size()).isZero();
    }
  }

  /**
   * The rules in maps of objects (the earlier implementation's shape): stale entries leave from the oldest end, and all
   * of them at most once a second before a fresh entry is evicted for room; only fresh entries count as evicted.
   */
  private static final class Model {
    final int max;
    final int perKey;
    final long window;
    final java.util.LinkedHashMap<String, long[]> seen = new java.util.LinkedHashMap<>(); // id → {until}
    final java.util.Map<String, String> ownerOf = new java.util.HashMap<>();
    final java.util.Map<String, java.util.LinkedHashSet<String>> byKey = new java.util.HashMap<>();
    long evicted;
    long replays;
    long lastSweep = Long.MIN_VALUE / 2;

    Model(int max, int perKey, long window) {
      this.max = max;
      this.perKey = perKey;
      this.window = window;
    }

    HopReplayCache.Result admit(String key, String text, long ts, long now) {
      String id = key + "\n" + text;
      long[] e = seen.get(id);
      if (e != null && e[0] >= now) {
        replays++;
        return HopReplayCache.Result.REPLAY;
      }
      while (!seen.isEmpty() && seen.values().iterator().next()[0] < now) {
        remove(seen.keySet().iterator().next());
      }
      if (seen.containsKey(id)) {
        remove(id);
      }
      seen.put(id, new long[] {ts + window});
      ownerOf.put(id, key);
      java.util.LinkedHashSet<String> mine = byKey.computeIfAbsent(key, k -> new java.util.LinkedHashSet<>());
      mine.add(id);
      if (mine.size() > perKey) {
        evict(mine.iterator().next(), now);
      }
      if (seen.size() > max && now - lastSweep >= 1000) {
        lastSweep = now;
        new java.util.ArrayList<>(seen.keySet()).stream().filter(k -> seen.get(k)[0] < now).forEach(this::remove);
      }
      if (seen.size() > max) {
        evict(seen.keySet().iterator().next(), now);
      }
      return HopReplayCache.Result.FRESH;
    }

    void evict(String id, long now) {
      if (seen.get(id)[0] >= now) {
        evicted++;
      }
      remove(id);
    }

    void remove(String id) {
      seen.remove(id);
      String key = ownerOf.remove(id);
      java.util.LinkedHashSet<String> ids = byKey.get(key);
      ids.remove(id);
      if (ids.isEmpty()) {
        byKey.remove(key);
      }
    }
  }

  @Test
  void a_hop_fresh_here_is_checked_against_the_shared_record_and_a_local_replay_never_reaches_it() {
    HopReplayCache c = new HopReplayCache(10, 10, 300_000);
    byte[] sig = new byte[64];
    assertThat(c.admitEverywhere("k", sig, 1000, 1000).result()).as("not shared: memory only")
        .isEqualTo(HopReplayCache.Result.FRESH);
    java.util.Map<String, Long> record = new java.util.HashMap<>(); // another instance's view of the same table
    java.util.concurrent.atomic.AtomicInteger asked = new java.util.concurrent.atomic.AtomicInteger();
    c.share((id, until, now) -> {
      asked.incrementAndGet();
      return io.vertx.core.Future.succeededFuture(record.putIfAbsent(java.util.HexFormat.of().formatHex(id), until)
          == null);
    });
    assertThat(c.admitEverywhere("k", sig, 1000, 2000).result()).as("local replay")
        .isEqualTo(HopReplayCache.Result.REPLAY);
    assertThat(asked).hasValue(0);
    byte[] other = new byte[64];
    other[0] = 1;
    record.put(java.util.HexFormat.of().formatHex(HopReplayCache.hopId("k", other)), 301_000L); // seen elsewhere
    assertThat(c.admitEverywhere("k", other, 1000, 2000).result()).isEqualTo(HopReplayCache.Result.REPLAY);
    assertThat(c.replaysRefused()).isEqualTo(2);
    other[0] = 2;
    assertThat(c.admitEverywhere("k", other, 1000, 2000).result()).isEqualTo(HopReplayCache.Result.FRESH);
    assertThat(record).containsEntry(java.util.HexFormat.of().formatHex(HopReplayCache.hopId("k", other)), 301_000L);
    c.share((id, until, now) -> io.vertx.core.Future.failedFuture(new java.sql.SQLException("down")));
    other[0] = 3;
    assertThat(c.admitEverywhere("k", other, 1000, 2000).failed()).as("unreachable: the caller answers 503").isTrue();
  }
}
