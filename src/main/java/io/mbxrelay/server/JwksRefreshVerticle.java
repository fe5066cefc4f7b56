package io.mbxrelay.server;

import io.mbxrelay.auth.JwksCache;
import io.mbxrelay.auth.JwksEndpoint;
import io.mbxrelay.config.RelayConfig;
import io.vertx.core.AbstractVerticle;
import io.vertx.core.Promise;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpClientAgent;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.http.HttpClientRequest;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.RequestOptions;
import java.nio.charset.StandardCharsets;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeoutException;

/**
 * Timer verticle that keeps the account issuer's JWKS fresh (docs/protocol.md §7.8; docs/architecture.md "Timer verticles"): installs a
 * non-blocking HTTP fetcher into the {@link JwksCache}, fetches once at start (the deployment does not wait for it:
 * an unreachable issuer must not stop the relay; enrolments fail closed until a fetch succeeds) and then every
 * {@code refreshMs}. Unknown-kid refreshes go through the same fetcher.
 *
 * <p>Each fetch (issue 11 item 7; docs/security.md) has an <b>absolute deadline</b> of {@code fetchTimeoutMs} from
 * start to last byte (an idle timeout alone let an endpoint that sends one byte every few seconds keep a fetch alive
 * forever), and its body is <b>streamed with a cap</b> of {@value #MAX_JWKS_BYTES} bytes: a {@code content-length}
 * over the cap is refused before the body is read, and an answer that grows past it is reset at once, so no more
 * than the cap is ever buffered. The request is built from the parsed {@link JwksEndpoint} (no user info; plain http
 * only to a loopback host), never from the raw URL text, and redirects are not followed.
 *
 * <p>Own streaming code on the Vert.x core HTTP client rather than the WebClient: the WebClient buffers the whole
 * answer before its size can be checked, and its timeout is an idle timeout, not a deadline.
 *
 * <p>Runs on its own event loop; the fetch never blocks it. One instance.
 */
public final class JwksRefreshVerticle extends AbstractVerticle {
  /** Largest JWKS answer accepted, bytes. */
  public static final int MAX_JWKS_BYTES = 256 * 1024;

  private final JwksCache cache;
  private final String url;
  private final long refreshMs;
  private final long fetchTimeoutMs;
  private JwksEndpoint endpoint;
  private HttpClientAgent client;
  private long timer = -1;

  /**
   * @param cache the cache to fill
   * @param settings the validated enrolment settings: {@code jwksUrl} (https, or http to a loopback host; parsed
   *     again here with {@link JwksEndpoint#parse}), {@code jwksRefreshMs} (docs/protocol.md §7.8: 10 min) and
   *     {@code jwksFetchTimeoutMs} (absolute deadline of one fetch)
   */
  public JwksRefreshVerticle(JwksCache cache, RelayConfig.Enrolment settings) {
    this.cache = Objects.requireNonNull(cache);
    this.url = Objects.requireNonNull(settings.jwksUrl());
    this.refreshMs = settings.jwksRefreshMs();
    this.fetchTimeoutMs = settings.jwksFetchTimeoutMs();
    if (refreshMs < 1 || fetchTimeoutMs < 1) {
      throw new IllegalArgumentException("jwksRefreshMs and jwksFetchTimeoutMs must be positive");
    }
  }

  @Override
  public void start(Promise<Void> started) {
    try {
      endpoint = JwksEndpoint.parse(url);
    } catch (JwksEndpoint.BadUrl e) {
      started.fail(new IllegalArgumentException("enrolment.jwksUrl " + e.getMessage()));
      return;
    }
    int connectMs = (int) Math.min(Integer.MAX_VALUE, fetchTimeoutMs);
    client = vertx.createHttpClient(new HttpClientOptions().setConnectTimeout(connectMs).setKeepAlive(false)
        .setVerifyHost(true));
    cache.fetcher(this::fetch, fetchTimeoutMs);
    cache.refresh();
    timer = vertx.setPeriodic(refreshMs, id -> cache.refresh());
    started.complete();
  }

  private CompletableFuture<String> fetch() {
    CompletableFuture<String> out = new CompletableFuture<>();
    // The request is started on this verticle's context whichever thread asked (an HTTP event loop on unknown kid).
    context.runOnContext(v -> fetchOnContext(out));
    return out;
  }

  private void fetchOnContext(CompletableFuture<String> out) {
    HttpClientRequest[] request = {null};
    long deadline = vertx.setTimer(fetchTimeoutMs, id -> {
      if (out.completeExceptionally(new TimeoutException("jwks fetch deadline passed"))) {
        abort(request[0]);
      }
    });
    RequestOptions options = new RequestOptions().setMethod(HttpMethod.GET).setSsl(endpoint.ssl())
        .setHost(endpoint.host()).setPort(endpoint.port()).setURI(endpoint.pathAndQuery()).setFollowRedirects(false)
        .putHeader("accept", "application/json").putHeader("user-agent", "mbxrelay-jwks");
    client.request(options).compose(req -> {
      request[0] = req;
      req.exceptionHandler(err -> fail(out, deadline, req, err)); // also receives our own reset: then a no-op
      if (out.isDone()) {
        abort(req); // the deadline passed while connecting
      }
      return req.send();
    }).onSuccess(resp -> {
      resp.exceptionHandler(err -> fail(out, deadline, request[0], err));
      if (resp.statusCode() != 200) {
        fail(out, deadline, request[0], new IllegalStateException("jwks answered " + resp.statusCode()));
        return;
      }
      String declared = resp.getHeader("content-length");
      if (declared != null && declaredOver(declared)) {
        fail(out, deadline, request[0], new IllegalStateException("jwks body too large"));
        return;
      }
      Buffer body = Buffer.buffer();
      resp.handler(chunk -> {
        if (out.isDone()) {
          return;
        }
        if (body.length() + chunk.length() > MAX_JWKS_BYTES) {
          fail(out, deadline, request[0], new IllegalStateException("jwks body too large"));
          return;
        }
        body.appendBuffer(chunk);
      });
      resp.endHandler(end -> {
        vertx.cancelTimer(deadline);
        out.complete(body.toString(StandardCharsets.UTF_8));
      });
    }).onFailure(err -> fail(out, deadline, request[0], err));
  }

  private static boolean declaredOver(String contentLength) {
    try {
      return Long.parseLong(contentLength.trim()) > MAX_JWKS_BYTES;
    } catch (NumberFormatException e) {
      return true; // a length we cannot read is not one we can trust
    }
  }

  private void fail(CompletableFuture<String> out, long deadline, HttpClientRequest req, Throwable err) {
    vertx.cancelTimer(deadline);
    if (out.completeExceptionally(err)) {
      abort(req);
    }
  }

  /** Stops reading an answer we will not use: resets the stream (HTTP/1.1: closes the connection). */
  private static void abort(HttpClientRequest req) {
    if (req != null) {
      req.reset();
    }
  }

  @Override
  public void stop() {
    if (timer >= 0) {
      vertx.cancelTimer(timer);
    }
    if (client != null) {
      client.close();
    }
  }
}
