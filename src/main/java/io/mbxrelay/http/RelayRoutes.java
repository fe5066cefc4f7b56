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
import io.mbxrelay.server.RateLimitedLogger;
import io.mbxrelay.server.ReadStore;
import io.mbxrelay.server.RelayServices;
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
import io.mbxrelay.wire.Utf8;
import io.mbxrelay.wire.WireCheck;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.eventbus.ReplyException;
import io.vertx.core.eventbus.ReplyFailure;
import io.vertx.core.http.HttpServerRequest;
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
 * The relay's HTTP API (wire.md §3): routing order, body caps, hop authentication and the v2 endpoints of the relay
 * core. Safe on any event loop; one instance per HTTP verticle.
 *
 * <p>Routing order (wire.md §3): body cap → info → the unsigned enrolment calls (per-address rate) → hop auth (401)
 * → route match → 404. So an unknown path without a valid hop gets 401, not 404.
 */
public final class RelayRoutes {
  private static final Logger LOG = LoggerFactory.getLogger(RelayRoutes.class);
  private static final RateLimitedLogger WARN = new RateLimitedLogger(LOG);
  private static final String HOP_FAILURE = "mbx.hopFailure";
  private static final String RAW = "mbx.raw";
  private static final String RAW_BYTES = "mbx.rawBytes";
  static final String CALLER = "mbx.caller";
  private static final String HOP_TEXT = "mbx.hopText";
  private static final String HOP_TS = "mbx.hopTs";
  /** wire.md §3 "Other constants" HOST_RE. */
  public static final Pattern HOST_RE = Pattern.compile("^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$");
  /** wire.md §3 "Other constants" OWNER_FP_RE. */
  public static final Pattern OWNER_FP_RE = Pattern.compile("^[A-Za-z0-9._-]{0,64}$");
  private static final String EPOCH_CHANGED = "relay epoch changed: pull again from 0";

  private final RelayServices s;
  private final RelayConfig.Limits limits;
  private final TrustRoutes trust;
  private final V1Routes v1;

  /** @param services shared services */
  public RelayRoutes(RelayServices services) {
    this.s = Objects.requireNonNull(services);
    this.limits = services.config().limits();
    this.trust = new TrustRoutes(services, this);
    this.v1 = new V1Routes(services);
  }

