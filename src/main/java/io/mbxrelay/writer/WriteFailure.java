package io.mbxrelay.writer;

import io.vertx.core.eventbus.ReplyException;
import io.vertx.core.eventbus.ReplyFailure;
import java.util.Optional;

/**
 * Why a write command failed, as the writer says it in its event-bus failure code (never in the message text, which
 * is for logs only): the HTTP edge answers each kind with its own body (issue 19 item 5; issue 20 item 4).
 *
 * <p>Safe on any thread.
 */
public enum WriteFailure {
  /** Nothing of the command took effect: it failed before its transaction's COMMIT (I/O, busy, fail-stop). */
  NOT_STORED(503),
  /**
   * The COMMIT itself failed, or the writer did not answer in time (event-bus timeout): the command may have taken
   * effect. A retry is safe (dedup answers {@code duplicate}).
   */
  OUTCOME_UNKNOWN(504),
  /** A push refused because the store's file system is under {@code store.minFreeBytes}: not stored. */
  DISK_FLOOR(507),
  /** A bug in the command: rolled back to its savepoint, not stored; answered 500. */
  BUG(500);

  private final int code;

  WriteFailure(int code) {
    this.code = code;
  }

  /** The event-bus failure code the writer replies with. */
  public int code() {
    return code;
  }

  /**
   * The kind of a failed {@link StoreClient#send} future: a failure code of the writer, a timeout
   * ({@link #OUTCOME_UNKNOWN}) or no writer registered ({@link #NOT_STORED}).
   *
   * @param failure the future's failure
   * @return its kind, or empty when it is not a write failure (or carries a code the writer never sends)
   */
  public static Optional<WriteFailure> of(Throwable failure) {
    if (!(failure instanceof ReplyException rx)) {
      return Optional.empty();
    }
    if (rx.failureType() == ReplyFailure.TIMEOUT) {
      return Optional.of(OUTCOME_UNKNOWN);
    }
    if (rx.failureType() == ReplyFailure.NO_HANDLERS) {
      return Optional.of(NOT_STORED);
    }
    for (WriteFailure f : values()) {
      if (f.code == rx.failureCode()) {
        return Optional.of(f);
      }
    }
    return Optional.empty();
  }
}
