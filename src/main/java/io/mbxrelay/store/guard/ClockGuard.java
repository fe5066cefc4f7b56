package io.mbxrelay.store.guard;

import java.time.Clock;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.Objects;
import java.util.OptionalLong;
import java.util.function.Consumer;

/**
 * The relay's store time, guarded against wall-clock steps (issue 10 item 7; docs/protocol.md §7.6 retention, §5 "Dedup
 * horizon"). It keeps a <em>trusted</em> time: the last wall-clock reading it accepted, advanced by the monotonic clock
 * since. A wall-clock reading further than {@code maxStepMs} from the trusted time (either way) is a step: the guard
 * then <em>pauses</em> expiry and dedup pruning ({@link #expiryPaused()}) and serves the trusted time instead of the
 * wall clock, until the wall clock is within the bound of the trusted time again (NTP corrected it) or an operator
 * accepts the wall clock ({@link #resume}). A reading within the bound is accepted and becomes the new trusted time,
 * so ordinary NTP slewing never accumulates into a step.
 *
 * <p>Guarantees of {@link #nowMs()}: it never goes backwards, and it never runs ahead of the trusted time by more
 * than {@code maxStepMs}. Across restarts the trusted time comes from the store's persisted watermark (its
 * {@code meta.heartbeat}, written with this clock every {@code timers.heartbeatMs}): a start whose wall clock is
 * further than the bound from the watermark starts paused, because a long stop and a clock step look the same from
 * inside; the operator confirms with {@link #resume} (or {@code serve --accept-clock}).
 *
 * <p>Use: the store gets {@link #clock()} as its {@link Clock}, so {@code accepted_at}, {@code expires_at}, seqs and
 * the heartbeat all read guarded time; the expiry sweep asks {@link #expiryPaused()} before it deletes anything.
 *
 * <p>Threading: all methods are synchronized and cheap (one wall and one monotonic reading); safe on any thread,
 * including the writer's inside a transaction. The listener runs on the calling thread and must not block.
 */
public final class ClockGuard {
  /** A monotonic time source in ns ({@link System#nanoTime()}); a {@link Clock} that also implements it supplies both. */
  @FunctionalInterface
  public interface Monotonic {
    /**
     * @return monotonic time, ns, arbitrary origin
     */
    long nanoTime();
  }

  /**
   * The guard's state after the latest reading.
   *
   * @param paused expiry and dedup pruning are paused
   * @param reason why (null when not paused)
   * @param stepMs wall-clock reading minus trusted time at the latest reading, ms (positive: the wall clock is ahead)
   * @param trustedMs the trusted time, ms since the epoch
   * @param wallMs the latest wall-clock reading, ms since the epoch
   * @param steps steps detected since start
   */
  public record Status(boolean paused, String reason, long stepMs, long trustedMs, long wallMs, long steps) {}

  private final Clock wall;
  private final Monotonic mono;
  private final long maxStepMs;
  private long anchorWallMs;
  private long anchorMonoNs;
  private long lastMs;
  private boolean paused;
  private String reason;
  private long stepMs;
  private long wallMs;
  private long steps;
  private Consumer<Status> listener = s -> {};
  private final Clock view = new View();

  /**
   * @param wall the wall clock
   * @param mono the monotonic clock
   * @param maxStepMs largest wall-clock step accepted as time passing, ms (positive)
   * @param watermarkMs the persisted watermark (the store's last heartbeat), empty for a new store
   * @param acceptWall take the wall clock as right at start even when it is far from the watermark (operator's
   *     decision, {@code serve --accept-clock}); time still never goes below the watermark
   */
  public ClockGuard(Clock wall, Monotonic mono, long maxStepMs, OptionalLong watermarkMs, boolean acceptWall) {
    this.wall = Objects.requireNonNull(wall);
    this.mono = Objects.requireNonNull(mono);
    if (maxStepMs <= 0) {
      throw new IllegalArgumentException("maxStepMs must be positive");
    }
    this.maxStepMs = maxStepMs;
    long w = wall.millis();
    this.anchorMonoNs = mono.nanoTime();
    this.anchorWallMs = watermarkMs.isPresent() && !acceptWall ? watermarkMs.getAsLong() : w;
    this.lastMs = watermarkMs.orElse(Long.MIN_VALUE);
    this.wallMs = w;
    observe(true);
  }

