package io.mbxrelay.http;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.mbxrelay.auth.EnrolmentAuthority;
import io.mbxrelay.config.RelayConfig;
import io.mbxrelay.crypto.Ed25519;
import io.mbxrelay.crypto.HopText;
import io.mbxrelay.metrics.HopFailure;
import io.mbxrelay.metrics.Outcome;
import io.mbxrelay.metrics.RejectReason;
import io.mbxrelay.metrics.RateLimitedLogger;
import io.mbxrelay.store.RelayReads;
import io.mbxrelay.http.RelayServices;
import io.mbxrelay.store.AckOutcome;
import io.mbxrelay.store.EnrolOutcome;
import io.mbxrelay.store.Enrolment;
import io.mbxrelay.store.PushOutcome;
import io.mbxrelay.store.StoreCommand;
import io.mbxrelay.wire.AcceptReceipt;
import io.mbxrelay.wire.B64;
import io.mbxrelay.wire.CanonicalJson;
import io.mbxrelay.wire.Hashes;
import io.mbxrelay.wire.Json;
import io.mbxrelay.wire.JsNumber;
import io.mbxrelay.wire.KeySpelling;
import io.mbxrelay.wire.Utf8;
import io.mbxrelay.wire.WireCheck;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.eventbus.ReplyException;
import io.vertx.core.eventbus.ReplyFailure;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.http.HttpServerResponse;
import io.vertx.core.http.HttpVersion;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import java.nio.charset.StandardCharsets;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The relay's HTTP API (docs/protocol.md §3): routing order, body caps, hop authentication and the v2 endpoints of the relay
 * core. Safe on any event loop; one instance per HTTP verticle.
 *
 * <p>Routing order (docs/protocol.md §3): body cap → info → the unsigned enrolment calls (per-address rate) → hop auth (401)
 * → route match → 404. So an unknown path without a valid hop gets 401, not 404.
 */
public final class RelayRoutes {
  private static final Logger LOG = LoggerFactory.getLogger(RelayRoutes.class);
  private static final RateLimitedLogger WARN = new RateLimitedLogger(LOG);
  private static final String HOP_FAILURE = "mbx.hopFailure";
  private static final String RAW_BYTES = "mbx.rawBytes";
  private static final String KEY_AS_SENT = "mbx.keyAsSent";
  static final String CALLER = "mbx.caller";
  private static final String HOP_TEXT = "mbx.hopText";
  private static final String HOP_TS = "mbx.hopTs";
  /** docs/protocol.md §3 "Other constants" HOST_RE. */
  public static final Pattern HOST_RE = Pattern.compile("^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$");
  /** docs/protocol.md §3 "Other constants" OWNER_FP_RE. */
  public static final Pattern OWNER_FP_RE = Pattern.compile("^[A-Za-z0-9._-]{0,64}$");
  private static final String EPOCH_CHANGED = "relay epoch changed: pull again from 0";

  private final RelayServices s;
  private final BodyBudget budget;
  private final RelayConfig.Limits limits;
  private final TrustRoutes trust;
  private final V1Routes v1;

  /** @param services shared services (a body budget of its own; tests that build routes by hand) */
  public RelayRoutes(RelayServices services) {
    this(services, new BodyBudget(services.config().http().bodyBudgetBytes(),
        services.config().http().bodyBytesPerClient()));
  }

  /**
   * @param services shared services
   * @param budget the relay's in-flight body budget, shared by every HTTP verticle instance
   */
  public RelayRoutes(RelayServices services, BodyBudget budget) {
    this.s = Objects.requireNonNull(services);
    this.budget = Objects.requireNonNull(budget);
    this.limits = services.config().limits();
    this.trust = new TrustRoutes(services, this);
    this.v1 = new V1Routes(services);
  }

  /**
   * The server's request handler: the router, behind a guard for request paths that are not in their normalised form
   * ({@link QueryParams#normalisedPath}: dot segments, repeated or trailing slashes, any {@code %}, a backslash).
   * Vert.x Web would normalise such a path before matching routes while the hop signs it as sent (issue 11 item 9),
   * and the reference answers 401 for them: 401 {@code {"error":"bad relay hop"}}, body not read.
   *
   * @param vertx Vert.x
   * @return the handler to install on the HTTP server
   */
  public io.vertx.core.Handler<HttpServerRequest> requestHandler(Vertx vertx) {
    Router router = router(vertx);
    return req -> {
      if (!QueryParams.normalisedPath(req.path())) {
        req.response().putHeader("date", httpDate());
        refuseUnread(vertx, req, 401, RelayError.BAD_HOP.body(), 0, declaredLength(req));
        return;
      }
      router.handle(req);
    };
  }

  /**
   * Builds the router.
   *
   * @param vertx Vert.x
   * @return the router with every route and the failure handler
   */
  public Router router(Vertx vertx) {
    Router r = Router.router(vertx);
    r.route().handler(this::readBody);
    r.get("/v2/relay/info").handler(this::info);
    r.post("/v1/relay/challenge").handler(this::challenge);
    r.post("/v1/relay/enrol").handler(this::enrol);
    trust.mountBeforeHop(r); // rotate (unsigned, rate-limited), admin deny (bearer token, else falls through)
    r.route().handler(this::hopAuth);
    int signedFrom = r.getRoutes().size();
    r.post("/v2/relay/items").handler(this::push);
    r.get("/v2/relay/items").handler(this::pull);
    r.post("/v2/relay/ack").handler(this::ack);
    trust.mountSigned(r); // senders, enc-key ads v1/v2
    v1.mountSigned(r); // v1 messages push, pull, ack (older hosts)

    r.route().handler(ctx -> ctx.fail(RelayError.NOT_FOUND));
    r.route().failureHandler(this::failure);
    // what answers before a route matched is labelled with the template it was addressed to (issue 12 item 4)
    List<io.vertx.ext.web.Route> routes = r.getRoutes();
    unreadLabels = RouteLabels.of(routes);
    unsignedLabels = RouteLabels.of(routes.subList(signedFrom, routes.size()));
    return r;
  }

  /** Route labels for answers from {@link #readBody} (no route with a path has matched yet). */
  private RouteLabels unreadLabels = RouteLabels.NONE;
  /** Route labels for answers from {@link #hopAuth}: only the signed routes behind it (the others matched already). */
  private RouteLabels unsignedLabels = RouteLabels.NONE;

  // ---- common ----

  private boolean smallBodyPath(String path) {
    return path.equals("/v1/relay/challenge") || path.equals("/v1/relay/enrol") || path.equals("/v2/relay/rotate");
  }

  /**
   * Whether a request is answered without a signed hop (docs/protocol.md §3 routing order: info, the three enrolment calls,
   * and the admin deny list with a valid bearer token); every other request needs one, so what its headers decide is
   * checked before its body is read.
   */
  private boolean unsigned(HttpServerRequest req) {
    String path = req.path();
    HttpMethod m = req.method();
    if (m == HttpMethod.GET && path.equals("/v2/relay/info") || m == HttpMethod.POST && smallBodyPath(path)) {
      return true;
    }
    return path.equals("/admin/deny") && s.trust().adminAuthorized(req.getHeader("authorization"));
  }

  /** The declared {@code content-length}, or -1 when absent or not a number (Netty refuses malformed ones). */
  private static long declaredLength(HttpServerRequest req) {
    String declared = req.getHeader("content-length");
    if (declared == null || declared.length() > 19) {
      return declared == null ? -1 : Long.MAX_VALUE;
    }
    try {
      return Long.parseLong(declared.trim());
    } catch (NumberFormatException e) {
      return -1;
    }
  }

