package io.mbxrelay.store.sqlite;

import io.mbxrelay.store.StoreRefusedException;
import io.mbxrelay.wire.IsoTime;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Clock;
import java.util.EnumSet;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.zip.CRC32C;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The commit watermark (issue 10 item 3): a small file beside the store, {@code relay.watermark}, that records a lower
 * bound of the writer's committed transactions ({@code meta.commits}, which every writer transaction raises by one).
 * SQLite cannot see a lost WAL tail: one flipped byte in a WAL frame after a crash makes recovery stop at that frame
 * and silently drop it and every later commit. The relay can: at start, a store whose {@code meta.commits} is below
 * the watermark lost commits that were reported to hosts, and is refused ({@link #verify}).
 *
 * <p>File: 512 bytes, two 256-byte slots, each one ASCII line
 * {@code mbxrelay-watermark v1 epoch=<epoch> commits=<n> at=<ms> crc=<crc32c hex>} padded with spaces. A write
 * overwrites the older slot in place and {@code fdatasync}s it (the file never changes size, so no metadata needs
 * flushing); a torn write spoils one slot and leaves the other. The reader takes the valid slot with the most commits;
 * a file with no valid slot is damaged. The file is created 0600 through a temporary file, an fsync and an atomic
 * rename, and is never opened through a symbolic link.
 *
 * <p>Lag: the writer thread only publishes the committed count ({@link #committed}); a background thread writes it,
 * off the writer's thread. Answers can wait for it ({@link #afterDurable}, issue 22 item 3): then the thread writes as
 * soon as a commit is published, one write covering every commit published meanwhile, and the answers of a
 * transaction leave only once the file covers it, so every answered commit is covered and a lost WAL tail is always
 * found at start. Without that, the thread writes at most once per {@code intervalMs} and the file may lag the store by
 * up to that interval plus one write; it is a lower bound, so a loss of commits older than the lag is detected and a
 * loss of newer ones may not be. A write that fails releases the waiting answers uncovered (logged, counted): the
 * watermark is evidence, never a reason to stop answering.
 *
 * <p>Threading: {@link #committed} from the writer thread; {@link #flush} and {@link #close} from any thread.
 */
public final class CommitWatermark implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(CommitWatermark.class);

  /** The watermark file's name inside the store directory. */
  public static final String FILE = "relay.watermark";
  /** The {@code meta} key holding the store's count of writer transactions. */
  public static final String META_KEY = "commits";

  static final int SLOT = 256;
  static final int SIZE = 2 * SLOT;
  private static final String MAGIC = "mbxrelay-watermark v1 ";
  private static final Pattern LINE = Pattern.compile(
      "mbxrelay-watermark v1 epoch=([A-Za-z0-9][A-Za-z0-9._:-]{0,127}) commits=([0-9]{1,19}) at=([0-9]{1,15})"
          + " crc=([0-9a-f]{8}) *\n");
  private static final long WARN_EVERY_NS = TimeUnit.MINUTES.toNanos(1);
  private static final long RETRY_NANOS = TimeUnit.SECONDS.toNanos(1);

  /**
   * One watermark record.
   *
   * @param epoch the store epoch when it was written
   * @param commits writer transactions known committed (a lower bound of {@code meta.commits})
   * @param atMs wall time it was written, ms
   */
  public record Mark(String epoch, long commits, long atMs) {
    /** The record as one slot's text, without padding. */
    String line() {
      String body = MAGIC + "epoch=" + epoch + " commits=" + commits + " at=" + atMs;
      return body + " crc=" + crc(body);
    }
  }

  /** Observer of background writes (metrics). */
  public interface Listener {
    /**
     * After each attempt, on the watermark thread.
     *
     * @param commits the count written (or attempted)
     * @param ok false when the write failed (the next attempt comes after the interval)
     */
    void written(long commits, boolean ok);
  }

  /**
   * What {@link #verify} found at start.
   *
   * @param mark the watermark read, empty when there was no file
   * @param storeCommits {@code meta.commits} of the store (0 for a new store or one without the key)
   * @param damaged the file exists but no slot verifies
   */
  public record Verdict(Optional<Mark> mark, long storeCommits, boolean damaged) {
    /** The store lost commits the watermark had recorded (or the watermark cannot tell). */
    public boolean behind() {
      return damaged || (mark.isPresent() && mark.get().commits() > storeCommits);
    }

    /** The count the store must reach to be at or above the watermark again. */
    public long floor() {
      return Math.max(storeCommits, mark.map(Mark::commits).orElse(0L));
    }
  }

  private final Path dir;
  private final Path file;
  private final String epoch;
  private final long intervalNanos;
  private final Clock clock;
  private final Listener listener;
  private FileChannel channel;
  private final Thread thread;
  private volatile long latest;
  private volatile boolean stopped;
  private volatile long written;
  private int nextSlot;
  private long lastWriteNanos;
  private long lastWarnNanos;
  private volatile boolean lastFailed;
  /** Answers waiting for the file to cover their commit ({@link #afterDurable}), oldest first. */
  private final java.util.concurrent.ConcurrentLinkedQueue<Held> held = new java.util.concurrent.ConcurrentLinkedQueue<>();
  private volatile boolean coverAnswers;

  private record Held(long commits, Runnable release) {}

  private CommitWatermark(Path dir, String epoch, long commits, long intervalMs, Clock clock, Listener listener,
      FileChannel channel, int nextSlot) {
    this.dir = dir;
    this.file = dir.resolve(FILE);
    this.epoch = epoch;
    this.intervalNanos = TimeUnit.MILLISECONDS.toNanos(intervalMs);
    this.clock = clock;
    this.listener = listener;
    this.channel = channel;
    this.latest = commits;
    this.written = commits;
    this.nextSlot = nextSlot;
    this.lastWriteNanos = System.nanoTime();
    this.thread = new Thread(this::loop, "mbx-watermark");
    this.thread.setDaemon(true);
  }

  /**
   * Reads the watermark of a store directory.
   *
   * @param dir the store directory
   * @return the newest valid record; empty when there is no file
   * @throws StoreRefusedException when the file is a symbolic link
   * @throws IOException when the file exists but cannot be read, or no slot verifies ({@link DamagedException})
   */
  public static Optional<Mark> read(Path dir) throws IOException, StoreRefusedException {
    Path f = dir.resolve(FILE);
    StoreFiles.refuseLink(f);
    byte[] bytes;
    try {
      bytes = Files.readAllBytes(f);
    } catch (NoSuchFileException e) {
      return Optional.empty();
    }
    Mark best = null;
    for (int off = 0; off + SLOT <= bytes.length && off < SIZE; off += SLOT) {
      Mark m = parse(new String(bytes, off, SLOT, StandardCharsets.US_ASCII));
      if (m != null && (best == null || m.commits() > best.commits())) {
        best = m;
      }
    }
    if (best == null) {
      throw new DamagedException(f + " is damaged: neither of its two records verifies (" + bytes.length + " bytes)");
    }
    return Optional.of(best);
  }

  /** A watermark file that exists but has no valid record. */
  public static final class DamagedException extends IOException {
    private static final long serialVersionUID = 1L;

    DamagedException(String message) {
      super(message);
    }
  }

  static Mark parse(String slot) {
    Matcher m = LINE.matcher(slot);
    if (!m.matches()) {
      return null;
    }
    String body = MAGIC + "epoch=" + m.group(1) + " commits=" + m.group(2) + " at=" + m.group(3);
    if (!crc(body).equals(m.group(4))) {
      return null;
    }
    try {
      return new Mark(m.group(1), Long.parseLong(m.group(2)), Long.parseLong(m.group(3)));
    } catch (NumberFormatException e) {
      return null; // over Long.MAX_VALUE
    }
  }

  private static String crc(String body) {
    CRC32C c = new CRC32C();
    c.update(body.getBytes(StandardCharsets.US_ASCII));
    return String.format("%08x", c.getValue());
  }

  private static byte[] slotBytes(Mark m) {
    String line = m.line();
    byte[] out = new byte[SLOT];
    java.util.Arrays.fill(out, (byte) ' ');
    byte[] text = line.getBytes(StandardCharsets.US_ASCII);
    if (text.length > SLOT - 1) {
      throw new IllegalArgumentException("watermark record too long");
    }
    System.arraycopy(text, 0, out, 0, text.length);
    out[SLOT - 1] = '\n';
    return out;
  }

  /**
   * Replaces the watermark file atomically: both slots hold {@code m}, written to a temporary 0600 file, forced,
   * renamed over {@code relay.watermark}, and the directory forced. Used at start and by {@code restore},
   * {@code rotate-epoch} and {@code serve --accept-lost-commits}, which set the store's count themselves.
   *
   * @param dir the store directory
   * @param m the record
   * @throws IOException on I/O failure
   * @throws StoreRefusedException when {@code relay.watermark} is a symbolic link
   */
  public static void replace(Path dir, Mark m) throws IOException, StoreRefusedException {
    Path f = dir.resolve(FILE);
    StoreFiles.refuseLink(f);
    Path tmp = dir.resolve(FILE + ".tmp-" + ProcessHandle.current().pid());
    Files.deleteIfExists(tmp);
    byte[] slot = slotBytes(m);
    boolean moved = false;
    try {
      try (FileChannel ch = FileChannel.open(tmp, EnumSet.of(StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE),
          PosixFilePermissions.asFileAttribute(StoreFiles.OWNER_FILE))) {
        ByteBuffer b = ByteBuffer.allocate(SIZE);
        b.put(slot).put(slot).flip();
        while (b.hasRemaining()) {
          ch.write(b);
        }
        ch.force(true);
      }
      try {
        Files.move(tmp, f, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
      } catch (AtomicMoveNotSupportedException e) {
        Files.move(tmp, f, StandardCopyOption.REPLACE_EXISTING);
      }
      moved = true;
    } finally {
      if (!moved) {
        Files.deleteIfExists(tmp); // a full disk: leave nothing half-written behind
      }
    }
    forceDir(dir);
  }

  private static void forceDir(Path dir) {
    try (FileChannel d = FileChannel.open(dir, StandardOpenOption.READ)) {
      d.force(true);
    } catch (IOException | RuntimeException e) {
      // not every file system lets a directory be forced; the rename is still atomic
    }
  }

  /**
   * The open-time comparison: reads {@code relay.watermark} and the store's {@code meta.commits} on a read-only
   * connection, so nothing is written (and the WAL, the evidence of a loss, stays as it is) before the caller decides.
   *
   * @param dir the store directory
   * @param db the database file (must exist)
   * @param created the database was created just now (its count is 0)
   * @return what was found
   * @throws StoreRefusedException when {@code relay.watermark} is a symbolic link
   * @throws IOException when the file cannot be read (a damaged file is a {@link Verdict#damaged()} verdict instead)
   * @throws SQLException when the store cannot be read
   */
  public static Verdict verify(Path dir, Path db, boolean created)
      throws StoreRefusedException, IOException, SQLException {
    Optional<Mark> mark;
    boolean damaged = false;
    try {
      mark = read(dir);
    } catch (DamagedException e) {
      mark = Optional.empty();
      damaged = true;
    }
    if (mark.isEmpty() && !damaged) {
      return new Verdict(mark, 0, false); // nothing to compare with: the caller creates the file
    }
    return new Verdict(mark, created ? 0 : storeCommits(db), damaged);
  }

  /**
   * {@code meta.commits} read on a read-only connection (0 when the key or the meta table is missing).
   *
   * @param db the database file
   * @return the store's count of writer transactions
   * @throws SQLException on a read failure
   */
  public static long storeCommits(Path db) throws SQLException {
    org.sqlite.SQLiteConfig ro = new org.sqlite.SQLiteConfig();
    ro.setReadOnly(true);
    ro.setBusyTimeout(5000);
    try (Connection c = DriverManager.getConnection(SqliteSettings.url(db), ro.toProperties())) {
      return storeCommits(c);
    }
  }

  /**
   * {@code meta.commits} on an open connection (0 when the key or the meta table is missing, or it does not parse:
   * metadata validation reports that).
   *
   * @param c a connection to the store
   * @return the count
   * @throws SQLException on a read failure
   */
  public static long storeCommits(Connection c) throws SQLException {
    try (PreparedStatement t = c.prepareStatement("SELECT 1 FROM sqlite_master WHERE type='table' AND name='meta'");
        ResultSet rs = t.executeQuery()) {
      if (!rs.next()) {
        return 0;
      }
    }
    try (PreparedStatement ps = c.prepareStatement("SELECT v FROM meta WHERE k=?")) {
      ps.setString(1, META_KEY);
      try (ResultSet rs = ps.executeQuery()) {
        if (!rs.next() || rs.getString(1) == null || !rs.getString(1).matches("[0-9]{1,18}")) {
          return 0;
        }
        return Long.parseLong(rs.getString(1));
      }
    }
  }

  /**
   * Starts the background writer for a store that has just opened: writes {@code (epoch, commits)} at once (the file
   * is created when missing, replaced when it is damaged or names another epoch) and then follows
   * {@link #committed}.
   *
   * @param dir the store directory
   * @param epoch the store's epoch
   * @param commits the store's {@code meta.commits} now
   * @param intervalMs least time between two background writes, ms (0 = write as fast as commits come)
   * @param clock wall time for the records' {@code at}
   * @param listener observer of writes
   * @return the running watermark; {@link #close} it after the store's last commit
   * @throws StoreRefusedException when {@code relay.watermark} is a symbolic link
   */
  public static CommitWatermark start(Path dir, String epoch, long commits, long intervalMs, Clock clock,
      Listener listener) throws StoreRefusedException {
    Objects.requireNonNull(epoch);
    Objects.requireNonNull(clock);
    Objects.requireNonNull(listener);
    StoreFiles.refuseLink(dir.resolve(FILE));
    CommitWatermark w = new CommitWatermark(dir, epoch, commits, intervalMs, clock, listener, null, 0);
    // A file that cannot be written now (a full disk at start) leaves the relay running without one: the watermark is
    // evidence, not a condition for serving, and the background thread tries again every interval.
    w.written = -1;
    w.writeSlot(commits);
    w.thread.start();
    return w;
  }

  /**
   * Publishes a committed count; never blocks and never touches the file. Writer thread, right after COMMIT.
   *
   * @param commits the store's {@code meta.commits} as just committed
   */
  public void committed(long commits) {
    if (commits > latest) {
      latest = commits;
      LockSupport.unpark(thread);
    }
  }

  /**
   * Runs {@code release} once the file covers the latest commit published by {@link #committed}: at once when it
   * already does, or when the last write failed; else on the watermark thread right after the write that covers it.
   * The first call switches the thread to writing as soon as a commit is published (no interval). Writer thread, right
   * after the transaction whose answers {@code release} sends.
   *
   * @param release sends the transaction's answers; must not block
   */
  public void afterDurable(Runnable release) {
    coverAnswers = true;
    long target = latest;
    if (target <= written || lastFailed || stopped) {
      release.run();
      return;
    }
    held.add(new Held(target, release));
    LockSupport.unpark(thread);
  }

  /** Answers waiting for the watermark (metrics, tests; any thread). */
  public int waitingAnswers() {
    return held.size();
  }

  /** Runs the held answers the file now covers (all of them after a failed write, or at close). */
  private void releaseCovered(boolean all) {
    for (Held h = held.peek(); h != null && (all || h.commits() <= written); h = held.peek()) {
      held.poll();
      try {
        h.release().run();
      } catch (RuntimeException e) {
        LOG.warn("answers after the commit watermark failed [error: {}]", e.toString());
      }
    }
  }

  /** Transactions published by {@link #committed} but not yet in the file (metrics; any thread). */
  public long lag() {
    return Math.max(0, latest - written);
  }

  /** The count most recently published by {@link #committed}. */
  public long latest() {
    return latest;
  }

  /**
   * Writes the latest published count now, on the caller's thread, if it is newer than the file (tests, shutdown).
   *
   * @return true when the file holds the latest count afterwards
   */
  public synchronized boolean flush() {
    long target = latest;
    if (target <= written) {
      return true;
    }
    return writeSlot(target);
  }

  private void loop() {
    while (!stopped) {
      releaseCovered(lastFailed);
      long target = latest;
      if (target <= writtenSnapshot()) {
        if (held.isEmpty()) {
          LockSupport.park(this);
        }
        continue;
      }
      // after a failed write wait at least a second, so a disk that stays full is not retried in a tight loop; answers
      // waiting for the file are written for at once (every commit published meanwhile joins this one write)
      long pause = lastFailed ? Math.max(intervalNanos, RETRY_NANOS) : coverAnswers ? 0 : intervalNanos;
      long wait = lastWriteNanos + pause - System.nanoTime();
      if (wait > 0) {
        LockSupport.parkNanos(this, wait); // batch: the writes of this interval become one
        continue;
      }
      synchronized (this) {
        if (latest > written) {
          writeSlot(latest);
        }
      }
    }
    releaseCovered(true);
  }

  private long writtenSnapshot() {
    return written;
  }

  /** Overwrites the older slot with {@code target} and forces it; on failure the next attempt waits an interval. */
  private boolean writeSlot(long target) {
    lastWriteNanos = System.nanoTime();
    Mark m = new Mark(epoch, target, clock.millis());
    ByteBuffer b = ByteBuffer.wrap(slotBytes(m));
    try {
      if (channel == null) { // first write (or every write until one succeeds): a whole new file, atomically
        replace(dir, m);
        channel = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE, LinkOption.NOFOLLOW_LINKS);
        nextSlot = 0;
        written = target;
        lastFailed = false;
        listener.written(target, true);
        return true;
      }
      long pos = (long) nextSlot * SLOT;
      while (b.hasRemaining()) {
        pos += channel.write(b, pos);
      }
      channel.force(false); // the size never changes: fdatasync is enough
      nextSlot ^= 1;
      written = target;
      lastFailed = false;
      listener.written(target, true);
      return true;
    } catch (IOException | RuntimeException | StoreRefusedException e) {
      long now = System.nanoTime();
      if (lastWarnNanos == 0 || now - lastWarnNanos > WARN_EVERY_NS) {
        lastWarnNanos = now;
        LOG.warn("commit watermark not written; it lags the store until a write succeeds [file: {}] [error: {}]",
            file, e.toString());
      }
      lastFailed = true;
      listener.written(target, false);
      return false;
    }
  }

  /** Writes the latest count (last chance after the store's final commit), stops the thread and closes the file. */
  @Override
  public void close() {
    stopped = true;
    LockSupport.unpark(thread);
    try {
      thread.join(5000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    flush();
    releaseCovered(true);
    try {
      if (channel != null) {
        channel.close();
      }
    } catch (IOException e) {
      // closing
    }
  }

  /** A line for logs: the record without its checksum. */
  public static String describe(Mark m) {
    return "commit " + m.commits() + " (epoch " + m.epoch() + ", written " + IsoTime.format(m.atMs()) + ")";
  }
}
