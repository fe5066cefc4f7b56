package io.mbxrelay.auth;

import com.nimbusds.jose.jwk.JWK;
import com.nimbusds.jose.jwk.JWKSet;
import java.time.Clock;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The account issuer's signing keys, cached by {@code kid} (docs/protocol.md §7.8): replaced as a whole on every successful
 * fetch (so a key that leaves the JWKS stops verifying at once), refreshed on a timer by the
 * {@code JwksRefreshVerticle} and on an unknown {@code kid} at most once per {@code unknownKidMinIntervalMs}. When
 * the JWKS cannot be fetched, the keys of the last successful fetch serve for {@code lifetimeMs}; after that
 * {@link #lookup} answers {@link Lookup#UNAVAILABLE} and new enrolments fail closed. Enrolled hosts are never asked
 * for a token again (hops are signed by the host key), so they keep working.
 *
 * <p>Thread-safe: state is guarded by {@code this}; a fetch in flight is shared by every caller that asks meanwhile.
 * Never blocks: the fetch itself is the {@link Fetcher}'s (the verticle's non-blocking HTTP client, which gives every
 * fetch an absolute deadline and a byte cap). As a second line (issue 11 item 7), a fetch still in flight past that
 * deadline (by the injected {@link Clock}) is abandoned: its waiters get {@code false} and the next refresh starts a
 * new fetch instead of joining it, so one hung fetch can never hold the cache forever.
 */
public final class JwksCache {
  private static final Logger LOG = LoggerFactory.getLogger(JwksCache.class);

  /** Fetches the JWKS document. */
  @FunctionalInterface
  public interface Fetcher {
    /**
     * Starts one fetch.
     *
     * @return the JWKS JSON text; fails on any transport error or non-200 answer
     */
    CompletionStage<String> fetch();
  }

  /** What {@link #lookup} found. */
  public enum Lookup {
    /** The kid is cached and the cache is within its lifetime. */
    FOUND,
    /** The cache is usable but has no such kid. */
    UNKNOWN,
    /** Never fetched, or the last successful fetch is older than the lifetime: fail closed. */
    UNAVAILABLE
  }

  private final Clock clock;
  private final long lifetimeMs;
  private final long unknownKidMinIntervalMs;
  private Fetcher fetcher;
  private Map<String, JWK> keys = Map.of();
  private long lastSuccessMs = Long.MIN_VALUE;
  private java.util.function.Consumer<Boolean> refreshListener = ok -> {};
  private long lastUnknownKidFetchMs = Long.MIN_VALUE;
  private long fetches;
  private CompletableFuture<Boolean> inFlight;
  private long inFlightSinceMs;
  private long fetchDeadlineMs = Long.MAX_VALUE;
  private long abandoned;

  /**
   * @param clock time source (tests inject one to step past the intervals)
   * @param lifetimeMs how long the last successful fetch serves (docs/protocol.md §7.8: 1 h)
   * @param unknownKidMinIntervalMs least time between unknown-kid refreshes (docs/protocol.md §7.8: 1 min)
   */
  public JwksCache(Clock clock, long lifetimeMs, long unknownKidMinIntervalMs) {
    this.clock = Objects.requireNonNull(clock);
    this.lifetimeMs = lifetimeMs;
    this.unknownKidMinIntervalMs = unknownKidMinIntervalMs;
  }

  /**
   * Installs the fetcher (the refresh verticle does this when it starts).
   *
   * @param fetcher the fetcher
   */
  public synchronized void fetcher(Fetcher fetcher) {
    this.fetcher = Objects.requireNonNull(fetcher);
  }

  /**
   * Installs the fetcher with the deadline it promises for each fetch; a fetch still in flight longer than that is
   * abandoned by the next {@link #refresh}.
   *
   * @param fetcher the fetcher
   * @param fetchDeadlineMs the fetcher's absolute deadline per fetch, ms (config {@code enrolment.jwksFetchTimeoutMs})
   */
  public synchronized void fetcher(Fetcher fetcher, long fetchDeadlineMs) {
    if (fetchDeadlineMs < 1) {
      throw new IllegalArgumentException("fetchDeadlineMs must be positive");
    }
    this.fetcher = Objects.requireNonNull(fetcher);
    this.fetchDeadlineMs = fetchDeadlineMs;
  }

  /**
   * Looks a key up.
   *
   * @param kid the token's {@code kid}
   * @return whether it is usable
   */
  public synchronized Lookup lookup(String kid) {
    if (lastSuccessMs == Long.MIN_VALUE || clock.millis() - lastSuccessMs > lifetimeMs) {
      return Lookup.UNAVAILABLE;
    }
    return keys.containsKey(kid) ? Lookup.FOUND : Lookup.UNKNOWN;
  }