  /** Whether body bytes may still arrive: a declared length, chunked transfer, or an open HTTP/2 stream. */
  private static boolean bodyPending(HttpServerRequest req, long declared) {
    if (req.isEnded() || declared == 0) {
      return false;
    }
    return declared > 0 || req.version() == HttpVersion.HTTP_2 || req.headers().contains("transfer-encoding");
  }

  /**
   * Admits a request and reads its body (docs/protocol.md §3 body cap; issue 11 item 2). In order, before any body byte is
   * read:
   * <ol>
   *   <li>a declared {@code content-length} over the route's cap → 413 (then drained ≤ 2 s and closed);
   *   <li>on a route that needs a signed hop, what the headers decide ({@link #hopHeaders}): missing, unparsable or
   *       stale {@code x-mbx-ts}, an unknown, revoked or crowded key or name → 401 {@code bad relay hop}; a push whose
   *       sender's window is used up → 429 (v2) or the v1 413 answer; a lookup that fails → 503;
   *   <li>the in-flight body budget: a declared length that does not fit → 503 {@code relay busy; retry later}.
   * </ol>
   * A request refused here gets {@code connection: close} when its body was not read. The body is then read with the
   * cap (413 on an overrun) and, without a declared length, each chunk taken from the budget as it arrives (503 when
   * it does not fit). The budget is given back when the answer ends or the connection goes away. A body that has not
   * arrived within {@code http.requestTimeoutMs} is answered 408. Own code rather than Vert.x Web's BodyHandler because
   * the cap differs per path and these answers are part of the wire contract.
   */
  private void readBody(RoutingContext ctx) {
    HttpServerRequest req = ctx.request();
    ctx.response().putHeader("date", httpDate());
    String path = req.path();
    // The enrolment calls have the small cap (docs/protocol.md §3), and so has every GET (info, pulls, ad lookups), whose
    // honest callers send no body at all: no anonymous request holds more than 8 KiB. GET bodies are not counted
    // against the budget either (a pull may outlive its connection's close notifications, see below).
    boolean get = req.method() == HttpMethod.GET;
    boolean small = get || smallBodyPath(path);
    int cap = small ? s.config().http().maxSmallBodyBytes() : s.config().http().maxBodyBytes();
    long declared = declaredLength(req);
    if (declared > cap) {
      unreadLabels.label(req);
      refuseUnread(ctx.vertx(), req, 413, RelayError.TOO_LARGE.body(), 0, declared);
      return;
    }
    if (!unsigned(req)) {
      Refusal early;
      try {
        early = hopHeaders(ctx);
      } catch (RuntimeException | OutOfMemoryError | StackOverflowError e) {
        s.metrics().hopFailure(HopFailure.LOOKUP_FAILED);
        early = lookupFailed(e);
      }
      if (early != null) {
        unreadLabels.label(req);
        refuseUnread(ctx.vertx(), req, early.status(), early.body(), early.retryAfterS(), declared);
        return;
      }
    }
    if (!bodyPending(req, declared)) {
      ctx.put(RAW_BYTES, NO_BYTES);
      if (req.isEnded()) {
        ctx.next();
      } else {
        req.endHandler(v -> ctx.next()); // the end of a request without a body is on its way
        req.resume();
      }
      return;
    }
    Taken taken = new Taken(get ? null : budget, get ? null : clientKey(req));
    if (declared > 0 && !taken.take(declared)) {
      unreadLabels.label(req);
      refuseUnread(ctx.vertx(), req, BUSY.status(), BUSY.body(), 1, declared);
      return;
    }
    if (!get) {
      // Vert.x Web calls this on the response's end, exception and close; a route must not set the response's own
      // closeHandler, or the close case is lost (the pull does; its GET bodies are small and not counted)
      ctx.addEndHandler(v -> taken.release());
    }
    // A declared body is copied once, straight into an array of its size (no growing buffer, no second copy).
    byte[] fixed = declared > 0 ? new byte[(int) declared] : null;
    Buffer[] grown = {declared > 0 ? null : Buffer.buffer()};
    int[] got = {0};
    boolean[] stopped = {false};
    long timer = ctx.vertx().setTimer(s.config().http().requestTimeoutMs(), id -> {
      if (!ctx.response().ended()) {
        stopped[0] = true;
        unreadLabels.label(req);
        answer(ctx, RelayError.REQUEST_TIMEOUT.status(), RelayError.REQUEST_TIMEOUT.body());
        if (req.version() == HttpVersion.HTTP_2) {
          ctx.response().reset(0); // only this stream: the connection's other streams go on
        } else {
          req.connection().close();
        }
      }
      taken.release();
    });
    req.exceptionHandler(e -> {
      ctx.vertx().cancelTimer(timer);
      taken.release();
    });
    req.handler(chunk -> {
      if (stopped[0]) {
        return;
      }
      int len = chunk.length();
      if ((long) got[0] + len > cap || (fixed != null && got[0] + len > fixed.length)) {
        stopped[0] = true;
        ctx.vertx().cancelTimer(timer);
        taken.release();
        unreadLabels.label(req);
        refuseRest(ctx.vertx(), req, 413, RelayError.TOO_LARGE.body(), 0);
        return;
      }
      if (fixed != null) {
        chunk.getBytes(0, len, fixed, got[0]);
      } else {
        if (!taken.take(len)) {
          stopped[0] = true;
          ctx.vertx().cancelTimer(timer);
          taken.release();
          unreadLabels.label(req);
          refuseRest(ctx.vertx(), req, BUSY.status(), BUSY.body(), 1);
          return;
        }
        grown[0].appendBuffer(chunk);
      }
      got[0] += len;
    });
    req.endHandler(v -> {
      ctx.vertx().cancelTimer(timer);
      if (stopped[0] || ctx.response().ended()) {
        return;
      }
      byte[] bytes = fixed != null ? (got[0] == fixed.length ? fixed : java.util.Arrays.copyOf(fixed, got[0]))
          : grown[0].getBytes();
      grown[0] = null; // the array is the body from here on
      ctx.put(RAW_BYTES, bytes);
      ctx.next();
    });
    req.resume();
  }

  private static final byte[] NO_BYTES = new byte[0];

  /** 503 when the in-flight body budget is used up (issue 11 item 2; docs/wire-compatibility.md). */
  static final RelayError BUSY = new RelayError(503, "relay busy; retry later", null);

  /**
   * Bytes one request took from the budget; given back once. Event-loop confined (one request's context). With no
   * budget (GET bodies, at most the small cap) nothing is counted.
   */
  private static final class Taken {
    private final BodyBudget budget;
    private final String client;
    private long bytes;

    Taken(BodyBudget budget, String client) {
      this.budget = budget;
      this.client = client;
    }

    boolean take(long n) {
      if (budget == null) {
        return true;
      }
      if (!budget.tryTake(client, n)) {
        return false;
      }
      bytes += n;
      return true;
    }

    void release() {
      if (bytes > 0) {
        budget.release(client, bytes);
        bytes = 0;
      }
    }
  }

  /**
   * The client a request's bytes are counted against in the shared budgets: its rate key (the address, or the
   * forwarded one behind a trusted proxy; IPv6 by prefix).
   */
  private String clientKey(HttpServerRequest req) {
    String socket = req.remoteAddress() == null ? "unknown" : req.remoteAddress().hostAddress();
    String addr = s.clientAddress().resolve(socket, req.getHeader("x-forwarded-for"),
        req.getHeader("cf-connecting-ip"));
    return io.mbxrelay.auth.ClientAddress.rateKey(addr, s.config().trust().ipv6PrefixBits());
  }

