package io.mbxrelay.http;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.mbxrelay.wire.Json;
import java.util.Iterator;
import java.util.Map;

/**
 * Numbers a JSON body can carry that a JS number cannot: {@code 1e999} or a 400-digit integer parse (as in JS) to
 * ±Infinity, which canonical JSON refuses (docs/protocol.md §1: "NaN/Infinity → error") and {@code JSON.stringify} writes as
 * {@code null}. The routes that sign or store a client's JSON ask here first, so such a body gets the route's own 400
 * instead of an exception (a 500, or no answer at all when it was thrown in a callback; found by
 * {@code RequestFuzzTest}). Not used on the v2 push path: its records are checked field by field.
 *
 * <p>Stateless and thread-safe. Depth is bounded by the parser (1,000).
 */
final class JsonValues {
  private JsonValues() {}

  /**
   * Whether a tree holds a number that is not finite as a double.
   *
   * @param n the tree (null → false)
   * @return true when some number in it is ±Infinity or NaN
   */
  static boolean hasNonFinite(JsonNode n) {
    if (n == null) {
      return false;
    }
    if (n.isNumber()) {
      return !Double.isFinite(n.doubleValue());
    }
    if (n.isContainerNode()) {
      for (JsonNode child : n) {
        if (hasNonFinite(child)) {
          return true;
        }
      }
    }
    return false;
  }

  /**
   * The tree as JS {@code JSON.parse} then {@code JSON.stringify} would write it: non-finite numbers become
   * {@code null}. Returns {@code n} itself when there is none (the common case: no copy).
   *
   * @param n the tree
   * @return {@code n}, or a copy with each non-finite number replaced by JSON null
   */
  static JsonNode withJsNulls(JsonNode n) {
    if (!hasNonFinite(n)) {
      return n;
    }
    JsonNode copy = n.deepCopy();
    replace(copy);
    return copy;
  }

  private static void replace(JsonNode n) {
    if (n instanceof ObjectNode o) {
      Iterator<Map.Entry<String, JsonNode>> it = o.fields();
      while (it.hasNext()) {
        Map.Entry<String, JsonNode> e = it.next();
        if (e.getValue().isNumber() && !Double.isFinite(e.getValue().doubleValue())) {
          e.setValue(Json.MAPPER.nullNode());
        } else {
          replace(e.getValue());
        }
      }
    } else if (n instanceof ArrayNode a) {
      for (int i = 0; i < a.size(); i++) {
        JsonNode v = a.get(i);
        if (v.isNumber() && !Double.isFinite(v.doubleValue())) {
          a.set(i, Json.MAPPER.nullNode());
        } else {
          replace(v);
        }
      }
    }
  }

  /** JS truthiness of a JSON member: absent, null, {@code ""}, {@code false}, 0 and NaN are false. */
  static boolean truthy(JsonNode n) {
    if (n == null || n.isNull() || n.isMissingNode()) {
      return false;
    }
    if (n.isTextual()) {
      return !n.textValue().isEmpty();
    }
    if (n.isBoolean()) {
      return n.booleanValue();
    }
    if (n.isNumber()) {
      double d = n.doubleValue();
      return d != 0 && !Double.isNaN(d);
    }
    return true;
  }
}
