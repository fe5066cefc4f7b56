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
 * <p>Failures: the future fails with a {@link io.vertx.core.eventbus.ReplyException}: failure code 503 (store
 * unavailable or fail-stopped), 500 (bug), or type {@code TIMEOUT} (outcome unknown: the client's retry is a dedup
 * {@code duplicate}).
 */
public final class StoreClient {
  /**
   * Failure message of a push the writer refused because the store's free space is under {@code store.minFreeBytes}
   * (failure code 503; issue 10 item 9). Nothing was stored; the client retries later.
   */
  public static final String DISK_FLOOR = "store disk below its free-space floor";

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
   * Whether a failed write was a push refused under the free-space floor ({@link #DISK_FLOOR}), so the HTTP edge can
   * answer it with its own text and {@code Retry-After}. Safe on any thread.
   *
   * @param failure the failure of a {@link #send} future
   * @return true for a free-space refusal
   */
  public static boolean isDiskFloorRefusal(Throwable failure) {
    return failure instanceof io.vertx.core.eventbus.ReplyException rx && rx.failureCode() == 503
        && DISK_FLOOR.equals(rx.getMessage());
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
