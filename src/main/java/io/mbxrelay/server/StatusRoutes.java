package io.mbxrelay.server;

import io.mbxrelay.writer.StoreWriterVerticle;
import io.mbxrelay.http.RelayError;
import io.mbxrelay.http.RelayServices;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.mbxrelay.metrics.HistogramWindow;
import io.mbxrelay.metrics.RelayMetrics;
import io.mbxrelay.store.guard.ClockGuard;
import io.mbxrelay.store.guard.DiskSpace;
import io.mbxrelay.wire.IsoTime;
import io.mbxrelay.wire.Json;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Base64;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The status page of the admin server (docs/operations.md "Status page"; issue 12 item 3): {@code GET /status}
 * answers one flat JSON object in the style of NATS' {@code /varz} (stable snake_case names, units in the names,
 * times as ISO-8601 UTC), and {@code GET /} a small self-contained HTML page whose script fetches {@code status}
 * every few seconds ({@code ?refresh=N}, 1..300 s, default 5) and fills it in with {@code textContent} only. The page
 * loads nothing from elsewhere; its Content-Security-Policy allows exactly its own inline script and style (by
 * hash) and fetches to the same origin.
 *
 * <p>Where the values come from, none of them by waiting on the writer: version, epoch and key from
 * {@link RelayServices}; live enrolments from the in-memory enrolment table; queued items and bytes from one read of
 * {@code queue_usage} on the read pool at request time; file sizes and free space ({@code stat}, {@code statvfs})
 * on a worker thread, never on the event loop; writer queue depth and fail-stop from the writer's volatile fields;
 * the COMMIT p99 of the last five minutes from the {@code mbxrelay_writer_commit_seconds} histogram
 * ({@link HistogramWindow}, sampled every 15 s); recent expiry sweeps and the last JWKS refresh from
 * {@link RelayMetrics}; readiness from the admin server's own checks; the Ed25519 engine from the crypto package.
 *
 * <p>Threading: the handlers run on the admin verticle's event loop; {@link #snapshot} is safe on any context.
 */
final class StatusRoutes {
  private static final Logger LOG = LoggerFactory.getLogger(StatusRoutes.class);
  /** How far back the COMMIT quantile reaches, ms. */
  static final long COMMIT_WINDOW_MS = 300_000;
  /** How often the COMMIT histogram is sampled, ms. */
  static final long COMMIT_SAMPLE_MS = 15_000;

  private static final Page PAGE = Page.load("status.html");

  private final RelayServices services;
  private final StoreWriterVerticle writer;
  private final DiskSpace disk;
  private final ClockGuard clock;
  private final Supplier<List<String>> failing;
  private final RelayMetrics metrics;
  private final HistogramWindow commits;
  private final Path dbFile;
  private final long startedAtMs;
  private final long startedNanos = System.nanoTime();

  /**
   * @param services shared services (identity, config, reads, enrolments, metrics, clock)
   * @param writer the writer (queue depth, fail-stop)
   * @param disk the store's free-space guard
   * @param clock the store's clock guard (expiry paused or not)
   * @param dbFile the store's {@code relay.db}
   * @param failing the failing readiness checks, empty when ready (safe on any thread)
   */
  StatusRoutes(RelayServices services, StoreWriterVerticle writer, DiskSpace disk, ClockGuard clock, Path dbFile,
      Supplier<List<String>> failing) {
    this.services = Objects.requireNonNull(services);
    this.writer = Objects.requireNonNull(writer);
    this.disk = Objects.requireNonNull(disk);
    this.clock = Objects.requireNonNull(clock);
    this.dbFile = Objects.requireNonNull(dbFile);
    this.failing = Objects.requireNonNull(failing);
    this.metrics = services.metrics();
    this.commits = new HistogramWindow(metrics.commitHistogram(), COMMIT_WINDOW_MS, System::nanoTime);
    this.startedAtMs = services.clock().millis();
  }

