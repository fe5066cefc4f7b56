package io.mbxrelay.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.mbxrelay.crypto.HopText;
import io.mbxrelay.wire.CanonicalJson;
import io.mbxrelay.wire.Json;
import io.vertx.core.Context;
import io.vertx.core.DeploymentOptions;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.VerticleBase;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpClientAgent;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.PoolOptions;
import io.vertx.core.http.RequestOptions;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.LongConsumer;

/**
 * The load generator's HTTP side: one Vert.x instance with its event loops, one pooled keep-alive HTTP/1.1
 * {@link HttpClientAgent} towards the relay, signed hops built as docs/protocol.md §2 says (the fast
 * {@link HopText#signedBytes} text, BouncyCastle Ed25519 through {@link io.mbxrelay.crypto.Ed25519KeyPair}), the
 * enrolment calls of docs/protocol.md §4.1, and an open-loop scheduler that starts requests on a fixed timetable on the event
 * loops. Every request's answer is handled on the event loop that sent it.
 */
final class BenchClient implements AutoCloseable {
  /** An HTTP answer: status and body bytes. */
  record Answer(int status, Buffer body, String retryAfter) {
    boolean ok() {
      return status >= 200 && status < 300;
    }

    String text() {
      return body.toString(StandardCharsets.UTF_8);
    }

    JsonNode json() {
      return Json.parse(text());
    }
  }

  final Vertx vertx;
  final HttpClientAgent http;
  /** The pool pushes go through: {@link #http} unless a separate push pool was asked for (hosts workload). */
  final HttpClientAgent pushHttp;
  /** Whether requests keep their connection open (false: {@code connection: close} on every request). */
  final boolean keepAlive;
  final String host;
  final int port;
  /** One context per event loop; the scheduler and the host loops spread their work over them. */
  final List<Context> loops;
  private final AtomicInteger nextLoop = new AtomicInteger();

  /**
   * @param baseUrl the relay, {@code http://host:port}
   * @param maxConnections pool size (HTTP/1.1 connections to the relay)
   */
  BenchClient(String baseUrl, int maxConnections) throws Exception {
    this(baseUrl, maxConnections, 0, true, Runtime.getRuntime().availableProcessors());
  }

  /**
   * @param baseUrl the relay, {@code http://host:port}
   * @param maxConnections pool size of the pulls (HTTP/1.1 connections to the relay)
   * @param pushConnections a separate pool for {@link #sendPush}, or 0 to share the pulls' pool
   * @param keepAlive false to send {@code connection: close} on every request (a new connection per request)
   * @param eventLoops Vert.x event loops (threads) doing the HTTP work
   */
  BenchClient(String baseUrl, int maxConnections, int pushConnections, boolean keepAlive, int eventLoops)
      throws Exception {
    this(baseUrl, maxConnections, pushConnections, keepAlive, eventLoops, 60);
  }

  /**
   * @param baseUrl the relay, {@code http://host:port}
   * @param maxConnections pool size of the pulls (HTTP/1.1 connections to the relay)
   * @param pushConnections a separate pool for {@link #sendPush}, or 0 to share the pulls' pool
   * @param keepAlive false to send {@code connection: close} on every request (a new connection per request)
   * @param eventLoops Vert.x event loops (threads) doing the HTTP work
   * @param idleSeconds how long a pooled connection may stay unused before the pool closes it, s (0: never; keep it
   *     below the relay's {@code http.idleTimeoutMs})
   */
  BenchClient(String baseUrl, int maxConnections, int pushConnections, boolean keepAlive, int eventLoops,
      int idleSeconds) throws Exception {
    this.keepAlive = keepAlive;
    URI u = URI.create(baseUrl);
    this.host = u.getHost();
    this.port = u.getPort() < 0 ? 80 : u.getPort();
    this.vertx = Vertx.vertx(new VertxOptions().setEventLoopPoolSize(eventLoops).setWorkerPoolSize(1)
        .setBlockedThreadCheckInterval(10).setBlockedThreadCheckIntervalUnit(TimeUnit.SECONDS));
    // idleSeconds below the relay's http.idleTimeoutMs (75 s by default); no pipelining (one request per connection at a time)
    HttpClientOptions options = new HttpClientOptions().setKeepAlive(keepAlive).setKeepAliveTimeout(idleSeconds)
        .setPipelining(false).setTcpNoDelay(true).setDecompressionSupported(false);
    this.http = vertx.createHttpClient(options,
        new PoolOptions().setHttp1MaxSize(maxConnections).setMaxWaitQueueSize(-1));
    this.pushHttp = pushConnections <= 0 ? http : vertx.createHttpClient(options,
        new PoolOptions().setHttp1MaxSize(pushConnections).setMaxWaitQueueSize(-1));
    List<Context> ctxs = new CopyOnWriteArrayList<>();
    vertx.deployVerticle(() -> new VerticleBase() {
      @Override
      public Future<?> start() {
        ctxs.add(context);
        return Future.succeededFuture();
      }
    }, new DeploymentOptions().setInstances(eventLoops)).await(30, TimeUnit.SECONDS);
    this.loops = List.copyOf(ctxs);
  }

