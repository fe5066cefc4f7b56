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
}
