package io.mbxrelay.store.guard;

import static org.assertj.core.api.Assertions.assertThat;

import io.mbxrelay.testing.MutableClock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalLong;
import org.junit.jupiter.api.Test;

/** {@link ClockGuard} with an injected wall and monotonic clock (issue 10 item 7). */
class ClockGuardTest {
  private static final long HOUR = 3_600_000L;
  private static final long T0 = 1_800_000_000_000L;

  private static ClockGuard guard(MutableClock c, OptionalLong watermark, boolean accept) {
    return new ClockGuard(c, c, HOUR, watermark, accept);
  }

  @Test
  void time_passing_is_served_as_is_and_small_steps_within_the_bound_are_accepted() {
    MutableClock c = new MutableClock(T0);
    ClockGuard g = guard(c, OptionalLong.empty(), false);
    assertThat(g.nowMs()).isEqualTo(T0);
    c.advance(Duration.ofDays(20));
    assertThat(g.nowMs()).isEqualTo(c.millis());
    c.step(Duration.ofMinutes(59)); // an NTP correction inside the bound
    assertThat(g.nowMs()).isEqualTo(c.millis());
    assertThat(g.expiryPaused()).isFalse();
    c.step(Duration.ofMinutes(59)); // measured from the last accepted reading: still inside
    assertThat(g.expiryPaused()).isFalse();
  }

  @Test
  void a_30_day_forward_step_pauses_expiry_serves_trusted_time_and_resumes_when_the_wall_clock_agrees_again() {
    MutableClock c = new MutableClock(T0);
    ClockGuard g = guard(c, OptionalLong.empty(), false);
    List<ClockGuard.Status> events = new ArrayList<>();
    g.listener(events::add);
    c.advance(Duration.ofMinutes(5));
    long before = g.nowMs();
    c.step(Duration.ofDays(30));
    assertThat(g.expiryPaused()).isTrue();
    assertThat(g.nowMs()).as("trusted time, not the stepped wall clock").isEqualTo(before);
    c.advance(Duration.ofMinutes(10));
    assertThat(g.nowMs()).as("advances with the monotonic clock").isEqualTo(before + 600_000);
    ClockGuard.Status st = g.status();
    assertThat(st.paused()).isTrue();
    assertThat(st.stepMs()).isEqualTo(Duration.ofDays(30).toMillis());
    assertThat(st.steps()).isEqualTo(1);
    assertThat(st.reason()).isEqualTo("the wall clock stepped 2592000 s ahead of the trusted time (bound 3600 s)");
    c.step(Duration.ofDays(-30)); // NTP puts it right
    assertThat(g.expiryPaused()).isFalse();
    assertThat(g.nowMs()).isEqualTo(c.millis()).isEqualTo(before + 600_000);
    assertThat(events).extracting(ClockGuard.Status::paused).containsExactly(true, false);
    assertThat(events.get(1).reason()).isEqualTo("wall clock consistent again");
  }

  @Test
  void time_never_goes_backwards_and_a_large_backward_step_pauses_too() {
    MutableClock c = new MutableClock(T0);
    ClockGuard g = guard(c, OptionalLong.empty(), false);
    long t = g.nowMs();
    c.step(Duration.ofMinutes(-30));
    assertThat(g.nowMs()).isEqualTo(t); // holds until the wall clock passes it
    assertThat(g.expiryPaused()).isFalse();
    c.advance(Duration.ofMinutes(31));
    assertThat(g.nowMs()).isEqualTo(T0 + 60_000);
    c.step(Duration.ofDays(-3));
    assertThat(g.expiryPaused()).isTrue();
    long held = g.nowMs();
    c.advance(1000);
    assertThat(g.nowMs()).isEqualTo(held + 1000).isGreaterThan(c.millis());
  }

  @Test
  void the_operator_accepts_the_wall_clock_and_time_still_never_goes_backwards() {
    MutableClock c = new MutableClock(T0);
    ClockGuard g = guard(c, OptionalLong.empty(), false);
    List<ClockGuard.Status> events = new ArrayList<>();
    g.listener(events::add);
    c.step(Duration.ofDays(30));
    assertThat(g.expiryPaused()).isTrue();
    ClockGuard.Status st = g.resume("operator");
    assertThat(st.paused()).isFalse();
    assertThat(g.nowMs()).isEqualTo(c.millis());
    assertThat(events).extracting(ClockGuard.Status::reason).containsExactly(
        "the wall clock stepped 2592000 s ahead of the trusted time (bound 3600 s)", "resumed by operator");
    long served = g.nowMs();
    c.step(Duration.ofDays(-30));
    g.resume("operator");
    assertThat(g.nowMs()).isEqualTo(served);
  }

  @Test
  void a_start_far_from_the_persisted_watermark_starts_paused_unless_the_operator_accepts_the_wall_clock() {
    MutableClock c = new MutableClock(T0 + Duration.ofDays(30).toMillis());
    ClockGuard g = guard(c, OptionalLong.of(T0), false);
    assertThat(g.expiryPaused()).isTrue();
    assertThat(g.status().reason()).startsWith("at start the wall clock is 2592000 s ahead of the store's clock"
        + " watermark");
    assertThat(g.nowMs()).isEqualTo(T0);
    c.advance(5000);
    assertThat(g.nowMs()).isEqualTo(T0 + 5000);

    ClockGuard accepted = guard(c, OptionalLong.of(T0), true);
    assertThat(accepted.expiryPaused()).isFalse();
    assertThat(accepted.nowMs()).isEqualTo(c.millis());

    MutableClock behind = new MutableClock(T0 - 10_000);
    ClockGuard g2 = guard(behind, OptionalLong.of(T0), false);
    assertThat(g2.expiryPaused()).isFalse();
    assertThat(g2.nowMs()).as("never below the watermark").isEqualTo(T0);
  }

  @Test
  void the_clock_view_and_wall_millis_tell_guarded_time_from_the_wall_clock() {
    MutableClock c = new MutableClock(T0);
    ClockGuard g = guard(c, OptionalLong.empty(), false);
    c.step(Duration.ofDays(30));
    assertThat(g.clock().millis()).isEqualTo(T0);
    assertThat(ClockGuard.wallMillis(g.clock())).isEqualTo(c.millis());
    assertThat(ClockGuard.wallMillis(c)).isEqualTo(c.millis());
    assertThat(ClockGuard.monotonicOf(c)).isSameAs(c);
  }
}
