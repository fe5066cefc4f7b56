package io.mbxrelay.wire;

import com.fasterxml.jackson.databind.JsonNode;
import java.math.BigInteger;
import java.util.OptionalLong;

/**
 * JavaScript {@code Number(x)} coercion for request fields the reference reads with {@code Number()} and
 * {@code Math.floor} (docs/protocol.md §3 pull {@code after}/{@code limit}, ack {@code through}, v1 {@code cursor}; §2
 * {@code x-mbx-ts} through {@link io.mbxrelay.crypto.HopText#parseTs}). Own code because the coercion rules are part
 * of the wire contract.
 *
 * <p>Linear time (issue 11 item 1): the text is refused (NaN) above {@link #MAX_TEXT_CHARS} characters before any
 * parsing, then read in one left-to-right pass without regular expressions; {@link Double#parseDouble} and
 * {@link BigInteger} only ever see an already validated text of at most that length. An earlier regex
 * ({@code \d+\.?\d*}) backtracked quadratically: a 15,000-character {@code 111…1x} held an event loop for seconds.
 *
 * <p>Thread-safe, stateless.
 */
public final class JsNumber {
  /** {@code Number.MAX_SAFE_INTEGER}. */
  public static final double MAX_SAFE = 9007199254740991d;

  /**
   * Longest text read as a number, whitespace included (characters). An honest client sends at most 16 digits (a
   * millisecond timestamp or a seq, ~1.8e12); a longer text is NaN. This is a deliberate deviation from JS, which
   * reads any length (e.g. 100 leading zeros).
   */
  public static final int MAX_TEXT_CHARS = 64;

  private JsNumber() {}

  /**
   * {@code Number(value)} of a JSON member.
   *
   * @param node the member, or {@code null}/missing for JS {@code undefined}
   * @return the number; NaN where JS gives NaN (undefined, objects, unparsable or over-long strings)
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
        // Number([x]) is Number(String(x)); String of a number reads back as the same number
        JsonNode only = node.get(0);
        return only.isNull() ? 0 : only.isNumber() ? only.doubleValue()
            : ofString(only.isTextual() ? only.textValue() : only.asText());
      }
    }
    return Double.NaN;
  }

  /**
   * {@code Number(text)} of a string (ECMAScript StringToNumber): surrounding JS white space and line terminators
   * ignored, blank → 0, decimal with optional sign, fraction and exponent, {@code [+-]Infinity}, unsigned
   * {@code 0x}/{@code 0o}/{@code 0b} integers (ASCII digits only); anything else NaN. One pass, O(length).
   *
   * @param text the string, or {@code null} for undefined
   * @return the number (possibly ±Infinity), or NaN; NaN also for a text over {@link #MAX_TEXT_CHARS} characters
   */
  public static double ofString(String text) {
    if (text == null || text.length() > MAX_TEXT_CHARS) {
      return Double.NaN;
    }
    int start = 0;
    int end = text.length();
    while (start < end && isJsWhitespace(text.charAt(start))) {
      start++;
    }
    while (end > start && isJsWhitespace(text.charAt(end - 1))) {
      end--;
    }
    if (start == end) {
      return 0;
    }
    if (end - start > 2 && text.charAt(start) == '0') {
      char p = text.charAt(start + 1);
      int radix = p == 'x' || p == 'X' ? 16 : p == 'o' || p == 'O' ? 8 : p == 'b' || p == 'B' ? 2 : 0;
      if (radix != 0) {
        return nonDecimal(text, start + 2, end, radix);
      }
    }
    return decimal(text, start, end);
  }

  /**
   * Whether a text is empty or only JS white space ({@code Number} reads it as 0). O(length).
   *
   * @param text the text (null → true)
   * @return true when blank in the JS sense
   */
  public static boolean isBlank(String text) {
    if (text == null) {
      return true;
    }
    for (int i = 0; i < text.length(); i++) {
      if (!isJsWhitespace(text.charAt(i))) {
        return false;
      }
    }
    return true;
  }

  private static double nonDecimal(String s, int from, int to, int radix) {
    for (int i = from; i < to; i++) {
      if (asciiDigit(s.charAt(i), radix) < 0) {
        return Double.NaN;
      }
    }
    String digits = s.substring(from, to);
    // exact below 2^53; beyond, BigInteger rounds to nearest like JS (the text is at most MAX_TEXT_CHARS long)
    return to - from <= 13 ? (double) Long.parseLong(digits, radix) : new BigInteger(digits, radix).doubleValue();
  }

  private static int asciiDigit(char c, int radix) {
    int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'z' ? c - 'a' + 10 : c >= 'A' && c <= 'Z' ? c - 'A' + 10
        : -1;
    return d < radix ? d : -1;
  }

  /** StrDecimalLiteral: [+-] (Infinity | digits [. digits?] | . digits) ([eE] [+-] digits)?, validated in one pass. */
  private static double decimal(String s, int from, int to) {
    int i = from;
    boolean negative = false;
    char c = s.charAt(i);
    if (c == '+' || c == '-') {
      negative = c == '-';
      i++;
    }
    if (s.startsWith("Infinity", i) && i + 8 == to) {
      return negative ? Double.NEGATIVE_INFINITY : Double.POSITIVE_INFINITY;
    }
    int intDigits = 0;
    while (i < to && isDigit(s.charAt(i))) {
      i++;
      intDigits++;
    }
    int fracDigits = 0;
    if (i < to && s.charAt(i) == '.') {
      i++;
      while (i < to && isDigit(s.charAt(i))) {
        i++;
        fracDigits++;
      }
    }
    if (intDigits == 0 && fracDigits == 0) {
      return Double.NaN;
    }
    if (i < to && (s.charAt(i) == 'e' || s.charAt(i) == 'E')) {
      i++;
      if (i < to && (s.charAt(i) == '+' || s.charAt(i) == '-')) {
        i++;
      }
      int expDigits = 0;
      while (i < to && isDigit(s.charAt(i))) {
        i++;
        expDigits++;
      }
      if (expDigits == 0) {
        return Double.NaN;
      }
    }
    if (i != to) {
      return Double.NaN;
    }
    // the validated text is a Java floating literal too (no suffix, no hex): parseDouble rounds like JS
    return Double.parseDouble(s.substring(from, to));
  }

  private static boolean isDigit(char c) {
    return c >= '0' && c <= '9';
  }

  /** ECMAScript WhiteSpace and LineTerminator code points (StrWhiteSpaceChar). */
  public static boolean isJsWhitespace(char c) {
    return c == '\t' || c == '\n' || c == 0x0B || c == '\f' || c == '\r' || c == ' ' || c == 0xA0
        || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F
        || c == 0x205F || c == 0x3000 || c == 0xFEFF;
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
