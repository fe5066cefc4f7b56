package io.mbxrelay.wire;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class CanonicalJsonTest {

  static JsonNode vectors() throws Exception {
    try (InputStream in = CanonicalJsonTest.class.getResourceAsStream("/vectors.json")) {
      return Json.parse(new String(in.readAllBytes(), StandardCharsets.UTF_8));
    }
  }

  @Test
  void every_canonical_vector_is_reproduced_byte_for_byte() throws Exception {
    JsonNode canonical = vectors().get("canonical");
    assertThat(canonical.size()).isGreaterThanOrEqualTo(5);
    for (JsonNode v : canonical) {
      JsonNode input = Json.parse(v.get("input_json").textValue());
      assertThat(CanonicalJson.canonicalize(input)).isEqualTo(v.get("canonical").textValue());
      assertThat(CanonicalJson.canonicalBytes(input))
          .isEqualTo(v.get("canonical").textValue().getBytes(StandardCharsets.UTF_8));
    }
  }

  @ParameterizedTest(name = "{0} is written as {1}")
  @CsvSource({
    "0, 0",
    "-0.0, 0",
    "1.0, 1",
    "-1, -1",
    "1.5, 1.5",
    "0.1, 0.1",
    "5e-324, 5e-324",
    "1.7976931348623157e308, 1.7976931348623157e+308",
    "1e-7, 1e-7",
    "1.5e-7, 1.5e-7",
    "0.000001, 0.000001",
    "0.0000015, 0.0000015",
    "123e-20, 1.23e-18",
    "1e21, 1e+21",
    "1.5e21, 1.5e+21",
    "1e20, 100000000000000000000",
    "999999999999999900000, 999999999999999900000",
    "9007199254740991, 9007199254740991",
    "9007199254740993, 9007199254740992",
    "18446744073709551616, 18446744073709552000",
    "123456789012345, 123456789012345",
    "2e23, 2e+23",
    "8.41e21, 8.41e+21",
    "2.82879384806159e17, 282879384806159000",
    "1764400000123, 1764400000123",
    "-2.5e-10, -2.5e-10",
    "4.35, 4.35",
    "0.3, 0.3",
    "100, 100",
    "1e-6, 0.000001",
    "12345678.9, 12345678.9",
  })
  void numbers_follow_the_ecmascript_number_to_string_form(double value, String expected) {
    assertThat(EsNumber.toString(value)).isEqualTo(expected);
    assertThat(CanonicalJson.canonicalize(JsonNodeFactory.instance.numberNode(value))).isEqualTo(expected);
  }

  @Test
  void a_sum_that_is_not_exact_keeps_all_its_shortest_digits() {
    assertThat(EsNumber.toString(0.1 + 0.2)).isEqualTo("0.30000000000000004");
  }

  @Test
  void number_literals_in_json_text_are_read_as_doubles_like_js() {
    JsonNode n = Json.parse("[1.0,-0,1e21,100000000000000000000,1E-7,123e-20,5e-324,9007199254740993]");
    assertThat(CanonicalJson.canonicalize(n))
        .isEqualTo("[1,0,1e+21,100000000000000000000,1e-7,1.23e-18,5e-324,9007199254740992]");
  }

  @Test
  void nan_and_infinity_are_refused() {
    assertThatThrownBy(() -> CanonicalJson.canonicalize(JsonNodeFactory.instance.numberNode(Double.NaN)))
        .isInstanceOf(IllegalArgumentException.class);
    ArrayNode a = JsonNodeFactory.instance.arrayNode().add(Double.POSITIVE_INFINITY);
    assertThatThrownBy(() -> CanonicalJson.canonicalize(a)).isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void strings_are_escaped_like_es2019_json_stringify() {
    String s = "q\" b\\ /\t\n\r\b\f \u0000\u0001\u001f\u007f\u0085\u2028\u2029 é 😀";
    assertThat(CanonicalJson.canonicalize(JsonNodeFactory.instance.textNode(s)))
        .isEqualTo("\"q\\\" b\\\\ /\\t\\n\\r\\b\\f \\u0000\\u0001\\u001f\u007f\u0085\u2028\u2029 é 😀\"");
  }

  @Test
  void lone_surrogates_are_escaped_in_lower_case_hex() {
    String s = "a\uD83Db\uDE00c\uDBFF";
    assertThat(CanonicalJson.canonicalize(JsonNodeFactory.instance.textNode(s)))
        .isEqualTo("\"a\\ud83db\\ude00c\\udbff\"");
    assertThat(CanonicalJson.canonicalBytes(JsonNodeFactory.instance.textNode("\uD800")))
        .isEqualTo("\"\\ud800\"".getBytes(StandardCharsets.UTF_8));
  }

  @Test
  void keys_are_sorted_by_utf16_code_units_not_by_code_points() {
    ObjectNode o = JsonNodeFactory.instance.objectNode();
    o.put("\uFF21", 1); // fullwidth A: above the surrogates by code unit
    o.put("😀", 2); // U+1F600 = \uD83D\uDE00
    o.put("b", 3);
    o.put("B", 4);
    assertThat(CanonicalJson.canonicalize(o)).isEqualTo("{\"B\":4,\"b\":3,\"😀\":2,\"\uFF21\":1}");
  }

  @Test
  void nested_containers_are_sorted_recursively_and_null_members_are_kept() {
    JsonNode n = Json.parse("{\"z\":{\"b\":[{\"y\":1,\"x\":null}],\"a\":{}},\"a\":[]}");
    assertThat(CanonicalJson.canonicalize(n)).isEqualTo("{\"a\":[],\"z\":{\"a\":{},\"b\":[{\"x\":null,\"y\":1}]}}");
  }
}
