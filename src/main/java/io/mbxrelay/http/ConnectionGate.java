package io.mbxrelay.http;

import io.mbxrelay.config.RelayConfig;
import io.mbxrelay.metrics.RateLimitedLogger;
import java.lang.management.ManagementFactory;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The relay port's connection cap (issue 18 goal 4, {@code http.maxConnections}): one count of open connections
 * shared by every HTTP verticle instance. A connection over the cap is not served: it is answered 503
 * {@code relay busy; retry later} with {@code Retry-After} and closed ({@code io.mbxrelay.server.HttpVerticle}), so the
 * process never reaches its open-file limit, where the accept loop would fail with EMFILE and stall.
 *
 * <p>Refused connections still hold a descriptor until they close; at most {@link #maxRefusing()} are held to be
 * answered at once (half of {@code http.reservedFiles}), any more are closed without an answer. Refusals are counted
 * and logged at most once per 10 s ({@link RateLimitedLogger}).
 *
 * <p>Threading: safe on any thread (every event loop calls it).
 */
public final class ConnectionGate {
  private static final Logger LOG = LoggerFactory.getLogger(ConnectionGate.class);
  private static final RateLimitedLogger WARN = new RateLimitedLogger(LOG);

  /** {@code Retry-After} of a refused connection's answer, s. */
  public static final int RETRY_AFTER_SECONDS = 5;

  private final int max;
  private final int maxRefusing;
  private final AtomicInteger open = new AtomicInteger();
  private final AtomicInteger refusing = new AtomicInteger();
  private final LongAdder refused = new LongAdder();

  /**
   * @param max most connections served at once
   * @param maxRefusing most refused connections held open at once to be answered 503
   */
  public ConnectionGate(int max, int maxRefusing) {
    if (max < 1 || maxRefusing < 0) {
      throw new IllegalArgumentException("max must be > 0 and maxRefusing >= 0");
    }
    this.max = max;
    this.maxRefusing = maxRefusing;
  }

  /**
   * The gate the configuration asks for: {@link RelayConfig.Http#connectionLimit(long)} of this process's open-file
   * limit, with half of {@code http.reservedFiles} for refused connections. Logs the cap once at INFO.
   *
   * @param http the HTTP configuration
   * @return the gate
   */
  public static ConnectionGate of(RelayConfig.Http http) {
    long files = fileLimit();
    int max = http.connectionLimit(files);
    if (files > 0 && max > files - 32) {
      LOG.warn("http.maxConnections is at the open-file limit: the relay may fail to accept (EMFILE) before it refuses"
          + " [max connections: {}, file limit: {}]", max, files);
    }
    LOG.info("connection cap [max connections: {}, file limit: {}, reserved files: {}]", max,
        files > 0 ? files : "unknown", http.reservedFiles());
    return new ConnectionGate(max, Math.max(1, http.reservedFiles() / 2));
  }

  /** This process's open-file limit ({@code ulimit -n} as the JVM runs it), or -1 when it cannot be read. */
  public static long fileLimit() {
    if (ManagementFactory.getOperatingSystemMXBean() instanceof com.sun.management.UnixOperatingSystemMXBean u) {
      return u.getMaxFileDescriptorCount();
    }
    return -1;
  }

  /**
   * A new connection: counts it when under the cap.
   *
   * @return true when it is served (call {@link #closed()} when it closes); false when it is over the cap (counted as
   *     refused; call {@link #holdRefused()} to decide whether to answer it)
   */
  public boolean admit() {
    if (open.incrementAndGet() <= max) {
      return true;
    }
    open.decrementAndGet();
    refused.increment();
    WARN.warn("connection cap", "connection refused: the relay holds its cap of connections, answering 503"
        + " [max connections: {}, http.maxConnections]", max);
    return false;
  }

  /** A served connection closed. */
  public void closed() {
    open.decrementAndGet();
  }

  /**
   * Whether a refused connection may stay open to be answered 503; if true, call {@link #refusedClosed()} when it
   * closes. False when {@link #maxRefusing()} are already held: close it at once.
   */
  public boolean holdRefused() {
    if (refusing.incrementAndGet() <= maxRefusing) {
      return true;
    }
    refusing.decrementAndGet();
    return false;
  }

  /** A refused connection that was held to be answered closed. */
  public void refusedClosed() {
    refusing.decrementAndGet();
  }

  /** Connections served now (a gauge). */
  public int open() {
    return open.get();
  }

  /** Connections refused since start (a counter). */
  public long refused() {
    return refused.sum();
  }

  /** The cap. */
  public int max() {
    return max;
  }

  /** Most refused connections held at once to be answered. */
  public int maxRefusing() {
    return maxRefusing;
  }
}
