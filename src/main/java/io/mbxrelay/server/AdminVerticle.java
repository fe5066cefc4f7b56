package io.mbxrelay.server;

import io.mbxrelay.writer.StoreWriterVerticle;
import io.mbxrelay.http.RelayError;
import io.mbxrelay.http.RelayServices;
import io.mbxrelay.writer.StoreClient;
import io.mbxrelay.metrics.RateLimitedLogger;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.mbxrelay.config.RelayConfig;
import io.mbxrelay.metrics.RelayMetrics;
import io.mbxrelay.store.guard.ClockGuard;
import io.mbxrelay.store.guard.DiskSpace;
import io.mbxrelay.store.StoreCommand;
import io.mbxrelay.wire.Json;
import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import io.vertx.core.eventbus.ReplyException;
import io.vertx.core.eventbus.ReplyFailure;
import io.vertx.core.http.HttpServer;
import io.vertx.core.http.HttpServerOptions;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import io.vertx.micrometer.PrometheusScrapingHandler;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The admin HTTP server (docs/operations.md "Admin port"): {@code GET /metrics} (Prometheus text, via the Vert.x
 * Micrometer scraping handler), {@code GET /health} (liveness) and {@code GET /ready} (readiness). It listens on its
 * own address and port ({@code admin.bind}, {@code admin.port}), never on the relay port, so the relay port keeps
 * exactly the wire contract.
 *
 * <p>It also owns two timers: the readiness probe (a {@link StoreCommand.Probe} through {@link StoreClient} every
 * {@code admin.probeIntervalMs}, at most one outstanding; the writer answers it on its thread by taking the write lock
 * and rolling back, so a probe commits and writes nothing: issue 10 item 14) and the queue scan (queue gauges from one
 * read on the read pool every {@code admin.queueScanIntervalMs}).
 *
 * <p>Liveness ({@code /health}, 200 {@code {"status":"up"}} or 503): every HTTP verticle's event loop ran a task
 * within {@code admin.readyTimeoutMs}. Readiness ({@code /ready}, 200 {@code {"ready":true}} or 503
 * {@code {"ready":false,"failing":[…]}}): the writer is not fail-stopped, the epoch is loaded, the last probe
 * transaction committed (the store took a page write) and answered within {@code admin.readyTimeoutMs}, no probe is
 * outstanding for longer than that bound, the store's disk is not full ({@link DiskSpace#full()}: under
 * {@code store.minFreeBytes}, or after {@code SQLITE_FULL} until space returns; issue 10 item 9), and the read pool
 * answers. Bodies name checks, never keys or data.
 *
 * <p>Store clock ({@link ClockGuard}, issue 10 item 7): {@code GET /clock} shows whether expiry and dedup pruning are
 * paused after a wall-clock step; {@code POST /clock/resume} is the operator's acceptance of the wall clock
 * ({@code mbxrelay clock resume}).
 *
 * <p>Threading: an event-loop verticle; the readiness fields are volatile because the {@code mbxrelay_ready} gauge
 * reads them on the scrape thread.
 */
public final class AdminVerticle extends VerticleBase {
  private static final Logger LOG = LoggerFactory.getLogger(AdminVerticle.class);
  private static final RateLimitedLogger WARN = new RateLimitedLogger(LOG);

  private final RelayServices services;
  private final StoreWriterVerticle writer;
  private final List<HttpVerticle> loops;
  private final RelayConfig.Admin config;
  private final RelayMetrics metrics;
  private volatile long probeSentAt = -1;
  private volatile long lastAnsweredAt = -1;
  private volatile long lastProbeNanos;
  private volatile String lastFailure;
  private volatile int actualPort = -1;
  private final ClockGuard clock;
  private final DiskSpace disk;
  private final java.nio.file.Path storeFile;
  private volatile boolean stopping;

  /**
   * @param services shared services (config, store client, read store, metrics)
   * @param writer the writer (fail-stop flag)
   * @param loops the HTTP verticle instances whose event loops {@code /health} checks
   * @param clock the store's clock guard ({@code GET /clock}, {@code POST /clock/resume})
   * @param disk the store's free-space guard ({@code /ready} is 503 while the disk counts as full)
   * @param storeFile the store's {@code relay.db} (the status page names its directory)
   */
  public AdminVerticle(RelayServices services, StoreWriterVerticle writer, List<HttpVerticle> loops,
      ClockGuard clock, DiskSpace disk, java.nio.file.Path storeFile) {
    this.storeFile = Objects.requireNonNull(storeFile);
    this.disk = Objects.requireNonNull(disk);
    this.services = Objects.requireNonNull(services);
    this.writer = Objects.requireNonNull(writer);
    this.loops = List.copyOf(loops);
    this.config = services.config().admin();
    this.metrics = services.metrics();
    this.clock = Objects.requireNonNull(clock);
  }

  /** The admin port actually bound, after start. */
  public int actualPort() {
    return actualPort;
  }