  /** An answer decided from the headers alone: status, body and the {@code Retry-After} seconds (0 = none). */
  private record Refusal(int status, String body, long retryAfterS) {}

  private static final Refusal BAD_HOP_REFUSAL = new Refusal(401, RelayError.BAD_HOP.body(), 0);

  /** A failure that is not a bad signature (a lookup, the clock): 503 with {@code Retry-After} (issue 10 item 10). */
  private static Refusal lookupFailed(Throwable e) {
    String error = e.getClass().getSimpleName();
    WARN.warn("hop lookup failed " + error, "hop lookup failed [error: {}]", error);
    return new Refusal(503, RelayError.STORE_UNAVAILABLE.body(), 1);
  }

  /**
   * Answers a request before (or instead of) reading its body. When body bytes may still come, the answer says
   * {@code connection: close} (HTTP/1.x), the rest is read and dropped for at most 2 s (so the client sees the answer
   * rather than a reset), and then the connection is closed (an HTTP/2 stream is reset instead).
   */
  static void refuseUnread(Vertx vertx, HttpServerRequest req, int status, String json, long retryAfterS,
      long declared) {
    boolean pending = bodyPending(req, declared);
    if (retryAfterS > 0) {
      req.response().putHeader("retry-after", Long.toString(retryAfterS));
    }
    if (!pending) {
      if (!req.response().ended()) {
        req.response().setStatusCode(status).putHeader("content-type", "application/json").end(json);
      }
      return;
    }
    refuseRest(vertx, req, status, json, retryAfterS);
  }

  private static void refuseRest(Vertx vertx, HttpServerRequest req, int status, String json, long retryAfterS) {
    HttpServerResponse res = req.response();
    boolean h2 = req.version() == HttpVersion.HTTP_2;
    if (!res.ended()) {
      if (retryAfterS > 0) {
        res.putHeader("retry-after", Long.toString(retryAfterS));
      }
      if (!h2) {
        res.putHeader("connection", "close");
      }
      res.setStatusCode(status).putHeader("content-type", "application/json").end(json);
    }
    Runnable close = () -> {
      if (h2) {
        res.reset(0); // NO_ERROR: the answer is complete, stop sending
      } else {
        req.connection().close();
      }
    };
    req.handler(chunk -> {});
    long drain = vertx.setTimer(2000, id -> close.run());
    req.endHandler(v -> {
      vertx.cancelTimer(drain);
      if (!h2) {
        req.connection().close();
      }
    });
    req.exceptionHandler(e -> vertx.cancelTimer(drain));
    req.resume();
  }

  /** The current second's HTTP date, formatted once per second rather than once per request. */
  private record HttpDate(long second, String text) {}

  private static volatile HttpDate httpDate = new HttpDate(-1, "");

  static String httpDate() {
    long second = System.currentTimeMillis() / 1000;
    HttpDate cached = httpDate;
    if (cached.second() != second) {
      cached = new HttpDate(second, DateTimeFormatter.RFC_1123_DATE_TIME.format(ZonedDateTime.now(ZoneOffset.UTC)));
      httpDate = cached;
    }
    return cached.text();
  }

  /** Writes a JSON answer once; every 503 carries {@code Retry-After} (issue 10 item 10). */
  static void answer(RoutingContext ctx, int status, String json) {
    if (ctx.response().ended()) {
      return;
    }
    if (status == 503 && !ctx.response().headers().contains("retry-after")) {
      ctx.response().putHeader("retry-after", "1");
    }
    ctx.response().setStatusCode(status).putHeader("content-type", "application/json").end(json);
  }

  static void ok(RoutingContext ctx, JsonNode body) {
    answer(ctx, 200, Json.stringify(body));
  }

  private void failure(RoutingContext ctx) {
    Throwable t = ctx.failure();
    RelayError e;
    if (t instanceof RelayError re) {
      e = re;
    } else if (io.mbxrelay.store.StoreClient.isDiskFloorRefusal(t)) {
      ctx.response().putHeader("retry-after", "60"); // the disk under store.minFreeBytes: not stored, retry later
      e = RelayError.STORE_UNAVAILABLE;
    } else if (t instanceof ReplyException rx
        && (rx.failureType() == ReplyFailure.TIMEOUT || rx.failureType() == ReplyFailure.NO_HANDLERS
        || rx.failureCode() == 503)) {
      e = RelayError.STORE_UNAVAILABLE;
    } else if (t == null && ctx.statusCode() == 413) {
      e = RelayError.TOO_LARGE;
    } else if (t == null && ctx.statusCode() > 0 && ctx.statusCode() < 500) {
      e = new RelayError(ctx.statusCode(), "bad request", null);
    } else {
      String route = ctx.currentRoute() == null || ctx.currentRoute().getPath() == null ? ""
          : ctx.currentRoute().getPath();
      String error = t == null ? "status " + ctx.statusCode() : t.getClass().getSimpleName();
      WARN.warn("request failed " + route + error, "request failed [route: {}] [error: {}]", route, error);
      e = RelayError.INTERNAL;
    }
    answer(ctx, e.status(), e.body());
  }

  /** The body as received (read once by {@link #readBody}; never copied again). */
  static byte[] rawBytes(RoutingContext ctx) {
    byte[] bytes = ctx.get(RAW_BYTES);
    return bytes == null ? NO_BYTES : bytes;
  }

  /** Parses the body as a JSON object; anything else is 400 (docs/protocol.md §3 "Bodies"). */
  static ObjectNode bodyObject(RoutingContext ctx) {
    JsonNode n;
    try {
      // docs/protocol.md §2: the server decodes the received bytes as UTF-8 with replacement characters, exactly as Node does
      n = Json.parse(rawBytes(ctx));
    } catch (IllegalArgumentException e) {
      throw RelayError.badRequest("request body is not valid JSON");
    }
    if (n == null || n.isNull()) {
      throw RelayError.badRequest("request body must be a JSON object");
    }
    if (!n.isObject()) {
      // JS reads members of an array, number or string as undefined: behave as for an empty object
      return Json.MAPPER.createObjectNode();
    }
    return (ObjectNode) n;
  }

  long now() {
    return s.clock().millis();
  }

  // ---- hop (docs/protocol.md §2) ----

  /** Longest {@code x-mbx-host} that can name an enrolment (HOST_RE: 63 characters). */
  private static final int MAX_HOST_CHARS = 63;
  /** Longest {@code x-mbx-sig} read (a signature is 88 characters; Node's lenient decoder skips junk, so allow some). */
  private static final int MAX_SIG_CHARS = 1024;

