package io.mbxrelay.wire;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.charset.StandardCharsets;

/**
 * Canonical JSON, the input of every signature ({@code wire.md §1} "Canonical JSON"): recursive, no
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
}