  /**
   * The cached key of a {@code kid}; only meaningful after {@link #lookup} said {@link Lookup#FOUND}.
   *
   * @param kid the kid
   * @return the public JWK or null
   */
  public synchronized JWK key(String kid) {
    return keys.get(kid);
  }

  /**
   * A refresh asked for by an unknown (or unusable) {@code kid}: fetches unless one was started for that reason less
   * than {@code unknownKidMinIntervalMs} ago.
   *
   * @return true when a fetch ran and succeeded; false when skipped or failed
   */
  public CompletionStage<Boolean> refreshForUnknownKid() {
    synchronized (this) {
      long now = clock.millis();
      if (lastUnknownKidFetchMs != Long.MIN_VALUE && now - lastUnknownKidFetchMs < unknownKidMinIntervalMs) {
        return CompletableFuture.completedFuture(false);
      }
      lastUnknownKidFetchMs = now;
    }
    return refresh();
  }

  /**
   * Fetches the JWKS now (timer or unknown kid); a fetch already in flight is joined, not repeated.
   *
   * @return true when the fetch succeeded and replaced the keys; never fails
   */
  public CompletionStage<Boolean> refresh() {
    Fetcher f;
    CompletableFuture<Boolean> result;
    CompletableFuture<Boolean> stuck = null;
    synchronized (this) {
      if (inFlight != null) {
        if (clock.millis() - inFlightSinceMs <= fetchDeadlineMs) {
          return inFlight;
        }
        // Past its deadline and still not answered: abandon it (its late outcome is ignored below).
        stuck = inFlight;
        inFlight = null;
        abandoned++;
      }
      f = fetcher;
      if (f == null) {
        return CompletableFuture.completedFuture(false);
      }
      result = new CompletableFuture<>();
      inFlight = result;
      inFlightSinceMs = clock.millis();
      fetches++;
    }
    if (stuck != null) {
      LOG.warn("jwks fetch abandoned past its deadline");
      stuck.complete(false);
    }
    CompletionStage<String> stage;
    try {
      stage = f.fetch();
    } catch (RuntimeException e) {
      stage = CompletableFuture.failedFuture(e);
    }
    stage.whenComplete((text, err) -> {
      synchronized (this) {
        if (inFlight != result) {
          return; // abandoned: its waiters were answered and a newer fetch owns the cache
        }
      }
      boolean ok = false;
      if (err == null) {
        try {
          install(JWKSet.parse(text));
          ok = true;
        } catch (java.text.ParseException | RuntimeException e) {
          LOG.warn("jwks refused [error: {}]", e.getClass().getSimpleName());
        }
      } else {
        LOG.warn("jwks fetch failed [error: {}]", err.getClass().getSimpleName());
      }
      java.util.function.Consumer<Boolean> listener;
      synchronized (this) {
        if (inFlight == result) {
          inFlight = null;
        }
        listener = refreshListener;
      }
      listener.accept(ok);
      result.complete(ok);
    });
    return result;
  }

  private void install(JWKSet set) {
    Map<String, JWK> next = new HashMap<>();
    for (JWK k : set.getKeys()) {
      // Only public signing keys with a kid; a private member in the set is never used (toPublicJWK drops it).
      if (k.getKeyID() == null || (k.getKeyUse() != null && !"sig".equals(k.getKeyUse().identifier()))) {
        continue;
      }
      JWK pub = k.toPublicJWK();
      if (pub != null) {
        next.put(k.getKeyID(), pub);
      }
    }
    synchronized (this) {
      keys = Map.copyOf(next);
      lastSuccessMs = clock.millis();
    }
    LOG.debug("jwks installed [keys: {}]", next.size());
  }

  /**
   * Age of the cached key set in seconds (metrics: JWKS staleness), or -1 before the first successful fetch.
   *
   * @return seconds since the last successful fetch
   */
  public synchronized double ageSeconds() {
    return lastSuccessMs == Long.MIN_VALUE ? -1 : (clock.millis() - lastSuccessMs) / 1000.0;
  }

  /**
   * Registers an observer of every fetch outcome (metrics: refresh outcomes).
   *
   * @param listener called with true on success, false on failure; on the thread that completed the fetch
   */
  public synchronized void onRefresh(java.util.function.Consumer<Boolean> listener) {
    this.refreshListener = java.util.Objects.requireNonNull(listener);
  }

  /** Fetches started since creation (tests, metrics). */
  public synchronized long fetches() {
    return fetches;
  }

  /** Fetches abandoned because they outlived their deadline, since creation (tests, metrics). */
  public synchronized long abandoned() {
    return abandoned;
  }

  /** Keys cached right now. */
  public synchronized int size() {
    return keys.size();
  }
}