  /**
   * What the hop headers decide (docs/protocol.md §2 "Verification" up to the signature): the timestamp and its window, the
   * candidate enrolments of the key or name. The candidates come from the in-memory copy of the committed enrolments
   * ({@link io.mbxrelay.store.EnrolmentCache}): no database round trip, and a revocation is visible to the next
   * request once its COMMIT was answered. Keys are looked up in their canonical spelling (issue 11 item 4). Every
   * header is length-capped before it is parsed (issue 11 item 1). Never reads the body.
   *
   * @param out receives the candidates, in the order their keys are tried
   * @return why the hop cannot verify, or null
   */
  private HopFailure hopCandidates(RoutingContext ctx, List<Enrolment> out) {
    HttpServerRequest req = ctx.request();
    String ts = header(req, "x-mbx-ts");
    String sig = header(req, "x-mbx-sig");
    if (ts == null || sig == null) {
      return HopFailure.MISSING_HEADERS;
    }
    if (sig.length() > MAX_SIG_CHARS) {
      return HopFailure.BAD_SIGNATURE;
    }
    OptionalLong t = HopText.parseTs(ts); // linear, refuses over-long text before parsing
    if (t.isEmpty()) {
      return HopFailure.BAD_TS;
    }
    if (Math.abs(now() - t.getAsLong()) > limits.hopWindowMs()) {
      return HopFailure.STALE;
    }
    ctx.put(HOP_TS, t.getAsLong());
    String key = header(req, "x-mbx-key");
    if (key != null && !key.isEmpty()) {
      Optional<Enrolment> live = s.enrolments().get(KeySpelling.canonicalOrSelf(key)).filter(Enrolment::live);
      if (live.isEmpty()) {
        return HopFailure.UNKNOWN_KEY;
      }
      ctx.put(KEY_AS_SENT, key);
      out.add(live.get());
      return null;
    }
    String host = header(req, "x-mbx-host");
    if (host == null || host.isEmpty()) {
      return HopFailure.MISSING_HEADERS;
    }
    if (host.length() > MAX_HOST_CHARS) {
      return HopFailure.UNKNOWN_KEY; // no enrolment can carry a longer name
    }
    List<Enrolment> named = s.enrolments().liveByName(host, limits.maxPerName() + 1);
    if (named.size() > limits.maxPerName()) {
      return HopFailure.CROWDED_NAME;
    }
    if (named.isEmpty()) {
      return HopFailure.UNKNOWN_KEY;
    }
    out.addAll(named);
    return null;
  }

  /**
   * The header-only part of the hop on a route that requires one, before the body is read (issue 11 item 2): a hop
   * that cannot verify whatever the body is answered 401 at once, and a push from a sender whose window is used up
   * is refused without reading its items.
   *
   * @return the refusal, or null to read the body
   */
  private Refusal hopHeaders(RoutingContext ctx) {
    List<Enrolment> candidates = new ArrayList<>(1);
    HopFailure why = hopCandidates(ctx, candidates);
    if (why != null) {
      s.metrics().hopFailure(why);
      return BAD_HOP_REFUSAL;
    }
    HttpServerRequest req = ctx.request();
    if (req.method() == HttpMethod.POST && candidates.size() == 1) {
      boolean v2 = req.path().equals("/v2/relay/items");
      if (v2 || req.path().equals("/v1/relay/messages")) {
        // A look, not a count: only a push whose signature verifies counts against the sender's window, so nobody
        // can use up another host's window by sending its key with a bad signature.
        long waitMs = s.pushRate().msUntilAllowed(candidates.get(0).hostPubkey(), now());
        if (waitMs > 0) {
          s.metrics().itemRejected(RejectReason.RATE); // counted once per refused request: its items were not read
          long retryAfterS = Math.max(1, (waitMs + 999) / 1000);
          String text = "push rate exceeded (" + limits.pushRequestsPerMinute() + "/min)";
          return v2 ? new Refusal(429, new RelayError(429, text, null).body(), retryAfterS)
              : new Refusal(413, Json.stringify(Json.MAPPER.createObjectNode().put("stored", 0).put("error", text)),
                  retryAfterS);
        }
      }
    }
    return null;
  }

  /**
   * Verifies the signed hop; empty when it does not verify. The header checks run again here (cheap, in memory): the
   * body may have taken seconds to arrive. Fails (→ 503, never 401) only when a lookup throws.
   */
  private Future<Optional<Enrolment>> verifyHop(RoutingContext ctx) {
    List<Enrolment> candidates = new ArrayList<>(1);
    HopFailure why;
    try {
      why = hopCandidates(ctx, candidates);
    } catch (RuntimeException | OutOfMemoryError | StackOverflowError e) {
      lookupFailed(e);
      return Future.failedFuture(RelayError.STORE_UNAVAILABLE);
    }
    if (why != null) {
      return hopFailed(ctx, why);
    }
    HttpServerRequest req = ctx.request();
    String path = HopText.signedPath(req.path(), req.query());
    byte[] text = HopText.signedBytes(req.method().name(), path, header(req, "x-mbx-ts"), rawBytes(ctx));
    ctx.put(HOP_TEXT, text);
    String sig = header(req, "x-mbx-sig");
    for (Enrolment e : candidates) {
      if (Ed25519.verify(e.hostPubkey(), text, sig)) {
        return Future.succeededFuture(Optional.of(e));
      }
    }
    return hopFailed(ctx, HopFailure.BAD_SIGNATURE);
  }

  /** Records why a hop did not verify (counted only where the hop is required) and answers "no caller". */
  private static Future<Optional<Enrolment>> hopFailed(RoutingContext ctx, HopFailure why) {
    ctx.put(HOP_FAILURE, why);
    return Future.succeededFuture(Optional.empty());
  }

  /** A header as Node presents it: repeated values joined with {@code ", "}. */
  private static String header(HttpServerRequest req, String name) {
    List<String> all = req.headers().getAll(name);
    return all.isEmpty() ? null : all.size() == 1 ? all.get(0) : String.join(", ", all);
  }

  /**
   * The caller's key as the wire echoes it ({@code you.pubkey}, an accept receipt's {@code sender_pubkey}): the
   * {@code x-mbx-key} spelling the caller sent when it names the caller's key, else the stored (canonical) key.
   * Honest clients send the canonical spelling, so this is the stored key for them.
   */
  static String callerKeyAsSent(RoutingContext ctx, Enrolment caller) {
    String sent = ctx.get(KEY_AS_SENT);
    return sent != null && !sent.equals(caller.hostPubkey()) && KeySpelling.same(sent, caller.hostPubkey()) ? sent
        : caller.hostPubkey();
  }

  /**
   * A callback that answers with the route's failure when it throws: an exception thrown in a future's callback never
   * reaches the router, and the request would get no answer until the idle timeout.
   */
  static <T> io.vertx.core.Handler<T> guarded(RoutingContext ctx, io.vertx.core.Handler<T> handler) {
    return value -> {
      try {
        handler.handle(value);
      } catch (RuntimeException e) {
        ctx.fail(e);
      }
    };
  }

  /** The signed POST routes that change state (their exact replays are refused). */
  private static final Set<String> STATE_CHANGING = Set.of("/v2/relay/items", "/v2/relay/ack", "/v2/relay/senders",
      "/v1/relay/enc-key", "/v2/relay/enc-key", "/v1/relay/messages", "/v1/relay/ack");

  private void hopAuth(RoutingContext ctx) {
    verifyHop(ctx).onComplete(ar -> {
      if (ar.failed()) {
        s.metrics().hopFailure(HopFailure.LOOKUP_FAILED);
        unsignedLabels.label(ctx.request());
        ctx.fail(ar.cause());
        return;
      }
      if (ar.result().isPresent()) {
        Enrolment caller = ar.result().get();
        // the request paths are normalised before routing (QueryParams.normalisedPath), so this is the routed path
        if (ctx.request().method() == HttpMethod.POST && STATE_CHANGING.contains(ctx.request().path())) {
          // Replay protection beyond the reference (issue 3 item 7): an exact replay of a state-changing hop inside
          // its freshness window is refused as a bad hop; a retry re-signed with a fresh ts is a new hop. Only routes
          // that change state are remembered, so requests to unknown paths cannot fill the cache.
          if (s.trust().replay().admit(caller.hostPubkey(), ctx.<byte[]>get(HOP_TEXT), ctx.<Long>get(HOP_TS), now())
              == io.mbxrelay.auth.HopReplayCache.Result.REPLAY) {
            unsignedLabels.label(ctx.request());
            ctx.fail(RelayError.BAD_HOP);
            return;
          }
        }
        ctx.remove(HOP_TEXT); // a copy of the body; not needed past here
        ctx.put(CALLER, caller);
        ctx.next();
      } else {
        HopFailure why = ctx.get(HOP_FAILURE);
        s.metrics().hopFailure(why == null ? HopFailure.LOOKUP_FAILED : why);
        unsignedLabels.label(ctx.request());
        ctx.fail(RelayError.BAD_HOP);
      }
    });
  }

