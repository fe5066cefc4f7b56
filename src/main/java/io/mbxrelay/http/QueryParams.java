package io.mbxrelay.http;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Form decoding of a raw query string the way the reference's WHATWG {@code URLSearchParams} does it (wire.md §2:
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
   * Whether a raw request path has only well-formed percent escapes (Vert.x Web refuses the others before routing).
   *
   * @param rawPath the path as on the request line
   * @return true when every {@code %} is followed by two hex digits
   */
  static boolean wellFormedPath(String rawPath) {
    for (int i = 0; i < rawPath.length(); i++) {
      if (rawPath.charAt(i) == '%') {
        if (i + 2 >= rawPath.length() || hex(rawPath.charAt(i + 1)) < 0 || hex(rawPath.charAt(i + 2)) < 0) {
          return false;
        }
        i += 2;
      }
    }
    return true;
  }
}
