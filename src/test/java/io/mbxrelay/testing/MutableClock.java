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
    this.millis = new AtomicLong(start.toEpochMilli());
  }

  public void advance(Duration d) {
    millis.addAndGet(d.toMillis());
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