  // ---- info (docs/protocol.md §4.7) ----

  private void info(RoutingContext ctx) {
    ObjectNode info = Json.MAPPER.createObjectNode();
    info.put("v", 2);
    info.put("relay_pubkey", s.relayKey().publicKeyB64());
    info.put("epoch", s.epoch());
    info.put("version", s.version());
    ObjectNode l = info.putObject("limits");
    l.put("max_item_bytes", limits.maxItemBytes());
    l.put("max_batch", limits.maxBatch());
    l.put("max_pull", limits.maxPull());
    l.put("max_pull_bytes", limits.maxPullBytes());
    l.put("max_targets", limits.maxTargets());
    l.put("retention_days", limits.retentionDays());
    l.put("max_queue_items", limits.maxQueueItems());
    l.put("max_queue_bytes", limits.maxQueueBytes());
    l.put("max_sender_items", limits.maxSenderItems());
    l.put("max_sender_bytes", limits.maxSenderBytes());
    l.put("max_owner_items", limits.maxOwnerItems());
    l.put("max_owner_bytes", limits.maxOwnerBytes());
    // Beyond the reference (issue 9): what this relay can do that a client may use; clients ignore unknown keys.
    info.putObject("features").put("pull_wait_max_seconds", maxWaitSeconds());
    verifyHop(ctx).compose(caller -> {
      if (caller.isEmpty()) {
        return Future.succeededFuture(info);
      }
      Enrolment e = caller.get();
      return s.reads().hostState(e.hostPubkey()).map(y -> {
        ObjectNode you = info.putObject("you");
        you.put("host", e.hostName());
        you.put("pubkey", callerKeyAsSent(ctx, e));
        you.put("head_seq", y.headSeq());
        you.put("acked_through", y.ackedThrough());
        you.set("enc_ad", encAdSummary(y));
        return info;
      });
    }).onSuccess(body -> ok(ctx, body)).onFailure(ctx::fail);
  }

  private static JsonNode encAdSummary(io.mbxrelay.store.HostState y) {
    if (y.v1EncPub() == null && y.v2Record() == null) {
      return Json.MAPPER.nullNode();
    }
    ObjectNode ad = Json.MAPPER.createObjectNode();
    JsonNode rec = null;
    if (y.v2Record() != null) {
      try {
        rec = Json.parse(y.v2Record());
      } catch (IllegalArgumentException e) {
        rec = null;
      }
    }
    ad.set("enc_pub", rec != null && rec.path("enc_pub").isTextual() ? rec.get("enc_pub") : Json.MAPPER.nullNode());
    ad.set("exp", rec != null && rec.has("exp") ? rec.get("exp") : Json.MAPPER.nullNode());
    if (y.v1EncPub() == null) {
      ad.putNull("v1");
    } else {
      ad.put("v1", y.v1EncPub());
    }
    return ad;
  }

  // ---- enrolment calls (docs/protocol.md §4.1) ----

  boolean rateLimited(RoutingContext ctx) {
    HttpServerRequest req = ctx.request();
    String socket = req.remoteAddress() == null ? "unknown" : req.remoteAddress().hostAddress();
    String addr = s.clientAddress().resolve(socket, req.getHeader("x-forwarded-for"),
        req.getHeader("cf-connecting-ip"));
    if (!s.enrolRate().tryAcquire(addr, now())) {
      ctx.fail(RelayError.RATE);
      return true;
    }
    return false;
  }

  static boolean truthy(JsonNode n) {
    if (n == null || n.isNull() || n.isMissingNode()) {
      return false;
    }
    if (n.isTextual()) {
      return !n.textValue().isEmpty();
    }
    if (n.isBoolean()) {
      return n.booleanValue();
    }
    if (n.isNumber()) {
      double d = n.doubleValue();
      return d != 0 && !Double.isNaN(d);
    }
    return true;
  }

  private void challenge(RoutingContext ctx) {
    if (rateLimited(ctx)) {
      return;
    }
    ObjectNode body = bodyObject(ctx);
    JsonNode host = body.get("host");
    JsonNode pubkey = body.get("pubkey");
    if (!truthy(host) || !truthy(pubkey)) {
      throw RelayError.badRequest("host and pubkey required");
    }
    if (!host.isTextual() || !HOST_RE.matcher(host.textValue()).matches()) {
      throw RelayError.badRequest("bad host name");
    }
    if (!pubkey.isTextual() || !B64.isPubkey(pubkey.textValue())) {
      throw RelayError.badRequest("bad host key");
    }
    Optional<String> nonce = s.challenges().issue(pubkey.textValue(), now());
    if (nonce.isEmpty()) {
      // the reference's challenge errors carry no code (only enrol's do)
      throw new RelayError(503, "too many open enrolment challenges; retry later", null);
    }
    ObjectNode out = Json.MAPPER.createObjectNode();
    out.put("challenge", nonce.get());
    ok(ctx, out);
  }

  private void enrol(RoutingContext ctx) {
    if (rateLimited(ctx)) {
      return;
    }
    ObjectNode body = bodyObject(ctx);
    JsonNode host = body.get("host");
    JsonNode pubkey = body.get("pubkey");
    JsonNode ownerFp = body.get("owner_fp");
    JsonNode sig = body.get("sig");
    if (!truthy(host) || !truthy(pubkey) || !truthy(sig) || ownerFp == null) {
      // no code: the reference answers this one before its enrolment core, as {"error"} alone (issue 12 item 11)
      throw RelayError.badRequest("incomplete enrolment");
    }
    if (!host.isTextual() || !HOST_RE.matcher(host.textValue()).matches() || !pubkey.isTextual()
        || !B64.isPubkey(pubkey.textValue()) || !ownerFp.isTextual()
        || !OWNER_FP_RE.matcher(ownerFp.textValue()).matches() || !sig.isTextual()) {
      throw new RelayError(400, "bad enrolment fields", "BAD_REQUEST");
    }
    String sent = pubkey.textValue();
    // stored, compared, revoked and denied in the canonical spelling (issue 11 item 4): another spelling of a
    // revoked key is the revoked key; the signature is over the record as the client built it
    String key = KeySpelling.canonical(sent).orElseThrow();
    Optional<String> challenge = s.challenges().pending(key, now());
    if (challenge.isEmpty()) {
      throw new RelayError(401, "no pending enrolment challenge", null);
    }
    ObjectNode rec = Json.MAPPER.createObjectNode();
    rec.put("v", 1);
    rec.put("challenge", challenge.get());
    rec.put("host", host.textValue());
    rec.put("pubkey", sent);
    rec.put("owner_fp", ownerFp.textValue());
    if (!Ed25519.verify(key, CanonicalJson.canonicalBytes(rec), sig.textValue())) {
      throw new RelayError(401, "bad enrolment signature", null);
    }
    s.challenges().consume(key, challenge.get());
    EnrolmentAuthority.Request request = new EnrolmentAuthority.Request(host.textValue(), key, ownerFp.textValue(),
        body.get("proof"));
    java.util.concurrent.CompletionStage<EnrolmentAuthority.Decision> decided;
    try {
      decided = s.authority().decide(request);
    } catch (RuntimeException e) {
      decided = java.util.concurrent.CompletableFuture.failedFuture(e);
    }
    Future.fromCompletionStage(decided, ctx.vertx().getOrCreateContext())
        .otherwise(e -> new EnrolmentAuthority.Decision(false, null, null, "the enrolment authority is unavailable"))
        .onSuccess(d -> enrolDecided(ctx, host.textValue(), key, ownerFp.textValue(), d));
  }

