package io.mbxrelay.server;

import io.mbxrelay.store.StoreCommand;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.eventbus.DeliveryOptions;
import io.vertx.core.eventbus.Message;
import java.util.Objects;

/**
 * Facade over the event bus for write commands (STYLE "writes ─► StoreClient ─event bus─► StoreWriterVerticle").
 * Safe on any event loop.
 *
 * <p>Failures: the future fails with a {@link io.vertx.core.eventbus.ReplyException}: failure code 503 (store
 * unavailable or fail-stopped), 500 (bug), or type {@code TIMEOUT} (outcome unknown: the client's retry is a dedup
 * {@code duplicate}).
 */
public final class StoreClient {
  private final Vertx vertx;
  private final DeliveryOptions options;

  /**
   * @param vertx the Vert.x instance with {@link LocalCodec} registered
   * @param timeoutMs request timeout; past it the outcome is unknown
   */
  public StoreClient(Vertx vertx, long timeoutMs) {
    this.vertx = Objects.requireNonNull(vertx);
    this.options = new DeliveryOptions().setCodecName(LocalCodec.NAME).setSendTimeout(timeoutMs);
  }

  /**
   * Sends one command to the writer.
   *
   * @param command the command
   * @param <R> its result type
   * @return its result, completed only after the writer's COMMIT
   */
  @SuppressWarnings("unchecked")
  public <R> Future<R> send(StoreCommand<R> command) {
    return vertx.eventBus().<Object>request(Addresses.STORE_WRITE, command, options).map(m -> (R) ((Message<?>) m).body());
  }
}
