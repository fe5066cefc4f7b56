package io.mbxrelay.writer;

import io.mbxrelay.store.StoreCommand;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.eventbus.DeliveryOptions;
import io.vertx.core.eventbus.Message;
import java.util.Objects;

/**
 * Facade over the event bus for write commands (docs/architecture.md, the diagram: writes ─► StoreClient ─event bus─► StoreWriterVerticle).
 * Safe on any event loop.
 *
 * <p>Failures: the future fails with a {@link io.vertx.core.eventbus.ReplyException} whose kind
 * {@link WriteFailure#of} reads: a writer failure code (not stored, COMMIT failed, free-space floor, bug) or type
 * {@code TIMEOUT} (outcome unknown: the client's retry is a dedup {@code duplicate}).
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
   * Whether a failed write was a push refused under the free-space floor ({@link WriteFailure#DISK_FLOOR}; issue 10
   * item 9), so the HTTP edge can answer it with {@code Retry-After} 60. Nothing was stored. Safe on any thread.
   *
   * @param failure the failure of a {@link #send} future
   * @return true for a free-space refusal
   */
  public static boolean isDiskFloorRefusal(Throwable failure) {
    return WriteFailure.of(failure).orElse(null) == WriteFailure.DISK_FLOOR;
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