  private void enrolDecided(RoutingContext ctx, String hostName, String key, String ownerFp,
      EnrolmentAuthority.Decision d) {
    if (d == null || !d.ok()) {
      s.metrics().enrolment(Outcome.DENIED);
      String reason = d == null ? null : d.reason();
      ctx.fail(denied(reason));
      return;
    }
    String account = d.account();
    s.writes().send(new StoreCommand.Enrol(hostName, key, ownerFp, account,
        account == null ? null : s.authority().name(), d.clientId(), d.org())).onSuccess(outcome -> {
          s.metrics().enrolment(switch (outcome) {
            case OK -> Outcome.OK;
            case FULL -> Outcome.FULL;
            case REVOKED -> Outcome.REVOKED;
            case NAME_TAKEN -> Outcome.NAME_TAKEN;
            case DENIED -> Outcome.DENIED;
          });
          switch (outcome) {
            case OK -> {
              ObjectNode out = Json.MAPPER.createObjectNode();
              out.put("ok", true);
              ok(ctx, out);
            }
            case FULL -> ctx.fail(new RelayError(503, "relay enrolment capacity reached", "FULL"));
            case REVOKED -> ctx.fail(new RelayError(403, "this host key was revoked on this relay", "REVOKED"));
            case NAME_TAKEN -> ctx.fail(new RelayError(409, "host name " + hostName
                + " is already enrolled in this account with another key", "NAME_TAKEN"));
            case DENIED -> ctx.fail(denied("this host is on the relay's deny list"));
            default -> ctx.fail(RelayError.INTERNAL);
          }
        }).onFailure(ctx::fail);
  }

  private static RelayError denied(String reason) {
    String text = "enrolment not authorized"
        + (reason == null || reason.isEmpty() ? "" : ": " + (reason.length() > 200 ? reason.substring(0, 200) : reason));
    return new RelayError(403, text, "DENIED");
  }

  // ---- push v2 (docs/protocol.md §3) ----

  /**
   * One pushed item after the checks that need no store (docs/protocol.md §3 push v2 steps 1–5 as far as the request alone
   * decides them): either refused already ({@code early} set) or a {@link StoreCommand.Push} for the writer.
   */
  private record PreparedItem(String echoId, io.mbxrelay.store.RejectReason.Rejection early, StoreCommand.Push push,
      List<String> keysAsSent) {
    PreparedItem(String echoId, io.mbxrelay.store.RejectReason.Rejection early, StoreCommand.Push push) {
      this(echoId, early, push, null);
    }
  }

  private void push(RoutingContext ctx) {
    Enrolment caller = ctx.get(CALLER);
    ObjectNode body = bodyObject(ctx);
    JsonNode items = body.get("items");
    if (items == null || !items.isArray() || items.size() > limits.maxBatch()) {
      throw new RelayError(400, "batch must be an array of at most " + limits.maxBatch(), null);
    }
    boolean withinRate = s.pushRate().tryAcquire(caller.hostPubkey(), now());
    List<PreparedItem> prepared = new ArrayList<>(items.size());
    List<StoreCommand.Push> toStore = new ArrayList<>(items.size());
    for (JsonNode item : items) {
      PreparedItem p = prepare(caller, item, withinRate);
      prepared.add(p);
      if (p.push() != null) {
        toStore.add(p.push());
      }
    }
    if (toStore.isEmpty()) {
      answerPush(ctx, caller, prepared, List.of());
      return;
    }
    // the whole request is one command: one event-bus message, one savepoint, grouped with other requests' commands
    s.writes().send(new StoreCommand.PushBatch(toStore))
        .onSuccess(guarded(ctx, outcomes -> answerPush(ctx, caller, prepared, outcomes)))
        .onFailure(ctx::fail);
  }

  /**
   * Answers {@code {results:[…]}} in request order: refusals as {@code rejected:<why>}, stored items with their
   * accept receipt signed by the relay key (docs/protocol.md §3 "Success result"), written without building a JSON tree.
   */
  private void answerPush(RoutingContext ctx, Enrolment caller, List<PreparedItem> prepared,
      List<PushOutcome> outcomes) {
    StringBuilder out = new StringBuilder(32 + prepared.size() * 960);
    String sender = callerKeyAsSent(ctx, caller);
    out.append("{\"results\":[");
    int next = 0;
    for (int i = 0; i < prepared.size(); i++) {
      if (i > 0) {
        out.append(',');
      }
      PreparedItem p = prepared.get(i);
      PushOutcome outcome = p.push() == null ? new PushOutcome.Rejected(p.early()) : outcomes.get(next++);
      if (outcome instanceof PushOutcome.Rejected r) {
        AcceptReceipt.appendRejected(p.echoId(), r.wireText(), out);
        s.metrics().itemRejected(r.reason());
        continue;
      }
      PushOutcome.Stored st = (PushOutcome.Stored) outcome;
      List<AcceptReceipt.Target> targets = new ArrayList<>(st.targets().size());
      for (int j = 0; j < st.targets().size(); j++) {
        PushOutcome.TargetSeq t = st.targets().get(j);
        // stored targets are in request order; the receipt echoes each key as the caller spelled it
        String key = p.keysAsSent() == null ? t.hostPubkey() : p.keysAsSent().get(j);
        targets.add(new AcceptReceipt.Target(key, t.seq(), t.wireHash()));
      }
      AcceptReceipt receipt = new AcceptReceipt(s.relayKey().publicKeyB64(), st.epoch(), sender,
          p.echoId(), targets, st.at());
      receipt.appendResult(st.fresh(), s.relayKey().signB64(receipt.canonicalBytes()), out);
      if (st.fresh()) {
        s.metrics().itemAccepted();
      } else {
        s.metrics().itemDuplicate();
      }
    }
    out.append("]}");
    answer(ctx, 200, out.toString());
  }

  private static io.mbxrelay.store.RejectReason.Rejection early(io.mbxrelay.store.RejectReason reason) {
    return new io.mbxrelay.store.RejectReason.Rejection(reason, null);
  }

