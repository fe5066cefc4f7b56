package io.mbxrelay.http;

import static io.mbxrelay.http.HttpAnswers.NO_BYTES;
import static io.mbxrelay.http.HttpAnswers.RAW_BYTES;
import static io.mbxrelay.http.HttpAnswers.answer;
import static io.mbxrelay.http.HttpAnswers.bodyPending;
import static io.mbxrelay.http.HttpAnswers.declaredLength;
import static io.mbxrelay.http.HttpAnswers.httpDate;
import static io.mbxrelay.http.HttpAnswers.refuseRest;
import static io.mbxrelay.http.HttpAnswers.refuseUnread;

import io.mbxrelay.metrics.HopFailure;
import io.vertx.core.Handler;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.http.HttpVersion;
import io.vertx.ext.web.RoutingContext;
import java.util.Objects;

/**
 * The first handler of every request (docs/protocol.md §3 body cap; issue 11 item 2): the per-path body cap, what the
 * hop headers decide before any body byte is read, the in-flight body budget, the request timeout, and the body read
 * once into the context. Safe on any event loop; one instance per router.
 */
final class BodyCapHandler implements Handler<RoutingContext> {
  private final RelayServices s;
  private final BodyBudget budget;
  private final HopAuthHandler hop;
  /** Route labels for its refusals (no route with a path has matched yet). */
  private RouteLabels unreadLabels = RouteLabels.NONE;

  BodyCapHandler(RelayServices services, BodyBudget budget, HopAuthHandler hop) {
    this.s = Objects.requireNonNull(services);
    this.budget = Objects.requireNonNull(budget);
    this.hop = Objects.requireNonNull(hop);
  }

  /** The labels of every route, once the router is built (issue 12 item 4). */
  void labels(RouteLabels labels) {
    this.unreadLabels = Objects.requireNonNull(labels);
  }

  static boolean smallBodyPath(String path) {
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

  /**
   * Admits a request and reads its body (docs/protocol.md §3 body cap; issue 11 item 2). In order, before any body byte is
   * read:
   * <ol>
   *   <li>a declared {@code content-length} over the route's cap → 413 (then drained ≤ 2 s and closed);
   *   <li>on a route that needs a signed hop, what the headers decide ({@link HopAuthHandler#hopHeaders}): missing, unparsable or
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
  @Override
  public void handle(RoutingContext ctx) {
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
      HopAuthHandler.Refusal early;
      try {
        early = hop.hopHeaders(ctx);
      } catch (RuntimeException | OutOfMemoryError | StackOverflowError e) {
        s.metrics().hopFailure(HopFailure.LOOKUP_FAILED);
        early = HopAuthHandler.lookupFailed(e, req.method());
        s.metrics().unavailableAnswer(FailureHandler.stateChanging(req.method())
            ? io.mbxrelay.metrics.RelayMetrics.UnavailableOutcome.NOT_STORED
            : io.mbxrelay.metrics.RelayMetrics.UnavailableOutcome.READ);
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
        // the end of a request without a body is on its way. No resume(): nothing paused the request, and the call
        // makes Vert.x create the request's inbound queue, which a long-poll pull then keeps for its whole wait
        // (issue 18 goal 4)
        req.endHandler(v -> ctx.next());
      }
      return;
    }
    Taken taken = new Taken(get ? null : budget, get ? null : clientKey(s, req));
    if (declared > 0 && !taken.take(declared)) {
      unreadLabels.label(req);
      RelayError busy = RelayError.busy(!get);
      refuseUnread(ctx.vertx(), req, busy.status(), busy.body(), 1, declared);
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
          RelayError busy = RelayError.busy(true); // only bodies of state-changing requests are counted
          refuseRest(ctx.vertx(), req, busy.status(), busy.body(), 1);
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
  static String clientKey(RelayServices s, HttpServerRequest req) {
    String socket = req.remoteAddress() == null ? "unknown" : req.remoteAddress().hostAddress();
    String addr = s.clientAddress().resolve(socket, req.getHeader("x-forwarded-for"),
        req.getHeader("cf-connecting-ip"));
    return io.mbxrelay.auth.ClientAddress.rateKey(addr, s.config().trust().ipv6PrefixBits());
  }
}
