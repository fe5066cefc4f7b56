package io.mbxrelay.wire;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class Utf8Test {

  /** Expected outputs were taken from Node's {@code Buffer.from(hex, 'hex').toString('utf8')}. */
  @ParameterizedTest(name = "{0} decodes like node to {1}")
  @CsvSource({
    "41c3a9f09f9880, Aé😀",
    "f09f9841, \uFFFDA",
    "eda08041, \uFFFD\uFFFD\uFFFDA",
    "c08041, \uFFFD\uFFFDA",
    "e08041, \uFFFD\uFFFDA",
    "f4908080, \uFFFD\uFFFD\uFFFD\uFFFD",
    "ff41, \uFFFDA",
    "e282, \uFFFD",
    "efbbbf41, \uFEFFA",
  })
  void invalid_sequences_become_one_replacement_per_maximal_subpart(String hex, String expected) {
    assertThat(Utf8.decode(HexFormat.of().parseHex(hex))).isEqualTo(expected);
  }

  @ParameterizedTest(name = "{0} round-trips")
  @CsvSource({"plain ascii", "ünïcödé", "😀 and \u2028"})
  void valid_utf8_round_trips(String text) {
    assertThat(Utf8.decode(text.getBytes(StandardCharsets.UTF_8))).isEqualTo(text);
  }
}
