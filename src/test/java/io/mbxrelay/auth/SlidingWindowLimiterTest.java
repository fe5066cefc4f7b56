package io.mbxrelay.auth;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** The sliding window, and issue 11 item 6: a full table sheds the least recently active key, never locks out. */
class SlidingWindowLimiterTest {

  @Test
  void a_key_gets_limit_calls_per_sliding_window() {
    SlidingWindowLimiter l = new SlidingWindowLimiter(2, 1000, 10);
    assertThat(l.tryAcquire("a", 0)).isTrue();
    assertThat(l.tryAcquire("a", 500)).isTrue();
    assertThat(l.tryAcquire("a", 999)).isFalse();
    assertThat(l.tryAcquire("a", 1000)).isTrue();
    assertThat(l.tryAcquire("a", 1499)).isFalse();
    assertThat(l.tryAcquire("a", 1500)).isTrue();
  }

  @Test
  void a_full_table_sheds_the_least_recently_active_key_and_keeps_a_busy_one_limited() {
    SlidingWindowLimiter l = new SlidingWindowLimiter(1, 60_000, 3);
    assertThat(l.tryAcquire("busy", 0)).isTrue();
    assertThat(l.tryAcquire("x1", 1)).isTrue();
    assertThat(l.tryAcquire("x2", 2)).isTrue();
    for (int i = 0; i < 100; i++) {
      assertThat(l.tryAcquire("busy", 10 + 2 * i)).isFalse(); // refused calls keep it recent
      assertThat(l.tryAcquire("new" + i, 11 + 2 * i)).as("newcomer " + i).isTrue();
    }
    assertThat(l.size()).isEqualTo(3);
    assertThat(l.shed()).isEqualTo(100);
    // idle keys (no call inside the window) are dropped without counting as shed
    assertThat(l.tryAcquire("late", 200_000)).isTrue();
    assertThat(l.shed()).isEqualTo(100);
  }

  @Test
  void a_client_address_limiter_counts_ipv6_per_prefix() {
    SlidingWindowLimiter l = SlidingWindowLimiter.forClientAddresses(1, 60_000, 100, 64);
    assertThat(l.tryAcquire("2001:db8:0:1::1", 0)).isTrue();
    assertThat(l.tryAcquire("2001:db8:0:1:ab::2", 1)).isFalse();
    assertThat(l.tryAcquire("2001:db8:0:2::1", 2)).isTrue();
    assertThat(l.tryAcquire("192.0.2.1", 3)).isTrue();
    assertThat(l.tryAcquire("192.0.2.2", 4)).isTrue();
  }

  @Test
  void the_window_grows_with_use_and_keeps_exact_sliding_counts_across_its_wraps() {
    SlidingWindowLimiter l = new SlidingWindowLimiter(6, 1000, 10);
    for (int round = 0; round < 5; round++) { // the ring starts at 4 slots, grows to 6 and wraps many times
      long t0 = round * 2000L;
      for (int i = 0; i < 6; i++) {
        assertThat(l.tryAcquire("k", t0 + i * 10)).as("round %d call %d", round, i).isTrue();
      }
      assertThat(l.tryAcquire("k", t0 + 100)).isFalse();
      assertThat(l.msUntilAllowed("k", t0 + 100)).isEqualTo(900); // the oldest call (t0) leaves at t0 + 1000
      assertThat(l.tryAcquire("k", t0 + 1000)).as("the oldest left the window").isTrue();
      assertThat(l.tryAcquire("k", t0 + 1001)).isFalse();
    }
    // a lifted limit costs nothing until used: a million calls a minute for many keys is fine
    SlidingWindowLimiter big = new SlidingWindowLimiter(1_000_000, 60_000, 100_000);
    for (int k = 0; k < 50_000; k++) {
      assertThat(big.tryAcquire("key" + k, 1)).isTrue();
    }
    assertThat(big.size()).isEqualTo(50_000);
  }

  @Test
  void a_shared_window_publishes_its_changed_keys_and_counts_the_other_instances_calls() {
    SlidingWindowLimiter l = new SlidingWindowLimiter(5, 1000, 10);
    assertThat(l.tryAcquire("k", 0)).isTrue();
    assertThat(l.changes(0)).as("nothing tracked until shared").isEmpty();
    l.share();
    assertThat(l.tryAcquire("k", 100)).isTrue();
    assertThat(l.tryAcquire("k", 200)).isTrue();
    assertThat(l.changes(300)).containsExactly(new SlidingWindowLimiter.Published("k", 3, 1000, 1200));
    assertThat(l.changes(400)).as("unchanged: not listed again").isEmpty();
    // the others hold 2 calls: 3 here + 2 there = 5 = the limit
    l.elsewhere(java.util.Map.of("k", new SlidingWindowLimiter.Elsewhere(2, 900)));
    assertThat(l.tryAcquire("k", 500)).isFalse();
    assertThat(l.msUntilAllowed("k", 500)).as("the first of the others' calls leaves at 900").isEqualTo(400);
    assertThat(l.tryAcquire("other", 500)).as("other keys are not counted").isTrue();
    l.elsewhere(java.util.Map.of());
    assertThat(l.tryAcquire("k", 500)).isTrue();
    // expiry is a change too; a drained window is published once with 0 calls, then forgotten
    assertThat(l.changes(1050)).contains(new SlidingWindowLimiter.Published("k", 3, 1100, 1500));
    l.republish(java.util.List.of("k"));
    assertThat(l.changes(1060)).as("a lost publication is listed again")
        .contains(new SlidingWindowLimiter.Published("k", 3, 1100, 1500));
    assertThat(l.changes(2000)).contains(new SlidingWindowLimiter.Published("k", 0, 2000, 2000));
    assertThat(l.changes(2001)).isEmpty();
  }

  @Test
  void a_key_full_only_elsewhere_waits_for_the_others_first_call_to_leave() {
    SlidingWindowLimiter l = new SlidingWindowLimiter(2, 1000, 10);
    l.share();
    l.elsewhere(java.util.Map.of("k", new SlidingWindowLimiter.Elsewhere(2, 700)));
    assertThat(l.msUntilAllowed("k", 100)).isEqualTo(600);
    assertThat(l.tryAcquire("k", 100)).isFalse();
  }
}