  /** The next event loop, round robin. */
  Context loop() {
    return loops.get(Math.floorMod(nextLoop.getAndIncrement(), loops.size()));
  }

  /**
   * A request built and, when it has a signer, signed ahead of sending: what goes on the wire, fixed. A host's hop is
   * fresh for {@link io.mbxrelay.crypto.HopText#MAX_SKEW_MS} after {@code ts}, so a prepared request must be sent well
   * inside that.
   *
   * @param method GET or POST
   * @param pathQuery path and raw query as on the request line
   * @param body request body, or null (GET)
   * @param key the signer's {@code x-mbx-key}, or null for an unsigned call
   * @param ts the {@code x-mbx-ts} header (ms since the epoch when it was signed), or null
   * @param sig the {@code x-mbx-sig} header, or null
   */
  record Prepared(HttpMethod method, String pathQuery, Buffer body, String key, String ts, String sig) {}

  /**
   * Builds a request and signs its hop now (docs/protocol.md §2: {@link HopText#signedBytes} of the method, the path
   * with its raw query, the ts and the body, signed with the host's key). Safe on any thread.
   *
   * @param method GET or POST
   * @param pathQuery path and raw query as on the request line
   * @param body request body bytes, or null (GET)
   * @param signer the host whose key signs the hop, or null for an unsigned call
   * @return the request, ready for {@link #send(Prepared, long)}
   */
  static Prepared prepare(HttpMethod method, String pathQuery, byte[] body, BenchHosts.Host signer) {
    Buffer b = body == null ? null : Buffer.buffer(body);
    if (signer == null) {
      return new Prepared(method, pathQuery, b, null, null, null);
    }
    String ts = Long.toString(System.currentTimeMillis());
    int q = pathQuery.indexOf('?');
    String signedPath = q < 0 ? pathQuery : HopText.signedPath(pathQuery.substring(0, q), pathQuery.substring(q + 1));
    byte[] text = HopText.signedBytes(method.name(), signedPath, ts, body == null ? new byte[0] : body);
    return new Prepared(method, pathQuery, b, signer.pub(), ts, signer.key().signB64(text));
  }

  /**
   * Signs and sends a request; call it on an event loop (the answer comes back on it).
   *
   * @param method GET or POST
   * @param pathQuery path and raw query as on the request line
   * @param body request body bytes, or null (GET)
   * @param signer the host whose key signs the hop, or null for an unsigned call
   * @param timeoutMs idle timeout of the request (no bytes for this long fails it), ms; also bounds the wait for a
   *     pooled connection
   * @return the answer (any status); fails only on transport errors and timeouts
   */
  Future<Answer> send(HttpMethod method, String pathQuery, byte[] body, BenchHosts.Host signer, long timeoutMs) {
    return send(http, prepare(method, pathQuery, body, signer), timeoutMs);
  }

  /** As {@link #send(HttpMethod, String, byte[], BenchHosts.Host, long)} through the push pool. */
  Future<Answer> sendPush(HttpMethod method, String pathQuery, byte[] body, BenchHosts.Host signer, long timeoutMs) {
    return send(pushHttp, prepare(method, pathQuery, body, signer), timeoutMs);
  }

