package io.mbxrelay.host;

import io.mbxrelay.crypto.Ed25519KeyPair;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import java.time.Clock;
import java.util.concurrent.TimeUnit;

/**
 * A {@link RelayTransport.Factory} with its own small Vert.x (one event loop), started on the first
 * {@link #open} and stopped by {@link #close()} — for programs that do not run Vert.x themselves (the CLI). Default
 * deadlines of {@link VertxRelayTransport}. One thread at a time.
 */
public final class StandaloneTransports implements RelayTransport.Factory, AutoCloseable {

  private final Ed25519KeyPair key;
  private final Clock clock;
  private Vertx vertx;

  /**
   * @param key this host's key
   * @param clock hop timestamp source
   */
  public StandaloneTransports(Ed25519KeyPair key, Clock clock) {
    this.key = key;
    this.clock = clock;
  }

  @Override
  public synchronized RelayTransport open(String relayUrl, String hostName, String relayPubkey) {
    if (vertx == null) {
      vertx = Vertx.vertx(new VertxOptions().setEventLoopPoolSize(1).setPreferNativeTransport(false));
    }
    return VertxRelayTransport.factory(vertx, key, clock).open(relayUrl, hostName, relayPubkey);
  }

  /** Stops the Vert.x instance (waits up to 10 s). */
  @Override
  public synchronized void close() {
    if (vertx != null) {
      try {
        vertx.close().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
      } catch (Exception e) {
        if (e instanceof InterruptedException) {
          Thread.currentThread().interrupt();
        }
      }
      vertx = null;
    }
  }
}
