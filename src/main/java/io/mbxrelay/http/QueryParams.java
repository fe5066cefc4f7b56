package io.mbxrelay.http;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Form decoding of a raw query string the way the reference's WHATWG {@code URLSearchParams} does it (docs/protocol.md §2:
 * "parse parameters with form decoding"): {@code +} is a space, valid {@code %XX} escapes are decoded as UTF-8 bytes,
 * and a malformed escape is kept literally instead of failing. Own code because Vert.x's decoder throws on a malformed
 * escape, which must not turn a client's typo into a 500.
 *
 * <p>Stateless and thread-safe.
 */
final class QueryParams {
  private final Map<String, List<String>> params;

  private QueryParams(Map<String, List<String>> params) {
    this.params = params;
  }

  /**
   * Parses a raw query (without the {@code ?}).
   *
   * @param raw the raw query string, or null
   * @return the parameters, in order
   */
  static QueryParams parse(String raw) {
    Map<String, List<String>> out = new LinkedHashMap<>();
    if (raw != null && !raw.isEmpty()) {
      for (String pair : raw.split("&", -1)) {
        if (pair.isEmpty()) {
          continue;
        }
        int eq = pair.indexOf('=');
        String name = decode(eq < 0 ? pair : pair.substring(0, eq));
        String value = eq < 0 ? "" : decode(pair.substring(eq + 1));
        out.computeIfAbsent(name, k -> new ArrayList<>()).add(value);
      }
    }
    return new QueryParams(out);
  }

  /** The first value of {@code name}, or null when absent. */
  String get(String name) {
    List<String> v = params.get(name);
    return v == null ? null : v.get(0);
  }

  /** Whether {@code name} is present (even with an empty value). */
  boolean contains(String name) {
    return params.containsKey(name);
  }

  static String decode(String s) {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream(s.length());
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c == '+') {
        bytes.write(' ');
      } else if (c == '%' && i + 2 < s.length() && hex(s.charAt(i + 1)) >= 0 && hex(s.charAt(i + 2)) >= 0) {
        bytes.write(hex(s.charAt(i + 1)) * 16 + hex(s.charAt(i + 2)));
        i += 2;
      } else {
        byte[] b = String.valueOf(c).getBytes(StandardCharsets.UTF_8);
        if (Character.isHighSurrogate(c) && i + 1 < s.length()) {
          b = s.substring(i, i + 2).getBytes(StandardCharsets.UTF_8);
          i++;
        }
        bytes.write(b, 0, b.length);
      }
    }
    return new String(bytes.toByteArray(), StandardCharsets.UTF_8);
  }

  private static int hex(char c) {
    return Character.digit(c, 16);
  }

  /**
   * Whether a raw request path is in the one form the relay routes and signs (issue 11 item 9: the signed path must
   * be the routed path). Refused: a path that does not start with {@code /}; a repeated {@code /}; a {@code .} or
   * {@code ..} segment; a trailing {@code /} (except the root); any {@code %} (no relay path has one, so a
   * percent-encoded unreserved character, an encoded slash and a malformed escape are all refused); a backslash.
   * Vert.x Web normalises such paths before it matches routes while the hop signs the path as sent, so without this
   * check {@code /v1/relay/../../v2/relay/items?…} reached the v2 pull with its query unsigned and
   * {@code /v1/relay/./enrol} escaped the 8 KiB cap. The reference answers 401 for such paths
   * ({@code /v2/relay/info/}, {@code //v2/relay/info}). One pass, no allocation.
   *
   * @param rawPath the path as on the request line (no query)
   * @return true when the path is normalised
   */
  static boolean normalisedPath(String rawPath) {
    int n = rawPath == null ? 0 : rawPath.length();
    if (n == 0 || rawPath.charAt(0) != '/' || (n > 1 && rawPath.charAt(n - 1) == '/')) {
      return false;
    }
    for (int i = 0; i < n; i++) {
      char c = rawPath.charAt(i);
      if (c == '%' || c == '\\') {
        return false;
      }
      if (c == '/' && i + 1 < n) {
        char next = rawPath.charAt(i + 1);
        if (next == '/') {
          return false;
        }
        if (next == '.') {
          int j = i + 2;
          if (j < n && rawPath.charAt(j) == '.') {
            j++;
          }
          if (j == n || rawPath.charAt(j) == '/') {
            return false; // "/." or "/.." as a whole segment
          }
        }
      }
    }
    return true;
  }
}