  /**
   * Sends a request {@link #prepare prepared} earlier, exactly as prepared (no signing now); call it on an event loop.
   *
   * @param r the request
   * @param timeoutMs as for {@link #send(HttpMethod, String, byte[], BenchHosts.Host, long)}, ms
   * @return the answer (any status); fails only on transport errors and timeouts
   */
  Future<Answer> send(Prepared r, long timeoutMs) {
    return send(http, r, timeoutMs);
  }

  private Future<Answer> send(HttpClientAgent agent, Prepared r, long timeoutMs) {
    RequestOptions o = new RequestOptions().setMethod(r.method()).setHost(host).setPort(port).setURI(r.pathQuery())
        .setIdleTimeout(timeoutMs).setConnectTimeout(timeoutMs);
    if (r.body() != null) {
      o.putHeader("content-type", "application/json");
    }
    if (r.key() != null) {
      o.putHeader("x-mbx-key", r.key()).putHeader("x-mbx-ts", r.ts()).putHeader("x-mbx-sig", r.sig());
    }
    return agent.request(o)
        .compose(req -> r.body() == null ? req.send() : req.send(r.body()))
        .compose(resp -> resp.body().map(b -> new Answer(resp.statusCode(), b, resp.getHeader("retry-after"))));
  }

  /** Unsigned GET of {@code /v2/relay/info}, blocking (main thread). */
  JsonNode info() throws Exception {
    Answer a = onLoop(() -> send(HttpMethod.GET, "/v2/relay/info", null, null, 10_000)).await(15, TimeUnit.SECONDS);
    if (!a.ok()) {
      throw new IllegalStateException("GET /v2/relay/info answered " + a.status() + " " + a.text());
    }
    return a.json();
  }

  /** Runs {@code f} on an event loop and returns its future. */
  <T> Future<T> onLoop(java.util.function.Supplier<Future<T>> f) {
    Promise<T> p = Promise.promise();
    loop().runOnContext(v -> f.get().onComplete(p));
    return p.future();
  }

  /** Challenge + signed enrolment of one host (docs/protocol.md §4.1); fails with the relay's answer unless both are 200. */
  Future<Void> enrol(BenchHosts.Host h) {
    ObjectNode c = Json.MAPPER.createObjectNode().put("host", h.name()).put("pubkey", h.pub());
    return send(HttpMethod.POST, "/v1/relay/challenge", Json.stringify(c).getBytes(StandardCharsets.UTF_8), null,
        30_000).compose(a -> {
          if (!a.ok()) {
            return Future.failedFuture("challenge answered " + a.status() + " " + a.text());
          }
          ObjectNode rec = Json.MAPPER.createObjectNode().put("v", 1).put("challenge",
              a.json().get("challenge").asText()).put("host", h.name()).put("pubkey", h.pub()).put("owner_fp", "");
          String sig = h.key().signB64(CanonicalJson.canonicalBytes(rec));
          ObjectNode body = Json.MAPPER.createObjectNode().put("host", h.name()).put("pubkey", h.pub())
              .put("owner_fp", "").put("sig", sig);
          return send(HttpMethod.POST, "/v1/relay/enrol", Json.stringify(body).getBytes(StandardCharsets.UTF_8),
              null, 30_000);
        }).compose(a -> a.ok() ? Future.succeededFuture()
            : Future.failedFuture("enrol answered " + a.status() + " " + a.text()));
  }

