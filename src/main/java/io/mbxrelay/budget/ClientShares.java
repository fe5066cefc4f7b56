package io.mbxrelay.budget;

import java.util.concurrent.ConcurrentHashMap;

/**
 * Bytes each client holds in a shared in-memory budget, against a per-client share of it (the request body budget
 * and the pull page budget). Without it one client — even one without a key, since hop headers name public keys —
 * could take a whole budget with a few connections that declare large bodies or never read their pages, and every
 * other host would be answered 503 until those connections timed out. A client is its rate key
 * ({@link io.mbxrelay.auth.ClientAddress#rateKey}: an IPv4 address or an IPv6 prefix). Behind a proxy that is not
 * trusted ({@code --trust-proxy} off) every client is the proxy, and the share becomes the whole budget's effective
 * size; see docs/configuration.md.
 *
 * <p>Own code: a map of counters, with entries only while bytes are held (bounded by the requests in flight).
 * Thread-safe: one {@link ConcurrentHashMap#compute} per take or release.
 */
public final class ClientShares {
  private final long share;
  private final ConcurrentHashMap<String, Long> held = new ConcurrentHashMap<>();

  /** @param shareBytes bytes one client may hold at once, at least 1 */
  public ClientShares(long shareBytes) {
    if (shareBytes < 1) {
      throw new IllegalArgumentException("a client share must be positive");
    }
    this.share = shareBytes;
  }

  /** The share, bytes. */
  public long share() {
    return share;
  }

  /** Bytes {@code client} may still take now (≤ 0 when its share is used up). */
  public long free(String client) {
    Long h = held.get(client);
    return share - (h == null ? 0 : h);
  }

  /**
   * Takes {@code bytes} for {@code client} when they fit its share.
   *
   * @return true when taken (give them back with {@link #release}); false when over the share (nothing taken)
   */
  public boolean tryTake(String client, long bytes) {
    boolean[] taken = {false};
    held.compute(client, (k, v) -> {
      long now = v == null ? 0 : v;
      if (now + bytes > share) {
        return v;
      }
      taken[0] = true;
      return now + bytes == 0 ? null : now + bytes;
    });
    return taken[0];
  }

  /** Counts {@code bytes} for {@code client} whether or not they fit (a page planned within {@link #free}). */
  public void add(String client, long bytes) {
    held.merge(client, bytes, Long::sum);
  }

  /** Gives back bytes taken or added earlier; the client's entry goes when it holds nothing. */
  public void release(String client, long bytes) {
    held.computeIfPresent(client, (k, v) -> v - bytes <= 0 ? null : v - bytes);
  }

  /** Clients holding bytes now. */
  public int clients() {
    return held.size();
  }
}
