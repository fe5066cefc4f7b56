package io.mbxrelay.store;

/**
 * The store cannot be opened: newer schema, another relay's key, not a store, unreadable. The message is meant for
 * the operator and never contains key material.
 */
public class StoreOpenException extends Exception {
  private static final long serialVersionUID = 1L;

  /** @param message operator-facing reason */
  public StoreOpenException(String message) {
    super(message, null, false, false);
  }

  /**
   * @param message operator-facing reason
   * @param cause underlying error
   */
  public StoreOpenException(String message, Throwable cause) {
    super(message, cause);
  }
}