  /**
   * Enrols hosts with at most {@code concurrency} enrolments in flight; blocks; prints progress and the rate.
   *
   * @throws IllegalStateException on the first failed enrolment (with the relay's answer)
   */
  void enrolAll(List<BenchHosts.Host> hosts, int concurrency) throws Exception {
    if (hosts.isEmpty()) {
      return;
    }
    long start = System.nanoTime();
    AtomicInteger next = new AtomicInteger();
    AtomicInteger done = new AtomicInteger();
    Promise<Void> all = Promise.promise();
    List<Runnable> chains = new ArrayList<>();
    for (int c = 0; c < Math.min(concurrency, hosts.size()); c++) {
      Context ctx = loop();
      Runnable[] chain = new Runnable[1];
      chain[0] = () -> {
        int i = next.getAndIncrement();
        if (i >= hosts.size()) {
          return;
        }
        enrol(hosts.get(i)).onComplete(ar -> {
          if (ar.failed()) {
            all.tryFail(new IllegalStateException("enrolment of " + hosts.get(i).name() + " failed: "
                + ar.cause().getMessage()));
            return;
          }
          int d = done.incrementAndGet();
          if (d % 2000 == 0) {
            System.out.printf(Locale.ROOT, "  enrolled %d/%d (%.1f s)%n", d, hosts.size(),
                (System.nanoTime() - start) / 1e9);
          }
          if (d == hosts.size()) {
            all.tryComplete();
          } else {
            chain[0].run();
          }
        });
      };
      chains.add(() -> ctx.runOnContext(v -> chain[0].run()));
    }
    chains.forEach(Runnable::run);
    all.future().await(3600, TimeUnit.SECONDS);
    double secs = (System.nanoTime() - start) / 1e9;
    System.out.printf(Locale.ROOT, "enrolment: %d hosts in %.1f s = %.0f hosts/s (concurrency %d)%n", hosts.size(), secs,
        hosts.size() / secs, concurrency);
  }

  /**
   * Open loop: calls {@code fire(dueNanos)} {@code rate} times a second from {@code startNanos} until
   * {@code endNanos}, the calls spread round robin over the event loops and driven by a 1 ms timer on each; a late
   * call gets its original due time (so generator lag counts in the latencies). Completes when the timetable ended.
   */
  Future<Void> openLoop(double rate, long startNanos, long endNanos, LongConsumer fire) {
    if (rate <= 0) {
      return Future.succeededFuture();
    }
    double step = 1e9 / rate;
    int n = loops.size();
    List<Future<Void>> parts = new ArrayList<>();
    for (int k = 0; k < n; k++) {
      int first = k;
      Promise<Void> p = Promise.promise();
      parts.add(p.future());
      loops.get(k).runOnContext(v -> new Object() {
        long i = first;

        /** Fires every request that is due, then sleeps until the next one (at least 1 ms, the timer's unit). */
        void tick() {
          long now = System.nanoTime();
          while (true) {
            long due = startNanos + (long) (i * step);
            if (due - endNanos >= 0) {
              p.tryComplete();
              return;
            }
            if (due - now > 0) {
              vertx.setTimer(Math.max(1, (due - now) / 1_000_000), id -> tick());
              return;
            }
            i += n;
            fire.accept(due);
          }
        }
      }.tick());
    }
    return Future.all(parts).mapEmpty();
  }

  /**
   * How many calls {@link #openLoop} makes for a timetable of {@code spanNanos} at {@code rate} per second (the same
   * arithmetic), e.g. to prepare that many requests.
   */
  static int openLoopCount(double rate, long spanNanos) {
    if (rate <= 0) {
      return 0;
    }
    double step = 1e9 / rate;
    int n = 0;
    while ((long) (n * step) < spanNanos) {
      n++;
    }
    return n;
  }

  /** A short class of a transport failure: {@code timeout}, {@code connection closed}, {@code connect}, or the type. */
  static String failureKind(Throwable t) {
    String name = t.getClass().getSimpleName();
    String msg = String.valueOf(t.getMessage()).toLowerCase(Locale.ROOT);
    if (t instanceof TimeoutException || name.contains("Timeout") || msg.contains("timeout")) {
      return "timeout";
    }
    if (name.contains("Closed") || msg.contains("closed")) {
      return "connection closed";
    }
    if (name.contains("Connect") || msg.contains("connection refused")) {
      return "connect";
    }
    return name;
  }

  /** The relay's answer as an error class: {@code HTTP 503} or {@code HTTP 409 EPOCH}. */
  static String statusKind(Answer a) {
    String code = "";
    try {
      JsonNode j = a.json();
      if (j != null && j.hasNonNull("code")) {
        code = " " + j.get("code").asText();
      }
    } catch (RuntimeException ignored) {
      // not JSON
    }
    return "HTTP " + a.status() + code;
  }

  @Override
  public void close() throws java.util.concurrent.TimeoutException {
    vertx.close().await(30, TimeUnit.SECONDS);
  }
}
