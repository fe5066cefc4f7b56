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
import io.mbxrelay.store.RelayLedger;
import io.mbxrelay.store.StoreCommand;
import io.mbxrelay.store.spi.OpenedStore;
import io.mbxrelay.store.spi.StoreBackendFactory;
import io.mbxrelay.store.spi.RelayReads;
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
 * Composition root (docs/architecture.md "Composition in one place"): open the store through its backend's factory (which
 * takes its own guards: the store dir's lock, the commit watermark, …), build Vert.x, register
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
  private final RelayReads reads;
  private final RelayServices services;
  private final io.mbxrelay.store.model.OpenReport openReport;
  private final List<String> deployments;
  private final int port;
  private ExpirySweepVerticle sweep;
  private AdminVerticle admin;
  private List<HttpVerticle> httpInstances = List.of();
  private io.mbxrelay.http.PullWaiters waiters;
  /** The open store: released after the writer and the reads closed. */
  private OpenedStore store;
  private boolean closed;
  private int adminPort = -1;

  private RelayServer(Vertx vertx, RelayReads reads, RelayServices services,
      io.mbxrelay.store.model.OpenReport openReport, List<String> deployments, int port) {
    this.vertx = vertx;
    this.reads = reads;
    this.services = services;
    this.openReport = openReport;
    this.deployments = deployments;
    this.port = port;
  }

  /**
   * Starts a relay and returns once it listens. Blocking; call from a plain thread (CLI main, test setup).
   *
   * @param config validated configuration ({@code store.backend} picks the {@link StoreBackendFactory})
   * @param relayKey the relay key (already loaded); null for a backend that keeps it in its store (PostgreSQL: the
   *     database's key is used, or created)
   * @param options process options
   * @return the running relay
   * @throws Exception when the store cannot be locked or opened, or a verticle fails to deploy
   */
  public static RelayServer start(RelayConfig config, Ed25519KeyPair relayKey, Options options) throws Exception {
    // The store backend (docs/architecture.md "Store: ledger and backends"), chosen by store.backend: it opens the
    // store with its own guards (SQLite: the store dir's lock, file modes, commit watermark and free-space floor;
    // PostgreSQL: the shared database's identity) and hands back the writer's backend, the reads, the open report.
    StoreBackendFactory factory = StoreBackendFactory.of(config.store());
    OpenedStore store = factory.open(new StoreBackendFactory.OpenRequest(config, options.storeDir(), relayKey,
        options.clock(), options.acceptClock(), options.acceptLostCommits(), LOCK_WAIT_MS));
    Vertx vertx = null;
    RelayMetrics metrics = null;
    RelayLedger openedLedger = null;
    try {
      ClockGuard clock = store.clock();
      RelayLedger ledger = new RelayLedger(store.ledgerBackend(), clock.clock(), config.limits());
      openedLedger = ledger;
      armCrashPoint(options.crashPoint(), ledger);
      RelayMetrics.VertxSetup metricsSetup = RelayMetrics.vertxSetup();
      vertx = newVertx(metricsSetup);
      // after Vert.x: its metrics factory installs registry filters, which must precede every meter
      metrics = new RelayMetrics(metricsSetup.registry(), config);
      RelayMetrics m = metrics;
      store.bind(new OpenedStore.Meters() {
        @Override
        public void commitNanos(long nanos) {
          m.commitNanos(nanos);
        }

        @Override
        public void watermarkWritten(boolean ok) {
          m.watermarkWritten(ok);
        }

        @Override
        public void watermarkLag(java.util.function.LongSupplier lag) {
          m.bindWatermark(lag);
        }

        @Override
        public void storeFiles(Path dbFile) {
          m.bindStoreFiles(dbFile);
        }

        @Override
        public void checkpointed(long nanos, long backlogFrames, boolean ok) {
          m.checkpointed(nanos, backlogFrames, ok);
        }
      });
      DiskSpace disk = store.disk();
      RelayConfig.Store sc = config.store();
      // long-poll waiters: the writer signals them after each COMMIT that stored items (writer.ItemsCommitted)
      io.mbxrelay.http.PullWaiters waiters = new io.mbxrelay.http.PullWaiters(config.limits().maxEnrolments());
      store.onItemsElsewhere(waiters::wake); // items another instance committed wake this instance's pulls
      // pulls that would find nothing are answered from what this writer and earlier reads said (one writer only)
      // (set once the reads are open; volatile, so that no COMMIT after that is missed by the writer thread)
      java.util.concurrent.atomic.AtomicReference<io.mbxrelay.store.EmptyPageCache> emptyPages =
          new java.util.concurrent.atomic.AtomicReference<>();
      io.mbxrelay.writer.ItemsCommitted committed = heads -> {
        io.mbxrelay.store.EmptyPageCache cache = emptyPages.get();
        if (cache != null) {
          cache.committed(heads); // first: a woken pull must not find the old head
        }
        waiters.itemsCommitted(heads);
      };
      StoreWriterVerticle writer = new StoreWriterVerticle(ledger, sc.writerBatchMax(), sc.writerBatchMaxRows(),
          sc.writerBatchMaxBytes(), sc.writerCommitDelayMs(), disk, store.answers(), committed,
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
      openedLedger = null; // the writer owns it now and closes it when undeployed
      RelayReads reads = store.openReads(vertx);
      if (store.soleWriter()) {
        io.mbxrelay.store.EmptyPageCache cache = new io.mbxrelay.store.EmptyPageCache(reads,
            config.limits().maxEnrolments());
        emptyPages.set(cache);
        reads = cache;
        metrics.bindEmptyPages(cache::hits, cache::size);
        long seedStart = System.nanoTime();
        cache.seed().onComplete(ar -> {
          if (ar.succeeded()) {
            LOG.info("empty-page cache: knows the queues of {} hosts [ms: {}]", ar.result(),
                (System.nanoTime() - seedStart) / 1_000_000);
          } else {
            LOG.warn("empty-page cache: the store scan failed [error: {}]; pulls read until they learn",
                ar.cause().toString());
          }
        });
      }
      RelayServer server = finish(config, store.relayKey(), options, vertx, metrics, writer, reads,
          store.enrolments(), store.epoch(), clock, disk, store.statusFile(), store.report(), deployments, waiters,
          store.sharedRequestState(vertx, config.limits(), options.clock()::millis).orElse(null));
      server.store = store;
      return server;
    } catch (Exception | Error e) {
      closeQuietly(vertx);
      if (openedLedger != null) {
        openedLedger.close(); // the writer never took it over
      }
      if (metrics != null) {
        metrics.close();
      }
      store.close();
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
      io.mbxrelay.store.model.OpenReport openReport, List<String> deployments,
      io.mbxrelay.http.PullWaiters waiters, io.mbxrelay.auth.SharedRequestState shared) throws Exception {
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
    io.mbxrelay.crypto.Ed25519.cacheBound(config.trust().verifierCacheMaxKeys());
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
    // one deadline sweep for every long-poll wait instead of a timer per wait (issue 18 goal 4)
    vertx.setPeriodic(io.mbxrelay.http.PullWaiters.SWEEP_MS, id -> waiters.sweep(System.nanoTime()));
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
    // one connection count over every instance (issue 18 goal 4)
    io.mbxrelay.http.ConnectionGate gate = io.mbxrelay.http.ConnectionGate.of(config.http());
    m.bindConnections(gate::open, gate::refused, gate.max());
    deployments.add(listening(vertx.deployVerticle(() -> {
      HttpVerticle v = new HttpVerticle(services, options.bind(), listen, gate);
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
    RelayServer server = new RelayServer(vertx, reads, services, openReport, deployments, port);
    server.sweep = sweep;
    server.admin = admin;
    server.adminPort = admin.actualPort();
    server.httpInstances = List.copyOf(instances);
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
  public io.mbxrelay.store.model.OpenReport openReport() {
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
    // after the writer's last commit and the reads: the commit watermark ends at the store's final count, then the
    // pool or the store lock is released
    store.close();
    services.metrics().close();
    LOG.info("stopped [took: {} ms] [draining requests: {} ms{}] [long-poll pulls answered early: {}] [store closed"
            + " cleanly: {}]", TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started), drainMs,
        drained ? "" : ", grace period over: connections still open were closed", released,
        store.closedCleanly());
  }
}
