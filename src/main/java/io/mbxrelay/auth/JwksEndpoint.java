package io.mbxrelay.auth;

import io.netty.util.NetUtil;
import java.net.InetAddress;
import java.net.URI;
import java.net.URISyntaxException;
import java.net.UnknownHostException;
import java.util.Locale;

/**
 * The issuer's JWKS location ({@code enrolment.jwksUrl}; docs/account-tokens.md), parsed once as a URL (issue 11
 * item 7): {@code https}, or plain {@code http} only when the <em>parsed</em> host is loopback ({@code localhost} or
 * a loopback IP literal); no user info; no fragment. The fetch is built from these parsed parts, never from the raw
 * text, so the checked host is the host connected to ({@code http://127.0.0.1@127.0.0.2/} has user info and is
 * refused; {@code http://localhost.attacker.invalid/} is not loopback and is refused).
 *
 * @param ssl true for https
 * @param host the host (a name, or an IP literal without brackets)
 * @param port the port (443/80 when the URL names none)
 * @param pathAndQuery the request target, {@code /} when the URL has no path
 */
public record JwksEndpoint(boolean ssl, String host, int port, String pathAndQuery) {

  /** Why a URL is not a usable JWKS location. */
  public static final class BadUrl extends Exception {
    private static final long serialVersionUID = 1L;

    BadUrl(String message) {
      super(message, null, false, false);
    }
  }

  /**
   * Parses and checks a JWKS URL. Pure (no DNS lookup); safe on any thread.
   *
   * @param url the configured text
   * @return the endpoint
   * @throws BadUrl with a message for the operator (never echoes the URL, which might carry a secret)
   */
  public static JwksEndpoint parse(String url) throws BadUrl {
    if (url == null || url.isBlank()) {
      throw new BadUrl("is empty");
    }
    URI u;
    try {
      u = new URI(url.trim());
    } catch (URISyntaxException e) {
      throw new BadUrl("is not a valid URL");
    }
    String scheme = u.getScheme() == null ? "" : u.getScheme().toLowerCase(Locale.ROOT);
    if (!scheme.equals("https") && !scheme.equals("http")) {
      throw new BadUrl("must be https (plain http only for a loopback host)");
    }
    if (u.isOpaque() || u.getRawAuthority() == null || u.getHost() == null) {
      throw new BadUrl("has no host (or a host java.net.URI cannot parse)");
    }
    if (u.getRawUserInfo() != null) {
      throw new BadUrl("must not contain user info (user@host)");
    }
    if (u.getRawFragment() != null) {
      throw new BadUrl("must not contain a fragment");
    }
    String host = u.getHost();
    if (host.startsWith("[") && host.endsWith("]")) {
      host = host.substring(1, host.length() - 1);
    }
    boolean ssl = scheme.equals("https");
    if (!ssl && !isLoopback(host)) {
      throw new BadUrl("must be https (plain http only for a loopback host: localhost, 127.0.0.0/8 or ::1)");
    }
    int port = u.getPort() < 0 ? (ssl ? 443 : 80) : u.getPort();
    if (port < 1 || port > 65_535) {
      throw new BadUrl("has a port out of range");
    }
    String path = u.getRawPath() == null || u.getRawPath().isEmpty() ? "/" : u.getRawPath();
    String target = u.getRawQuery() == null ? path : path + "?" + u.getRawQuery();
    return new JwksEndpoint(ssl, host, port, target);
  }

  /** {@code localhost} exactly, or an IP literal in 127.0.0.0/8 or {@code ::1}; names are never resolved. */
  static boolean isLoopback(String host) {
    if (host.equalsIgnoreCase("localhost")) {
      return true;
    }
    byte[] ip = NetUtil.createByteArrayFromIpAddressString(host);
    if (ip == null) {
      return false;
    }
    try {
      return InetAddress.getByAddress(ip).isLoopbackAddress(); // an address from bytes: no lookup
    } catch (UnknownHostException e) {
      return false;
    }
  }

  /** No secret in the URL ever reaches a log through this record. */
  @Override
  public String toString() {
    return "JwksEndpoint[" + (ssl ? "https" : "http") + "://" + host + ":" + port + "]";
  }
}
