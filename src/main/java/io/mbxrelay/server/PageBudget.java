package io.mbxrelay.server;

import java.util.concurrent.atomic.AtomicLong;

/**
 * The wire bytes of pull pages held in memory at once, over all connections (issue 10 item 12). A page reader plans a
 * page within what is left ({@link #free()}; a single item still goes out alone, so the bound is exceeded by at most
 * one item per concurrent read), holds the page's bytes while it is written to a client that may read slowly, and
 * releases them when the answer ended or the connection closed. An empty page holds nothing, so waiting and empty
 * pulls never touch the budget; a non-empty page with nothing left is refused (503 {@code relay busy; retry later}).
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

  /** Bytes a page may still take now (≤ 0 when nothing is left). */
  public long free() {
    return max - held.get();
  }

  /** @param bytes a page's wire bytes, now held */
  public void hold(long bytes) {
    held.addAndGet(bytes);
  }

  /** @param bytes bytes given back (a page that was written or abandoned) */
  public void release(long bytes) {
    held.addAndGet(-bytes);
  }

  /** Bytes held now (a gauge). */
  public long held() {
    return held.get();
  }
}
