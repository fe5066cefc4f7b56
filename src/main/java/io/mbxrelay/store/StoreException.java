package io.mbxrelay.store;

/**
 * A store operation failed for a reason other than an expected outcome: I/O error, disk full, corruption, a bug.
 * {@link #kind()} tells the caller how to answer (docs/architecture.md "Durable before reply").
 */
public final class StoreException extends Exception {
  private static final long serialVersionUID = 1L;

  /** What kind of failure this is. */
  public enum Kind {
    /** Disk full, I/O error, busy: 503 for the request, the store may recover. */
    UNAVAILABLE,
    /** The database is corrupt: 503 and the writer stops (fail-stop). */
    CORRUPT,
    /** Anything else (a bug): 500. */
    INTERNAL
  }

  private final Kind kind;
  private final boolean diskFull;
  private final boolean retryable;
  private final boolean outcomeUnknown;

  /**
   * @param kind failure class
   * @param message short text without key material or wire bytes
   * @param cause the underlying exception, may be null
   */
  public StoreException(Kind kind, String message, Throwable cause) {
    this(kind, message, cause, false);
  }

  /**
   * @param kind failure class
   * @param message short text without key material or wire bytes
   * @param cause the underlying exception, may be null
   * @param diskFull the file system was full (SQLite {@code SQLITE_FULL}); always {@link Kind#UNAVAILABLE}
   */
  public StoreException(Kind kind, String message, Throwable cause, boolean diskFull) {
    this(kind, message, cause, diskFull, false);
  }

  private StoreException(Kind kind, String message, Throwable cause, boolean diskFull, boolean retryable) {
    this(kind, message, cause, diskFull, retryable, false);
  }

  private StoreException(Kind kind, String message, Throwable cause, boolean diskFull, boolean retryable,
      boolean outcomeUnknown) {
    super(message, cause);
    this.kind = kind;
    this.diskFull = diskFull;
    this.retryable = retryable;
    this.outcomeUnknown = outcomeUnknown;
  }

  /**
   * The failure of a COMMIT call (issue 20 item 4): the transaction may have taken effect (the connection broke after
   * the server committed, an fsync error after the WAL write). A lost race ({@link #retryable()}) is known to have
   * rolled back and stays as it is.
   *
   * @param atCommit the failure the backend's {@code commit()} threw
   * @return the same failure, {@link #outcomeUnknown()} unless it is a lost race
   */
  public static StoreException duringCommit(StoreException atCommit) {
    if (atCommit.retryable || atCommit.outcomeUnknown) {
      return atCommit;
    }
    StoreException e = new StoreException(atCommit.kind, atCommit.getMessage(), atCommit.getCause(), atCommit.diskFull,
        false, true);
    e.setStackTrace(atCommit.getStackTrace());
    return e;
  }

  /**
   * True when the failure struck the COMMIT itself, so the transaction may or may not have taken effect; false when it
   * is known to have failed before COMMIT (nothing took effect).
   */
  public boolean outcomeUnknown() {
    return outcomeUnknown;
  }

  /**
   * A transaction lost a race with another writer of the same store (PostgreSQL: serialization failure, deadlock):
   * nothing of it took effect, and the {@link RelayLedger} runs the whole batch again (docs/architecture.md "Store:
   * ledger and backends").
   *
   * @param message short text
   * @param cause the driver's exception
   * @return an {@link Kind#UNAVAILABLE} failure that is {@link #retryable()}
   */
  public static StoreException conflict(String message, Throwable cause) {
    return new StoreException(Kind.UNAVAILABLE, message, cause, false, true);
  }

  /** True when the transaction may simply be run again ({@link #conflict}). */
  public boolean retryable() {
    return retryable;
  }

  /** The failure class. */
  public Kind kind() {
    return kind;
  }

  /** True when the store's file system was full (issue 10 item 9: readiness turns false until space returns). */
  public boolean diskFull() {
    return diskFull;
  }
}