  /**
   * Mounts {@code GET /} and {@code GET /status} and starts the histogram sampling timer on the calling context (the
   * admin verticle's, so undeploying it cancels the timer).
   *
   * @param vertx Vert.x
   * @param router the admin router
   */
  void mount(Vertx vertx, Router router) {
    router.get("/").handler(this::page);
    router.get("/status").handler(this::status);
    vertx.setPeriodic(COMMIT_SAMPLE_MS, id -> commits.sample());
  }

  private void page(RoutingContext ctx) {
    ctx.response().putHeader("content-type", "text/html; charset=utf-8")
        .putHeader("cache-control", "no-store")
        .putHeader("content-security-policy", PAGE.contentSecurityPolicy())
        .putHeader("x-content-type-options", "nosniff")
        .putHeader("referrer-policy", "no-referrer")
        .end(PAGE.html());
  }

  private void status(RoutingContext ctx) {
    snapshot(ctx.vertx()).onComplete(ar -> {
      if (ar.failed()) {
        LOG.warn("status snapshot failed [error: {}]", ar.cause().getClass().getSimpleName());
        AdminVerticle.answer(ctx, RelayError.STATUS_NOT_AVAILABLE);
        return;
      }
      ctx.response().putHeader("content-type", "application/json").putHeader("cache-control", "no-store")
          .end(Json.stringify(ar.result()));
    });
  }

  /** What the worker thread reads: file sizes and free space (system calls), readiness and the commit quantile. */
  private record Blocking(double fileBytes, double walBytes, long freeBytes, boolean diskFull, List<String> failing,
      HistogramWindow.Estimate commitP99) {}

  /**
   * The status object ({@code GET /status}); field names and units are documented in docs/operations.md.
   *
   * @param vertx Vert.x (its worker pool reads the file system)
   * @return the object, completed on the caller's context
   */
  Future<ObjectNode> snapshot(Vertx vertx) {
    Future<Blocking> blocking = vertx.executeBlocking(() -> {
      disk.refreshIfStale();
      long free = disk.freeBytes();
      return new Blocking(metrics.storeFileBytes(), metrics.storeWalBytes(), free, disk.full(), failing.get(),
          commits.quantile(0.99));
    }, false);
    Future<io.mbxrelay.store.model.QueueStats> queue = services.reads().queueStats();
    return Future.join(blocking, queue).transform(ar -> {
      if (blocking.failed()) {
        return Future.failedFuture(blocking.cause());
      }
      return Future.succeededFuture(body(blocking.result(), queue.succeeded() ? queue.result() : null));
    });
  }

