package io.mbxrelay.store.sqlite;

/**
 * An operator command was refused or failed (docs/protocol.md §5 "Ops"). {@link #code()} is one of {@code RELAY_RUNNING},
 * {@code RECENT_HEARTBEAT}, {@code NOT_A_STORE}, {@code SCHEMA}, {@code OTHER_RELAY}, {@code CURRENT_UNREADABLE},
 * {@code EXISTS}, {@code NO_STORE}, {@code IO}, {@code CORRUPT} (a store or backup fails its integrity, metadata or
 * wire-hash check), {@code UNSAFE} (a symbolic link or a directory others can write). Messages never contain key
 * material.
 */
public final class OpsException extends Exception {
  private static final long serialVersionUID = 1L;
  private final String code;

  /**
   * @param code refusal code
   * @param message operator-facing text
   */
  public OpsException(String code, String message) {
    super(message, null, false, false);
    this.code = code;
  }

  /**
   * @param code refusal code
   * @param message operator-facing text
   * @param cause underlying error
   */
  public OpsException(String code, String message, Throwable cause) {
    super(message, cause);
    this.code = code;
  }

  /** Refusal code. */
  public String code() {
    return code;
  }
}
