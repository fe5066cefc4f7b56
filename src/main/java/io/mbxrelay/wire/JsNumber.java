package io.mbxrelay.wire;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.OptionalLong;

/**
 * JavaScript {@code Number(x)} coercion for request fields the reference reads with {@code Number()} and
 * {@code Math.floor} (wire.md §3 pull {@code after}/{@code limit}, ack {@code through}). Own code because the
 * coercion rules are part of the wire contract.
 *
 * <p>Thread-safe, stateless.
 */
public final class JsNumber {
  /** {@code Number.MAX_SAFE_INTEGER}. */
  public static final double MAX_SAFE = 9007199254740991d;

  private JsNumber() {}

  /**
   * {@code Number(value)} of a JSON member.
   *
   * @param node the member, or {@code null}/missing for JS {@code undefined}
   * @return the number; NaN where JS gives NaN (undefined, objects, unparsable strings)
   */
  public static double of(JsonNode node) {
    if (node == null || node.isMissingNode()) {
      return Double.NaN;
    }
    if (node.isNull()) {
      return 0;
    }
    if (node.isNumber()) {
      return node.doubleValue();
    }
    if (node.isBoolean()) {
      return node.booleanValue() ? 1 : 0;
    }
    if (node.isTextual()) {
      return ofString(node.textValue());
    }
    if (node.isArray()) {
      if (node.isEmpty()) {
        return 0;
      }
      if (node.size() == 1 && !node.get(0).isContainerNode()) {
        JsonNode only = node.get(0);
        return only.isNull() ? 0 : ofString(only.isTextual() ? only.textValue() : only.asText());
      }
    }
    return Double.NaN;
  }

  /**
   * {@code Number(text)} of a string: surrounding whitespace ignored, empty → 0, decimal with optional exponent,
   * {@code 0x}/{@code 0o}/{@code 0b} prefixes, {@code Infinity}; anything else NaN.
   *
   * @param text the string, or {@code null} for undefined
   * @return the number or NaN
   */
  public static double ofString(String text) {
    if (text == null) {
      return Double.NaN;
    }
    String s = text.strip();
    if (s.isEmpty()) {
      return 0;
    }
    if (s.length() > 2 && s.charAt(0) == '0') {
      char p = Character.toLowerCase(s.charAt(1));
      int radix = p == 'x' ? 16 : p == 'o' ? 8 : p == 'b' ? 2 : 0;
      if (radix != 0) {
        String digits = s.substring(2);
        double v = 0;
        for (int i = 0; i < digits.length(); i++) {
          int d = Character.digit(digits.charAt(i), radix);
          if (d < 0) {
            return Double.NaN;
          }
          v = v * radix + d;
        }
        return v;
      }
    }
    switch (s) {
      case "Infinity", "+Infinity":
        return Double.POSITIVE_INFINITY;
      case "-Infinity":
        return Double.NEGATIVE_INFINITY;
      default:
        break;
    }
    if (!s.matches("[+-]?(\\d+\\.?\\d*|\\.\\d+)([eE][+-]?\\d+)?")) {
      return Double.NaN;
    }
    return Double.parseDouble(s);
  }

  /**
   * {@code Math.floor(x)} when the result is a safe integer ({@code |v| ≤ 2^53−1}).
   *
   * @param x a JS number
   * @return the floored value, or empty for NaN, infinities and unsafe magnitudes
   */
  public static OptionalLong safeFloor(double x) {
    if (Double.isNaN(x) || Double.isInfinite(x)) {
      return OptionalLong.empty();
    }
    double f = Math.floor(x);
    if (Math.abs(f) > MAX_SAFE) {
      return OptionalLong.empty();
    }
    return OptionalLong.of((long) f);
  }
}
