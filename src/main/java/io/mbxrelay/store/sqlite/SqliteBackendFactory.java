package io.mbxrelay.store.sqlite;

import io.mbxrelay.config.RelayConfig;
import io.mbxrelay.crypto.Ed25519KeyPair;
import io.mbxrelay.store.EnrolmentCache;
import io.mbxrelay.store.StoreException;
import io.mbxrelay.store.StoreOpenException;
import io.mbxrelay.store.guard.ClockGuard;
import io.mbxrelay.store.guard.DiskSpace;
import io.mbxrelay.store.model.OpenReport;
import io.mbxrelay.store.spi.LedgerBackend;
import io.mbxrelay.store.spi.OpenedStore;
import io.mbxrelay.store.spi.RelayReads;
import io.mbxrelay.store.spi.StoreBackendFactory;
import io.vertx.core.Vertx;
import java.nio.file.Path;
import java.util.Objects;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The embedded SQLite store ({@code store.backend} {@code sqlite}) as the relay starts it: the store directory's
 * guards (mode 0700, file modes, the store lock, the clock and commit watermarks, the free-space floor) around
 * {@link SqliteOpener}'s open of {@code relay.db}. Stateless; {@link #open} is blocking.
 */
public final class SqliteBackendFactory implements StoreBackendFactory {
  private static final Logger LOG = LoggerFactory.getLogger(SqliteBackendFactory.class);
  /**
   * Above this many pages a checkpoint in the writer's COMMIT (background checkpoints off) holds every queued command
   * for hundreds of ms: the start warns. 16,000 pages of 8 KiB are 128 MiB to copy and fsync.
   */
  static final int WRITER_CHECKPOINT_WARN_PAGES = 16_000;

  /** For {@link java.util.ServiceLoader}. */
  public SqliteBackendFactory() {}

  @Override
  public String backend() {
    return RelayConfig.Store.SQLITE;
  }

  @Override
  public boolean storeInDirectory() {
    return true;
  }

  @Override
  public String describe(RelayConfig.Store config, Path storeDir) {
    return storeDir.toAbsolutePath().toString();
  }

  @Override
  public OpenedStore open(OpenRequest r) throws StoreOpenException {
    Objects.requireNonNull(r.givenKey(), "the SQLite store needs the relay key");
    Path dir = r.storeDir();
    RelayConfig config = r.config();
    SqliteOpener.createStoreDir(dir);
    for (String note : StoreFiles.secure(dir)) {
      LOG.warn("store files [{}]", note);
    }
    StoreLock lock = StoreLock.acquire(dir, r.lockWaitMs(),
        holder -> LOG.warn("store {} is in use by {}: waiting up to {} s for it to stop", dir, holder,
            r.lockWaitMs() / 1000));
    SqliteBackend backend = null;
    try {
      // The store reads guarded time (accepted_at, expires_at, seqs, heartbeat): never backwards, never a step ahead
      // of its persisted watermark (issue 10 item 7). The HTTP side keeps the wall clock for hop windows.
      ClockGuard clock = new ClockGuard(r.wallClock(), ClockGuard.monotonicOf(r.wallClock()),
          config.timers().maxClockStepMs(), SqliteOps.watermark(dir), r.acceptClock());
      SqliteOpener.Opened opened = SqliteOpener.open(dir, r.givenKey().publicKeyB64(), clock.clock(),
          config.store().busyTimeoutMs(), config.timers().heartbeatStaleMs(), r.acceptLostCommits());
      backend = opened.backend();
      backend.walAutocheckpoint(config.store().walAutocheckpointPages());
      return new Opened(r, lock, backend, opened.report(), clock);
    } catch (StoreException e) {
      backend.close();
      lock.close();
      throw new StoreOpenException("cannot open the store " + backend.file() + ": " + e.getMessage(), e);
    } catch (StoreOpenException | RuntimeException | Error e) {
      if (backend != null) {
        backend.close();
      }
      lock.close();
      throw e;
    }
  }

