package io.mbxrelay.server;

import io.mbxrelay.auth.JwksCache;
import io.vertx.core.AbstractVerticle;
import io.vertx.core.Promise;
import io.vertx.ext.web.client.WebClient;
import io.vertx.ext.web.client.WebClientOptions;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;

/**
 * Timer verticle that keeps the account issuer's JWKS fresh (seed 000 §8; STYLE "Timer verticles"): installs a
 * non-blocking WebClient fetcher into the {@link JwksCache}, fetches once at start (the deployment does not wait for
 * it: an unreachable issuer must not stop the relay; enrolments fail closed until a fetch succeeds) and then every
 * {@code refreshMs}. Unknown-kid refreshes go through the same fetcher.
 *
 * <p>Runs on its own event loop; the fetch never blocks it. One instance.
 */
public final class JwksRefreshVerticle extends AbstractVerticle {
  private static final int MAX_JWKS_BYTES = 256 * 1024;

  private final JwksCache cache;
  private final String url;
  private final long refreshMs;
  private WebClient client;
  private long timer = -1;

  /**
   * @param cache the cache to fill
   * @param url the JWKS URL (https, or http on localhost)
   * @param refreshMs refresh interval, ms (seed 000 §8: 10 min)
   */
  public JwksRefreshVerticle(JwksCache cache, String url, long refreshMs) {
    this.cache = Objects.requireNonNull(cache);
    this.url = Objects.requireNonNull(url);
    this.refreshMs = refreshMs;
  }

  @Override
  public void start(Promise<Void> started) {
    client = WebClient.create(vertx, new WebClientOptions().setConnectTimeout(5000).setIdleTimeout(10)
        .setUserAgent("mbxrelay-jwks").setFollowRedirects(false));
    cache.fetcher(this::fetch);
    cache.refresh();
    timer = vertx.setPeriodic(refreshMs, id -> cache.refresh());
    started.complete();
  }

  private CompletableFuture<String> fetch() {
    CompletableFuture<String> out = new CompletableFuture<>();
    // The request is started on this verticle's context whichever thread asked (an HTTP event loop on unknown kid).
    context.runOnContext(v -> client.getAbs(url).timeout(10_000).putHeader("accept", "application/json").send()
        .onSuccess(resp -> {
          if (resp.statusCode() != 200) {
            out.completeExceptionally(new IllegalStateException("jwks answered " + resp.statusCode()));
          } else if (resp.body() == null || resp.body().length() > MAX_JWKS_BYTES) {
            out.completeExceptionally(new IllegalStateException("jwks body missing or too large"));
          } else {
            out.complete(resp.bodyAsString());
          }
        })
        .onFailure(out::completeExceptionally));
    return out;
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
