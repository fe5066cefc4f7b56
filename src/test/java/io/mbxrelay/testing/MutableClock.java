package io.mbxrelay.testing;

import io.mbxrelay.store.guard.ClockGuard;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A clock tests move by hand (docs/architecture.md "Tests": no test sleeps for a timer it could advance). Thread-safe.
 *
 * <p>It is also the relay's monotonic clock ({@link ClockGuard.Monotonic}): {@link #advance} is time passing (both
 * move), {@link #step} is a wall-clock step (only the wall clock moves), as an NTP step or a bad RTC would do.
 */
public final class MutableClock extends Clock implements ClockGuard.Monotonic {
  private final AtomicLong millis;
  private final AtomicLong monoNanos = new AtomicLong();

  public MutableClock(Instant start) {
    this(start.toEpochMilli());
  }

  public MutableClock(long startMs) {
    this.millis = new AtomicLong(startMs);
  }

  /** A wall-clock step: the wall clock moves, the monotonic clock does not. */
  public void step(Duration d) {
    millis.addAndGet(d.toMillis());
  }

  @Override
  public long nanoTime() {
    return monoNanos.get();
  }

  /** Starts at the real time now, so hops signed with the real clock stay fresh until the test advances far. */
  public static MutableClock now() {
    return new MutableClock(System.currentTimeMillis());
  }

  /** Time passes: the wall clock and the monotonic clock both move. */
  public void advance(Duration d) {
    advance(d.toMillis());
  }

  /** Time passes: the wall clock and the monotonic clock both move. */
  public void advance(long deltaMs) {
    millis.addAndGet(deltaMs);
    monoNanos.addAndGet(deltaMs * 1_000_000L);
  }

  @Override
  public ZoneId getZone() {
    return ZoneOffset.UTC;
  }

  @Override
  public Clock withZone(ZoneId zone) {
    return this;
  }

  @Override
  public Instant instant() {
    return Instant.ofEpochMilli(millis.get());
  }

  @Override
  public long millis() {
    return millis.get();
  }
}