  /** The open SQLite store with its lock and, once bound, its commit watermark. */
  private static final class Opened implements OpenedStore {
    private final OpenRequest request;
    private final StoreLock lock;
    private final SqliteBackend backend;
    private final OpenReport report;
    private final ClockGuard clock;
    private final DiskSpace disk;
    private CommitWatermark watermark;

    Opened(OpenRequest request, StoreLock lock, SqliteBackend backend, OpenReport report, ClockGuard clock) {
      this.request = request;
      this.lock = lock;
      this.backend = backend;
      this.report = report;
      this.clock = clock;
      this.disk = DiskSpace.of(request.storeDir(), request.config().store().minFreeBytes());
    }

    @Override
    public String backend() {
      return RelayConfig.Store.SQLITE;
    }

    @Override
    public boolean soleWriter() {
      return true; // one relay process holds the store (its lock)
    }

    @Override
    public LedgerBackend ledgerBackend() {
      return backend;
    }

    @Override
    public Ed25519KeyPair relayKey() {
      return request.givenKey();
    }

    @Override
    public String epoch() {
      return backend.epoch();
    }

    @Override
    public EnrolmentCache enrolments() {
      return backend.enrolmentCache();
    }

    @Override
    public OpenReport report() {
      return report;
    }

    @Override
    public ClockGuard clock() {
      return clock;
    }

    @Override
    public DiskSpace disk() {
      return disk;
    }

    @Override
    public Path statusFile() {
      return backend.file();
    }

    @Override
    public void bind(Meters meters) throws StoreOpenException {
      backend.commitTimer(meters::commitNanos);
      // The commit watermark (issue 10 item 3): written now for the store as opened, then by its own thread at most
      // every store.watermarkIntervalMs after commits, off the reply path.
      watermark = CommitWatermark.start(request.storeDir(), backend.epoch(), backend.commits(),
          request.config().store().watermarkIntervalMs(), request.wallClock(), (n, ok) -> meters.watermarkWritten(ok));
      backend.onCommit(watermark::committed);
      long checkpointMs = request.config().store().checkpointIntervalMs();
      if (checkpointMs > 0) {
        try {
          backend.backgroundCheckpoints(checkpointMs, request.config().store().busyTimeoutMs(), meters::checkpointed);
        } catch (StoreException e) {
          throw new StoreOpenException("cannot start background checkpoints of " + backend.file() + ": "
              + e.getMessage(), e);
        }
        LOG.info("WAL checkpoints run in the background [every: {} ms] [writer checkpoints from: {} log pages]",
            checkpointMs, request.config().store().walAutocheckpointPages());
      } else if (request.config().store().walAutocheckpointPages() > WRITER_CHECKPOINT_WARN_PAGES) {
        LOG.warn("store.checkpointIntervalMs is 0, so the writer's COMMIT checkpoints every {} log pages and every"
            + " command queued meanwhile waits for it; with background checkpoints off, set"
            + " store.walAutocheckpointPages to about 4000", request.config().store().walAutocheckpointPages());
      }
      meters.watermarkLag(watermark::lag);
      meters.storeFiles(backend.file());
    }

    @Override
    public Consumer<Runnable> answers() {
      // answers leave once relay.watermark covers their commit (issue 22 item 3), unless the operator chose the lag
      CommitWatermark mark = Objects.requireNonNull(watermark, "bind first");
      return request.config().store().watermarkBeforeAnswers() ? mark::afterDurable : Runnable::run;
    }

    @Override
    public RelayReads openReads(Vertx vertx) throws Exception {
      return SqliteReads.open(vertx, backend.file(), request.config().store().readPoolSize(),
          request.config().store().busyTimeoutMs());
    }

    @Override
    public boolean closedCleanly() {
      return SqliteOpener.closedCleanly(request.storeDir());
    }

    @Override
    public void close() {
      if (watermark != null) {
        watermark.close(); // after the writer's last commit: the file ends at the store's final count
      }
      lock.close();
    }
  }
}
