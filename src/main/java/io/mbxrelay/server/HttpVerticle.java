package io.mbxrelay.server;

import io.mbxrelay.http.RelayServices;
import io.mbxrelay.config.RelayConfig;
import io.mbxrelay.http.RelayRoutes;
import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import io.vertx.core.http.Http2Settings;
import io.vertx.core.http.HttpServer;
import io.vertx.core.http.HttpServerOptions;
import java.util.Objects;
import java.util.concurrent.TimeUnit;

/**
 * One HTTP event-loop verticle (docs/architecture.md, the diagram: N instances from conf). Instances listening on
 * the same host and port share the socket; Vert.x spreads connections over them.
 */
public final class HttpVerticle extends VerticleBase {
  /** How long a refused connection may take to send its request before it is closed unanswered, ms. */
  static final long REFUSED_GRACE_MS = 2_000;
  private static final io.vertx.core.buffer.Buffer BUSY_BODY =
      io.vertx.core.buffer.Buffer.buffer(io.mbxrelay.http.RelayError.busy(false).body());
  private static final io.vertx.core.buffer.Buffer BUSY_NOT_STORED_BODY =
      io.vertx.core.buffer.Buffer.buffer(io.mbxrelay.http.RelayError.busy(true).body());

  private final RelayServices services;
  private final io.mbxrelay.http.ConnectionGate gate;
  /** Connections over the cap on this event loop, waiting for their request to be answered 503 (few). */
  private final java.util.Set<io.vertx.core.http.HttpConnection> refused =
      java.util.Collections.newSetFromMap(new java.util.IdentityHashMap<>());
  private final String host;
  private final int port;
  private volatile int actualPort = -1;
  private volatile boolean draining;
  private HttpServer server;

  /**
   * @param services shared services
   * @param host bind address
   * @param port port, 0 for an ephemeral one
   * @param gate the connection cap shared by every instance
   */
  public HttpVerticle(RelayServices services, String host, int port, io.mbxrelay.http.ConnectionGate gate) {
    this.services = Objects.requireNonNull(services);
    this.gate = Objects.requireNonNull(gate);
    this.host = Objects.requireNonNull(host);
    this.port = port;
  }

  /** The port actually bound, after start. */
  public int actualPort() {
    return actualPort;
  }

  /**
   * Liveness probe: completes once this verticle's event loop ran a task, so a blocked or dead loop never completes
   * it (the caller bounds the wait). Safe on any thread.
   *
   * @return completes on this verticle's event loop
   */
  public Future<Void> ping() {
    io.vertx.core.Promise<Void> p = io.vertx.core.Promise.promise();
    context.runOnContext(v -> p.complete());
    return p.future();
  }

  @Override
  public Future<?> start() {
    RelayConfig.Http http = services.config().http();
    HttpServerOptions options = new HttpServerOptions()
        .setIdleTimeout((int) http.idleTimeoutMs())
        .setIdleTimeoutUnit(TimeUnit.MILLISECONDS)
        .setMaxInitialLineLength(16 * 1024)
        .setMaxHeaderSize(16 * 1024)
        .setCompressionSupported(false)
        // every write happens on the connection's event loop (writer replies, page reads and long-poll wakes all come
        // back on the request's context), so each connection can skip Vert.x's cross-thread outbound queue: a
        // 1,024-slot MPSC array, about 4.9 KiB of heap per open connection (issue 18 goal 4: ~40 % of a waiting host)
        .setStrictThreadMode(true)
        // h2c off unless configured (issue 11 item 2): one HTTP/2 connection with many streams multiplied what one
        // socket could make the relay buffer; when on, the streams per connection are capped
        .setHttp2ClearTextEnabled(http.h2c())
        .setInitialSettings(new Http2Settings().setMaxConcurrentStreams(http.maxConcurrentStreams()));
    // one budget for every instance of this relay (RelayServices)
    io.vertx.core.Handler<io.vertx.core.http.HttpServerRequest> routes =
        new RelayRoutes(services, services.bodyBudget()).requestHandler(vertx);
    server = vertx.createHttpServer(options).connectionHandler(this::connected).requestHandler(req -> {
      if (!refused.isEmpty() && refused.contains(req.connection())) {
        refuse(req);
        return;
      }
      // an answer sent during the drain says connection: close, so its client opens a new connection for its next
      // request (refused once the listener is gone) instead of reusing this one as the relay closes it
      req.response().headersEndHandler(v -> {
        if (draining) {
          req.response().putHeader("connection", "close");
        }
      });
      routes.handle(req);
    });
    return server.listen(port, host).onSuccess(s -> actualPort = s.actualPort());
  }

  /**
   * A new connection (issue 18 goal 4): counted against {@code http.maxConnections}; over it, held briefly so its
   * first request can be answered 503 with {@code Retry-After}, or closed at once when too many are held already.
   */
  private void connected(io.vertx.core.http.HttpConnection conn) {
    if (gate.admit()) {
      conn.closeHandler(v -> gate.closed());
      return;
    }
    if (!gate.holdRefused()) {
      conn.close();
      return;
    }
    refused.add(conn);
    long timer = vertx.setTimer(REFUSED_GRACE_MS, id -> conn.close());
    conn.closeHandler(v -> {
      refused.remove(conn);
      vertx.cancelTimer(timer);
      gate.refusedClosed();
    });
  }

  /** The answer on a connection over the cap: a fixed 503 body, then the connection closes. */
  private static void refuse(io.vertx.core.http.HttpServerRequest req) {
    req.response().setStatusCode(503)
        .putHeader("content-type", "application/json")
        .putHeader("retry-after", Integer.toString(io.mbxrelay.http.ConnectionGate.RETRY_AFTER_SECONDS))
        .putHeader("connection", "close")
        .end(req.method() == io.vertx.core.http.HttpMethod.GET || req.method() == io.vertx.core.http.HttpMethod.HEAD
            ? BUSY_BODY : BUSY_NOT_STORED_BODY); // nothing of the request was read: a push was not stored
  }

  /**
   * Starts the drain of this instance (issue 12 item 1): its listener closes, an idle connection is closed at once, a
   * connection with a request in progress is closed after that request's answer (HTTP/2: GOAWAY, open streams finish),
   * and whatever is still open after {@code graceMs} is closed. Safe on any thread.
   *
   * @param graceMs how long in-flight requests may take to finish, ms
   * @return completes when every connection of this instance is closed
   */
  public Future<Void> drain(long graceMs) {
    draining = true;
    io.vertx.core.Promise<Void> p = io.vertx.core.Promise.promise();
    context.runOnContext(v -> server.shutdown(graceMs, TimeUnit.MILLISECONDS).onComplete(p));
    return p.future();
  }
}
