package io.mbxrelay.server;

import io.mbxrelay.http.RelayServices;
import io.mbxrelay.http.TrustServices;
import io.mbxrelay.writer.StoreClient;
import io.mbxrelay.writer.LocalCodec;
import io.mbxrelay.writer.StoreWriterVerticle;
import io.mbxrelay.auth.AccountTokenAuthority;
import io.mbxrelay.auth.ChallengeStore;
import io.mbxrelay.auth.HopReplayCache;
import io.mbxrelay.auth.JwksCache;
import io.mbxrelay.auth.ClientAddress;
import io.mbxrelay.auth.EnrolmentAuthority;
import io.mbxrelay.auth.HostKeyChallengeAuthority;
import io.mbxrelay.auth.SlidingWindowLimiter;
import io.mbxrelay.config.RelayConfig;
import io.mbxrelay.crypto.Ed25519KeyPair;
import io.mbxrelay.metrics.RelayMetrics;
import io.mbxrelay.store.guard.ClockGuard;
import io.mbxrelay.store.guard.DiskSpace;
import io.mbxrelay.store.StoreCommand;
import io.mbxrelay.store.sqlite.CommitWatermark;
import io.mbxrelay.store.sqlite.SqliteOps;
import io.mbxrelay.store.spi.RelayReads;
import io.mbxrelay.store.sqlite.SqliteReads;
import io.mbxrelay.store.sqlite.SqliteRelayStore;
import io.mbxrelay.store.sqlite.StoreFiles;
import io.mbxrelay.store.sqlite.StoreLock;
import io.vertx.core.DeploymentOptions;
import io.vertx.core.Future;
import io.vertx.core.ThreadingModel;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Clock;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Composition root (docs/architecture.md "Composition in one place"): lock the store dir, open the store, build Vert.x, register
 * codecs, deploy the writer and await it, open the read pool, deploy HTTP verticles, then the admin server
 * (metrics, health, readiness). {@link #close()} shuts
 * down in reverse.
 */
public final class RelayServer implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(RelayServer.class);

  /**
   * How long {@code serve} waits for another process to release the store's lock, ms (60 s: long enough for a
   * restarting relay to finish its stop).
   */
  static final long LOCK_WAIT_MS = 60_000;

  /**
   * Process-level options (CLI flags and environment, docs/protocol.md §5 "CLI").
   *
   * @param port listen port, 0 for ephemeral
   * @param bind listen address
   * @param storeDir store directory
   * @param clientAddress trust-proxy mode for the enrolment rate
   * @param crashPoint test-only crash harness point
   * @param clock time source
   * @param onSweep observer of each expiry sweep run (tests, metrics)
   * @param transactions observer of each writer transaction, on the writer thread (tests, metrics)
   * @param acceptClock take the wall clock as right at start even when it is far from the store's clock watermark
   *     ({@code serve --accept-clock}, issue 10 item 7)
   * @param acceptLostCommits open a store that is behind its commit watermark, with a new epoch
   *     ({@code serve --accept-lost-commits}, issue 10 item 3)
   */
  public record Options(int port, String bind, Path storeDir, ClientAddress clientAddress, CrashPoint crashPoint,
      Clock clock, java.util.function.Consumer<ExpirySweepVerticle.Run> onSweep,
      StoreWriterVerticle.TransactionListener transactions, boolean acceptClock, boolean acceptLostCommits) {

    /** Options that refuse a store behind its commit watermark. */
    public Options(int port, String bind, Path storeDir, ClientAddress clientAddress, CrashPoint crashPoint,
        Clock clock, java.util.function.Consumer<ExpirySweepVerticle.Run> onSweep,
        StoreWriterVerticle.TransactionListener transactions, boolean acceptClock) {
      this(port, bind, storeDir, clientAddress, crashPoint, clock, onSweep, transactions, acceptClock, false);
    }

    /** Options without observers. */
    public Options(int port, String bind, Path storeDir, ClientAddress clientAddress, CrashPoint crashPoint,
        Clock clock) {
      this(port, bind, storeDir, clientAddress, crashPoint, clock, run -> {}, (c, n, f) -> {});
    }

    /** Options with observers; the store's clock watermark is honoured at start. */
    public Options(int port, String bind, Path storeDir, ClientAddress clientAddress, CrashPoint crashPoint,
        Clock clock, java.util.function.Consumer<ExpirySweepVerticle.Run> onSweep,
        StoreWriterVerticle.TransactionListener transactions) {
      this(port, bind, storeDir, clientAddress, crashPoint, clock, onSweep, transactions, false);
    }

    public Options {
      Objects.requireNonNull(bind);
      Objects.requireNonNull(storeDir);
      Objects.requireNonNull(clientAddress);
      Objects.requireNonNull(crashPoint);
      Objects.requireNonNull(clock);
      Objects.requireNonNull(onSweep);
      Objects.requireNonNull(transactions);
    }
  }

  private final Vertx vertx;
  private StoreLock lock;
  private final RelayReads reads;
  private final RelayServices services;
  private final io.mbxrelay.store.sqlite.SqliteBackend.OpenReport openReport;
  private final List<String> deployments;
  private final int port;
  private ExpirySweepVerticle sweep;
  private AdminVerticle admin;
  private CommitWatermark watermark;
  private List<HttpVerticle> httpInstances = List.of();
  private Path storeDir;
  private io.mbxrelay.http.PullWaiters waiters;
  private io.mbxrelay.store.postgres.PgStore pgStore;
  private boolean closed;
  private int adminPort = -1;

  private RelayServer(Vertx vertx, StoreLock lock, RelayReads reads, RelayServices services,
      io.mbxrelay.store.sqlite.SqliteBackend.OpenReport openReport, List<String> deployments, int port) {
    this.vertx = vertx;
    this.lock = lock;
    this.reads = reads;
    this.services = services;
    this.openReport = openReport;
    this.deployments = deployments;
    this.port = port;
  }

  /**
   * Starts a relay and returns once it listens. Blocking; call from a plain thread (CLI main, test setup).
   *
   * @param config validated configuration
   * @param relayKey the relay key (already loaded)
   * @param options process options
   * @return the running relay
   * @throws Exception when the store cannot be locked or opened, or a verticle fails to deploy
   */
  public static RelayServer start(RelayConfig config, Ed25519KeyPair relayKey, Options options) throws Exception {
    // The store backend (docs/architecture.md "Store: ledger and backends"). Every backend gives the writer a
    // RelayStore (a RelayLedger over its LedgerBackend), the routes a RelayReads and the hop check an EnrolmentCache;
    // what follows opens the embedded SQLite store with its store-directory guards (lock, file modes, commit
    // watermark, free-space floor). Another backend adds its case here and opens its own pair.
    switch (config.store().backend()) {
      case "sqlite" -> {
        return startSqlite(config, relayKey, options);
      }
      case "postgresql" -> {
        return startPostgres(config, relayKey, options);
      }
      default -> throw new IllegalArgumentException("store.backend " + config.store().backend()
          + " is not in this build (" + String.join(", ", RelayConfig.STORE_BACKENDS) + ")");
    }
  }

  private static RelayServer startSqlite(RelayConfig config, Ed25519KeyPair relayKey, Options options)
      throws Exception {
    SqliteRelayStore.createStoreDir(options.storeDir());
    for (String note : StoreFiles.secure(options.storeDir())) {
      LOG.warn("store files [{}]", note);
    }
    StoreLock lock = StoreLock.acquire(options.storeDir(), LOCK_WAIT_MS,
        holder -> LOG.warn("store {} is in use by {}: waiting up to {} s for it to stop", options.storeDir(), holder,
            LOCK_WAIT_MS / 1000));
    Vertx vertx = null;
    RelayMetrics metrics = null;
    SqliteRelayStore openedStore = null;
    CommitWatermark watermark = null;
    try {
      // The store reads guarded time (accepted_at, expires_at, seqs, heartbeat): never backwards, never a step ahead
      // of its persisted watermark (issue 10 item 7). The HTTP side keeps the wall clock for hop windows.
      ClockGuard clock = new ClockGuard(options.clock(), ClockGuard.monotonicOf(options.clock()),
          config.timers().maxClockStepMs(), SqliteOps.watermark(options.storeDir()), options.acceptClock());
      SqliteRelayStore store = SqliteRelayStore.open(options.storeDir(), relayKey.publicKeyB64(), clock.clock(),
          config.limits(), config.store().busyTimeoutMs(), config.timers().heartbeatStaleMs(),
          options.acceptLostCommits());
      openedStore = store;
      store.walAutocheckpoint(config.store().walAutocheckpointPages());
      armCrashPoint(options.crashPoint(), store.ledger());
      RelayMetrics.VertxSetup metricsSetup = RelayMetrics.vertxSetup();
      vertx = newVertx(metricsSetup);
      // after Vert.x: its metrics factory installs registry filters, which must precede every meter
      metrics = new RelayMetrics(metricsSetup.registry(), config);
      store.commitTimer(metrics::commitNanos);
      RelayMetrics m = metrics;
      // The commit watermark (issue 10 item 3): written now for the store as opened, then by its own thread at most
      // every store.watermarkIntervalMs after commits, off the reply path.
      watermark = CommitWatermark.start(options.storeDir(), store.epoch(), store.commits(),
          config.store().watermarkIntervalMs(), options.clock(), (n, ok) -> m.watermarkWritten(ok));
      store.onCommit(watermark::committed);
      metrics.bindWatermark(watermark::lag);
      DiskSpace disk = DiskSpace.of(options.storeDir(), config.store().minFreeBytes());
      // answers leave once relay.watermark covers their commit (issue 22 item 3), unless the operator chose the lag
      CommitWatermark mark = watermark;
      java.util.function.Consumer<Runnable> answers = config.store().watermarkBeforeAnswers() ? mark::afterDurable
          : Runnable::run;
      // long-poll waiters: the writer signals them after each COMMIT that stored items (writer.ItemsCommitted)
      io.mbxrelay.http.PullWaiters waiters = new io.mbxrelay.http.PullWaiters(config.limits().maxEnrolments());
      StoreWriterVerticle writer = new StoreWriterVerticle(store, config.store().writerBatchMax(),
          config.store().writerBatchMaxRows(), config.store().writerBatchMaxBytes(),
          config.store().writerCommitDelayMs(), disk, answers, waiters, (commands, nanos, failure) -> {
            m.writerTransaction(commands.size(), nanos, failure == null ? null : failure.kind());
            options.transactions().transaction(commands, nanos, failure);
          });
      metrics.bindWriter(writer::queueDepth, writer::failStopped);
      metrics.bindDisk(disk, writer::diskRefusals);
      metrics.bindStoreFiles(store.file());
      metrics.buildInfo(version());
      List<String> deployments = new ArrayList<>();
      deployments.add(await(vertx.deployVerticle(writer, new DeploymentOptions()
          .setThreadingModel(ThreadingModel.WORKER).setWorkerPoolName("mbx-writer").setWorkerPoolSize(1))));
      openedStore = null; // the writer owns it now and closes it when undeployed
      RelayReads reads = SqliteReads.open(vertx, store.file(), config.store().readPoolSize(),
          config.store().busyTimeoutMs());
      RelayServer server = finish(config, relayKey, options, vertx, metrics, writer, reads, store.enrolments(),
          store.epoch(), clock, disk, store.file(), store.openReport(), deployments, waiters, null);
      server.lock = lock;
      server.watermark = watermark;
      return server;
    } catch (Exception | Error e) {
      closeQuietly(vertx);
      if (openedStore != null) {
        openedStore.close(); // the writer never took it over
      }
      if (watermark != null) {
        watermark.close();
      }
      if (metrics != null) {
        metrics.close();
      }
      lock.close();
      throw e;
    }
  }

  /**
   * Starts a relay on PostgreSQL (docs/scale-out.md): no store directory, lock or commit watermark (the database is
   * shared by every instance and durable by its own WAL); the relay key and epoch come from the database.
   *
   * @param config validated configuration with {@code store.backend} {@code postgresql}
   * @param givenKey the relay key from {@code MBX_RELAY_KEY}, or null (the database's key is used, or created)
   * @param options process options ({@code storeDir} is not used for the store)
   * @return the running relay
   * @throws Exception when the database cannot be opened or a verticle fails to deploy
   */
  public static RelayServer startPostgres(RelayConfig config, Ed25519KeyPair givenKey, Options options)
      throws Exception {
    RelayConfig.Store sc = config.store();
    ClockGuard clock = new ClockGuard(options.clock(), ClockGuard.monotonicOf(options.clock()),
        config.timers().maxClockStepMs(), java.util.OptionalLong.empty(), options.acceptClock());
    io.mbxrelay.store.postgres.PgStore pg = io.mbxrelay.store.postgres.PgStore.open(
        new io.mbxrelay.store.postgres.PgStore.Settings(sc.url(), sc.user(), sc.resolvedPassword(), sc.poolSize()),
        givenKey == null ? null : io.mbxrelay.crypto.RelayKeys.toFileJson(givenKey), clock.clock()::millis,
        config.timers().heartbeatStaleMs());
    Vertx vertx = null;
    RelayMetrics metrics = null;
    io.mbxrelay.store.RelayLedger openedStore = null;
    try {
      io.mbxrelay.store.RelayLedger store = pg.newLedger(clock.clock(), config.limits());
      openedStore = store;
      armCrashPoint(options.crashPoint(), store);
      RelayMetrics.VertxSetup metricsSetup = RelayMetrics.vertxSetup();
      vertx = newVertx(metricsSetup);
      metrics = new RelayMetrics(metricsSetup.registry(), config);
      RelayMetrics m = metrics;
      // The database's disk is the database's: a full one answers 53100 (disk_full), mapped to 503 per request.
      DiskSpace disk = new DiskSpace(() -> Long.MAX_VALUE, System::nanoTime, 0);
      io.mbxrelay.http.PullWaiters waiters = new io.mbxrelay.http.PullWaiters(config.limits().maxEnrolments());
      StoreWriterVerticle writer = new StoreWriterVerticle(store, sc.writerBatchMax(), sc.writerBatchMaxRows(),
          sc.writerBatchMaxBytes(), sc.writerCommitDelayMs(), disk, Runnable::run, waiters,
          (commands, nanos, failure) -> {
            m.writerTransaction(commands.size(), nanos, failure == null ? null : failure.kind());
            options.transactions().transaction(commands, nanos, failure);
          });
      metrics.bindWriter(writer::queueDepth, writer::failStopped);
      metrics.bindDisk(disk, writer::diskRefusals);
      metrics.buildInfo(version());
      List<String> deployments = new ArrayList<>();
      deployments.add(await(vertx.deployVerticle(writer, new DeploymentOptions()
          .setThreadingModel(ThreadingModel.WORKER).setWorkerPoolName("mbx-writer").setWorkerPoolSize(1))));
      openedStore = null; // the writer owns it now and closes it when undeployed
      RelayReads reads = new io.mbxrelay.store.postgres.PgReads(vertx, pg, sc.readPoolSize());
      io.mbxrelay.store.postgres.PgStore.OpenReport r = pg.openReport();
      RelayServer server = finish(config, pg.relayKey(), options, vertx, metrics, writer, reads, pg.enrolmentCache(),
          pg.epoch(), clock, disk, options.storeDir().resolve("postgresql"),
          new io.mbxrelay.store.sqlite.SqliteBackend.OpenReport(r.created(), r.epochRotatedReason(),
              r.previousEpoch(), 0, null), deployments, waiters,
          // challenges, replays and rate windows shared by the instances (docs/scale-out.md "What is shared")
          new io.mbxrelay.store.postgres.PgSharedState(vertx, pg, sc.readPoolSize(), config.limits().maxOpenChallenges(),
              config.limits().challengeTtlMs(), options.clock()::millis));
      server.pgStore = pg;
      return server;
    } catch (Exception | Error e) {
      closeQuietly(vertx);
      if (openedStore != null) {
        openedStore.close();
      }
      if (metrics != null) {
        metrics.close();
      }
      pg.close();
      throw e;
    }
  }

  /** The relay key served (PostgreSQL: the database's). */
  public Ed25519KeyPair relayKey() {
    return services.relayKey();
  }

  /** Closes Vert.x on a failed start (null: not built yet); the start's own failure is the one reported. */
  private static void closeQuietly(Vertx vertx) {
    if (vertx != null) {
      try {
        await(vertx.close());
      } catch (Exception ignored) {
        // already failing
      }
    }
  }

  /** Vert.x with the relay's metrics and the local codec of the store's event-bus messages. */
  private static Vertx newVertx(RelayMetrics.VertxSetup metricsSetup) {
    Vertx vertx = Vertx.builder().with(metricsSetup.options().setPreferNativeTransport(false))
        .withMetrics(metricsSetup.factory()).build();
    vertx.eventBus().registerCodec(new LocalCodec());
    return vertx;
  }

  /** The test-only crash harness ({@code MBX_RELAY_TEST_CRASH}): halts the JVM around the first push's COMMIT. */
  private static void armCrashPoint(CrashPoint point, io.mbxrelay.store.RelayLedger ledger) {
    if (point == CrashPoint.NONE) {
      return;
    }
    LOG.warn("test crash harness armed [point: {}]: never use this in production", point);
    ledger.commitHook((commands, committed) -> {
      boolean push = commands.stream()
          .anyMatch(c -> c instanceof StoreCommand.Push || c instanceof StoreCommand.PushBatch);
      if (push && committed == (point == CrashPoint.AFTER_COMMIT_BEFORE_REPLY)) {
        Runtime.getRuntime().halt(86);
      }
    });
  }

  /**
   * What every backend starts the same way once its writer is deployed and its reads are open: trust, services, the
   * timers, the HTTP instances and the admin server. {@code shared} (PostgreSQL; null on SQLite) holds the challenges,
   * replays and rate windows every instance shares (docs/scale-out.md "What is shared").
   */
  private static RelayServer finish(RelayConfig config, Ed25519KeyPair relayKey, Options options, Vertx vertx,
      RelayMetrics metrics, StoreWriterVerticle writer, RelayReads reads, io.mbxrelay.store.EnrolmentCache enrolments,
      String epoch, ClockGuard clock, DiskSpace disk, Path statusFile,
      io.mbxrelay.store.sqlite.SqliteBackend.OpenReport openReport, List<String> deployments,
      io.mbxrelay.http.PullWaiters waiters, io.mbxrelay.store.postgres.PgSharedState shared) throws Exception {
    RelayMetrics m = metrics;
    RelayConfig.Limits l = config.limits();
    // ---- trust (issue 3): authority, issuer keys, replay cache, admin token ----
    RelayConfig.Enrolment en = config.enrolment();
    JwksCache jwks = null;
    EnrolmentAuthority authority = new HostKeyChallengeAuthority();
    if (AccountTokenAuthority.NAME.equals(en.authority())) {
      jwks = new JwksCache(options.clock(), en.jwksCacheLifetimeMs(), en.jwksUnknownKidMinIntervalMs());
      authority = new AccountTokenAuthority(jwks, en.tokenIssuer(), en.relayUrl(), en.tokenMaxLifetimeMs(),
          options.clock());
      deployments.add(await(vertx.deployVerticle(new JwksRefreshVerticle(jwks, en))));
    }
    String adminToken = config.admin().token();
    TrustServices trust = new TrustServices(
        new HopReplayCache(config.trust().replayCacheMaxEntries(), config.trust().replayCacheMaxPerKey(),
            config.limits().hopWindowMs()),
        adminToken == null || adminToken.isEmpty() ? null : adminToken.getBytes(StandardCharsets.UTF_8), jwks);
    m.bindReplayCache(() -> trust.replay().size());
    m.bindReplayCounters(() -> trust.replay().replaysRefused(), () -> trust.replay().evicted());
    if (jwks != null) {
      JwksCache cache = jwks;
      m.bindJwksAge(cache::ageSeconds);
      cache.onRefresh(m::jwksRefresh);
    }
    // long-poll pulls wake when the writer commits items for their host (the writer's ItemsCommitted signal, given
    // to the writer by the start path); pull pages in memory are bounded
    io.mbxrelay.budget.PageBudget pageBudget = new io.mbxrelay.budget.PageBudget(config.http().pageBytesInFlight(),
        config.http().pageBytesPerClient(config.limits().maxPullBytes()));
    io.mbxrelay.http.BodyBudget bodyBudget = new io.mbxrelay.http.BodyBudget(config.http().bodyBudgetBytes(),
        config.http().bodyBytesPerClient());
    m.bindPulls(waiters::waiting, pageBudget::held);
    m.bindLiveEnrolments(enrolments::liveCount);
    m.bindBodyBudget(bodyBudget::used, bodyBudget::refused);
    RelayServices services = new RelayServices(config, relayKey, epoch, version(), reads, enrolments,
        new StoreClient(vertx, config.store().writerTimeoutMs()),
        shared != null ? shared : io.mbxrelay.auth.Challenges.inMemory(
            new ChallengeStore(l.maxOpenChallenges(), l.challengeTtlMs())),
        SlidingWindowLimiter.forClientAddresses(l.enrolCallsPerMinute(), 60_000, l.rateTableMaxKeys(),
            config.trust().ipv6PrefixBits()),
        new SlidingWindowLimiter(l.pushRequestsPerMinute(), 60_000, l.rateTableMaxKeys()),
        authority, options.clientAddress(), options.clock(), trust, metrics, waiters, pageBudget,
        bodyBudget);
    if (shared != null) {
      deployments.add(await(vertx.deployVerticle(shared.attach(trust.replay(), services.enrolRate(),
          services.pushRate()))));
    }
    deployments.add(await(vertx.deployVerticle(new HeartbeatVerticle(services.writes(),
        config.timers().heartbeatMs()))));
    m.bindClock(clock::status);
    StoreClient writes = services.writes();
    clock.listener(st -> clockChanged(writes, st));
    if (clock.status().paused()) {
      clockChanged(writes, clock.status());
    }
    ExpirySweepVerticle sweep = new ExpirySweepVerticle(services.writes(), config, relayKey, clock,
        run -> {
          if (!run.paused()) {
            m.sweepRun(run.counts().rows(), run.counts().notices(),
                run.counts().skippedNotEnrolled() + run.counts().skippedOverCap());
          }
          options.onSweep().accept(run);
        });
    deployments.add(await(vertx.deployVerticle(sweep)));
    // A negative port asks Vert.x for one random port shared by every instance (Vert.x "random port sharing").
    int listen = options.port() == 0 ? -1 : options.port();
    List<HttpVerticle> instances = new java.util.concurrent.CopyOnWriteArrayList<>();
    deployments.add(listening(vertx.deployVerticle(() -> {
      HttpVerticle v = new HttpVerticle(services, options.bind(), listen);
      instances.add(v);
      return v;
    }, new DeploymentOptions().setInstances(config.http().instances())), "relay", options.bind(), options.port(),
        "choose another with --port or $PORT", "choose an address of this machine with --bind (0.0.0.0 for every"
        + " address)"));
    int port = instances.get(0).actualPort();
    AdminVerticle admin = new AdminVerticle(services, writer, instances, clock, disk, statusFile);
    deployments.add(listening(vertx.deployVerticle(admin), "admin", config.admin().bind(), config.admin().port(),
        "choose another with admin.port (MBX_RELAY_ADMIN_PORT)", "choose an address of this machine with admin.bind"
        + " (MBX_RELAY_ADMIN_BIND)"));
    RelayServer server = new RelayServer(vertx, null, reads, services, openReport, deployments, port);
    server.sweep = sweep;
    server.admin = admin;
    server.adminPort = admin.actualPort();
    server.httpInstances = List.copyOf(instances);
    server.storeDir = options.storeDir();
    server.waiters = waiters;
    return server;
  }

  /**
   * A clock pause or resume: one log line and one ops entry ({@code clock-paused} / {@code clock-resumed}), so the
   * operator finds it in {@code mbxrelay log}. Runs on whatever thread read the clock; the entry is sent, not awaited.
   */
  private static void clockChanged(StoreClient writes, ClockGuard.Status st) {
    String at = io.mbxrelay.wire.IsoTime.format(st.wallMs());
    if (st.paused()) {
      LOG.warn("expiry and dedup pruning paused: {} [trusted time: {}] [wall clock: {}]; they resume when the wall"
          + " clock agrees again, or run 'mbxrelay clock resume' once the wall clock is known to be right", st.reason(),
          io.mbxrelay.wire.IsoTime.format(st.trustedMs()), at);
    } else {
      LOG.warn("expiry and dedup pruning resumed: {} [wall clock: {}]", st.reason(), at);
    }
    com.fasterxml.jackson.databind.node.ObjectNode receipt = io.mbxrelay.wire.Json.MAPPER.createObjectNode()
        .put("v", 1).put("type", st.paused() ? "relay-clock-paused" : "relay-clock-resumed").put("at", at)
        .put("reason", st.reason()).put("step_ms", st.stepMs())
        .put("trusted", io.mbxrelay.wire.IsoTime.format(st.trustedMs()));
    writes.send(new StoreCommand.LogOp(st.paused() ? "clock-paused" : "clock-resumed",
        io.mbxrelay.wire.Json.stringify(receipt))).onFailure(e -> LOG.warn("clock ops entry not written [error: {}]",
            e.getMessage()));
  }

  private static <T> T await(Future<T> f) throws Exception {
    return f.toCompletionStage().toCompletableFuture().get(60, TimeUnit.SECONDS);
  }

  /**
   * Awaits the deployment of a listening verticle; a port that cannot be bound becomes a {@link ListenException}
   * naming the listener, its address and the setting to change (issue 12 item 6).
   */
  private static String listening(Future<String> deployment, String which, String bind, int port, String remedy,
      String bindRemedy) throws Exception {
    try {
      return await(deployment);
    } catch (java.util.concurrent.ExecutionException e) {
      Throwable c = e.getCause();
      while (c != null && !(c instanceof java.net.BindException) && c.getCause() != null && c.getCause() != c) {
        c = c.getCause();
      }
      if (c instanceof java.net.BindException b) {
        String msg = b.getMessage() == null ? "" : b.getMessage().toLowerCase(java.util.Locale.ROOT);
        String why = msg.contains("in use") ? "is in use (another relay or program listens there)"
            : msg.contains("assign") ? "cannot be bound: " + bind + " is not an address of this machine"
            : msg.contains("permission") ? "needs privileges (ports below 1024)" : "cannot be bound (" + msg + ")";
        // an address that is not this machine's is the bind's fault, not the port's (issue 22 item 5)
        throw new ListenException("the " + which + " port " + port + " on " + bind + " " + why + "; "
            + (msg.contains("assign") ? bindRemedy : remedy), b);
      }
      throw e;
    }
  }

  /** A listener could not bind its port; the message names which one (relay or admin), the address and the remedy. */
  public static final class ListenException extends Exception {
    private static final long serialVersionUID = 1L;

    ListenException(String message, Throwable cause) {
      super(message, cause);
    }
  }

  /** Software version reported in info and the startup log. */
  public static String version() {
    String v = RelayServer.class.getPackage().getImplementationVersion();
    return v == null ? "dev" : v;
  }

  /**
   * Runs one expiry sweep now (on the sweep verticle's context) in addition to the timer.
   *
   * @return the run's totals
   */
  public Future<ExpirySweepVerticle.Run> sweepNow() {
    return sweep.trigger();
  }

  /** Sends one readiness probe now and completes when it was answered (tests). */
  Future<Void> readinessProbe() {
    return admin.probeNow();
  }

  /** The bound port. */
  public int port() {
    return port;
  }

  /** The bound admin port ({@code /metrics}, {@code /health}, {@code /ready}). */
  public int adminPort() {
    return adminPort;
  }

  /** The write path (tests drive the writer directly through it). */
  public StoreClient writes() {
    return services.writes();
  }

  /** The in-flight request body budget (tests, gauges). */
  public io.mbxrelay.http.BodyBudget bodyBudget() {
    return services.bodyBudget();
  }

  /** The relay's meters. */
  public RelayMetrics metrics() {
    return services.metrics();
  }

  /** The store epoch served. */
  public String epoch() {
    return services.epoch();
  }

  /** What opening the store did (created, epoch rotated). */
  public io.mbxrelay.store.sqlite.SqliteBackend.OpenReport openReport() {
    return openReport;
  }

  /** Trust-side shared state: replay cache size for a gauge, issuer key cache (tests, metrics). */
  public TrustServices trust() {
    return services.trust();
  }

  /** The Vert.x instance (tests, metrics). */
  public Vertx vertx() {
    return vertx;
  }

  /**
   * Stops the relay as a drain (issue 12 item 1), then shuts down in reverse order of start. Logs the start and the
   * end of the stop. Blocking; idempotent (a second call waits for the first and returns).
   *
   * <ol>
   *   <li>{@code /ready} answers 503 ("relay is stopping");</li>
   *   <li>every long-poll pull waiting for items is answered with its page now (normally empty);</li>
   *   <li>each HTTP instance closes its listener (a new connection is refused), closes idle connections, and closes
   *       every other connection after its request in progress was answered; a request that arrives on a connection
   *       already open is still answered, with {@code connection: close}; after {@code http.shutdownGraceMs} what is
   *       still open is closed;</li>
   *   <li>the verticles are undeployed in reverse: admin, timers, and last the writer, which answers every command
   *       still queued, checkpoints the WAL ({@code wal_checkpoint(TRUNCATE)}) and closes the store;</li>
   *   <li>the read pool, Vert.x, the commit watermark, the metrics and the store lock are closed.</li>
   * </ol>
   */
  @Override
  public synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
    long started = System.nanoTime();
    long grace = services.config().http().shutdownGraceMs();
    LOG.info("stopping: /ready answers 503, the relay port takes no new connections, requests in progress have up to"
        + " {} ms to finish [port: {}]", grace, port);
    if (admin != null) {
      admin.stopping();
    }
    int released = waiters == null ? 0 : waiters.release();
    boolean drained = true;
    if (!httpInstances.isEmpty()) {
      List<Future<Void>> draining = new ArrayList<>(httpInstances.size());
      httpInstances.forEach(h -> draining.add(h.drain(grace)));
      try {
        Future.all(draining).toCompletionStage().toCompletableFuture().get(grace + 10_000, TimeUnit.MILLISECONDS);
      } catch (Exception e) {
        LOG.warn("drain did not complete [error: {}]", e.toString());
      }
      // the connections still open when the grace period ended were closed without their answer
      drained = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started) < grace;
    }
    long drainMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
    try {
      for (int i = deployments.size() - 1; i >= 0; i--) {
        await(vertx.undeploy(deployments.get(i)));
      }
    } catch (Exception e) {
      LOG.warn("undeploy failed [error: {}]", e.toString());
    }
    reads.close();
    try {
      await(vertx.close());
    } catch (Exception e) {
      LOG.warn("vert.x close failed [error: {}]", e.toString());
    }
    if (watermark != null) {
      watermark.close(); // after the writer's last commit: the file ends at the store's final count
    }
    if (pgStore != null) {
      pgStore.close(); // after the writer closed its session and the reads their connections
    }
    services.metrics().close();
    if (lock != null) {
      lock.close();
    }
    LOG.info("stopped [took: {} ms] [draining requests: {} ms{}] [long-poll pulls answered early: {}] [store closed"
            + " cleanly: {}]", TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started), drainMs,
        drained ? "" : ", grace period over: connections still open were closed", released,
        pgStore != null || SqliteRelayStore.closedCleanly(storeDir));
  }
}
