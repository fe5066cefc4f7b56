package io.mbxrelay.crypto;

/**
 * The relay key text or file is unusable ({@code docs/protocol.md §5} "Keys"). The message says what is wrong, e.g.
 * {@code relay key is not valid: expected 32-byte base64 seed}, and never contains the input or key material.
 * Thrown without a stack trace being interesting: it is an operator error, reported once at start.
 */
public final class RelayKeyException extends Exception {

  private static final long serialVersionUID = 1L;

  /**
   * @param message the reason (must not contain key material)
   */
  public RelayKeyException(String message) {
    super(message, null, false, false);
  }
}
