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