  @Override
  public Future<?> start() {
    metrics.bindReady(() -> failing().isEmpty());
    Router r = Router.router(vertx);
    r.get("/metrics").handler(PrometheusScrapingHandler.create(metrics.registry()));
    r.get("/health").handler(this::health);
    r.get("/ready").handler(this::ready);
    r.get("/clock").handler(ctx -> answer(ctx, 200, clockBody(clock.status())));
    r.post("/clock/resume").handler(this::resumeClock);
    // status page (GET /) and its JSON (GET /status): issue 12 item 3
    new StatusRoutes(services, writer, disk, clock, storeFile, this::failing).mount(vertx, r);
    // every other path and method answers JSON like every other error, not Vert.x's HTML page (issue 22 item 9)
    r.errorHandler(404, ctx -> answer(ctx, RelayError.NOT_FOUND));
    r.errorHandler(405, ctx -> answer(ctx, RelayError.METHOD_NOT_ALLOWED));
    // HTTP/1.1 only: scrapers and probes need nothing else, and an h2c upgrade of a large scrape answer broke
    // the JDK client in tests.
    HttpServer server = vertx.createHttpServer(new HttpServerOptions().setHttp2ClearTextEnabled(false))
        .requestHandler(r);
    // probes and scans start once the port is ours: a start that fails on the admin port closes the read pool, and a
    // scan already under way would then log a failure that is not the reason the relay did not start
    return server.listen(config.port(), config.bind()).onSuccess(s -> {
      actualPort = s.actualPort();
      probe(0L);
      scan(0L);
      // every probeIntervalMs, and every second while the last probe failed, so readiness returns within about a
      // second of the store taking writes again (issue 20 item 5)
      vertx.setPeriodic(Math.min(1000, config.probeIntervalMs()), t -> {
        if (lastFailure != null || lastProbeNanos > TimeUnit.MILLISECONDS.toNanos(config.readyTimeoutMs())
            || System.nanoTime() - lastAnsweredAt >= TimeUnit.MILLISECONDS.toNanos(config.probeIntervalMs())) {
          probe(t);
        }
      });
      vertx.setPeriodic(config.queueScanIntervalMs(), this::scan);
    });
  }

  /**
   * Sends one readiness probe now (tests), on this verticle's context.
   *
   * @return completes when the probe was answered (or at once when one is outstanding)
   */
  Future<Void> probeNow() {
    io.vertx.core.Promise<Void> p = io.vertx.core.Promise.promise();
    context.runOnContext(v -> probe(null).onComplete(ar -> p.complete()));
    return p.future();
  }

  private Future<Boolean> probe(Long timer) {
    if (probeSentAt >= 0) {
      return Future.succeededFuture(false); // one outstanding probe at most: a stalled writer is not fed one per tick
    }
    long sent = System.nanoTime();
    probeSentAt = sent;
    return services.writes().send(new StoreCommand.Probe()).onComplete(ar -> {
      long took = System.nanoTime() - sent;
      metrics.readyProbe(took);
      lastProbeNanos = took;
      if (ar.succeeded() && Boolean.TRUE.equals(ar.result())) {
        lastFailure = null;
      } else {
        lastFailure = ar.succeeded() ? "probe wrote nothing" : describe(ar.cause());
        WARN.warn("probe", "readiness probe failed [error: {}]", lastFailure);
      }
      lastAnsweredAt = System.nanoTime();
      probeSentAt = -1;
    });
  }

  private static String describe(Throwable t) {
    if (t instanceof ReplyException rx) {
      if (rx.failureType() == ReplyFailure.TIMEOUT) {
        return "writer request timed out";
      }
      if (rx.failureType() == ReplyFailure.NO_HANDLERS) {
        return "writer not running";
      }
      return io.mbxrelay.writer.WriteFailure.of(rx).orElse(io.mbxrelay.writer.WriteFailure.BUG)
          == io.mbxrelay.writer.WriteFailure.BUG ? "store command failed" : "store unavailable";
    }
    return t.getClass().getSimpleName();
  }

  private void scan(Long timer) {
    services.reads().queueStats().onSuccess(q -> metrics.queueScan(q.items(), q.bytes(), q.largestTargetItems(),
        q.largestTargetBytes())).onFailure(e -> {
          metrics.queueScanFailed();
          if (!stopping) { // a stop closes the read pool under a scan in flight: expected, not worth a warning
            WARN.warn("scan", "queue scan failed [error: {}]",
                e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage());
          }
        });
  }

  /**
   * The relay is stopping (issue 12 item 1): from now on {@code /ready} answers 503 with "relay is stopping", so a
   * load balancer takes it out of rotation while in-flight requests finish. Safe on any thread.
   */
  public void stopping() {
    stopping = true;
  }

