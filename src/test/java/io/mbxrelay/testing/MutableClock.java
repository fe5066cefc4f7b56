package io.mbxrelay.testing;

import java.time.Clock;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.concurrent.atomic.AtomicLong;

/** A clock tests advance by hand (STYLE: no test sleeps for a timer it could advance). Thread-safe. */
public final class MutableClock extends Clock {
  private final AtomicLong ms;

  public MutableClock(long startMs) {
    this.ms = new AtomicLong(startMs);
  }

  /** Starts at the real time now, so hops signed with the real clock stay fresh until the test advances far. */
  public static MutableClock now() {
    return new MutableClock(System.currentTimeMillis());
  }

  public void advance(long deltaMs) {
    ms.addAndGet(deltaMs);
  }

  @Override
  public long millis() {
    return ms.get();
  }

  @Override
  public Instant instant() {
    return Instant.ofEpochMilli(ms.get());
  }

  @Override
  public ZoneId getZone() {
    return ZoneOffset.UTC;
  }

  @Override
  public Clock withZone(ZoneId zone) {
    return this;
  }
}
