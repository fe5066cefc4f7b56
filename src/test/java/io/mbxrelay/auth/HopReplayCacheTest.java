package io.mbxrelay.auth;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** {@link HopReplayCache}: exact replays refused inside the window, bounded, swept. */
class HopReplayCacheTest {

  @Test
  void an_exact_replay_is_refused_until_its_ts_leaves_the_window_and_a_re_signed_hop_passes() {
    HopReplayCache c = new HopReplayCache(10, 300_000);
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
  void a_full_cache_sweeps_first_and_refuses_only_when_every_entry_is_still_live() {
    HopReplayCache c = new HopReplayCache(2, 1000);
    assertThat(c.admit("k", "a", 0, 0)).isEqualTo(HopReplayCache.Result.FRESH);
    assertThat(c.admit("k", "b", 0, 0)).isEqualTo(HopReplayCache.Result.FRESH);
    assertThat(c.admit("k", "c", 0, 10)).isEqualTo(HopReplayCache.Result.FULL);
    assertThat(c.refusedFull()).isEqualTo(1);
    assertThat(c.admit("k", "c", 2000, 2000)).isEqualTo(HopReplayCache.Result.FRESH);
    assertThat(c.size()).isEqualTo(1);
  }
}