  private ObjectNode body(Blocking b, io.mbxrelay.store.model.QueueStats queue) {
    long now = services.clock().millis();
    ObjectNode o = Json.MAPPER.createObjectNode();
    o.put("server", "mbxrelay");
    o.put("version", services.version());
    o.put("now", IsoTime.format(now));
    o.put("started_at", IsoTime.format(startedAtMs));
    o.put("uptime_seconds", TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - startedNanos));
    o.put("relay_key_fingerprint", services.relayKey().fingerprint());
    o.put("ed25519_engine", io.mbxrelay.crypto.Ed25519Engine.inUse().kind().label());
    o.put("epoch", services.epoch());
    o.put("ready", b.failing().isEmpty());
    ArrayNode notReady = o.putArray("not_ready");
    b.failing().forEach(notReady::add);
    o.put("store_backend", services.config().store().backend());
    o.put("store_dir", dbFile.toAbsolutePath().getParent().toString());
    putBytes(o, "store_file_bytes", b.fileBytes());
    putBytes(o, "store_wal_bytes", b.walBytes());
    if (b.freeBytes() == Long.MAX_VALUE) {
      o.putNull("store_free_bytes");
    } else {
      o.put("store_free_bytes", b.freeBytes());
    }
    o.put("store_min_free_bytes", disk.floor());
    o.put("store_disk_full", b.diskFull());
    o.put("enrolments_live", services.enrolments().liveCount());
    if (queue != null) {
      o.put("queue_items", queue.items());
      o.put("queue_bytes", queue.bytes());
      o.put("queue_largest_target_items", queue.largestTargetItems());
      o.put("queue_largest_target_bytes", queue.largestTargetBytes());
    } else { // the read pool did not answer: say so rather than show stale numbers
      o.putNull("queue_items");
      o.putNull("queue_bytes");
      o.putNull("queue_largest_target_items");
      o.putNull("queue_largest_target_bytes");
    }
    o.put("store_limit_items", services.config().limits().maxStoreItems());
    o.put("store_limit_bytes", services.config().limits().maxStoreBytes());
    o.put("writer_queue_depth", writer.queueDepth());
    o.put("writer_fail_stopped", writer.failStopped());
    HistogramWindow.Estimate p99 = b.commitP99();
    if (Double.isNaN(p99.seconds())) {
      o.putNull("writer_commit_p99_seconds");
    } else {
      o.put("writer_commit_p99_seconds", p99.seconds());
    }
    o.put("writer_commits_in_window", p99.count());
    o.put("writer_commit_window_seconds", Math.round(p99.windowSeconds()));
    o.put("clock_paused", clock.status().paused());
    o.put("sweep_interval_seconds", services.config().timers().sweepIntervalMs() / 1000);
    ArrayNode sweeps = o.putArray("sweeps");
    for (RelayMetrics.SweepRecord s : metrics.recentSweeps()) {
      sweeps.addObject().put("at", IsoTime.format(s.atMs())).put("items_expired", s.itemsExpired())
          .put("notices_enqueued", s.noticesEnqueued()).put("notices_skipped", s.noticesSkipped());
    }
    boolean jwks = services.trust().jwks() != null;
    o.put("jwks_enabled", jwks);
    if (jwks) {
      o.put("jwks_age_seconds", Math.round(services.trust().jwks().ageSeconds()));
    } else {
      o.putNull("jwks_age_seconds");
    }
    RelayMetrics.JwksRefreshRecord refresh = metrics.lastJwksRefresh();
    if (refresh == null) {
      o.putNull("jwks_last_refresh_at");
      o.putNull("jwks_last_refresh_ok");
    } else {
      o.put("jwks_last_refresh_at", IsoTime.format(refresh.atMs()));
      o.put("jwks_last_refresh_ok", refresh.ok());
    }
    return o;
  }

  private static void putBytes(ObjectNode o, String field, double bytes) {
    if (Double.isNaN(bytes)) {
      o.putNull(field);
    } else {
      o.put(field, (long) bytes);
    }
  }

  /**
   * The page and the Content-Security-Policy that allows its inline script and style by their SHA-256.
   *
   * @param html the page
   * @param contentSecurityPolicy the header value
   */
  record Page(String html, String contentSecurityPolicy) {
    private static final Pattern SCRIPT = Pattern.compile("<script>(.*?)</script>", Pattern.DOTALL);
    private static final Pattern STYLE_ELEMENT = Pattern.compile("<style>(.*?)</style>", Pattern.DOTALL);

    static Page load(String resource) {
      String html;
      try (InputStream in = StatusRoutes.class.getResourceAsStream(resource)) {
        if (in == null) {
          throw new IllegalStateException("missing resource " + resource);
        }
        html = new String(in.readAllBytes(), StandardCharsets.UTF_8);
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
      return new Page(html, "default-src 'none'; script-src " + hashes(SCRIPT, html) + "; style-src "
          + hashes(STYLE_ELEMENT, html) + "; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'");
    }

    private static String hashes(Pattern p, String html) {
      StringBuilder out = new StringBuilder();
      Matcher m = p.matcher(html);
      while (m.find()) {
        out.append(out.length() == 0 ? "" : " ").append("'sha256-").append(sha256(m.group(1))).append('\'');
      }
      return out.length() == 0 ? "'none'" : out.toString();
    }

    private static String sha256(String text) {
      try {
        return Base64.getEncoder().encodeToString(
            MessageDigest.getInstance("SHA-256").digest(text.getBytes(StandardCharsets.UTF_8)));
      } catch (NoSuchAlgorithmException e) {
        throw new IllegalStateException(e);
      }
    }
  }
}
