package io.mbxrelay.http;

import static io.mbxrelay.http.HttpAnswers.declaredLength;
import static io.mbxrelay.http.HttpAnswers.httpDate;
import static io.mbxrelay.http.HttpAnswers.refuseUnread;

import io.vertx.core.Handler;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.ext.web.Route;
import io.vertx.ext.web.Router;
import java.util.List;
import java.util.Objects;

/**
 * The relay's HTTP API (docs/protocol.md §3): the routing order, and where each part lives. Safe on any event loop; one
 * instance per HTTP verticle.
 *
 * <p>Routing order (docs/protocol.md §3): body cap ({@link BodyCapHandler}) → info ({@link InfoRoute}) → the unsigned
 * enrolment calls ({@link EnrolmentRoutes}, per-address rate) and rotation and the admin deny list
 * ({@link TrustRoutes}) → hop auth ({@link HopAuthHandler}, 401) → route match ({@link ItemRoutes}, the signed trust
 * routes, {@link V1Routes}) → 404; failures answer through {@link FailureHandler}. So an unknown path without a valid
 * hop gets 401, not 404.
 */
public final class RelayRoutes {
  private final HopAuthHandler hop;
  private final BodyCapHandler bodyCap;
  private final ItemRoutes items;
  private final InfoRoute info;
  private final EnrolmentRoutes enrolment;
  private final TrustRoutes trust;
  private final V1Routes v1;
  private final FailureHandler failure;

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
    Objects.requireNonNull(services);
    this.failure = new FailureHandler(services.metrics());
    this.hop = new HopAuthHandler(services);
    this.bodyCap = new BodyCapHandler(services, Objects.requireNonNull(budget), hop);
    this.items = new ItemRoutes(services);
    this.info = new InfoRoute(services, hop, items);
    this.enrolment = new EnrolmentRoutes(services);
    this.trust = new TrustRoutes(services, enrolment);
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
  public Handler<HttpServerRequest> requestHandler(Vertx vertx) {
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
    r.route().handler(bodyCap);
    r.get("/v2/relay/info").handler(info::handle);
    r.post("/v1/relay/challenge").handler(enrolment::challenge);
    r.post("/v1/relay/enrol").handler(enrolment::enrol);
    trust.mountBeforeHop(r); // rotate (unsigned, rate-limited), admin deny (bearer token, else falls through)
    r.route().handler(hop);
    int signedFrom = r.getRoutes().size();
    r.post("/v2/relay/items").handler(items::push);
    r.get("/v2/relay/items").handler(items::pull);
    r.post("/v2/relay/ack").handler(items::ack);
    trust.mountSigned(r); // senders, enc-key ads v1/v2
    v1.mountSigned(r); // v1 messages push, pull, ack (older hosts)

    r.route().handler(ctx -> ctx.fail(RelayError.NOT_FOUND));
    r.route().failureHandler(failure);
    // what answers before a route matched is labelled with the template it was addressed to (issue 12 item 4)
    List<Route> routes = r.getRoutes();
    bodyCap.labels(RouteLabels.of(routes));
    hop.labels(RouteLabels.of(routes.subList(signedFrom, routes.size())));
    return r;
  }
}
