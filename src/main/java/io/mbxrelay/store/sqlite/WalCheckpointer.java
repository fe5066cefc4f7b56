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
 * does not also run the checkpoint (config {@code store.checkpointIntervalMs}; issue 18 goal 5).
 *
 * <p>When the writer checkpoints itself ({@code wal_autocheckpoint}), the COMMIT that crosses the threshold copies
 * thousands of pages and fsyncs the database. With 100,000 targets that took 60–200 ms, and every command queued
 * behind it waited that long. Here the writer only appends and syncs log frames. This thread runs
 * {@code PRAGMA wal_checkpoint(PASSIVE)} at most once per interval after new commits. A passive checkpoint
 * takes no lock the writer or the readers wait for: it copies the frames no reader still needs, then fsyncs the
 * database ({@code synchronous=FULL}), and SQLite reuses the log only after that. The writer keeps its own
 * {@code wal_autocheckpoint} ({@code store.walAutocheckpointPages}) as the bound for when this thread falls behind;
 * while this thread is copying, the writer's attempt returns at once.
 *
 * <p>The connection never begins a transaction and writes no row. It is not a second writer: what it writes into
 * the database file is pages the writer already committed. A failed checkpoint is logged (at most once a minute) and
 * counted, and tried again after at least a second.
 *
 * <p>Threading: {@link #committed} from the writer thread; {@link #close} from the writer thread before the writer's
 * own closing checkpoint.
 */
final class WalCheckpointer implements AutoCloseable {
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
  private volatile boolean pending;
  private volatile boolean stopped;
  private volatile Statement running;
  private long lastStartNanos;
  private boolean lastFailed;
  private long lastWarnNanos;

  private WalCheckpointer(Connection conn, long intervalMs, Listener listener) {
    this.conn = conn;
    this.intervalNanos = TimeUnit.MILLISECONDS.toNanos(intervalMs);
    this.listener = listener;
    this.thread = new Thread(this::loop, "mbx-checkpoint");
    this.thread.setDaemon(true);
  }

  /**
   * Opens the checkpointer's connection to {@code dbFile} and starts its thread.
   *
   * @param dbFile {@code relay.db}, already open in WAL mode by the writer
   * @param intervalMs least time between the starts of two checkpoints, ms (≥ 1)
   * @param busyTimeoutMs SQLite busy timeout of the connection
   * @param listener observer of each checkpoint
   * @return the running checkpointer; {@link #close} it before the writer's last checkpoint
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
        checkpoint();
      }
    } finally {
      SqliteBackend.closeQuietly(conn);
    }
  }

  /** One passive checkpoint; what it could not copy (a reader still needed it) is tried again next interval. */
  private void checkpoint() {
    long start = System.nanoTime();
    lastStartNanos = start;
    try (Statement st = conn.createStatement()) {
      running = st;
      if (stopped) {
        return;
      }
      long backlog = 0;
      try (ResultSet rs = st.executeQuery("PRAGMA wal_checkpoint(PASSIVE)")) {
        if (rs.next()) {
          long log = rs.getLong(2);
          long copied = rs.getLong(3);
          backlog = log < 0 ? 0 : Math.max(0, log - copied);
          if (rs.getInt(1) != 0 || backlog > 0) {
            pending = true; // the writer's own checkpoint held the lock, or readers held frames: again next interval
          }
        }
      }
      lastFailed = false;
      listener.checkpointed(System.nanoTime() - start, backlog, true);
    } catch (SQLException e) {
      lastFailed = true;
      pending = true;
      if (!stopped) {
        long now = System.nanoTime();
        if (lastWarnNanos == 0 || now - lastWarnNanos > WARN_EVERY_NS) {
          lastWarnNanos = now;
          LOG.warn("background WAL checkpoint failed; the writer's own checkpoints bound the log meanwhile"
              + " [error: {}]", e.getMessage());
        }
        listener.checkpointed(System.nanoTime() - start, -1, false);
      }
    } finally {
      running = null;
    }
  }

  /**
   * Stops the thread and closes its connection: waits for a running checkpoint (interrupting it after
   * {@value #CLOSE_WAIT_MS} ms). Writer thread, before the writer's closing {@code wal_checkpoint(TRUNCATE)}, which a
   * running checkpoint would make fail.
   */
  @Override
  public void close() {
    stopped = true;
    LockSupport.unpark(thread);
    try {
      thread.join(CLOSE_WAIT_MS);
      Statement st = running;
      if (thread.isAlive() && st != null) {
        st.cancel(); // sqlite3_interrupt: the checkpoint stops between pages
      }
      thread.join(CLOSE_WAIT_MS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (SQLException e) {
      LOG.debug("interrupting the background checkpoint failed", e);
    }
    if (thread.isAlive()) {
      LOG.warn("background WAL checkpoint still running at close; the store is not marked closed cleanly");
    }
  }
}
