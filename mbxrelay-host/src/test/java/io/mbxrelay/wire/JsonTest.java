package io.mbxrelay.wire;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class JsonTest {

  @ParameterizedTest(name = "[{0}] is not JSON")
  @ValueSource(strings = {"", " ", "{", "{\"a\":1,}", "[1,]", "{'a':1}", "NaN", "01", "+1", "{\"a\":1} x", "// c\n1",
      "\"tab\tinside\"", "\uFEFF{}", "[1] [2]", "undefined", ".5", "1."})
  void parse_refuses_what_json_parse_refuses(String text) {
    assertThatThrownBy(() -> Json.parse(text))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageStartingWith("invalid JSON");
  }

  @Test
  void parse_accepts_any_top_level_value_with_json_whitespace() {
    assertThat(Json.parse(" \t\r\n 1 \n").asInt()).isEqualTo(1);
    assertThat(Json.parse("null").isNull()).isTrue();
    assertThat(Json.parse("\"x\"").textValue()).isEqualTo("x");
  }

  @Test
  void the_last_duplicate_key_wins_and_keeps_the_first_position() {
    JsonNode n = Json.parse("{\"a\":1,\"b\":2,\"a\":3}");
    assertThat(n.get("a").asInt()).isEqualTo(3);
    assertThat(Json.stringify(n)).isEqualTo("{\"a\":3,\"b\":2}");
  }

  @Test
  void stringify_keeps_insertion_order_and_js_number_and_string_forms() {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("z", 1.0);
    m.put("a", List.of(1e21, -0.0, 0.5));
    m.put("s", "é\u2028\u0001\"");
    m.put("n", null);
    assertThat(Json.stringify(m)).isEqualTo("{\"z\":1,\"a\":[1e+21,0,0.5],\"s\":\"é\u2028\\u0001\\\"\",\"n\":null}");
  }

  @Test
  void stringify_of_a_parsed_body_round_trips_it() {
    String body = "{\"items\":[{\"kind\":\"envelope\",\"item_id\":\"x\",\"targets\":[]}],\"n\":1764400000123}";
    assertThat(Json.stringify(Json.parse(body))).isEqualTo(body);
  }
}
