package io.mbxrelay.http;

import java.util.concurrent.atomic.AtomicLong;

/**
 * The global in-flight body budget (issue 11 item 2, issue 10 item 13; config {@code http.maxInFlightBodyBytes}):
 * request body bytes that all connections of one relay may hold at once. A request takes its declared
 * {@code content-length} (or each chunk of a body without one) before it reads it and gives it back when its answer
 * ends or its connection goes away; a request that would go over the budget is answered 503 before its body is read,
 * so a flood of large bodies costs the relay at most the budget (times the 3–4 copies a body has while it is checked),
 * never its heap. GET bodies (at most {@code http.maxSmallBodyBytes}) are not counted.
 *
 * <p>One instance per relay ({@code RelayServices}), shared by every HTTP verticle instance; its use and refusals are
 * the gauge {@code mbxrelay_http_body_budget_used_bytes} and the counter
 * {@code mbxrelay_http_body_budget_refused_total}. Thread-safe and lock-free: one CAS per request.
 */
public final class BodyBudget {
  private final long limit;
  private final AtomicLong used = new AtomicLong();
  private final AtomicLong refused = new AtomicLong();

  /** @param limitBytes the budget, bytes (at least 1) */
  public BodyBudget(long limitBytes) {
    if (limitBytes < 1) {
      throw new IllegalArgumentException("the body budget must be positive");
    }
    this.limit = limitBytes;
  }

  /**
   * Takes {@code bytes} from the budget when they fit.
   *
   * @param bytes bytes to take, at least 0
   * @return true when taken (give them back with {@link #release(long)}); false when the budget would be exceeded
   *     (nothing taken)
   */
  public boolean tryTake(long bytes) {
    while (true) {
      long now = used.get();
      if (now + bytes > limit) {
        refused.incrementAndGet();
        return false;
      }
      if (used.compareAndSet(now, now + bytes)) {
        return true;
      }
    }
  }

  /**
   * Gives bytes back.
   *
   * @param bytes bytes taken earlier by {@link #tryTake(long)}
   */
  public void release(long bytes) {
    used.addAndGet(-bytes);
  }

  /** Bytes taken right now. */
  public long used() {
    return used.get();
  }

  /** The budget, bytes. */
  public long limit() {
    return limit;
  }

  /** Requests refused since start. */
  public long refused() {
    return refused.get();
  }
}
