package io.mbxrelay.http;

import static io.mbxrelay.http.HttpAnswers.answer;

import io.mbxrelay.metrics.RateLimitedLogger;
import io.mbxrelay.metrics.RelayMetrics;
import io.mbxrelay.metrics.RelayMetrics.UnavailableOutcome;
import io.mbxrelay.store.StoreException;
import io.mbxrelay.writer.WriteFailure;
import io.vertx.core.Handler;
import io.vertx.core.http.HttpMethod;
import io.vertx.ext.web.RoutingContext;
import java.util.Objects;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The router's one failure handler (docs/architecture.md "Design rules", "Results and errors"): a {@link RelayError}
 * answers as itself; a store that cannot be reached (a write the writer failed or did not answer in time, a read whose
 * database is unavailable) answers 503 "store unavailable; retry later", on a state-changing request with the
 * {@code outcome} the failure's place decides ({@link RelayError.Outcome}); anything else (a bug) is logged
 * (rate-limited) and answered 500 with a generic text. Stateless but for the meters; safe on any event loop.
 */
final class FailureHandler implements Handler<RoutingContext> {
  private static final Logger LOG = LoggerFactory.getLogger(FailureHandler.class);
  private static final RateLimitedLogger WARN = new RateLimitedLogger(LOG);

  /**
   * Context key: part of the request was committed before the failure (a v1 push stores envelope by envelope), so its
   * 503 says {@code unknown} rather than {@code not_stored}.
   */
  static final String PARTLY_STORED = "mbx.partlyStored";

  private final RelayMetrics metrics;

  FailureHandler(RelayMetrics metrics) {
    this.metrics = Objects.requireNonNull(metrics);
  }

  /** Whether a request may change state: every method but GET and HEAD (reads carry no {@code outcome}). */
  static boolean stateChanging(HttpMethod method) {
    return method != HttpMethod.GET && method != HttpMethod.HEAD;
  }

  @Override
  public void handle(RoutingContext ctx) {
    Throwable t = ctx.failure();
    boolean changing = stateChanging(ctx.request().method());
    boolean partly = Boolean.TRUE.equals(ctx.get(PARTLY_STORED));
    RelayError e;
    WriteFailure write = WriteFailure.of(t).orElse(null);
    if (t instanceof RelayError re) {
      // thrown before any write was sent (a hop lookup that failed): nothing stored
      e = re == RelayError.STORE_UNAVAILABLE ? unavailable(changing, RelayError.Outcome.NOT_STORED)
          : re == RelayError.BUSY ? RelayError.busy(changing) : re;
    } else if (write != null && write != WriteFailure.BUG) {
      if (write == WriteFailure.DISK_FLOOR) {
        ctx.response().putHeader("retry-after", "60"); // the disk under store.minFreeBytes: not stored, retry later
      }
      e = unavailable(changing, write == WriteFailure.OUTCOME_UNKNOWN || partly ? RelayError.Outcome.UNKNOWN
          : RelayError.Outcome.NOT_STORED);
    } else if (t instanceof StoreException se && se.kind() != StoreException.Kind.INTERNAL) {
      // a read found the database unavailable (issue 20 item 1); on a state-changing request before its write
      e = unavailable(changing, partly ? RelayError.Outcome.UNKNOWN : RelayError.Outcome.NOT_STORED);
    } else if (t == null && ctx.statusCode() == 413) {
      e = RelayError.TOO_LARGE;
    } else if (t == null && ctx.statusCode() > 0 && ctx.statusCode() < 500) {
      e = RelayError.routerStatus(ctx.statusCode());
    } else {
      String route = ctx.currentRoute() == null || ctx.currentRoute().getPath() == null ? ""
          : ctx.currentRoute().getPath();
      String error = t == null ? "status " + ctx.statusCode() : t.getClass().getSimpleName();
      WARN.warn("request failed " + route + error, "request failed [route: {}] [error: {}]", route, error);
      e = RelayError.INTERNAL;
    }
    answer(ctx, e.status(), e.body());
  }

  /** The 503 "store unavailable", with the outcome on a state-changing request, counted. */
  private RelayError unavailable(boolean changing, RelayError.Outcome outcome) {
    metrics.unavailableAnswer(!changing ? UnavailableOutcome.READ
        : outcome == RelayError.Outcome.UNKNOWN ? UnavailableOutcome.UNKNOWN : UnavailableOutcome.NOT_STORED);
    return RelayError.storeUnavailable(changing ? outcome : null);
  }
}
