package io.mbxrelay.host.seal;

/**
 * A sealed envelope or body that cannot be built, verified or opened. The message is a short reason fit for the
 * quarantine and for people (e.g. {@code body does not open: tag mismatch}); it never contains key material or
 * plaintext.
 */
public final class SealException extends Exception {

  private static final long serialVersionUID = 1L;

  /**
   * @param reason the reason
   */
  public SealException(String reason) {
    super(reason, null, false, false);
  }
}
