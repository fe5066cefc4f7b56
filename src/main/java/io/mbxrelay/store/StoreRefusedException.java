package io.mbxrelay.store;

/**
 * The relay refuses this store and restarting will not change that: it is damaged (fails its integrity check, its
 * metadata does not validate), it is missing or empty where a store was, or its files are unsafe (a symbolic link, a
 * directory others can write). The message names the file and the remedy (restore a backup, {@code mbxrelay check},
 * {@code serve --new-store}, a {@code chmod}) and never contains key material or wire bytes. {@code serve} exits with
 * status 3 on it (issue 10 items 2, 4, 5; issue 11 items 11, 12).
 */
public final class StoreRefusedException extends StoreOpenException {
  private static final long serialVersionUID = 1L;

  /** @param message operator-facing reason and remedy */
  public StoreRefusedException(String message) {
    super(message);
  }

  /**
   * @param message operator-facing reason and remedy
   * @param cause underlying error
   */
  public StoreRefusedException(String message, Throwable cause) {
    super(message, cause);
  }
}
