package io.mbxrelay.wire;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;

/**
 * Plain JSON in and out, with the semantics of JS {@code JSON.parse} / {@code JSON.stringify} that the
 * reference implementation uses for HTTP bodies ({@code docs/protocol.md §1}, last paragraph of "Canonical JSON").
 *
 * <p>Parsing is strict JSON (no comments, single quotes, trailing commas, NaN, leading zeros, BOM or trailing
 * content); a duplicate key keeps its first position and its last value, as in JS. Jackson's default
 * stream bounds stay on (nesting depth 1,000, number literals ≤ 1,000 characters, strings ≤ 20 M chars):
 * deeper or longer input is refused where JS would accept it, which no honest client produces.
 *
 * <p>Thread-safe: {@link #MAPPER} is configured once and never changed afterwards.
 */
public final class Json {

  /**
   * The shared plain Jackson mapper (strict JSON, trailing tokens refused, duplicate keys: last wins). Do not
   * reconfigure it. Numbers are read as int/long/BigInteger/double nodes; writers here treat all of them as
   * doubles like JS does.
   */
  public static final ObjectMapper MAPPER =
      JsonMapper.builder()
          .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
          .disable(DeserializationFeature.FAIL_ON_READING_DUP_TREE_KEY)
          .build();

  private static final int MAX_MESSAGE = 160;

  private Json() {}

  /**
   * Parses JSON text like JS {@code JSON.parse}.
   *
   * @param text the JSON text (not null)
   * @return the parsed tree; may be a {@code NullNode}, number, string, boolean, array or object node
   * @throws IllegalArgumentException with a short message (e.g. {@code invalid JSON: Unexpected end-of-input})
   *     when the text is not one complete JSON value
   */
  public static JsonNode parse(String text) {
    if (text == null) {
      throw new IllegalArgumentException("invalid JSON: no text");
    }
    if (!text.isEmpty() && text.charAt(0) == '\uFEFF') {
      throw new IllegalArgumentException("invalid JSON: unexpected byte order mark");
    }
    JsonNode node;
    try {
      node = MAPPER.readTree(text);
    } catch (JsonProcessingException e) {
      throw new IllegalArgumentException(shortMessage(e), null);
    }
    if (node == null || node.isMissingNode()) {
      throw new IllegalArgumentException("invalid JSON: Unexpected end of JSON input");
    }
    return node;
  }

  /**
   * Parses bytes like JS {@code JSON.parse(buffer.toString('utf8'))}: the bytes are decoded as Node decodes UTF-8
   * ({@link Utf8#decode(byte[])}, so a leading BOM is kept and refused, invalid sequences become U+FFFD) and parsed.
   * Well-formed UTF-8 is parsed straight from the bytes (the same result without building a string first).
   *
   * @param utf8 the bytes (not null)
   * @return the parsed tree, as {@link #parse(String)}
   * @throws IllegalArgumentException as {@link #parse(String)}
   */
  public static JsonNode parse(byte[] utf8) {
    // Jackson's byte bootstrapper would skip a BOM and sniff UTF-16/32 from NUL bytes: such input takes the text path.
    boolean plain = utf8.length < 4 || (utf8[0] != 0 && utf8[1] != 0 && utf8[2] != 0 && utf8[3] != 0);
    if (!plain || (utf8.length >= 3 && (utf8[0] & 0xFF) == 0xEF && (utf8[1] & 0xFF) == 0xBB
        && (utf8[2] & 0xFF) == 0xBF) || !Utf8.isValid(utf8)) {
      return parse(Utf8.decode(utf8));
    }
    JsonNode node;
    try {
      node = MAPPER.readTree(utf8);
    } catch (java.io.IOException e) {
      throw new IllegalArgumentException(e instanceof JsonProcessingException j ? shortMessage(j) : "invalid JSON",
          null);
    }
    if (node == null || node.isMissingNode()) {
      throw new IllegalArgumentException("invalid JSON: Unexpected end of JSON input");
    }
    return node;
  }

  /**
   * Serializes like JS {@code JSON.stringify(value)}: compact, keys in insertion order, numbers in ES
   * {@code Number::toString} form ({@link EsNumber}), strings escaped like ES2019 (only {@code "}, {@code \},
   * C0 controls and lone surrogates escaped; non-ASCII, U+007F, U+2028/2029 literal). Use it for HTTP bodies.
   *
   * @param node a {@link JsonNode}, or any value Jackson can turn into a tree (maps, lists, records)
   * @return the JSON text
   * @throws IllegalArgumentException if a number is NaN/Infinity or the value cannot be converted
   */
  public static String stringify(Object node) {
    JsonNode tree = node instanceof JsonNode n ? n : MAPPER.valueToTree(node);
    return JsonText.write(tree, false);
  }

  private static String shortMessage(JsonProcessingException e) {
    String msg = e.getOriginalMessage();
    if (msg == null) {
      msg = "malformed";
    }
    int nl = msg.indexOf('\n');
    if (nl >= 0) {
      msg = msg.substring(0, nl);
    }
    if (msg.length() > MAX_MESSAGE) {
      msg = msg.substring(0, MAX_MESSAGE);
    }
    return "invalid JSON: " + msg;
  }

  /**
   * Appends a string as {@code JSON.stringify} writes it (quotes and ES2019 escaping), for answers written piece by
   * piece.
   *
   * @param text the string (not null)
   * @param out where to append
   */
  public static void appendString(String text, StringBuilder out) {
    JsonText.string(text, out);
  }

  /**
   * A whole number as JS writes it: safe integers are their decimal digits, anything larger goes through the double
   * it is in JS ({@link EsNumber}).
   *
   * @param v the value
   * @return its JSON text
   */
  public static String number(long v) {
    return Math.abs(v) <= (1L << 53) ? Long.toString(v) : EsNumber.toString((double) v);
  }
}
