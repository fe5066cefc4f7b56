package io.mbxrelay.http;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.mbxrelay.wire.Json;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.http.HttpServerResponse;
import io.vertx.core.http.HttpVersion;
import io.vertx.ext.web.RoutingContext;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;

/**
 * How every route answers (docs/protocol.md §3 "Bodies"): a JSON answer written once (every 503 with
 * {@code Retry-After}), a refusal before or instead of reading the body, the cached {@code Date} header, and the body
 * as read by {@link BodyCapHandler}. Stateless; safe on any event loop.
 */
final class HttpAnswers {
  private HttpAnswers() {}

  static final String RAW_BYTES = "mbx.rawBytes";

  /** The declared {@code content-length}, or -1 when absent or not a number (Netty refuses malformed ones). */
  static long declaredLength(HttpServerRequest req) {
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
  static boolean bodyPending(HttpServerRequest req, long declared) {
    if (req.isEnded() || declared == 0) {
      return false;
    }
    return declared > 0 || req.version() == HttpVersion.HTTP_2 || req.headers().contains("transfer-encoding");
  }

  static final byte[] NO_BYTES = new byte[0];

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

  static void refuseRest(Vertx vertx, HttpServerRequest req, int status, String json, long retryAfterS) {
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

  /** The body as received (read once by {@link BodyCapHandler}; never copied again). */
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
      throw RelayError.NOT_JSON;
    }
    if (n == null || n.isNull()) {
      throw RelayError.NOT_OBJECT;
    }
    if (!n.isObject()) {
      // JS reads members of an array, number or string as undefined: behave as for an empty object
      return Json.MAPPER.createObjectNode();
    }
    return (ObjectNode) n;
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
}