  /**
   * The server's request handler: the router, behind a guard for request paths with a malformed percent escape, which
   * Vert.x Web would answer with an empty non-JSON 400 before any route runs. Such a path can match no route, so it is
   * answered like any unknown path without a valid hop: 401 {@code {"error":"bad relay hop"}} (wire.md §3 routing
   * order), and the connection is closed without reading the body.
   *
   * @param vertx Vert.x
   * @return the handler to install on the HTTP server
   */
  public io.vertx.core.Handler<HttpServerRequest> requestHandler(Vertx vertx) {
    Router router = router(vertx);
    return req -> {
      if (!QueryParams.wellFormedPath(req.path())) {
        req.response().setStatusCode(401).putHeader("content-type", "application/json")
            .putHeader("date", httpDate())
            .putHeader("connection", "close").end(RelayError.BAD_HOP.body());
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
    r.post("/v2/relay/items").handler(this::push);
    r.get("/v2/relay/items").handler(this::pull);
    r.post("/v2/relay/ack").handler(this::ack);
    trust.mountSigned(r); // senders, enc-key ads v1/v2
    v1.mountSigned(r); // v1 messages push, pull, ack (older hosts)

    r.route().handler(ctx -> ctx.fail(RelayError.NOT_FOUND));
    r.route().failureHandler(this::failure);
    return r;
  }

  // ---- common ----

  private boolean smallBodyPath(String path) {
    return path.equals("/v1/relay/challenge") || path.equals("/v1/relay/enrol") || path.equals("/v2/relay/rotate");
  }

  /**
   * Reads the body with the route's cap enforced while streaming (wire.md §3): a {@code content-length} over the cap
   * or an overrun answers 413 at once, then the rest is drained for at most 2 s and the connection closed. Own code
   * rather than Vert.x Web's BodyHandler because the cap differs per path and the 413 answer and drain are part of the
   * wire contract.
   */
  private void readBody(RoutingContext ctx) {
    HttpServerRequest req = ctx.request();
    ctx.response().putHeader("date", httpDate());
    int cap = smallBodyPath(stripTrailingSlashes(req.path())) ? s.config().http().maxSmallBodyBytes()
        : s.config().http().maxBodyBytes();
    String declared = req.getHeader("content-length");
    if (declared != null) {
      long len;
      try {
        len = Long.parseLong(declared.trim());
      } catch (NumberFormatException e) {
        len = -1;
      }
      if (len > cap) {
        tooLarge(ctx);
        return;
      }
    }
    if (req.isEnded()) {
      ctx.put(RAW, Buffer.buffer());
      ctx.next();
      return;
    }
    Buffer body = Buffer.buffer();
    boolean[] over = {false};
    long timer = ctx.vertx().setTimer(s.config().http().requestTimeoutMs(), id -> {
      if (!ctx.response().ended()) {
        answer(ctx, RelayError.REQUEST_TIMEOUT.status(), RelayError.REQUEST_TIMEOUT.body());
        req.connection().close();
      }
    });
    req.exceptionHandler(e -> ctx.vertx().cancelTimer(timer));
    req.handler(chunk -> {
      if (over[0]) {
        return;
      }
      if (body.length() + chunk.length() > cap) {
        over[0] = true;
        ctx.vertx().cancelTimer(timer);
        tooLarge(ctx);
        return;
      }
      body.appendBuffer(chunk);
    });
    req.endHandler(v -> {
      ctx.vertx().cancelTimer(timer);
      if (!over[0] && !ctx.response().ended()) {
        ctx.put(RAW, body);
        ctx.next();
      }
    });
    req.resume();
  }

  private void tooLarge(RoutingContext ctx) {
    HttpServerRequest req = ctx.request();
    ctx.response().putHeader("connection", "close");
    answer(ctx, 413, RelayError.TOO_LARGE.body());
    req.handler(chunk -> {});
    long drain = ctx.vertx().setTimer(2000, id -> req.connection().close());
    req.endHandler(v -> {
      ctx.vertx().cancelTimer(drain);
      req.connection().close();
    });
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

  static void answer(RoutingContext ctx, int status, String json) {
    if (ctx.response().ended()) {
      return;
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
    } else if (io.mbxrelay.server.StoreClient.isDiskFloorRefusal(t)) {
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

  /** The body as received, copied out of the network buffer once per request. */
  static byte[] rawBytes(RoutingContext ctx) {
    byte[] bytes = ctx.get(RAW_BYTES);
    if (bytes == null) {
      Buffer b = ctx.get(RAW);
      bytes = b == null ? new byte[0] : b.getBytes();
      ctx.put(RAW_BYTES, bytes);
    }
    return bytes;
  }

  /** Parses the body as a JSON object; anything else is 400 (wire.md §3 "Any uncaught error ... → 400"). */
  static ObjectNode bodyObject(RoutingContext ctx) {
    JsonNode n;
    try {
      // wire.md §2: the server decodes the received bytes as UTF-8 with replacement characters, exactly as Node does
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

  // ---- hop (wire.md §2) ----

  /** Verifies the signed hop; empty when it does not verify. Never fails. */
  private Future<Optional<Enrolment>> verifyHop(RoutingContext ctx) {
    HttpServerRequest req = ctx.request();
    String ts = header(req, "x-mbx-ts");
    String sig = header(req, "x-mbx-sig");
    if (ts == null || sig == null) {
      return hopFailed(ctx, HopFailure.MISSING_HEADERS);
    }
    OptionalLong t = HopText.parseTs(ts);
    if (t.isEmpty()) {
      return hopFailed(ctx, HopFailure.BAD_TS);
    }
    if (Math.abs(now() - t.getAsLong()) > limits.hopWindowMs()) {
      return hopFailed(ctx, HopFailure.STALE);
    }
    String path = HopText.signedPath(req.path(), req.query());
    String key = header(req, "x-mbx-key");
    String host = null;
    // The candidates come from the in-memory copy of the committed enrolments (EnrolmentCache): no database round
    // trip per request, and a revocation is visible to the next request once its COMMIT was answered.
    List<Enrolment> candidates;
    if (key != null && !key.isEmpty()) {
      Optional<Enrolment> live = s.enrolments().get(key).filter(Enrolment::live);
      if (live.isEmpty()) {
        return hopFailed(ctx, HopFailure.UNKNOWN_KEY);
      }
      candidates = List.of(live.get());
    } else {
      host = header(req, "x-mbx-host");
      if (host == null || host.isEmpty()) {
        return hopFailed(ctx, HopFailure.MISSING_HEADERS);
      }
      candidates = s.enrolments().liveByName(host, limits.maxPerName() + 1);
      if (candidates.size() > limits.maxPerName()) {
        return hopFailed(ctx, HopFailure.CROWDED_NAME);
      }
      if (candidates.isEmpty()) {
        return hopFailed(ctx, HopFailure.UNKNOWN_KEY);
      }
    }
    byte[] text = HopText.signedBytes(req.method().name(), path, ts, rawBytes(ctx));
    ctx.put(HOP_TEXT, text);
    ctx.put(HOP_TS, t.getAsLong());
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

  /** The signed POST routes that change state (their exact replays are refused). */
  private static final Set<String> STATE_CHANGING = Set.of("/v2/relay/items", "/v2/relay/ack", "/v2/relay/senders",
      "/v1/relay/enc-key", "/v2/relay/enc-key", "/v1/relay/messages", "/v1/relay/ack");

  static String stripTrailingSlashes(String path) {
    int end = path.length();
    while (end > 1 && path.charAt(end - 1) == '/') {
      end--;
    }
    return path.substring(0, end);
  }

  private void hopAuth(RoutingContext ctx) {
    verifyHop(ctx).onComplete(ar -> {
      if (ar.succeeded() && ar.result().isPresent()) {
        Enrolment caller = ar.result().get();
        if (ctx.request().method() == io.vertx.core.http.HttpMethod.POST
            && STATE_CHANGING.contains(stripTrailingSlashes(ctx.request().path()))) {
          // Replay protection beyond the reference (issue 3 item 7): an exact replay of a state-changing hop inside
          // its freshness window is refused as a bad hop; a retry re-signed with a fresh ts is a new hop. Only routes
          // that change state are remembered, so requests to unknown paths cannot fill the cache.
          if (s.trust().replay().admit(caller.hostPubkey(), ctx.<byte[]>get(HOP_TEXT), ctx.<Long>get(HOP_TS), now())
              == io.mbxrelay.auth.HopReplayCache.Result.REPLAY) {
            ctx.fail(RelayError.BAD_HOP);
            return;
          }
        }
        ctx.put(CALLER, caller);
        ctx.next();
      } else {
        HopFailure why = ctx.get(HOP_FAILURE);
        s.metrics().hopFailure(why == null ? HopFailure.LOOKUP_FAILED : why);
        ctx.fail(RelayError.BAD_HOP);
      }
    });
  }

  // ---- info (wire.md §4.7) ----

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
      return s.reads().you(e.hostPubkey()).map(y -> {
        ObjectNode you = info.putObject("you");
        you.put("host", e.hostName());
        you.put("pubkey", e.hostPubkey());
        you.put("head_seq", y.headSeq());
        you.put("acked_through", y.ackedThrough());
        you.set("enc_ad", encAdSummary(y));
        return info;
      });
    }).onSuccess(body -> ok(ctx, body)).onFailure(ctx::fail);
  }

  private static JsonNode encAdSummary(ReadStore.YouState y) {
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

  // ---- enrolment calls (wire.md §4.1) ----

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
      throw new RelayError(503, "too many open enrolment challenges; retry later", "BUSY");
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
      throw new RelayError(400, "incomplete enrolment", "BAD_REQUEST");
    }
    if (!host.isTextual() || !HOST_RE.matcher(host.textValue()).matches() || !pubkey.isTextual()
        || !B64.isPubkey(pubkey.textValue()) || !ownerFp.isTextual()
        || !OWNER_FP_RE.matcher(ownerFp.textValue()).matches() || !sig.isTextual()) {
      throw new RelayError(400, "bad enrolment fields", "BAD_REQUEST");
    }
    String key = pubkey.textValue();
    Optional<String> challenge = s.challenges().pending(key, now());
    if (challenge.isEmpty()) {
      throw new RelayError(401, "no pending enrolment challenge", null);
    }
    ObjectNode rec = Json.MAPPER.createObjectNode();
    rec.put("v", 1);
    rec.put("challenge", challenge.get());
    rec.put("host", host.textValue());
    rec.put("pubkey", key);
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

  // ---- push v2 (wire.md §3) ----

  /**
   * One pushed item after the checks that need no store (wire.md §3 push v2 steps 1–5 as far as the request alone
   * decides them): either refused already ({@code early} set) or a {@link StoreCommand.Push} for the writer.
   */
  private record PreparedItem(String echoId, String early, StoreCommand.Push push) {}

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
        .onSuccess(outcomes -> answerPush(ctx, caller, prepared, outcomes))
        .onFailure(ctx::fail);
  }

  /**
   * Answers {@code {results:[…]}} in request order: refusals as {@code rejected:<why>}, stored items with their
   * accept receipt signed by the relay key (wire.md §3 "Success result"), written without building a JSON tree.
   */
  private void answerPush(RoutingContext ctx, Enrolment caller, List<PreparedItem> prepared,
      List<PushOutcome> outcomes) {
    StringBuilder out = new StringBuilder(32 + prepared.size() * 960);
    out.append("{\"results\":[");
    int next = 0;
    for (int i = 0; i < prepared.size(); i++) {
      if (i > 0) {
        out.append(',');
      }
      PreparedItem p = prepared.get(i);
      PushOutcome outcome = p.push() == null ? new PushOutcome.Rejected(p.early()) : outcomes.get(next++);
      if (outcome instanceof PushOutcome.Rejected r) {
        AcceptReceipt.appendRejected(p.echoId(), r.reason(), out);
        s.metrics().itemRejected(RejectReason.classify(r.reason()));
        continue;
      }
      PushOutcome.Stored st = (PushOutcome.Stored) outcome;
      List<AcceptReceipt.Target> targets = new ArrayList<>(st.targets().size());
      for (PushOutcome.TargetSeq t : st.targets()) {
        targets.add(new AcceptReceipt.Target(t.hostPubkey(), t.seq(), t.wireHash()));
      }
      AcceptReceipt receipt = new AcceptReceipt(s.relayKey().publicKeyB64(), st.epoch(), caller.hostPubkey(),
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

  private PreparedItem prepare(Enrolment caller, JsonNode item, boolean withinRate) {
    JsonNode idNode = item.get("item_id");
    String echoId = idNode != null && idNode.isTextual() ? idNode.textValue() : "";
    if (!withinRate) {
      return new PreparedItem(echoId, "rate", null);
    }
    if (idNode == null || !idNode.isTextual() || echoId.isEmpty() || echoId.length() > 300) {
      return new PreparedItem(echoId, "bad item id", null);
    }
    JsonNode kindNode = item.get("kind");
    String kind = kindNode != null && kindNode.isTextual() ? kindNode.textValue() : "";
    if (!kind.equals("envelope") && !kind.equals("receipt")) {
      return new PreparedItem(echoId, "bad kind", null);
    }
    JsonNode targets = item.get("targets");
    if (targets == null || !targets.isArray() || targets.isEmpty() || targets.size() > limits.maxTargets()) {
      return new PreparedItem(echoId, "bad targets", null);
    }
    List<StoreCommand.Target> list = new ArrayList<>(targets.size());
    Set<String> seen = targets.size() == 1 ? null : new HashSet<>();
    for (JsonNode t : targets) {
      JsonNode keyNode = t.get("host_pubkey");
      String key = keyNode != null && keyNode.isTextual() ? keyNode.textValue() : "";
      String failure = null;
      byte[] wire = null;
      String hash = null;
      if (seen != null && !seen.add(key)) {
        failure = "duplicate target";
      } else {
        JsonNode w = t.get("wire_b64");
        Optional<byte[]> decoded = w != null && w.isTextual() && B64.isStdB64(w.textValue())
            ? B64.decodeLenient(w.textValue()) : Optional.empty();
        if (decoded.isEmpty()) {
          failure = "bad wire";
        } else if (decoded.get().length > limits.maxItemBytes()) {
          failure = "item over size limit";
        } else {
          wire = decoded.get();
          failure = WireCheck.check(kind, echoId, wire, caller.hostPubkey()).orElse(null);
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
    // the enrolment and allowlist checks that wire.md orders before these failures run in the writer
    return new PreparedItem(echoId, null,
        new StoreCommand.Push(caller.hostPubkey(), caller.hostName(), kind, echoId, list));
  }

  // ---- pull v2 (wire.md §3) ----

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
      this.after = after;
      this.limit = limit;
      this.deadlineNanos = waitMs == 0 ? 0 : System.nanoTime() + waitMs * 1_000_000L;
    }

    void start() {
      if (deadlineNanos != 0) {
        unregister = s.waiters().register(target, ctx.vertx().getOrCreateContext(), this);
        if (unregister != null) {
          ctx.response().closeHandler(v -> finish());
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

    private void read(boolean last) {
      if (done) {
        return;
      }
      if (reading) {
        wokenWhileReading |= last;
        return;
      }
      long reserved = s.pageBudget().reserve(limits.maxPullBytes());
      if (reserved <= 0) {
        finish();
        ctx.response().putHeader("retry-after", "1");
        ctx.fail(RelayError.BUSY);
        return;
      }
      reading = true;
      wokenWhileReading = false;
      s.reads().pull(target, after, limit, reserved).onComplete(ar -> {
        reading = false;
        if (ar.failed() || done) {
          s.pageBudget().release(reserved);
          if (!done) {
            finish();
            ctx.fail(ar.cause());
          }
          return;
        }
        ReadStore.Page page = ar.result();
        boolean waiting = unregister != null && timer != -1 && System.nanoTime() < deadlineNanos;
        if (page.items().isEmpty() && waiting) {
          s.pageBudget().release(reserved);
          if (wokenWhileReading) {
            read(false); // an item committed while this read ran
          }
          return; // wait for an item or the deadline
        }
        finish();
        s.metrics().pullPage(page.items().size());
        long bytes = 0;
        for (ReadStore.PulledItem it : page.items()) {
          bytes += it.wire().length;
        }
        s.pageBudget().settle(reserved, bytes);
        writePage(ctx, page, after, bytes);
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
   * Writes a pull page (wire.md §3 key order {@code epoch, head_seq, items, last_seq, more}) item by item with
   * back-pressure: an item is written only while the connection's write queue is below its mark, the rest when the
   * client has read (issue 10 item 12). So a full 8 MiB page never exists as one JSON tree and one string, and a client
   * that does not read holds at most its page's wire bytes ({@code held}, counted in {@link PageBudget} until the
   * answer ended or the connection closed). The bytes are exactly
   * those of {@code JSON.stringify} of the whole answer; only the transfer is chunked.
   */
  private void writePage(RoutingContext ctx, ReadStore.Page page, long after, long held) {
    if (ctx.response().ended() || ctx.response().closed()) {
      s.pageBudget().release(held);
      return; // the client went away; nothing was acked, so nothing is lost
    }
    io.vertx.core.http.HttpServerResponse resp = ctx.response();
    boolean[] released = {false};
    Runnable release = () -> {
      if (!released[0]) {
        released[0] = true;
        s.pageBudget().release(held);
      }
    };
    resp.closeHandler(v -> release.run());
    resp.setStatusCode(200).putHeader("content-type", "application/json").setChunked(true)
        .setWriteQueueMaxSize(WRITE_QUEUE_BYTES);
    resp.write("{\"epoch\":" + Json.stringify(Json.MAPPER.getNodeFactory().textNode(s.epoch()))
        + ",\"head_seq\":" + page.headSeq() + ",\"items\":[");
    java.util.Iterator<ReadStore.PulledItem> items = page.items().iterator();
    long last = page.items().isEmpty() ? after : page.items().get(page.items().size() - 1).seq();
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
          ReadStore.PulledItem it = items.next();
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

  /** A pull answer's write-queue mark, bytes: above it, the next item waits until the client read. */
  private static final int WRITE_QUEUE_BYTES = 256 * 1024;

  // ---- ack v2 (wire.md §3) ----

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
