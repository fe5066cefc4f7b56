package io.mbxrelay.crypto;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.mbxrelay.wire.CanonicalJson;
import io.mbxrelay.wire.Json;
import io.mbxrelay.wire.JsNumber;
import java.util.OptionalDouble;
import java.util.OptionalLong;

/**
 * The signed relay hop ({@code docs/protocol.md §2}): what a caller signs and the relay verifies, plus the timestamp
 * rules. Not the host-to-host LAN hop. Stateless and thread-safe.
 */
public final class HopText {

  /** Allowed clock difference between caller and relay, ms (±5 min, both directions). */
  public static final long MAX_SKEW_MS = 300_000;

  private HopText() {}

  /**
   * The signed text: canonical JSON of {@code {method, path, ts, body: METHOD + ":" + path + ":" + ts + ":" +
   * rawBody}}, i.e. {@code {"body":"<M>:<P>:<TS>:<RAW>","method":"<M>","path":"<P>","ts":"<TS>"}}. Sign or verify
   * its UTF-8 bytes.
   *
   * @param method the upper-case HTTP method as on the request line (used as given)
   * @param signedPath the path from {@link #signedPath(String, String)}
   * @param ts the exact {@code x-mbx-ts} header string
   * @param rawBody the request body as received, decoded with {@link io.mbxrelay.wire.Utf8#decode(byte[])}
   *     (as Node does, so invalid bytes give the same replacement characters); {@code ""} for GET (null is
   *     treated as {@code ""})
   * @return the text to sign
   */
  public static String signedText(String method, String signedPath, String ts, String rawBody) {
    String body = rawBody == null ? "" : rawBody;
    ObjectNode o = Json.MAPPER.createObjectNode();
    o.put("method", method);
    o.put("path", signedPath);
    o.put("ts", ts);
    o.put("body", method + ":" + signedPath + ":" + ts + ":" + body);
    return CanonicalJson.canonicalize(o);
  }

  /**
   * The UTF-8 bytes of {@link #signedText} for a body given as received bytes, built without decoding the body to a
   * string and escaping it again when the bytes are well-formed UTF-8 (the case for every honest client); other bytes
   * take the {@link io.mbxrelay.wire.Utf8#decode(byte[])} path, so the result is always identical to
   * {@code signedText(method, signedPath, ts, Utf8.decode(rawBody)).getBytes(UTF_8)}.
   *
   * @param method the upper-case HTTP method
   * @param signedPath the path from {@link #signedPath(String, String)}
   * @param ts the exact {@code x-mbx-ts} header string
   * @param rawBody the body bytes as received ({@code new byte[0]} for GET)
   * @return the bytes to verify
   */
  public static byte[] signedBytes(String method, String signedPath, String ts, byte[] rawBody) {
    if (!io.mbxrelay.wire.Utf8.isValid(rawBody)) {
      return signedText(method, signedPath, ts, io.mbxrelay.wire.Utf8.decode(rawBody))
          .getBytes(java.nio.charset.StandardCharsets.UTF_8);
    }
    String head = quoted(method + ":" + signedPath + ":" + ts + ":");
    byte[] prefix = ("{\"body\":" + head.substring(0, head.length() - 1))
        .getBytes(java.nio.charset.StandardCharsets.UTF_8);
    byte[] suffix = ("\",\"method\":" + quoted(method) + ",\"path\":" + quoted(signedPath) + ",\"ts\":" + quoted(ts)
        + "}").getBytes(java.nio.charset.StandardCharsets.UTF_8);
    // escaped straight into the signed text: one pass to size it, one to fill it (issue 18: a 200-item push's body is
    // 640 KB, and every copy of it showed in the profile)
    int escaped = io.mbxrelay.wire.CanonicalJson.escapedLength(rawBody);
    byte[] out = new byte[prefix.length + escaped + suffix.length];
    System.arraycopy(prefix, 0, out, 0, prefix.length);
    io.mbxrelay.wire.CanonicalJson.escapeInto(rawBody, escaped, out, prefix.length);
    System.arraycopy(suffix, 0, out, prefix.length + escaped, suffix.length);
    return out;
  }

  private static String quoted(String s) {
    return CanonicalJson.canonicalize(Json.MAPPER.getNodeFactory().textNode(s));
  }

  /**
   * The server's "signedPath": for a path starting with {@code /v2/} the path plus {@code ?} and the raw
   * (still percent-encoded) query — no {@code ?} when the query is null or empty; for any other path
   * ({@code /v1/...}) the path only. Decided by the prefix alone, not by {@code x-mbx-key}. The reference
   * normalizes the path with a WHATWG URL parse first; clients never send paths that this changes.
   *
   * @param rawPath the request path as on the request line (no query)
   * @param rawQueryOrNull the raw query without {@code ?}, or null
   * @return the path that is signed
   */
  public static String signedPath(String rawPath, String rawQueryOrNull) {
    if (rawPath.startsWith("/v2/") && rawQueryOrNull != null && !rawQueryOrNull.isEmpty()) {
      return rawPath + "?" + rawQueryOrNull;
    }
    return rawPath;
  }

  /**
   * Reads the {@code x-mbx-ts} header with JS {@code Number(ts)} rules, floored to whole milliseconds:
   * surrounding JS whitespace is ignored; decimal with optional sign, fraction and exponent ({@code 1e12});
   * unsigned {@code 0x}/{@code 0o}/{@code 0b} integers. Deviations: the empty (or blank) string, which JS reads
   * as 0, is refused because the header is required; a header over {@link JsNumber#MAX_TEXT_CHARS} characters is
   * refused before it is read (issue 11 item 1: linear time whatever the caller sends). Flooring can move the ±5 min
   * boundary by under 1 ms.
   *
   * @param ts the header value (null → empty)
   * @return epoch ms, or empty when JS would give NaN or ±Infinity, or the header is over-long
   */
  public static OptionalLong parseTs(String ts) {
    OptionalDouble d = jsNumber(ts);
    if (d.isEmpty() || !Double.isFinite(d.getAsDouble())) {
      return OptionalLong.empty();
    }
    return OptionalLong.of((long) Math.floor(d.getAsDouble()));
  }

  /**
   * JS {@code Number(text)} for a string (blank refused, see {@link #parseTs(String)}); linear time, texts over
   * {@link JsNumber#MAX_TEXT_CHARS} characters refused ({@link JsNumber#ofString(String)}).
   *
   * @param text the text (null → empty)
   * @return the number (possibly ±Infinity), or empty for NaN
   */
  public static OptionalDouble jsNumber(String text) {
    if (text == null || text.length() > JsNumber.MAX_TEXT_CHARS || JsNumber.isBlank(text)) {
      return OptionalDouble.empty();
    }
    double d = JsNumber.ofString(text);
    return Double.isNaN(d) ? OptionalDouble.empty() : OptionalDouble.of(d);
  }

  /**
   * The freshness rule: {@code |now − ts| ≤ 300,000 ms}.
   *
   * @param tsMs the caller's timestamp, ms since the epoch
   * @param nowMs the relay's clock, ms since the epoch
   * @return whether the hop is within the window
   */
  public static boolean fresh(long tsMs, long nowMs) {
    return Math.abs((double) nowMs - (double) tsMs) <= MAX_SKEW_MS;
  }
}
