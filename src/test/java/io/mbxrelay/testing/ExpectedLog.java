package io.mbxrelay.testing;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.turbo.TurboFilter;
import ch.qos.logback.core.spi.FilterReply;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.slf4j.LoggerFactory;
import org.slf4j.Marker;
import org.slf4j.helpers.MessageFormatter;

/**
 * Log lines a test provokes on purpose (issue 22 item 7): while open, an event of the given logger and level whose
 * formatted message contains the given text is taken out of the log (not printed, with its stack trace) and kept
 * here, so a passing {@code mvn -B verify} prints no WARN or ERROR line and no stack trace, and the test asserts that
 * the line it provoked did happen. Everything else is logged as usual. {@link #close()} fails when an expected line
 * never came.
 *
 * <pre>{@code
 * try (ExpectedLog log = ExpectedLog.of(SqliteBackend.class, Level.ERROR, "integrity check at close failed")) {
 *   ... // provoke it
 * } // fails here if it was not logged
 * }</pre>
 *
 * <p>For lines a whole test class provokes in several of its tests, register one as a static
 * {@code @RegisterExtension} field ({@link #forClass()}): it keeps the lines out while the class runs and is removed
 * after it; each test that provokes a line asserts it with {@link #assertSeen(String)}.
 *
 * <p>Thread-safe: the filter runs on whatever thread logs (event loops, the writer).
 */
public final class ExpectedLog implements AutoCloseable, org.junit.jupiter.api.extension.AfterAllCallback {
  private record Pattern(String logger, Level level, String text) {}

  private final List<Pattern> patterns = new CopyOnWriteArrayList<>();
  private final List<String> seen = new CopyOnWriteArrayList<>();
  private final List<java.util.concurrent.atomic.AtomicInteger> counts = new CopyOnWriteArrayList<>();
  private final TurboFilter filter = new TurboFilter() {
    @Override
    public FilterReply decide(Marker marker, Logger logger, Level level, String format, Object[] params,
        Throwable t) {
      if (format == null || level == null) {
        return FilterReply.NEUTRAL;
      }
      for (int i = 0; i < patterns.size(); i++) {
        Pattern p = patterns.get(i);
        if (p.level.equals(level) && logger.getName().equals(p.logger)) {
          String msg = params == null ? format : MessageFormatter.arrayFormat(format, params).getMessage();
          if (msg.contains(p.text)) {
            seen.add(level + " " + logger.getName() + " " + msg);
            counts.get(i).incrementAndGet();
            return FilterReply.DENY;
          }
        }
      }
      return FilterReply.NEUTRAL;
    }
  };

  private final boolean strict;

  private ExpectedLog() {
    this(true);
  }

  private ExpectedLog(boolean strict) {
    this.strict = strict;
  }

  /**
   * A class-wide filter (a static {@code @RegisterExtension} field): the lines added with {@link #and} are kept out of
   * the log while the class runs; nothing is asserted when it ends (tests assert with {@link #assertSeen}), so one test
   * of the class runs alone too.
   */
  public static ExpectedLog forClass() {
    return new ExpectedLog(false);
  }

  /** Asserts that a line containing {@code text} was taken out since this was made. */
  public void assertSeen(String text) {
    if (seen.stream().noneMatch(l -> l.contains(text))) {
      throw new AssertionError("expected a log line containing \"" + text + "\"; seen: " + seen);
    }
  }

  @Override
  public void afterAll(org.junit.jupiter.api.extension.ExtensionContext context) {
    close();
  }

  /** Expects (and keeps out of the log) lines of {@code logger} at {@code level} that contain {@code text}. */
  public static ExpectedLog of(Class<?> logger, Level level, String text) {
    return new ExpectedLog().and(logger, level, text);
  }

  /** Expects (and keeps out of the log) lines of the logger named {@code logger}. */
  public static ExpectedLog of(String logger, Level level, String text) {
    return new ExpectedLog().and(logger, level, text);
  }

  /** One more expected line; each must come at least once. */
  public ExpectedLog and(Class<?> logger, Level level, String text) {
    return and(logger.getName(), level, text);
  }

  /** One more expected line by logger name. */
  public synchronized ExpectedLog and(String logger, Level level, String text) {
    if (patterns.isEmpty()) {
      context().addTurboFilter(filter);
    }
    counts.add(new java.util.concurrent.atomic.AtomicInteger());
    patterns.add(new Pattern(logger, level, text));
    return this;
  }

  /** The lines taken out so far ({@code LEVEL logger message}). */
  public List<String> seen() {
    return List.copyOf(seen);
  }

  /** How often the {@code i}-th expected line came. */
  public int count(int i) {
    return counts.get(i).get();
  }

  /** Removes the filter; fails when an expected line never came. */
  @Override
  public void close() {
    context().getTurboFilterList().remove(filter);
    if (!strict) {
      return;
    }
    List<String> missing = new ArrayList<>();
    for (int i = 0; i < patterns.size(); i++) {
      if (counts.get(i).get() == 0) {
        Pattern p = patterns.get(i);
        missing.add(p.level + " " + p.logger + " \"" + p.text + "\"");
      }
    }
    if (!missing.isEmpty()) {
      throw new AssertionError("expected log lines that never came: " + missing + "; seen: " + seen);
    }
  }

  private static LoggerContext context() {
    return (LoggerContext) LoggerFactory.getILoggerFactory();
  }
}
