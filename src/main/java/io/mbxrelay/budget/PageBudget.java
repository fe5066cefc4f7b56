package io.mbxrelay.budget;

import java.util.concurrent.atomic.AtomicLong;

/**
 * The wire bytes of pull pages held in memory at once, over all connections (issue 10 item 12). A page reader plans a
 * page within what is left ({@link #free()}; a single item still goes out alone, so the bound is exceeded by at most
 * one item per concurrent read), holds the page's bytes while it is written to a client that may read slowly, and
 * releases them when the answer ended or the connection closed. An empty page holds nothing, so waiting and empty
 * pulls never touch the budget; a non-empty page with nothing left is refused (503 {@code relay busy; retry later}).
 * One client address holds at most its share ({@code http.maxPageBytesInFlightPerClient}, {@link ClientShares}), so a
 * host with a few connections that never read cannot starve every other host's pulls.
 *
 * <p>Thread-safe.
 */
public final class PageBudget {
  private final long max;
  private final ClientShares shares;
  private final AtomicLong held = new AtomicLong();

  /** A budget without per-client shares. */
  public PageBudget(long maxBytes) {
    this(maxBytes, maxBytes);
  }

  /**
   * @param maxBytes most page bytes held at once
   * @param perClientBytes most page bytes one client address holds at once
   */
  public PageBudget(long maxBytes, long perClientBytes) {
    this.max = maxBytes;
    this.shares = new ClientShares(Math.max(1, Math.min(maxBytes, perClientBytes)));
  }

  /** Bytes a page for {@code client} may still take now (≤ 0 when nothing is left for it). */
  public long free(String client) {
    return Math.min(max - held.get(), shares.free(client));
  }

  /** @param bytes a page's wire bytes, now held for {@code client} */
  public void hold(String client, long bytes) {
    shares.add(client, bytes);
    held.addAndGet(bytes);
  }

  /** @param bytes bytes given back for {@code client} (a page that was written or abandoned) */
  public void release(String client, long bytes) {
    shares.release(client, bytes);
    held.addAndGet(-bytes);
  }

  /** Bytes held now (a gauge). */
  public long held() {
    return held.get();
  }

  /** The budget ran out: a non-empty page could not be held (answered 503 {@code relay busy; retry later}). */
  public static final class Exhausted extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /** The one failure, without a stack trace (a normal outcome under load). */
    public Exhausted() {
      super("pull page budget exhausted", null, false, false);
    }
  }
}