  private PreparedItem prepare(Enrolment caller, JsonNode item, boolean withinRate) {
    JsonNode idNode = item.get("item_id");
    String echoId = idNode != null && idNode.isTextual() ? idNode.textValue() : "";
    if (!withinRate) {
      return new PreparedItem(echoId, early(io.mbxrelay.store.RejectReason.RATE), null);
    }
    if (idNode == null || !idNode.isTextual() || echoId.isEmpty() || echoId.length() > 300) {
      return new PreparedItem(echoId, early(io.mbxrelay.store.RejectReason.BAD_ITEM_ID), null);
    }
    JsonNode kindNode = item.get("kind");
    String kind = kindNode != null && kindNode.isTextual() ? kindNode.textValue() : "";
    if (!kind.equals("envelope") && !kind.equals("receipt")) {
      return new PreparedItem(echoId, early(io.mbxrelay.store.RejectReason.BAD_KIND), null);
    }
    JsonNode targets = item.get("targets");
    if (targets == null || !targets.isArray() || targets.isEmpty() || targets.size() > limits.maxTargets()) {
      return new PreparedItem(echoId, early(io.mbxrelay.store.RejectReason.BAD_TARGETS), null);
    }
    List<StoreCommand.Target> list = new ArrayList<>(targets.size());
    Set<String> seen = targets.size() == 1 ? null : new HashSet<>();
    List<String> keysAsSent = null;
    for (JsonNode t : targets) {
      JsonNode keyNode = t.get("host_pubkey");
      String sent = keyNode != null && keyNode.isTextual() ? keyNode.textValue() : "";
      // targets are looked up, compared and stored in the canonical spelling (issue 11 item 4): two spellings of one
      // key are a duplicate target; an honest client's key is already canonical (no allocation)
      String key = KeySpelling.isCanonical(sent) ? sent : KeySpelling.canonicalOrSelf(sent);
      if (keysAsSent == null && !key.equals(sent)) {
        keysAsSent = new ArrayList<>(targets.size());
        for (StoreCommand.Target before : list) {
          keysAsSent.add(before.hostPubkey());
        }
      }
      if (keysAsSent != null) {
        keysAsSent.add(sent);
      }
      io.mbxrelay.store.RejectReason.Rejection failure = null;
      byte[] wire = null;
      String hash = null;
      if (seen != null && !seen.add(key)) {
        failure = early(io.mbxrelay.store.RejectReason.DUPLICATE_TARGET);
      } else {
        JsonNode w = t.get("wire_b64");
        Optional<byte[]> decoded = w != null && w.isTextual() && B64.isStdB64(w.textValue())
            ? B64.decodeLenient(w.textValue()) : Optional.empty();
        if (decoded.isEmpty()) {
          failure = early(io.mbxrelay.store.RejectReason.BAD_WIRE);
        } else if (decoded.get().length > limits.maxItemBytes()) {
          failure = early(io.mbxrelay.store.RejectReason.SIZE);
        } else {
          wire = decoded.get();
          failure = WireCheck.check(kind, echoId, wire, caller.hostPubkey()).map(io.mbxrelay.store.RejectReason::parse)
              .orElse(null);
          hash = failure == null ? Hashes.sha256Hex(wire) : null;
          if (failure != null) {
            wire = null;
          }
        }
      }
      list.add(new StoreCommand.Target(key, wire, hash, failure));
      if (failure != null) {
        break; // targets after the first failing one cannot change the result
      }
    }
    // the enrolment and allowlist checks that docs/protocol.md §3 orders before these failures run in the writer
    return new PreparedItem(echoId, null,
        new StoreCommand.Push(caller.hostPubkey(), caller.hostName(), kind, echoId, list), keysAsSent);
  }

  // ---- pull v2 (docs/protocol.md §3) ----

  private void pull(RoutingContext ctx) {
    Enrolment caller = ctx.get(CALLER);
    QueryParams q = QueryParams.parse(ctx.request().query());
    double afterN = Math.floor(JsNumber.ofString(q.get("after")));
    long after = Double.isNaN(afterN) || afterN < 0 ? 0 : (long) Math.min(afterN, JsNumber.MAX_SAFE);
    String limitRaw = q.get("limit");
    double limitN = Math.floor(limitRaw == null ? limits.maxPull() : JsNumber.ofString(limitRaw));
    int limit = Double.isNaN(limitN) || limitN == 0 ? limits.maxPull()
        : (int) Math.max(1, Math.min(limits.maxPull(), limitN));
    if (q.contains("epoch") && !s.epoch().equals(q.get("epoch"))) {
      ObjectNode extra = Json.MAPPER.createObjectNode();
      extra.put("epoch", s.epoch());
      throw new RelayError(409, EPOCH_CHANGED, null, extra);
    }
    new PagePull(ctx, caller.hostPubkey(), after, limit, waitMs(q.get("wait"))).start();
  }

  /** The most a pull may wait, s: 60, and always 5 s inside the connection idle timeout. */
  int maxWaitSeconds() {
    return (int) Math.max(0, Math.min(60, (s.config().http().idleTimeoutMs() - 5_000) / 1000));
  }

  /** {@code wait} in ms: {@code floor(Number(wait))} seconds, clamped to 0..{@link #maxWaitSeconds()}; absent → 0. */
  private long waitMs(String raw) {
    if (raw == null) {
      return 0;
    }
    double w = Math.floor(JsNumber.ofString(raw));
    return Double.isNaN(w) || w <= 0 ? 0 : (long) Math.min(w, maxWaitSeconds()) * 1000;
  }

  /**
   * One pull page, possibly a long poll: read the page; when it is empty and the caller asked to wait, stay registered
   * with {@link PullWaiters} until an item for the caller commits (then read again) or the wait ends (then read again
   * and answer what is there, normally the empty page). Registered before the first read, so an item committed while
   * that read runs still wakes it. A wake that finds nothing (a rolled-back insert) waits on. Every step runs on the
   * request's event loop.
   */
  private final class PagePull implements PullWaiters.Waiter {
    private final RoutingContext ctx;
    private final String target;
    private final String client;
    private final long after;
    private final int limit;
    private final long deadlineNanos;
    private Runnable unregister;
    private long timer = -1;
    private boolean reading;
    private boolean wokenWhileReading;
    private boolean done;

    PagePull(RoutingContext ctx, String target, long after, int limit, long waitMs) {
      this.ctx = ctx;
      this.target = target;
      this.client = clientKey(ctx.request());
      this.after = after;
      this.limit = limit;
      this.deadlineNanos = waitMs == 0 ? 0 : System.nanoTime() + waitMs * 1_000_000L;
    }

    void start() {
      if (deadlineNanos != 0) {
        unregister = s.waiters().register(target, ctx.vertx().getOrCreateContext(), this);
        if (unregister != null) {
          // the routing context's end handler runs on answer and on close alike (a response closeHandler would
          // replace Vert.x Web's own, which the body budget's release relies on)
          ctx.addEndHandler(ar -> finish());
          timer = ctx.vertx().setTimer(Math.max(1, (deadlineNanos - System.nanoTime()) / 1_000_000L), id -> {
            timer = -1;
            read(true);
          });
        }
      }
      read(false);
    }

    @Override
    public void woken() {
      if (done) {
        return;
      }
      if (reading) {
        wokenWhileReading = true;
      } else {
        read(false);
      }
    }

    @Override
    public void released() {
      if (done) {
        return;
      }
      if (timer != -1) {
        ctx.vertx().cancelTimer(timer);
        timer = -1; // no longer waiting: the next read answers whatever it finds
      }
      read(true);
    }

