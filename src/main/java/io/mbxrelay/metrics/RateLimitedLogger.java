package io.mbxrelay.metrics;

import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.function.LongSupplier;
import org.slf4j.Logger;

/**
 * Hot-path warnings, rate-limited (docs/architecture.md "Logs and metrics"): at most one line per key per interval;
 * the next line that passes carries {@code [suppressed: n]}, the number of lines dropped since the last one.
 *
 * <p>Keys must come from a bounded set (a route template, a failure kind), never from request data. Safe on any
 * thread. Own code because Logback's DuplicateMessageFilter drops repeats without telling how many; the suppressed
 * count matters when an operator reads an incident back from the log.
 */
public final class RateLimitedLogger {
  /** Default interval between two lines of one key, ms. */
  public static final long DEFAULT_INTERVAL_MS = 10_000;

  private final Logger log;
  private final long intervalNanos;
  private final LongSupplier nanoTime;
  private final ConcurrentMap<String, Window> windows = new ConcurrentHashMap<>();

  private static final class Window {
    long lastNanos;
    boolean logged;
    long suppressed;
  }

  /**
   * A limiter with the default 10 s interval.
   *
   * @param log where lines go
   */
  public RateLimitedLogger(Logger log) {
    this(log, DEFAULT_INTERVAL_MS, System::nanoTime);
  }

  /**
   * @param log where lines go
   * @param intervalMs at most one line per key per this many ms
   * @param nanoTime monotonic clock, ns (tests inject one)
   */
  public RateLimitedLogger(Logger log, long intervalMs, LongSupplier nanoTime) {
    this.log = Objects.requireNonNull(log);
    this.intervalNanos = intervalMs * 1_000_000L;
    this.nanoTime = Objects.requireNonNull(nanoTime);
  }

  /**
   * Logs a warning unless one with the same key was logged within the interval.
   *
   * @param key bounded key (e.g. the message template itself plus a failure kind)
   * @param format SLF4J format, lower-case with bracketed fields
   * @param args its arguments
   * @return true when the line was written
   */
  public boolean warn(String key, String format, Object... args) {
    if (!log.isWarnEnabled()) {
      return false;
    }
    Window w = windows.computeIfAbsent(key, k -> new Window());
    long suppressed;
    synchronized (w) {
      long now = nanoTime.getAsLong();
      if (w.logged && now - w.lastNanos < intervalNanos) {
        w.suppressed++;
        return false;
      }
      w.logged = true;
      w.lastNanos = now;
      suppressed = w.suppressed;
      w.suppressed = 0;
    }
    if (suppressed == 0) {
      log.warn(format, args);
    } else {
      Object[] withCount = java.util.Arrays.copyOf(args, args.length + 1);
      withCount[args.length] = suppressed;
      log.warn(format + " [suppressed: {}]", withCount);
    }
    return true;
  }
}
