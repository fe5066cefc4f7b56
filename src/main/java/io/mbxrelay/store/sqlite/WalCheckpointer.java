package io.mbxrelay.store.sqlite;

import io.mbxrelay.store.StoreException;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Copies the write-ahead log into {@code relay.db} on its own thread and connection, so that the writer's COMMIT
 * does not copy thousands of pages at a time (config {@code store.checkpointIntervalMs}; issue 18 goal 5).
 *
 * <p>When the writer checkpoints itself ({@code wal_autocheckpoint}), the COMMIT that crosses the threshold copies
 * the whole log and fsyncs the database. With 100,000 targets that took 60–200 ms, and every command queued behind it
 * waited that long. This thread runs {@code PRAGMA wal_checkpoint(PASSIVE)} at most once per interval after new
 * commits. A passive checkpoint takes no lock the writer or the readers wait for: it copies the frames no reader
 * still needs, and fsyncs the database ({@code synchronous=FULL}) when it reached the log's end; SQLite reuses the log
 * only after such an fsync. Only the writer starts the log file over, and only when everything was copied and no
 * reader still reads it, so under steady reading the file grows to the writer's own {@code wal_autocheckpoint}
 * ({@code store.walAutocheckpointPages}); from there each COMMIT also runs a passive checkpoint until the file starts
 * over, which copies at most what this thread has not yet (one interval's pages) and returns at once while this
 * thread is copying. SQLite fsyncs the database only in a checkpoint that copied up to the log's live end; the
 * writer commits while this thread copies, so under steady load this thread seldom gets there, and the first
 * checkpoint that does (the writer's, in the COMMIT past the bound) fsyncs everything copied since the last one:
 * 60–95 ms every ~3 s under 100,000 hosts (docs/performance.md "Eighth session", where restarting the log earlier or
 * fsyncing after each pass here were measured and not kept, and "Ninth session", where starting the kernel's
 * write-back after each pass cut that fsync to 15–29 ms but sent pages to the disk more than once and made the log's
 * fsyncs and the tails worse).
 *
 * <p>The connection never begins a transaction and writes no row. It is not a second writer: what it writes into
 * the database file is pages the writer already committed. A failed checkpoint is logged (at most once a minute) and
 * counted, and tried again after at least a second.
 *
 * <p>Threading: {@link #committed} from the writer thread; {@link #stop} from the writer thread before the writer's
 * own closing checkpoint.
 */
final class WalCheckpointer {
  private static final Logger LOG = LoggerFactory.getLogger(WalCheckpointer.class);
  private static final long WARN_EVERY_NS = TimeUnit.MINUTES.toNanos(1);
  private static final long RETRY_NANOS = TimeUnit.SECONDS.toNanos(1);
  /** How long {@link #close} waits for a running checkpoint before interrupting it, ms. */
  private static final long CLOSE_WAIT_MS = 5_000;

  /** Observer of checkpoints (metrics). Called on the checkpointer's thread. */
  interface Listener {
    /**
     * One checkpoint ended.
     *
     * @param nanos its duration, ns
     * @param backlogFrames log frames not yet in the database afterwards (frames readers still needed); -1 when it
     *     failed
     * @param ok false when it failed
     */
    void checkpointed(long nanos, long backlogFrames, boolean ok);
  }

  private final Connection conn;
  private final long intervalNanos;
  private final Listener listener;
  private final Thread thread;
  /** A commit since the last checkpoint began; true at start, for a log left by the open or a crash. */
  private volatile boolean pending = true;
  private volatile boolean stopped;
  /** Guards the statement's cancel at close against the thread closing its connection. */
  private final Object connLock = new Object();
  private Statement running;
  private long lastStartNanos;
  private boolean lastFailed;
  private long lastWarnNanos;

  private WalCheckpointer(Connection conn, long intervalMs, Listener listener) {
    this.conn = conn;
    this.intervalNanos = TimeUnit.MILLISECONDS.toNanos(intervalMs);
    this.listener = listener;
    this.thread = new Thread(this::loop, "mbx-checkpoint");
    this.thread.setDaemon(true);
    this.thread.setUncaughtExceptionHandler((t, e) -> LOG.error("background WAL checkpoints stopped; the writer's own"
        + " checkpoints at store.walAutocheckpointPages bound the log from now on", e));
  }

  /**
   * Opens the checkpointer's connection to {@code dbFile} and starts its thread.
   *
   * @param dbFile {@code relay.db}, already open in WAL mode by the writer
   * @param intervalMs least time between the starts of two checkpoints, ms (≥ 1)
   * @param busyTimeoutMs SQLite busy timeout of the connection
   * @param listener observer of each checkpoint
   * @return the running checkpointer; {@link #stop} it before the writer's last checkpoint
   * @throws StoreException when the connection cannot be opened
   */
  static WalCheckpointer start(Path dbFile, long intervalMs, long busyTimeoutMs, Listener listener)
      throws StoreException {
    if (intervalMs < 1) {
      throw new IllegalArgumentException("intervalMs must be ≥ 1: " + intervalMs);
    }
    Objects.requireNonNull(listener);
    Connection c;
    try {
      c = DriverManager.getConnection(SqliteSettings.url(dbFile), SqliteSettings.checkpointer(busyTimeoutMs));
    } catch (SQLException e) {
      throw SqliteBackend.classify("cannot open the checkpointer's connection", e);
    }
    WalCheckpointer w = new WalCheckpointer(c, intervalMs, listener);
    w.thread.start();
    return w;
  }

  /** A commit added log frames: a checkpoint follows within the interval. Never blocks. Writer thread. */
  void committed() {
    if (!pending) {
      pending = true;
      LockSupport.unpark(thread);
    }
  }

  private void loop() {
    try {
      while (!stopped) {
        if (!pending) {
          LockSupport.park(this);
          continue;
        }
        long pause = lastFailed ? Math.max(intervalNanos, RETRY_NANOS) : intervalNanos;
        long wait = lastStartNanos + pause - System.nanoTime();
        if (lastStartNanos != 0 && wait > 0) {
          LockSupport.parkNanos(this, wait); // the commits of one interval share one checkpoint
          continue;
        }
        pending = false;
        try {
          checkpoint();
        } catch (RuntimeException e) { // the driver or a meter: logged and counted, the thread goes on
          lastFailed = true;
          pending = true;
          warn(e.toString());
        }
      }
    } finally {
      synchronized (connLock) {
        SqliteBackend.closeQuietly(conn);
      }
    }
  }

  private void warn(String error) {
    long now = System.nanoTime();
    if (lastWarnNanos == 0 || now - lastWarnNanos > WARN_EVERY_NS) {
      lastWarnNanos = now;
      LOG.warn("background WAL checkpoint failed; the writer's own checkpoints bound the log meanwhile [error: {}]",
          error);
    }
  }

  /** One passive checkpoint; what it could not copy (a reader still needed it) is tried again next interval. */
  private void checkpoint() {
    long start = System.nanoTime();
    lastStartNanos = start;
    try (Statement st = conn.createStatement()) {
      synchronized (connLock) {
        running = st;
      }
      if (stopped) {
        return;
      }
      boolean busy = false;
      long backlog = 0;
      try (ResultSet rs = st.executeQuery("PRAGMA wal_checkpoint(PASSIVE)")) {
        if (rs.next()) {
          busy = rs.getInt(1) != 0;
          long log = rs.getLong(2);
          long copied = rs.getLong(3);
          backlog = log < 0 || copied < 0 ? 0 : Math.max(0, log - copied);
        }
      }
      lastFailed = false;
      if (busy || backlog > 0) {
        pending = true; // the writer's own checkpoint held the lock, or readers held frames: again next interval
      }
      if (!busy) { // a busy attempt copied nothing: no sample, and the backlog it could not see stays as last read
        listener.checkpointed(System.nanoTime() - start, backlog, true);
      }
    } catch (SQLException e) {
      lastFailed = true;
      pending = true;
      if (!stopped) {
        warn(e.getMessage());
        listener.checkpointed(System.nanoTime() - start, -1, false);
      }
    } finally {
      synchronized (connLock) {
        running = null;
      }
    }
  }

  /**
   * Stops the thread and closes its connection: waits for a running checkpoint (interrupting it after
   * {@value #CLOSE_WAIT_MS} ms). Writer thread, before the writer's closing {@code wal_checkpoint(TRUNCATE)}, which a
   * running checkpoint would make fail.
   *
   * @return true when the thread ended and its connection is closed; false when it is still running (the caller then
   *     leaves the store as a crash would: no truncation, no clean-close marker)
   */
  boolean stop() {
    stopped = true;
    LockSupport.unpark(thread);
    boolean interrupted = false;
    try {
      thread.join(CLOSE_WAIT_MS);
    } catch (InterruptedException e) {
      interrupted = true;
    }
    if (thread.isAlive()) {
      synchronized (connLock) {
        try {
          if (running != null) {
            running.cancel(); // sqlite3_interrupt: the checkpoint stops between pages
          }
        } catch (SQLException e) {
          LOG.debug("interrupting the background checkpoint failed", e);
        }
      }
      try {
        thread.join(CLOSE_WAIT_MS);
      } catch (InterruptedException e) {
        interrupted = true;
      }
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
    if (thread.isAlive()) {
      LOG.warn("background WAL checkpoint still running at close; the store is left as after a crash (not truncated,"
          + " not marked closed cleanly)");
      return false;
    }
    return true;
  }
}
