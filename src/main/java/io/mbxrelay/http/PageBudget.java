package io.mbxrelay.http;

import java.util.concurrent.atomic.AtomicLong;

/**
 * The wire bytes of pull pages held in memory at once, over all connections (issue 10 item 12): a page is read with a
 * byte budget of what is left (a single item still goes out alone, so a page never holds more than its budget plus one
 * item), held while it is written to a client that may read slowly, and released when the answer ended or the
 * connection closed. With nothing left a pull is answered 503 {@code relay busy; retry later} with {@code Retry-After}.
 *
 * <p>Thread-safe.
 */
public final class PageBudget {
  private final long max;
  private final AtomicLong held = new AtomicLong();

  /** @param maxBytes most page bytes held at once */
  public PageBudget(long maxBytes) {
    this.max = maxBytes;
  }

  /**
   * Reserves up to {@code wanted} bytes for a page about to be read.
   *
   * @param wanted the page's byte budget
   * @return bytes reserved (≤ wanted), 0 when nothing is left
   */
  public long reserve(long wanted) {
    while (true) {
      long h = held.get();
      long free = max - h;
      if (free <= 0) {
        return 0;
      }
      long g = Math.min(wanted, free);
      if (held.compareAndSet(h, h + g)) {
        return g;
      }
    }
  }

  /**
   * Replaces a reservation by what the page really holds.
   *
   * @param reserved what {@link #reserve} returned
   * @param actual the page's wire bytes
   */
  public void settle(long reserved, long actual) {
    held.addAndGet(actual - reserved);
  }

  /** @param bytes bytes to give back (a reservation or a settled page) */
  public void release(long bytes) {
    held.addAndGet(-bytes);
  }

  /** Bytes held now (a gauge). */
  public long held() {
    return held.get();
  }
}
