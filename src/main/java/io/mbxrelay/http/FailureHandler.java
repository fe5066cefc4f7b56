package io.mbxrelay.http;

import static io.mbxrelay.http.HttpAnswers.answer;

import io.mbxrelay.metrics.RateLimitedLogger;
import io.vertx.core.Handler;
import io.vertx.core.eventbus.ReplyException;
import io.vertx.core.eventbus.ReplyFailure;
import io.vertx.ext.web.RoutingContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The router's one failure handler (docs/architecture.md "Design rules", "Results and errors"): a {@link RelayError}
 * answers as itself; a write the writer refused under the free-space floor, timed out or could not take answers 503;
 * anything else is logged (rate-limited) and answered 500 with a generic text. Stateless; safe on any event loop.
 */
final class FailureHandler implements Handler<RoutingContext> {
  private static final Logger LOG = LoggerFactory.getLogger(FailureHandler.class);
  private static final RateLimitedLogger WARN = new RateLimitedLogger(LOG);

  @Override
  public void handle(RoutingContext ctx) {
    Throwable t = ctx.failure();
    RelayError e;
    if (t instanceof RelayError re) {
      e = re;
    } else if (io.mbxrelay.writer.StoreClient.isDiskFloorRefusal(t)) {
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
}
