package io.mbxrelay.store.postgres;

import io.mbxrelay.config.RelayConfig;
import io.mbxrelay.crypto.Ed25519KeyPair;
import io.mbxrelay.crypto.RelayKeys;
import io.mbxrelay.store.EnrolmentCache;
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
import java.util.OptionalLong;
import java.util.function.Consumer;

/**
 * The PostgreSQL store ({@code store.backend} {@code postgresql}, docs/scale-out.md) as the relay starts it: no store
 * directory, lock or commit watermark (the database is shared by every instance and durable by its own WAL); the relay
 * key and epoch come from the database ({@link PgStore}). Stateless; {@link #open} is blocking.
 */
public final class PgBackendFactory implements StoreBackendFactory {

  /** For {@link java.util.ServiceLoader}. */
  public PgBackendFactory() {}

  @Override
  public String backend() {
    return RelayConfig.Store.POSTGRESQL;
  }

  @Override
  public boolean storeInDirectory() {
    return false;
  }

  @Override
  public String describe(RelayConfig.Store config, Path storeDir) {
    return config.url().replaceAll("\\?.*$", "");
  }

  @Override
  public OpenedStore open(OpenRequest r) throws StoreOpenException {
    RelayConfig config = r.config();
    RelayConfig.Store sc = config.store();
    // no clock watermark: the store's time is the database's heartbeat, checked by the epoch rule
    ClockGuard clock = new ClockGuard(r.wallClock(), ClockGuard.monotonicOf(r.wallClock()),
        config.timers().maxClockStepMs(), OptionalLong.empty(), r.acceptClock());
    PgStore pg = PgStore.open(new PgStore.Settings(sc.url(), sc.user(), sc.resolvedPassword(), sc.poolSize()),
        r.givenKey() == null ? null : RelayKeys.toFileJson(r.givenKey()), clock.clock()::millis,
        config.timers().heartbeatStaleMs());
    return new Opened(pg, clock, r);
  }

  /** The open PostgreSQL store: its pool, identity and enrolment listener. */
  private static final class Opened implements OpenedStore {
    private final PgStore pg;
    private final ClockGuard clock;
    private final OpenRequest request;
    // The database's disk is the database's: a full one answers 53100 (disk_full), mapped to 503 per request.
    private final DiskSpace disk = new DiskSpace(() -> Long.MAX_VALUE, System::nanoTime, 0);
    private LedgerBackend backend;

    Opened(PgStore pg, ClockGuard clock, OpenRequest request) {
      this.pg = pg;
      this.clock = clock;
      this.request = request;
    }

    @Override
    public String backend() {
      return RelayConfig.Store.POSTGRESQL;
    }

    @Override
    public boolean soleWriter() {
      return false; // every instance on the database writes
    }

    @Override
    public synchronized LedgerBackend ledgerBackend() {
      if (backend == null) {
        backend = pg.newBackend();
      }
      return backend;
    }

    @Override
    public Ed25519KeyPair relayKey() {
      return pg.relayKey();
    }

    @Override
    public String epoch() {
      return pg.epoch();
    }

    @Override
    public EnrolmentCache enrolments() {
      return pg.enrolmentCache();
    }

    @Override
    public OpenReport report() {
      return pg.openReport();
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
      return request.storeDir().resolve("postgresql");
    }

    @Override
    public void bind(Meters meters) {
      // no COMMIT timer, watermark or database file here: the database server measures its own
    }

    @Override
    public Consumer<Runnable> answers() {
      return Runnable::run; // COMMIT returned once the database's WAL was flushed (synchronous_commit=on)
    }

    @Override
    public RelayReads openReads(Vertx vertx) {
      return new PgReads(vertx, pg, request.config().store().readPoolSize());
    }

    @Override
    public java.util.Optional<io.mbxrelay.auth.SharedRequestState> sharedRequestState(Vertx vertx,
        RelayConfig.Limits limits, java.util.function.LongSupplier clock) {
      // challenges, replays and rate windows shared by the instances (docs/scale-out.md "What is shared")
      return java.util.Optional.of(new PgSharedState(vertx, pg, request.config().store().readPoolSize(),
          limits.maxOpenChallenges(), limits.challengeTtlMs(), clock));
    }

    @Override
    public void onItemsElsewhere(Consumer<java.util.Set<String>> wake) {
      pg.onItemsElsewhere(wake); // NOTIFY mbx_items from the other instances' writers
    }

    @Override
    public boolean closedCleanly() {
      return true;
    }

    @Override
    public void close() {
      pg.close(); // after the writer closed its session and the reads their connections
    }
  }
}
