package io.mbxrelay.host;

/**
 * A host key file that exists but is not a usable key ({@link HostKeys}). The message names the file and the
 * problem, never the file content or key material. Expected failure: no stack trace is captured.
 */
public final class HostKeyException extends Exception {

  /**
   * @param message what is wrong, without key material
   */
  public HostKeyException(String message) {
    super(message, null, false, false);
  }
}
