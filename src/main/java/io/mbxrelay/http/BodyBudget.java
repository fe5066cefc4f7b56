package io.mbxrelay.http;

import io.mbxrelay.budget.ClientShares;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The global in-flight body budget (issue 11 item 2, issue 10 item 13; config {@code http.maxInFlightBodyBytes}):
 * request body bytes that all connections of one relay may hold at once. A request takes its declared
 * {@code content-length} (or each chunk of a body without one) before it reads it and gives it back when its answer
 * ends or its connection goes away; a request that would go over the budget is answered 503 before its body is read,
 * so a flood of large bodies costs the relay at most the budget (times the 3–4 copies a body has while it is checked),
 * never its heap. GET bodies (at most {@code http.maxSmallBodyBytes}) are not counted. One client address holds at
 * most its share ({@code http.maxInFlightBodyBytesPerClient}, {@link ClientShares}): a body is read before its
 * signature can be checked, so without a share a few connections that declare 8 MiB and send one byte would hold the
 * whole budget for the request timeout.
 *
 * <p>One instance per relay ({@code RelayServices}), shared by every HTTP verticle instance; its use and refusals are
 * the gauge {@code mbxrelay_http_body_budget_used_bytes} and the counter
 * {@code mbxrelay_http_body_budget_refused_total}. Thread-safe and lock-free: one CAS per request.
 */
public final class BodyBudget {
  private final long limit;
  private final ClientShares shares;
  private final AtomicLong used = new AtomicLong();
  private final AtomicLong refused = new AtomicLong();

  /** A budget without per-client shares (one client may take all of it). */
  public BodyBudget(long limitBytes) {
    this(limitBytes, limitBytes);
  }

  /**
   * @param limitBytes the budget, bytes (at least 1)
   * @param perClientBytes the most one client may hold of it, bytes (at least 1)
   */
  public BodyBudget(long limitBytes, long perClientBytes) {
    if (limitBytes < 1) {
      throw new IllegalArgumentException("the body budget must be positive");
    }
    this.limit = limitBytes;
    this.shares = new ClientShares(Math.min(limitBytes, perClientBytes));
  }

  /**
   * Takes {@code bytes} for {@code client} when they fit both its share and the budget.
   *
   * @param client the client's rate key
   * @param bytes bytes to take, at least 0
   * @return true when taken (give them back with {@link #release(String, long)}); false when not (nothing taken)
   */
  public boolean tryTake(String client, long bytes) {
    if (!shares.tryTake(client, bytes)) {
      refused.incrementAndGet();
      return false;
    }
    if (!tryTake(bytes)) {
      shares.release(client, bytes);
      return false;
    }
    return true;
  }

  /** Gives back bytes taken by {@link #tryTake(String, long)}. */
  public void release(String client, long bytes) {
    shares.release(client, bytes);
    release(bytes);
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
