package io.mbxrelay.crypto;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

class HopTextTest {

  @Test
  void the_spec_example_for_get_info_is_reproduced() {
    assertThat(HopText.signedText("GET", "/v2/relay/info", "1759400000000", ""))
        .isEqualTo("{\"body\":\"GET:/v2/relay/info:1759400000000:\",\"method\":\"GET\",\"path\":\"/v2/relay/info\",\"ts\":\"1759400000000\"}");
  }

  @Test
  void the_raw_body_is_embedded_as_a_json_string() {
    assertThat(HopText.signedText("POST", "/v1/relay/ack", "1", "{\"cursor\":5}"))
        .isEqualTo("{\"body\":\"POST:/v1/relay/ack:1:{\\\"cursor\\\":5}\",\"method\":\"POST\",\"path\":\"/v1/relay/ack\",\"ts\":\"1\"}");
  }

  @Test
  void v2_paths_sign_the_raw_query_and_v1_paths_do_not() {
    assertThat(HopText.signedPath("/v2/relay/enc-key", "pubkey=ab%2Bc%3D")).isEqualTo("/v2/relay/enc-key?pubkey=ab%2Bc%3D");
    assertThat(HopText.signedPath("/v2/relay/items", "")).isEqualTo("/v2/relay/items");
    assertThat(HopText.signedPath("/v2/relay/items", null)).isEqualTo("/v2/relay/items");
    assertThat(HopText.signedPath("/v1/relay/messages", "after=3")).isEqualTo("/v1/relay/messages");
    assertThat(HopText.signedPath("/v2", "x=1")).isEqualTo("/v2");
  }

  @ParameterizedTest(name = "Number([{0}]) floors to {1}")
  @CsvSource({
    "1764400000000, 1764400000000",
    "' 1764400000000 ', 1764400000000",
    "'\t1764400000000\n', 1764400000000",
    "1.7644e12, 1764400000000",
    "1e12, 1000000000000",
    "1764400000000.9, 1764400000000",
    "+5, 5",
    "-5.5, -6",
    ".5, 0",
    "5., 5",
    "0x10, 16",
    "0X1f, 31",
    "0o17, 15",
    "0b101, 5",
  })
  void timestamps_are_read_with_js_number_rules(String ts, long expected) {
    assertThat(HopText.parseTs(ts)).hasValue(expected);
  }

  @ParameterizedTest(name = "[{0}] is not a timestamp")
  @ValueSource(strings = {"", "  ", "NaN", "Infinity", "-Infinity", "1e400", "12abc", "1_000", "-0x10", "0x", "1e",
      "1,000", "١٢"})
  void non_finite_or_malformed_timestamps_are_refused(String ts) {
    assertThat(HopText.parseTs(ts)).isEmpty();
  }

  @Test
  void a_null_timestamp_is_refused() {
    assertThat(HopText.parseTs(null)).isEmpty();
  }

  @Test
  void fresh_allows_five_minutes_in_both_directions() {
    long now = 1_764_400_000_000L;
    assertThat(HopText.fresh(now, now)).isTrue();
    assertThat(HopText.fresh(now - 300_000, now)).isTrue();
    assertThat(HopText.fresh(now + 300_000, now)).isTrue();
    assertThat(HopText.fresh(now - 300_001, now)).isFalse();
    assertThat(HopText.fresh(now + 300_001, now)).isFalse();
    assertThat(HopText.fresh(Long.MIN_VALUE, now)).isFalse();
    assertThat(HopText.fresh(Long.MAX_VALUE, now)).isFalse();
  }
}
