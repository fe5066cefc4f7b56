package io.mbxrelay.http;

import static io.mbxrelay.http.HttpAnswers.rawBytes;

import io.mbxrelay.config.RelayConfig;
import io.mbxrelay.crypto.Ed25519;
import io.mbxrelay.crypto.HopText;
import io.mbxrelay.metrics.HopFailure;
import io.mbxrelay.metrics.RateLimitedLogger;
import io.mbxrelay.store.model.Enrolment;
import io.mbxrelay.wire.Json;
import io.mbxrelay.wire.KeySpelling;
import io.vertx.core.Future;
import io.vertx.core.Handler;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.ext.web.RoutingContext;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The signed hop (docs/protocol.md §2): what the headers alone decide before a body is read ({@link #hopHeaders}), the
 * signature check once it is ({@link #verifyHop}), and the handler in the routing order that puts the verified caller
 * on the context ({@link #CALLER}) or answers 401 {@code bad relay hop}; exact replays of state-changing hops are
 * refused (issue 3 item 7). Safe on any event loop; one instance per router.
 */
final class HopAuthHandler implements Handler<RoutingContext> {
  private static final Logger LOG = LoggerFactory.getLogger(HopAuthHandler.class);
  private static final RateLimitedLogger WARN = new RateLimitedLogger(LOG);

  private final RelayServices s;
  private final RelayConfig.Limits limits;
  /** Route labels for its refusals: only the signed routes behind it (the others matched already). */
  private RouteLabels unsignedLabels = RouteLabels.NONE;

  HopAuthHandler(RelayServices services) {
    this.s = Objects.requireNonNull(services);
    this.limits = services.config().limits();
  }

  /** The labels of the routes behind the hop check, once the router is built (issue 12 item 4). */
  void labels(RouteLabels labels) {
    this.unsignedLabels = Objects.requireNonNull(labels);
  }

  private long now() {
    return s.clock().millis();
  }

  private static final String HOP_FAILURE = "mbx.hopFailure";

  private static final String KEY_AS_SENT = "mbx.keyAsSent";

  static final String CALLER = "mbx.caller";

  private static final String HOP_TS = "mbx.hopTs";

  /** Longest {@code x-mbx-host} that can name an enrolment (HOST_RE: 63 characters). */
  private static final int MAX_HOST_CHARS = 63;

  /** Longest {@code x-mbx-sig} read (a signature is 88 characters; Node's lenient decoder skips junk, so allow some). */
  private static final int MAX_SIG_CHARS = 1024;

  /** An answer decided from the headers alone: status, body and the {@code Retry-After} seconds (0 = none). */
  record Refusal(int status, String body, long retryAfterS) {}

  private static final Refusal BAD_HOP_REFUSAL = new Refusal(401, RelayError.BAD_HOP.body(), 0);

  /**
   * A failure that is not a bad signature (a lookup, the clock): 503 with {@code Retry-After} (issue 10 item 10);
   * before the body was read, so a state-changing request says {@code "outcome":"not_stored"}.
   */
  static Refusal lookupFailed(Throwable e, HttpMethod method) {
    String error = e.getClass().getSimpleName();
    WARN.warn("hop lookup failed " + error, "hop lookup failed [error: {}]", error);
    boolean changing = FailureHandler.stateChanging(method);
    return new Refusal(503, RelayError.storeUnavailable(changing ? RelayError.Outcome.NOT_STORED : null).body(), 1);
  }

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
  Refusal hopHeaders(RoutingContext ctx) {
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
          // counted once per refused request: its items were not read
          s.metrics().itemRejected(io.mbxrelay.store.model.RejectReason.RATE);
          long retryAfterS = Math.max(1, (waitMs + 999) / 1000);
          int perMinute = limits.pushRequestsPerMinute();
          return v2 ? new Refusal(429, RelayError.pushRate(perMinute).body(), retryAfterS)
              : new Refusal(413, RelayError.v1PushAnswer(0, RelayError.pushRateText(perMinute)), retryAfterS);
        }
      }
    }
    return null;
  }

  /**
   * Verifies the signed hop; empty when it does not verify. The header checks run again here (cheap, in memory): the
   * body may have taken seconds to arrive. Fails (→ 503, never 401) only when a lookup throws.
   */
  Future<Optional<Enrolment>> verifyHop(RoutingContext ctx) {
    List<Enrolment> candidates = new ArrayList<>(1);
    HopFailure why;
    try {
      why = hopCandidates(ctx, candidates);
    } catch (RuntimeException | OutOfMemoryError | StackOverflowError e) {
      lookupFailed(e, ctx.request().method());
      return Future.failedFuture(RelayError.STORE_UNAVAILABLE); // FailureHandler adds the outcome
    }
    if (why != null) {
      return hopFailed(ctx, why);
    }
    HttpServerRequest req = ctx.request();
    String path = HopText.signedPath(req.path(), req.query());
    byte[] text = HopText.signedBytes(req.method().name(), path, header(req, "x-mbx-ts"), rawBytes(ctx));
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

  /** The signed POST routes that change state (their exact replays are refused). */
  private static final Set<String> STATE_CHANGING = Set.of("/v2/relay/items", "/v2/relay/ack", "/v2/relay/senders",
      "/v1/relay/enc-key", "/v2/relay/enc-key", "/v1/relay/messages", "/v1/relay/ack");

  @Override
  public void handle(RoutingContext ctx) {
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
          // With several instances on one database the hop is also recorded there (docs/scale-out.md).
          byte[] signature = io.mbxrelay.wire.B64.decodeLenient(header(ctx.request(), "x-mbx-sig")).orElseThrow();
          s.trust().replay().admitEverywhere(caller.hostPubkey(), signature, ctx.<Long>get(HOP_TS), now())
              .onComplete(admitted -> {
                if (admitted.failed()) {
                  ctx.fail(RelayError.STORE_UNAVAILABLE);
                } else if (admitted.result() == io.mbxrelay.auth.HopReplayCache.Result.REPLAY) {
                  unsignedLabels.label(ctx.request());
                  ctx.fail(RelayError.BAD_HOP);
                } else {
                  ctx.put(CALLER, caller);
                  ctx.next();
                }
              });
          return;
        }
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
}
