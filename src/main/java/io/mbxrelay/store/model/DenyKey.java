package io.mbxrelay.store.model;

import io.mbxrelay.crypto.Fingerprint;
import java.util.Optional;

/**
 * A deny-list key (docs/protocol.md §7.8 "Revocation": entries keyed by host fingerprint or {@code client_id}), normalized the
 * same way by the admin endpoint and the CLI.
 *
 * @param kind {@code host_fp} or {@code client_id}
 * @param value the canonical fingerprint ({@code xxxx-xxxx-xxxx-xxxx}, docs/protocol.md §1) or the client id
 */
public record DenyKey(String kind, String value) {
  /** Kind of a host fingerprint entry. */
  public static final String HOST_FP = "host_fp";
  /** Kind of an account-token client entry. */
  public static final String CLIENT_ID = "client_id";

  /**
   * Normalizes operator input: {@code host_fp} takes a fingerprint in any form {@link Fingerprint#normalize} accepts,
   * or the full base64 host key; {@code client_id} a non-empty string of at most 200 characters without control
   * characters. Pure; safe on any thread.
   *
   * @param kind {@code host_fp} or {@code client_id}
   * @param value the value as given
   * @return the key, or empty when invalid
   */
  public static Optional<DenyKey> of(String kind, String value) {
    if (kind == null || value == null) {
      return Optional.empty();
    }
    if (kind.equals(HOST_FP)) {
      return Fingerprint.normalize(value).map(fp -> new DenyKey(HOST_FP, fp));
    }
    if (kind.equals(CLIENT_ID) && !value.isEmpty() && value.length() <= 200
        && value.chars().noneMatch(c -> c < 0x20 || c == 0x7f)) {
      return Optional.of(new DenyKey(CLIENT_ID, value));
    }
    return Optional.empty();
  }

  /**
   * Why {@link #of} refuses an entry, naming what is wrong: the kind, or the value for its kind (issue 12 item 6: a
   * bad fingerprint used to be reported as a bad kind). Pure; safe on any thread.
   *
   * @param kind the kind as given
   * @param value the value as given
   * @return e.g. {@code host_fp value 'zz' is not a host fingerprint (xxxx-xxxx-xxxx-xxxx) or base64 host key}; empty
   *     when the entry is valid
   */
  public static Optional<String> problem(String kind, String value) {
    if (of(kind, value).isPresent()) {
      return Optional.empty();
    }
    if (kind == null || !(kind.equals(HOST_FP) || kind.equals(CLIENT_ID))) {
      return Optional.of("kind must be " + HOST_FP + " or " + CLIENT_ID + " (is " + quote(kind) + ")");
    }
    if (value == null) {
      return Optional.of(kind + " value is missing");
    }
    if (kind.equals(HOST_FP)) {
      return Optional.of(HOST_FP + " value " + quote(value) + " is not a host fingerprint (xxxx-xxxx-xxxx-xxxx,"
          + " 16 hex digits) or a base64 host key");
    }
    return Optional.of(CLIENT_ID + " value must be 1 to 200 characters without control characters (is "
        + (value.isEmpty() ? "empty" : value.length() > 200 ? value.length() + " characters" : "one with a control"
        + " character") + ")");
  }

  private static String quote(String s) {
    if (s == null) {
      return "missing";
    }
    String shown = s.length() > 80 ? s.substring(0, 80) + "…" : s;
    return "'" + shown.replaceAll("\\p{Cntrl}", "?") + "'";
  }
}
