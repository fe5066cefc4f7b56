package io.mbxrelay.auth;

import io.netty.util.NetUtil;
import java.util.Locale;

/**
 * Which address the per-client enrolment rate is keyed by (docs/protocol.md §5 {@code MBX_RELAY_TRUST_PROXY}, §7.2):
 * the socket peer, or behind a trusted proxy the rightmost {@code X-Forwarded-For} entry (the one the proxy
 * appended; entries to its left are client-controlled), or Cloudflare's {@code CF-Connecting-IP}. {@link #rateKey}
 * then groups IPv6 addresses by network prefix (issue 11 item 6).
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

  /**
   * The key a client address is rate-limited by (issue 11 item 6; docs/security.md): an IPv4 address (also written
   * IPv4-mapped, {@code ::ffff:a.b.c.d}) stands for itself; an IPv6 address stands for its network of
   * {@code ipv6PrefixBits} bits, written {@code <network>/<bits>} (e.g. {@code 2001:db8:1:2::/64}), because one
   * subscriber usually holds a whole /64 and could otherwise take a fresh window per address. Brackets and a zone
   * ({@code %eth0}) are ignored. Text that is not an IP literal (a socket without an address) stays as it is.
   * Parsing is Netty's {@code NetUtil} (linear, never a DNS lookup). Pure; safe on any thread.
   *
   * @param address the resolved client address ({@link #resolve})
   * @param ipv6PrefixBits prefix length, 1..128 (config {@code trust.ipv6PrefixBits}, default 64)
   * @return the rate key
   */
  public static String rateKey(String address, int ipv6PrefixBits) {
    if (address == null) {
      return "unknown";
    }
    byte[] ip = NetUtil.createByteArrayFromIpAddressString(address);
    if (ip == null) {
      return address;
    }
    if (ip.length == 4) {
      return NetUtil.bytesToIpAddress(ip);
    }
    if (isV4Mapped(ip)) {
      return NetUtil.bytesToIpAddress(java.util.Arrays.copyOfRange(ip, 12, 16));
    }
    int bits = Math.max(0, Math.min(128, ipv6PrefixBits));
    for (int i = 0; i < 16; i++) {
      int keep = Math.max(0, Math.min(8, bits - i * 8));
      ip[i] &= (byte) (0xFF00 >> keep);
    }
    return NetUtil.bytesToIpAddress(ip) + "/" + bits;
  }

  private static boolean isV4Mapped(byte[] ip) {
    for (int i = 0; i < 10; i++) {
      if (ip[i] != 0) {
        return false;
      }
    }
    return ip[10] == (byte) 0xFF && ip[11] == (byte) 0xFF;
  }
}
