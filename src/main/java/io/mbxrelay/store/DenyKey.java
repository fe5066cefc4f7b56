package io.mbxrelay.store;

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
}