  /** The failing readiness checks, empty when ready. Safe on any thread. */
  List<String> failing() {
    List<String> out = new ArrayList<>();
    if (stopping) {
      out.add("relay is stopping");
    }
    if (writer.failStopped()) {
      out.add("writer stopped after store corruption (fail-stop)");
    }
    if (services.epoch() == null || services.epoch().isEmpty()) {
      out.add("epoch not loaded");
    }
    if (disk.full()) { // a cached reading: at most one statvfs a second, whoever asks
      long free = disk.freeBytes();
      out.add("store disk full: " + (free == Long.MAX_VALUE ? "?" : free) + " bytes free, store.minFreeBytes "
          + disk.floor() + " (new pushes are refused)");
    }
    long bound = TimeUnit.MILLISECONDS.toNanos(config.readyTimeoutMs());
    long sent = probeSentAt;
    String failure = lastFailure;
    // a transaction that stored items since the last probe answer shows the store takes writes now: an older probe
    // failure or slow answer (from an outage that has ended) no longer counts (issue 20 item 5)
    long answered = lastAnsweredAt;
    long stored = writer.lastStoredAt();
    if (answered >= 0 && stored != Long.MIN_VALUE && stored - answered > 0) {
      failure = null;
      if (sent < 0 || stored - sent > 0) {
        return out;
      }
    }
    if (sent >= 0 && System.nanoTime() - sent > bound) {
      out.add("writer did not answer the probe transaction within " + config.readyTimeoutMs() + " ms");
    } else if (lastAnsweredAt < 0) {
      out.add("no probe transaction answered yet");
    } else if (failure != null) {
      out.add("store not writable: " + failure);
    } else if (lastProbeNanos > bound) {
      out.add("writer answered the last probe transaction in "
          + TimeUnit.NANOSECONDS.toMillis(lastProbeNanos) + " ms (bound " + config.readyTimeoutMs() + " ms)");
    }
    return out;
  }

  private void health(RoutingContext ctx) {
    List<Future<Void>> pings = new ArrayList<>(loops.size());
    loops.forEach(l -> pings.add(l.ping()));
    Future.all(pings).timeout(config.readyTimeoutMs(), TimeUnit.MILLISECONDS).onComplete(ar -> {
      ObjectNode body = Json.MAPPER.createObjectNode();
      if (ar.succeeded()) {
        body.put("status", "up");
        body.put("event_loops", loops.size());
        answer(ctx, 200, body);
      } else {
        body.put("status", "down");
        body.putArray("failing").add("an HTTP event loop did not answer within " + config.readyTimeoutMs() + " ms");
        answer(ctx, 503, body);
      }
    });
  }

  private void ready(RoutingContext ctx) {
    services.reads().probe().timeout(config.readyTimeoutMs(), TimeUnit.MILLISECONDS).onComplete(ar -> {
      List<String> failing = failing();
      if (ar.failed()) {
        failing.add("read pool did not answer");
      }
      ObjectNode body = Json.MAPPER.createObjectNode();
      body.put("ready", failing.isEmpty());
      if (!failing.isEmpty()) {
        ArrayNode arr = body.putArray("failing");
        failing.forEach(arr::add);
      }
      answer(ctx, failing.isEmpty() ? 200 : 503, body);
    });
  }

  /**
   * {@code POST /clock/resume}: the operator accepts the wall clock after a step (issue 10 item 7). With
   * {@code admin.token} set it needs {@code Authorization: Bearer <token>}; without one, only a loopback caller may
   * resume (the admin port may be bound to a private network).
   */
  private void resumeClock(RoutingContext ctx) {
    String token = config.token();
    boolean allowed;
    if (token != null && !token.isEmpty()) {
      String auth = ctx.request().getHeader("authorization");
      allowed = auth != null && java.security.MessageDigest.isEqual(
          ("Bearer " + token).getBytes(java.nio.charset.StandardCharsets.UTF_8),
          auth.trim().getBytes(java.nio.charset.StandardCharsets.UTF_8));
    } else {
      io.vertx.core.net.SocketAddress peer = ctx.request().remoteAddress();
      allowed = peer != null && peer.host() != null && isLoopback(peer.host());
    }
    if (!allowed) {
      answer(ctx, token != null && !token.isEmpty() ? RelayError.ADMIN_TOKEN_REQUIRED : RelayError.LOOPBACK_ONLY);
      return;
    }
    answer(ctx, 200, clockBody(clock.resume("operator")));
  }

  private static boolean isLoopback(String host) {
    try {
      return java.net.InetAddress.getByName(host).isLoopbackAddress(); // a literal address: no lookup
    } catch (java.net.UnknownHostException e) {
      return false;
    }
  }

  private static ObjectNode clockBody(ClockGuard.Status st) {
    ObjectNode body = Json.MAPPER.createObjectNode();
    body.put("paused", st.paused());
    body.put("reason", st.reason());
    body.put("step_ms", st.stepMs());
    body.put("trusted", io.mbxrelay.wire.IsoTime.format(st.trustedMs()));
    body.put("wall", io.mbxrelay.wire.IsoTime.format(st.wallMs()));
    body.put("steps", st.steps());
    return body;
  }

  private static void answer(RoutingContext ctx, int status, ObjectNode body) {
    ctx.response().setStatusCode(status).putHeader("content-type", "application/json")
        .putHeader("cache-control", "no-store").end(Json.stringify(body));
  }

  /** Answers an error from the catalogue. */
  static void answer(RoutingContext ctx, RelayError error) {
    ctx.response().setStatusCode(error.status()).putHeader("content-type", "application/json")
        .putHeader("cache-control", "no-store").end(error.body());
  }
}