    private void read(boolean last) {
      if (done) {
        return;
      }
      if (reading) {
        wokenWhileReading |= last;
        return;
      }
      if (deadlineNanos != 0 && s.enrolments().get(target).isEmpty()) {
        // revoked (deny, rotation) while it waited: the answer a fresh request would get, not a page
        finish();
        ctx.fail(RelayError.BAD_HOP);
        return;
      }
      reading = true;
      wokenWhileReading = false;
      s.reads().pull(target, after, limit, limits.maxPullBytes(), s.pageBudget(), client).onComplete(ar -> {
        reading = false;
        if (ar.failed()) {
          if (!done) {
            finish();
            if (ar.cause() instanceof io.mbxrelay.budget.PageBudget.Exhausted) {
              ctx.response().putHeader("retry-after", "1");
              ctx.fail(RelayError.BUSY);
            } else {
              ctx.fail(ar.cause());
            }
          }
          return;
        }
        io.mbxrelay.store.Page page = ar.result();
        long held = page.wireBytes(); // held in the budget by the read; released when the answer is done
        if (done) {
          s.pageBudget().release(client, held);
          return;
        }
        boolean waiting = unregister != null && timer != -1 && System.nanoTime() < deadlineNanos;
        if (!page.damaged().isEmpty()) {
          setAside(target, page.damaged());
        }
        if (page.items().isEmpty() && page.damaged().isEmpty() && waiting) {
          if (wokenWhileReading) {
            read(false); // an item committed while this read ran
          }
          return; // wait for an item or the deadline
        }
        finish();
        s.metrics().pullPage(page.items().size());
        writePage(ctx, page, after, client, held);
      });
    }

    private void finish() {
      done = true;
      if (unregister != null) {
        unregister.run();
        unregister = null;
      }
      if (timer != -1) {
        ctx.vertx().cancelTimer(timer);
        timer = -1;
      }
    }
  }

  /**
   * Writes a pull page (docs/protocol.md §3 key order {@code epoch, head_seq, items, last_seq, more}) item by item with
   * back-pressure: an item is written only while the connection's write queue is below its mark, the rest when the
   * client has read (issue 10 item 12). So a full 8 MiB page never exists as one JSON tree and one string, and a client
   * that does not read holds at most its page's wire bytes ({@code held}, counted in {@link io.mbxrelay.budget.PageBudget} until the
   * answer ended or the connection closed). The bytes are exactly
   * those of {@code JSON.stringify} of the whole answer; only the transfer is chunked.
   */
  private void writePage(RoutingContext ctx, io.mbxrelay.store.Page page, long after, String client, long held) {
    if (ctx.response().ended() || ctx.response().closed()) {
      s.pageBudget().release(client, held);
      return; // the client went away; nothing was acked, so nothing is lost
    }
    io.vertx.core.http.HttpServerResponse resp = ctx.response();
    boolean[] released = {false};
    Runnable release = () -> {
      if (!released[0]) {
        released[0] = true;
        s.pageBudget().release(client, held);
      }
    };
    ctx.addEndHandler(ar -> release.run());
    resp.setStatusCode(200).putHeader("content-type", "application/json").setChunked(true)
        .setWriteQueueMaxSize(WRITE_QUEUE_BYTES);
    resp.write("{\"epoch\":" + Json.stringify(Json.MAPPER.getNodeFactory().textNode(s.epoch()))
        + ",\"head_seq\":" + page.headSeq() + ",\"items\":[");
    java.util.Iterator<io.mbxrelay.store.PulledItem> items = page.items().iterator();
    long last = page.throughSeq() >= 0 ? page.throughSeq() : after; // past withheld damaged rows too
    String tail = "],\"last_seq\":" + last + ",\"more\":" + page.more() + "}";
    new Object() {
      boolean first = true;

      void next() {
        while (items.hasNext()) {
          if (resp.closed()) {
            release.run();
            return;
          }
          if (resp.writeQueueFull()) {
            resp.drainHandler(v -> next());
            return;
          }
          io.mbxrelay.store.PulledItem it = items.next();
          StringBuilder b = new StringBuilder(64 + it.wire().length * 4 / 3);
          b.append(first ? "{\"seq\":" : ",{\"seq\":").append(Json.number(it.seq())).append(",\"kind\":");
          Json.appendString(it.kind(), b);
          b.append(",\"item_id\":");
          Json.appendString(it.itemId(), b);
          b.append(",\"sender_pubkey\":");
          Json.appendString(it.senderPubkey(), b);
          b.append(",\"wire_b64\":\"").append(B64.encode(it.wire())).append("\"}");
          resp.write(b.toString());
          first = false;
        }
        resp.end(tail).onComplete(ar -> release.run());
      }
    }.next();
  }

  /**
   * Damaged rows a page read found (issue 10 item 1): counted, logged without their content, and moved out of the
   * queue by the writer, so the host is never served them and is not stopped by them (the page's {@code last_seq}
   * already covers them).
   */
  void setAside(String target, List<Long> seqs) {
    s.metrics().damagedItems(seqs.size());
    WARN.warn("damaged item", "pull withheld damaged items [count: {}] [target: {}]: wire does not match its hash",
        seqs.size(), io.mbxrelay.crypto.Fingerprint.ofB64(target));
    s.writes().send(new StoreCommand.SetAsideDamaged(target, seqs)).onFailure(e -> WARN.warn("set aside failed",
        "damaged items not set aside yet [error: {}]: the next pull finds them again", e.toString()));
  }

  /** A pull answer's write-queue mark, bytes: above it, the next item waits until the client read. */
  private static final int WRITE_QUEUE_BYTES = 256 * 1024;

  // ---- ack v2 (docs/protocol.md §3) ----

  private void ack(RoutingContext ctx) {
    Enrolment caller = ctx.get(CALLER);
    ObjectNode body = bodyObject(ctx);
    String epoch = jsString(body.get("epoch"));
    OptionalLong through = JsNumber.safeFloor(JsNumber.of(body.get("through")));
    s.writes().send(new StoreCommand.Ack(caller.hostPubkey(), epoch, through)).onSuccess(outcome -> {
      if (outcome instanceof AckOutcome.Done d) {
        s.metrics().ack(Outcome.OK, d.deleted());
        ObjectNode out = Json.MAPPER.createObjectNode();
        out.put("acked_through", d.ackedThrough());
        out.put("deleted", d.deleted());
        out.put("head_seq", d.headSeq());
        ok(ctx, out);
      } else if (outcome instanceof AckOutcome.EpochChanged e) {
        s.metrics().ack(Outcome.EPOCH_CHANGED, 0);
        ObjectNode extra = Json.MAPPER.createObjectNode();
        extra.put("epoch", e.epoch());
        extra.put("head_seq", e.headSeq());
        ctx.fail(new RelayError(409, EPOCH_CHANGED, "EPOCH", extra));
      } else if (outcome instanceof AckOutcome.BadAck b) {
        s.metrics().ack(Outcome.BAD_ACK, 0);
        ObjectNode extra = Json.MAPPER.createObjectNode();
        extra.put("epoch", b.epoch());
        extra.put("head_seq", b.headSeq());
        ctx.fail(new RelayError(400, "ack beyond the last allocated seq: treat as an epoch change", "BAD_ACK",
            extra));
      }
    }).onFailure(ctx::fail);
  }

  /** JS {@code String(x ?? "")} of a JSON member. */
  private static String jsString(JsonNode n) {
    if (n == null || n.isNull() || n.isMissingNode()) {
      return "";
    }
    if (n.isTextual()) {
      return n.textValue();
    }
    if (n.isNumber() && !Double.isFinite(n.doubleValue())) {
      return n.doubleValue() > 0 ? "Infinity" : "-Infinity"; // String(1e999); canonical JSON refuses it
    }
    if (n.isNumber() || n.isBoolean()) {
      return CanonicalJson.canonicalize(n);
    }
    if (n.isArray()) {
      // Array.prototype.toString: elements joined with ",", null and undefined as ""
      List<String> parts = new ArrayList<>();
      n.forEach(e -> parts.add(e.isNull() ? "" : jsString(e)));
      return String.join(",", parts);
    }
    return "[object Object]";
  }

}
