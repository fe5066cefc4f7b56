package io.mbxrelay.testing;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.concurrent.atomic.AtomicLong;

/** A clock tests move by hand (STYLE: "no test sleeps to wait for a timer it could advance"). Thread-safe. */
public final class MutableClock extends Clock {
  private final AtomicLong millis;

  public MutableClock(Instant start) {
    this(start.toEpochMilli());
  }

  public MutableClock(long startMs) {
    this.millis = new AtomicLong(startMs);
  }

  /** Starts at the real time now, so hops signed with the real clock stay fresh until the test advances far. */
  public static MutableClock now() {
    return new MutableClock(System.currentTimeMillis());
  }

  public void advance(Duration d) {
    millis.addAndGet(d.toMillis());
  }

  public void advance(long deltaMs) {
    millis.addAndGet(deltaMs);
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
