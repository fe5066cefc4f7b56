package io.mbxrelay.store.guard;

import java.nio.file.Path;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

/**
 * Free space on the store's file system against the store-wide floor {@code store.minFreeBytes} (issue 10 item 9).
 * Below the floor the writer refuses new pushes (503) before SQLite can hit {@code SQLITE_FULL}, and {@code /ready}
 * is 503, so acks (which free space), enrolments and the heartbeat keep the reserve. A transaction that failed with
 * {@code SQLITE_FULL} anyway (another process filled the disk, or no floor) also makes the store count as full until
 * free space grows past what it was at that failure, or a later write transaction commits.
 *
 * <p>Cheap by construction: the file system is asked ({@code statvfs}) at most once per {@link #REFRESH_MS}; between
 * two readings the estimate falls by whichever is more: twice the wire bytes committed since (WAL and the checkpoint
 * into the database both take room), or how much the store's files grew since (their sizes, read after each
 * transaction: a small transaction writes whole pages, several times its wire bytes with 8 KiB pages, and the WAL
 * grows until its first checkpoint). An estimate under the floor is checked again at most every {@link #RECHECK_MS}.
 * Never a system call per item; two {@code stat}s per transaction when a floor is set.
 *
 * <p>Threading: safe on any thread (the writer, the admin verticle, the metrics scrape).
 */
public final class DiskSpace {
  /** Longest time a free-space reading is used, ms. */
  public static final long REFRESH_MS = 1000;
  /** Shortest time between two readings when the estimate says the floor is crossed, ms. */
  public static final long RECHECK_MS = 100;

  private final LongSupplier freeBytes;
  private final LongSupplier nanoTime;
  private final long floor;
  /** Bytes the store's files take now (relay.db + its WAL), or null: then only the wire-byte estimate counts. */
  private final LongSupplier storeBytes;
  private long storeBytesAtReading;
  private long measured = Long.MAX_VALUE;
  private long measuredAt;
  private boolean everMeasured;
  private long writtenSince;
  private long grownSince;
  private long fullAtFree = -1;

  /**
   * @param freeBytes reads the usable free space of the store's file system, bytes (a system call)
   * @param nanoTime monotonic time, ns (tests inject one)
   * @param floor {@code store.minFreeBytes}; 0 = no floor
   */
  public DiskSpace(LongSupplier freeBytes, LongSupplier nanoTime, long floor) {
    this(freeBytes, null, nanoTime, floor);
  }

  /**
   * @param freeBytes reads the usable free space of the store's file system, bytes (a system call)
   * @param storeBytes reads the bytes the store's files take now (read after each committed transaction), or null
   * @param nanoTime monotonic time, ns (tests inject one)
   * @param floor {@code store.minFreeBytes}; 0 = no floor
   */
  public DiskSpace(LongSupplier freeBytes, LongSupplier storeBytes, LongSupplier nanoTime, long floor) {
    this.freeBytes = Objects.requireNonNull(freeBytes);
    this.storeBytes = floor > 0 ? storeBytes : null;
    this.nanoTime = Objects.requireNonNull(nanoTime);
    this.floor = floor;
  }

  /**
   * The store directory's file system ({@code File.getUsableSpace}: {@code statvfs}, the space this user may write).
   *
   * @param storeDir the store directory
   * @param floor {@code store.minFreeBytes}
   * @return a disk-space guard over it
   */
  public static DiskSpace of(Path storeDir, long floor) {
    java.io.File dir = storeDir.toFile();
    java.io.File db = new java.io.File(dir, "relay.db");
    java.io.File wal = new java.io.File(dir, "relay.db-wal");
    // File.length: 0 for a file that is not there (the WAL between a clean close and the next write), no exception
    return new DiskSpace(dir::getUsableSpace, () -> db.length() + wal.length(), System::nanoTime, floor);
  }

  /** The configured floor, bytes. */
  public long floor() {
    return floor;
  }

  /**
   * Whether new pushes are refused now: the free-space estimate is under the floor. Reads the file system when the
   * last reading is older than {@link #REFRESH_MS} (or {@link #RECHECK_MS} while under the floor).
   *
   * @return true below the floor
   */
  public synchronized boolean refusesPushes() {
    refreshIfStale();
    return floor > 0 && estimate() < floor;
  }

  /**
   * Whether the store counts as full for readiness: under the floor, or a transaction failed with
   * {@code SQLITE_FULL} and neither has free space grown past what it was then nor has a write committed since.
   *
   * @return true while full
   */
  public synchronized boolean full() {
    refreshIfStale();
    if (fullAtFree >= 0 && measured > fullAtFree + Math.max(floor, 1L << 20)) {
      fullAtFree = -1; // space returned
    }
    return (floor > 0 && estimate() < floor) || fullAtFree >= 0;
  }

  /**
   * Records committed wire bytes (the estimate falls by twice that, or by the store files' growth since the last
   * reading when that is more, until the next reading). Writer thread.
   *
   * @param bytes wire bytes of the commands just committed
   */
  public synchronized void committed(long bytes) {
    writtenSince += Math.max(0, bytes);
    if (storeBytes != null) {
      grownSince = Math.max(grownSince, readStoreBytes() - storeBytesAtReading);
    }
    fullAtFree = -1; // a write committed: there was room
  }

  private long readStoreBytes() {
    try {
      return storeBytes.getAsLong();
    } catch (RuntimeException e) {
      return storeBytesAtReading; // unknown: the wire-byte estimate still counts
    }
  }

  /** Records a transaction that failed with {@code SQLITE_FULL}; the next reading is taken now. Writer thread. */
  public synchronized void failedFull() {
    read();
    fullAtFree = Math.max(0, measured);
  }

  /** The last reading of free space, bytes ({@code Long.MAX_VALUE} before the first). */
  public synchronized long freeBytes() {
    return everMeasured ? measured : Long.MAX_VALUE;
  }

  /** Reads the file system now if the last reading is stale; cheap otherwise. */
  public synchronized void refreshIfStale() {
    long age = nanoTime.getAsLong() - measuredAt;
    if (!everMeasured || age >= TimeUnit.MILLISECONDS.toNanos(REFRESH_MS)
        || (floor > 0 && estimate() < floor && age >= TimeUnit.MILLISECONDS.toNanos(RECHECK_MS))) {
      read();
    }
  }

  private void read() {
    long free;
    try {
      free = freeBytes.getAsLong();
    } catch (RuntimeException e) {
      free = everMeasured ? measured : Long.MAX_VALUE; // keep the last reading; the next one may work
    }
    measured = free;
    measuredAt = nanoTime.getAsLong();
    everMeasured = true;
    writtenSince = 0;
    grownSince = 0;
    if (storeBytes != null) {
      storeBytesAtReading = readStoreBytes();
    }
  }

  private long estimate() {
    return measured - Math.max(2 * writtenSince, grownSince);
  }
}
