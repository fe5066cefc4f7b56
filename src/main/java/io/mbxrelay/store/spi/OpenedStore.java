package io.mbxrelay.store.spi;

import io.mbxrelay.crypto.Ed25519KeyPair;
import io.mbxrelay.store.EnrolmentCache;
import io.mbxrelay.store.StoreOpenException;
import io.mbxrelay.store.guard.ClockGuard;
import io.mbxrelay.store.guard.DiskSpace;
import io.mbxrelay.store.model.OpenReport;
import io.vertx.core.Vertx;
import java.nio.file.Path;
import java.util.function.Consumer;
import java.util.function.LongSupplier;

/**
 * A store its {@link StoreBackendFactory} opened: everything the relay's start path needs of it, whatever the backend.
 * The start path calls, in this order: {@link #ledgerBackend()} (the writer's, which the writer closes), {@link #bind}
 * once the meters exist, {@link #answers()}, {@link #openReads} once Vert.x runs; and {@link #close()} after the writer
 * and the reads were closed.
 *
 * <p>Threading: opened and closed on one plain thread; the getters are safe on any thread.
 */
public interface OpenedStore extends AutoCloseable {

  /** The {@code store.backend} value ({@code sqlite}, {@code postgresql}). */
  String backend();

  /**
   * The writer's backend: one per store, used by the writer thread only, closed by whoever owns the ledger over it
   * (the writer once deployed, the start path before).
   */
  LedgerBackend ledgerBackend();

  /** The relay key served (SQLite: the one given; PostgreSQL: the database's). */
  Ed25519KeyPair relayKey();

  /** The epoch served. */
  String epoch();

  /** The committed enrolments in memory, kept current by the backend (reads safe on any thread). */
  EnrolmentCache enrolments();

  /** What the open did (created, migrated, epoch rotated and why). */
  OpenReport report();

  /** The guarded clock the store reads (never backwards, never a step ahead of its clock watermark). */
  ClockGuard clock();

  /** The free-space guard of the store's disk (a database server's store: never full from here). */
  DiskSpace disk();

  /**
   * The file the status page sizes and whose directory it names as {@code store_dir} (SQLite: {@code relay.db}; a
   * database server's store: a name in the store directory that does not exist).
   */
  Path statusFile();

  /**
   * Connects the store's meters, once, before {@link #answers()} and before the writer starts. Starts what only runs
   * with them (SQLite: the commit watermark's writer).
   *
   * @param meters the relay's meters
   * @throws StoreOpenException when that cannot start (SQLite: {@code relay.watermark} is a symbolic link)
   */
  void bind(Meters meters) throws StoreOpenException;

  /**
   * How the writer lets its answers leave after a COMMIT: at once, or once the commit is durable beyond the store
   * (SQLite with {@code store.watermarkBeforeAnswers}: once {@code relay.watermark} covers it). After {@link #bind}.
   *
   * @return the gate, called on the writer thread
   */
  Consumer<Runnable> answers();

  /**
   * Opens the read path (a pool of its own) on Vert.x.
   *
   * @param vertx the relay's Vert.x
   * @return the reads; the caller closes them before {@link #close()}
   * @throws Exception when the pool cannot be opened
   */
  RelayReads openReads(Vertx vertx) throws Exception;

  /**
   * Whether this process's writer is the only one that adds items to the store (SQLite: one relay holds the store;
   * PostgreSQL: every instance writes). Only then may the relay answer pulls from what its writer told it
   * ({@link io.mbxrelay.store.EmptyPageCache}).
   */
  boolean soleWriter();

  /**
   * Installs what wakes this instance's long-poll pulls when another instance on the same store commits items for
   * their hosts (issue 20 item 8). A store only one process writes (SQLite) never calls it: its writer's own
   * {@code ItemsCommitted} signal is the whole story.
   *
   * @param wake receives the targets of one notification on the store's listener thread; must not block
   */
  default void onItemsElsewhere(Consumer<java.util.Set<String>> wake) {
    // one writer process: nothing happens elsewhere
  }

  /**
   * The request state every instance on this store shares (issue 20 items 5–7): challenges, replay record, rate
   * windows. Empty for a store one process serves (SQLite): the relay keeps them in memory.
   *
   * @param vertx the relay's Vert.x (the state's database work runs on worker threads, never an event loop)
   * @param limits the challenge bounds ({@code limits.maxOpenChallenges}, {@code limits.challengeTtlMs})
   * @param clock wall-clock milliseconds
   * @return the shared state, or empty
   */
  default java.util.Optional<io.mbxrelay.auth.SharedRequestState> sharedRequestState(Vertx vertx,
      io.mbxrelay.config.RelayConfig.Limits limits, java.util.function.LongSupplier clock) {
    return java.util.Optional.empty();
  }

  /** After {@link #close()}: whether the store was left closed cleanly (SQLite: the clean-close marker is there). */
  boolean closedCleanly();

  /** Releases what the open took around the writer's backend (watermark writer, connection pool, store lock). */
  @Override
  void close();

  /**
   * The meters a store reports to, on the thread named per method.
   */
  interface Meters {
    /** A COMMIT statement's duration, ns (writer thread). */
    void commitNanos(long nanos);

    /** One commit-watermark write ended, {@code ok} or failed (the watermark's thread). */
    void watermarkWritten(boolean ok);

    /** Binds the gauge of writer transactions committed but not yet in the commit watermark. */
    void watermarkLag(LongSupplier lag);

    /** Binds the gauges of the database file's and its WAL's sizes. */
    void storeFiles(Path dbFile);

    /**
     * One background WAL checkpoint ended (the checkpointer's thread; SQLite with {@code store.checkpointIntervalMs}).
     *
     * @param nanos its duration, ns
     * @param backlogFrames log frames not yet copied into the database afterwards; -1 when it failed
     * @param ok false when it failed
     */
    default void checkpointed(long nanos, long backlogFrames, boolean ok) {}
  }
}
