package io.mbxrelay.wire;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.mbxrelay.crypto.HopText;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/** {@link JsNumber}: JS {@code Number()} for honest inputs, in linear time for any input (issue 11 item 1). */
class JsNumberTest {

  @ParameterizedTest(name = "Number({0}) = {1}")
  @CsvSource(delimiter = '|', value = {
    "0|0", "42|42", "-7|-7", "+7|7", "1.5|1.5", "-.5|-0.5", "5.|5", ".5|0.5", "1e3|1000", "1E+3|1000", "1e-3|0.001",
    "1764400000000|1764400000000", "1.7644e12|1764400000000", "0x1F|31", "0o17|15", "0B101|5", "00012|12",
    "'  12  '|12", "'\t12\n'|12", "'\u00a012\u3000'|12", "'\ufeff12'|12", "0x1fffffffffffff|9007199254740991",
    "0xffffffffffffffffff|4.722366482869645E21", "''|0", "'   '|0", "Infinity|Infinity", "-Infinity|-Infinity",
    "+Infinity|Infinity", "1e400|Infinity"})
  void honest_inputs_read_as_javascript_reads_them(String text, double expected) {
    assertThat(JsNumber.ofString(text)).isEqualTo(expected);
  }

  @ParameterizedTest(name = "Number({0}) is NaN")
  @ValueSource(strings = {"x", "12x", "1_000", "1,000", "-0x10", "0x", "0xg", "0b2", "0o8", "1e", "1e+", ".", "+",
      "-", "e5", "1.2.3", "NaN", "infinity", "Infinityx", "0x１", "١٢", "1d", "1f", "0x1p3", "\u001c12"})
  void anything_else_is_nan(String text) {
    assertThat(JsNumber.ofString(text)).isNaN();
  }

  @Test
  void a_text_over_the_cap_is_nan_before_it_is_read_even_when_javascript_would_read_it() {
    String zeros = "0".repeat(JsNumber.MAX_TEXT_CHARS) + "1";
    assertThat(JsNumber.ofString(zeros.substring(1))).isEqualTo(1);
    assertThat(JsNumber.ofString(zeros)).isNaN();
    assertThat(HopText.parseTs(zeros)).isEmpty();
  }

  @Test
  void json_members_follow_javascript_coercion() {
    assertThat(JsNumber.of(null)).isNaN();
    assertThat(JsNumber.of(Json.parse("null"))).isZero();
    assertThat(JsNumber.of(Json.parse("true"))).isEqualTo(1);
    assertThat(JsNumber.of(Json.parse("[]"))).isZero();
    assertThat(JsNumber.of(Json.parse("[\"12\"]"))).isEqualTo(12);
    assertThat(JsNumber.of(Json.parse("[1e12]"))).isEqualTo(1e12);
    JsonNode bigInteger = Json.parse("[" + "9".repeat(400) + "]");
    assertThat(JsNumber.of(bigInteger)).isEqualTo(Double.POSITIVE_INFINITY);
    assertThat(JsNumber.of(Json.parse("[1,2]"))).isNaN();
    assertThat(JsNumber.of(Json.parse("{}"))).isNaN();
  }

  /**
   * The issue 11 item 1 inputs: a 15,000-character {@code 111…1x} (an {@code x-mbx-ts} that fits in the 16 KiB header
   * limit) and a 40 KB {@code through}. The regex this replaces backtracked quadratically and took seconds on each (the
   * report measured 3–9 s per request on the relay). Now they are refused by length before any parsing, and even
   * without the cap a single linear pass over 40 KB takes microseconds; the bound of one second for all of them
   * only has to tell "linear" from "quadratic", with a wide margin for a loaded CI machine.
   */
  @Test
  void the_reported_inputs_are_refused_in_linear_time() {
    String ts = "1".repeat(15_000) + "x";
    String through = "1".repeat(40_000) + "x";
    long start = System.nanoTime();
    for (int i = 0; i < 20; i++) {
      assertThat(HopText.parseTs(ts)).isEmpty();
      assertThat(JsNumber.ofString(through)).isNaN();
      assertThat(JsNumber.ofString("0x" + "f".repeat(40_000) + "g")).isNaN();
      assertThat(JsNumber.ofString(" ".repeat(40_000) + "1")).isNaN();
    }
    assertThat((System.nanoTime() - start) / 1_000_000).as("ms for 80 over-long inputs").isLessThan(1000);
  }
}
