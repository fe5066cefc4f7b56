package io.mbxrelay.http;

import io.mbxrelay.auth.HopReplayCache;
import io.mbxrelay.auth.JwksCache;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.Objects;

/**
 * The trust-side shared state (issue 3), one member of {@link RelayServices} so the core's record stays small:
 * the replay cache, the admin token and the account issuer's key cache. All members are thread-safe.
 *
 * @param replay accepted state-changing hops (replay protection)
 * @param adminToken the admin bearer token's UTF-8 bytes, or {@code null} when the admin endpoint is disabled
 * @param jwks the issuer key cache, or {@code null} with the host-key challenge authority
 */
public record TrustServices(HopReplayCache replay, byte[] adminToken, JwksCache jwks) {
  public TrustServices {
    Objects.requireNonNull(replay);
  }

  /**
   * Checks an {@code Authorization} header against the admin token in constant time.
   *
   * @param authorization the header value or null
   * @return true only when the endpoint is enabled and the header is {@code Bearer <token>}
   */
  public boolean adminAuthorized(String authorization) {
    if (adminToken == null || authorization == null || !authorization.regionMatches(true, 0, "Bearer ", 0, 7)) {
      return false;
    }
    byte[] given = authorization.substring(7).trim().getBytes(StandardCharsets.UTF_8);
    return MessageDigest.isEqual(given, adminToken);
  }

  /** Never prints the token. */
  @Override
  public String toString() {
    return "TrustServices[replay=" + replay.size() + ", admin=" + (adminToken != null) + "]";
  }
}
