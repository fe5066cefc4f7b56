package io.mbxrelay.auth;

import java.util.Locale;

/**
 * Which address the per-client enrolment rate is keyed by (wire.md §5 {@code MBX_RELAY_TRUST_PROXY}, seed 000 §2):
 * the socket peer, or behind a trusted proxy the rightmost {@code X-Forwarded-For} entry (the one the proxy
 * appended; entries to its left are client-controlled), or Cloudflare's {@code CF-Connecting-IP}.
 */
public enum ClientAddress {
  /** The TCP peer address (default). */
  SOCKET,
  /** Rightmost {@code X-Forwarded-For} entry. */
  XFF,
  /** {@code CF-Connecting-IP} (at most 64 chars). */
  CLOUDFLARE;

  /**
   * Parses {@code MBX_RELAY_TRUST_PROXY}.
   *
   * @param value {@code xff}, {@code 1}, {@code true}, {@code cloudflare}, or null/empty/{@code 0} for none
   * @return the mode
   * @throws IllegalArgumentException for anything else
   */
  public static ClientAddress parse(String value) {
    if (value == null) {
      return SOCKET;
    }
    return switch (value.trim().toLowerCase(Locale.ROOT)) {
      case "", "0", "false", "no", "socket" -> SOCKET;
      case "xff", "1", "true", "yes" -> XFF;
      case "cloudflare" -> CLOUDFLARE;
      default -> throw new IllegalArgumentException("MBX_RELAY_TRUST_PROXY must be xff, cloudflare or empty");
    };
  }

  /**
   * The client address of a request.
   *
   * @param socketAddress the TCP peer's host string
   * @param xForwardedFor the header value or null
   * @param cfConnectingIp the header value or null
   * @return the address to rate-limit by; the socket address when the configured header is missing or unusable
   */
  public String resolve(String socketAddress, String xForwardedFor, String cfConnectingIp) {
    switch (this) {
      case XFF -> {
        if (xForwardedFor != null) {
          int comma = xForwardedFor.lastIndexOf(',');
          String last = xForwardedFor.substring(comma + 1).trim();
          if (!last.isEmpty() && last.length() <= 64) {
            return last;
          }
        }
        return socketAddress;
      }
      case CLOUDFLARE -> {
        if (cfConnectingIp != null) {
          String v = cfConnectingIp.trim();
          if (!v.isEmpty() && v.length() <= 64) {
            return v;
          }
        }
        return socketAddress;
      }
      default -> {
        return socketAddress;
      }
    }
  }
}