  /**
   * The monotonic clock that goes with {@code clock}: the clock itself when it implements {@link Monotonic} (tests'
   * clocks, which advance both), else {@link System#nanoTime()}.
   *
   * @param clock the wall clock
   * @return its monotonic companion
   */
  public static Monotonic monotonicOf(Clock clock) {
    return clock instanceof Monotonic m ? m : System::nanoTime;
  }

  /**
   * The wall-clock time behind a clock: the guarded wall clock for {@link #clock()}, else {@code clock.millis()}. For
   * checks that compare with the outside world's time, such as the stale-heartbeat epoch rotation (docs/protocol.md §5).
   *
   * @param clock a clock
   * @return wall-clock ms since the epoch
   */
  public static long wallMillis(Clock clock) {
    return clock instanceof View v ? v.guard().wall.millis() : clock.millis();
  }

  /** Receives every pause and resume (log lines, ops entries); runs on the calling thread. */
  public synchronized void listener(Consumer<Status> listener) {
    this.listener = Objects.requireNonNull(listener);
  }

  /**
   * Guarded time: the wall clock while it agrees with the trusted time, the trusted time while paused; never less
   * than any value returned before.
   *
   * @return ms since the epoch
   */
  public synchronized long nowMs() {
    return observe(false);
  }

  /**
   * Whether expiry and dedup pruning must wait (after reading the clocks again).
   *
   * @return true while paused
   */
  public synchronized boolean expiryPaused() {
    observe(false);
    return paused;
  }

  /**
   * The state after reading the clocks again.
   *
   * @return the status
   */
  public synchronized Status status() {
    observe(false);
    return snapshot();
  }

  /**
   * The operator's decision that the wall clock is right: it becomes the trusted time and expiry resumes. Time still
   * never goes backwards (after a backward step it holds until the wall clock passes the last value served).
   *
   * @param by who decided, for the log ({@code operator}, {@code start})
   * @return the status after resuming
   */
  public synchronized Status resume(String by) {
    anchorWallMs = wall.millis();
    anchorMonoNs = mono.nanoTime();
    if (paused) {
      paused = false;
      reason = null;
      stepMs = 0;
      listener.accept(snapshotWith("resumed by " + by));
    }
    observe(false);
    return snapshot();
  }

  /** A {@link Clock} whose {@code millis()} is {@link #nowMs()} (UTC). */
  public Clock clock() {
    return view;
  }

  private long observe(boolean atStart) {
    long w = wall.millis();
    long m = mono.nanoTime();
    long trusted = anchorWallMs + Math.floorDiv(m - anchorMonoNs, 1_000_000L);
    wallMs = w;
    stepMs = w - trusted;
    if (Math.abs(stepMs) <= maxStepMs) {
      anchorWallMs = w;
      anchorMonoNs = m;
      if (paused) {
        paused = false;
        reason = null;
        listener.accept(snapshotWith("wall clock consistent again"));
      }
      lastMs = Math.max(lastMs, w);
    } else {
      if (!paused) {
        paused = true;
        steps++;
        reason = (atStart ? "at start the wall clock is " : "the wall clock stepped ") + Math.abs(stepMs) / 1000
            + " s " + (stepMs > 0 ? "ahead of" : "behind") + (atStart ? " the store's clock watermark" : " the trusted time")
            + " (bound " + maxStepMs / 1000 + " s)";
        listener.accept(snapshot());
      }
      lastMs = Math.max(lastMs, trusted);
    }
    return lastMs;
  }

  private Status snapshot() {
    return new Status(paused, reason, stepMs, anchorWallMs + Math.floorDiv(mono.nanoTime() - anchorMonoNs, 1_000_000L),
        wallMs, steps);
  }

  private Status snapshotWith(String why) {
    Status s = snapshot();
    return new Status(s.paused(), why, s.stepMs(), s.trustedMs(), s.wallMs(), s.steps());
  }

  private final class View extends Clock {
    ClockGuard guard() {
      return ClockGuard.this;
    }

    @Override
    public ZoneId getZone() {
      return ZoneOffset.UTC;
    }

    @Override
    public Clock withZone(ZoneId zone) {
      return this;
    }

    @Override
    public long millis() {
      return nowMs();
    }

    @Override
    public Instant instant() {
      return Instant.ofEpochMilli(nowMs());
    }
  }
}
