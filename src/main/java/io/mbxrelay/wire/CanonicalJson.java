package io.mbxrelay.wire;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.charset.StandardCharsets;

/**
 * Canonical JSON, the input of every signature ({@code docs/protocol.md §1} "Canonical JSON"): recursive, no
 * whitespace, object keys sorted by UTF-16 code units ({@link String#compareTo}), numbers in ECMAScript
 * {@code Number::toString} form (every number is treated as a double, like JS), strings escaped as ES2019
 * {@code JSON.stringify}. Equals RFC 8785 (JCS) output for JSON input.
 *
 * <p>Written here rather than taken from a library because it must match the JS reference byte for byte;
 * see {@link EsNumber} for why Java's own number formatting is not used. Stateless and thread-safe.
 */
public final class CanonicalJson {

  private CanonicalJson() {}

  /**
   * The canonical text of {@code node}. Example: {@code {"b":2,"a":[1.0,-0]}} → {@code {"a":[1,0],"b":2}}.
   * Missing (JS-{@code undefined}) object members are dropped; JSON {@code null} is kept.
   *
   * @param node any JSON tree (not null, not a missing node)
   * @return the canonical JSON text
   * @throws IllegalArgumentException if a number is NaN or ±Infinity, or the node is missing
   */
  public static String canonicalize(JsonNode node) {
    return JsonText.write(node, true);
  }

  /**
   * The UTF-8 bytes of {@link #canonicalize(JsonNode)}: exactly what gets signed and verified.
   *
   * @param node any JSON tree
   * @return UTF-8 bytes (lone surrogates never reach the encoder: they are escaped as &#92;udxxx)
   * @throws IllegalArgumentException as {@link #canonicalize(JsonNode)}
   */
  public static byte[] canonicalBytes(JsonNode node) {
    return canonicalize(node).getBytes(StandardCharsets.UTF_8);
  }

  /**
   * The inside of a JSON string (no quotes) holding well-formed UTF-8 text, as bytes: exactly the UTF-8 bytes of what
   * {@link #canonicalize} writes between the quotes for that text. Only {@code "}, backslash and C0 controls change
   * (ES2019 escaping, docs/protocol.md §1); everything else is copied, since well-formed UTF-8 holds no lone surrogate. Used to
   * build the signed hop text straight from a request body's bytes (docs/protocol.md §2).
   *
   * @param utf8 well-formed UTF-8 ({@link Utf8#isValid(byte[])}); other input gives a meaningless result
   * @return the escaped bytes
   */
  public static byte[] escapeUtf8(byte[] utf8) {
    int n = escapedLength(utf8);
    if (n == utf8.length) {
      return utf8;
    }
    byte[] out = new byte[n];
    escapeInto(utf8, n, out, 0);
    return out;
  }

  /**
   * The length of {@link #escapeUtf8} of these bytes, without building it.
   *
   * @param utf8 well-formed UTF-8 (not null)
   * @return the escaped length, bytes
   */
  public static int escapedLength(byte[] utf8) {
    int extra = 0;
    int n = utf8.length;
    for (int i = AsciiScan.nextToEscape(utf8, 0, n); i < n; i = AsciiScan.nextToEscape(utf8, i + 1, n)) {
      byte b = utf8[i];
      extra += b == '"' || b == '\\' || b == '\b' || b == '\f' || b == '\n' || b == '\r' || b == '\t' ? 1 : 5;
    }
    return n + extra;
  }

  /**
   * Writes {@link #escapeUtf8} of {@code utf8} into {@code out} at {@code at}: runs without a character to escape are
   * copied whole.
   *
   * @param utf8 well-formed UTF-8 (not null)
   * @param escapedLength {@link #escapedLength} of it
   * @param out the array written to, with room for {@code escapedLength} bytes from {@code at}
   * @param at the first index written
   */
  public static void escapeInto(byte[] utf8, int escapedLength, byte[] out, int at) {
    if (escapedLength == utf8.length) {
      System.arraycopy(utf8, 0, out, at, utf8.length);
      return;
    }
    int o = at;
    int run = 0;
    int n = utf8.length;
    for (int i = AsciiScan.nextToEscape(utf8, 0, n); i < n; i = AsciiScan.nextToEscape(utf8, i + 1, n)) {
      byte b = utf8[i];
      System.arraycopy(utf8, run, out, o, i - run);
      o += i - run;
      run = i + 1;
      out[o++] = '\\';
      switch (b) {
        case '"', '\\' -> out[o++] = b;
        case '\b' -> out[o++] = 'b';
        case '\f' -> out[o++] = 'f';
        case '\n' -> out[o++] = 'n';
        case '\r' -> out[o++] = 'r';
        case '\t' -> out[o++] = 't';
        default -> {
          out[o++] = 'u';
          out[o++] = '0';
          out[o++] = '0';
          out[o++] = (byte) HEX[(b >> 4) & 0xF];
          out[o++] = (byte) HEX[b & 0xF];
        }
      }
    }
    System.arraycopy(utf8, run, out, o, utf8.length - run);
  }

  private static final char[] HEX = "0123456789abcdef".toCharArray();
}
