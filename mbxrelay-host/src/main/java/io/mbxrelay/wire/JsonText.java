package io.mbxrelay.wire;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;

/**
 * The one JSON text writer behind {@link Json#stringify(Object)} and {@link CanonicalJson}: JS number form
 * ({@link EsNumber}) and ES2019 {@code JSON.stringify} string escaping, no whitespace; keys either in
 * insertion order or sorted by UTF-16 code units. Source: {@code docs/protocol.md §1}. Stateless, thread-safe.
 */
final class JsonText {

  private static final char[] HEX = "0123456789abcdef".toCharArray();

  private JsonText() {}

  static String write(JsonNode node, boolean sortKeys) {
    if (node == null || node.isMissingNode()) {
      throw new IllegalArgumentException("nothing to serialize (undefined)");
    }
    StringBuilder out = new StringBuilder(256);
    value(node, sortKeys, out);
    return out.toString();
  }

  private static void value(JsonNode node, boolean sortKeys, StringBuilder out) {
    switch (node.getNodeType()) {
      case NULL -> out.append("null");
      case BOOLEAN -> out.append(node.booleanValue() ? "true" : "false");
      case NUMBER -> out.append(EsNumber.toString(node.doubleValue()));
      case STRING -> string(node.textValue(), out);
      case BINARY -> string(node.asText(), out); // Jackson's own JSON form of binary is its base64 text
      case ARRAY -> {
        out.append('[');
        boolean first = true;
        for (JsonNode element : node) {
          if (!first) {
            out.append(',');
          }
          first = false;
          if (element.isMissingNode()) {
            out.append("null"); // JS: undefined inside an array becomes null
          } else {
            value(element, sortKeys, out);
          }
        }
        out.append(']');
      }
      case OBJECT -> object(node, sortKeys, out);
      case POJO -> value(Json.MAPPER.valueToTree(node), sortKeys, out);
      default -> throw new IllegalArgumentException("cannot serialize JSON node type " + node.getNodeType());
    }
  }

  private static void object(JsonNode node, boolean sortKeys, StringBuilder out) {
    List<Map.Entry<String, JsonNode>> members = new ArrayList<>(node.size());
    for (Iterator<Map.Entry<String, JsonNode>> it = node.fields(); it.hasNext(); ) {
      Map.Entry<String, JsonNode> member = it.next();
      if (!member.getValue().isMissingNode()) { // JS drops undefined members; JSON null is kept
        members.add(member);
      }
    }
    if (sortKeys) {
      members.sort(Map.Entry.comparingByKey()); // String.compareTo = UTF-16 code unit order
    }
    out.append('{');
    boolean first = true;
    for (Map.Entry<String, JsonNode> member : members) {
      if (!first) {
        out.append(',');
      }
      first = false;
      string(member.getKey(), out);
      out.append(':');
      value(member.getValue(), sortKeys, out);
    }
    out.append('}');
  }

  /** ES2019 JSON.stringify QuoteJSONString: short escapes, other C0 as &#92;u00xx, lone surrogates as &#92;udxxx. */
  static void string(String s, StringBuilder out) {
    out.append('"');
    int n = s.length();
    // Fast path: copy the longest prefix that needs no escaping in one append (wire_b64 strings are all prefix).
    int start = 0;
    while (start < n) {
      char c = s.charAt(start);
      if (c < 0x20 || c == '"' || c == '\\' || Character.isSurrogate(c)) {
        break;
      }
      start++;
    }
    out.append(s, 0, start);
    for (int i = start; i < n; i++) {
      char c = s.charAt(i);
      switch (c) {
        case '"' -> out.append("\\\"");
        case '\\' -> out.append("\\\\");
        case '\b' -> out.append("\\b");
        case '\f' -> out.append("\\f");
        case '\n' -> out.append("\\n");
        case '\r' -> out.append("\\r");
        case '\t' -> out.append("\\t");
        default -> {
          if (c < 0x20) {
            unicodeEscape(c, out);
          } else if (Character.isHighSurrogate(c)) {
            if (i + 1 < n && Character.isLowSurrogate(s.charAt(i + 1))) {
              out.append(c).append(s.charAt(++i));
            } else {
              unicodeEscape(c, out);
            }
          } else if (Character.isLowSurrogate(c)) {
            unicodeEscape(c, out);
          } else {
            out.append(c);
          }
        }
      }
    }
    out.append('"');
  }

  private static void unicodeEscape(char c, StringBuilder out) {
    out.append("\\u")
        .append(HEX[(c >> 12) & 0xF])
        .append(HEX[(c >> 8) & 0xF])
        .append(HEX[(c >> 4) & 0xF])
        .append(HEX[c & 0xF]);
  }
}
