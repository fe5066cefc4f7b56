package io.mbxrelay.wire;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

class IsoTimeTest {

  @Test
  void format_is_exactly_the_js_to_iso_string_shape() {
    assertThat(IsoTime.format(0)).isEqualTo("1970-01-01T00:00:00.000Z");
    assertThat(IsoTime.format(1764417600000L)).isEqualTo("2025-11-29T12:00:00.000Z");
    assertThat(IsoTime.format(1764417600007L)).isEqualTo("2025-11-29T12:00:00.007Z");
    assertThat(IsoTime.format(-1)).isEqualTo("1969-12-31T23:59:59.999Z");
    assertThat(IsoTime.format(253402300800000L)).isEqualTo("+010000-01-01T00:00:00.000Z");
  }

  @ParameterizedTest(name = "{0} parses to {1}")
  @CsvSource({
    "2025-11-29T12:00:00.000Z, 1764417600000",
    "2025-11-29T12:00:00Z, 1764417600000",
    "2025-11-29T12:00Z, 1764417600000",
    "2025-11-29T12:00:00.1239Z, 1764417600123",
    "2025-11-29T12:00:00.5Z, 1764417600500",
    "2025-11-29T14:00:00.000+02:00, 1764417600000",
    "2025-11-29T12:00:00.000-00:30, 1764419400000",
    "2025-11-29, 1764374400000",
    "2025-11, 1761955200000",
    "2025, 1735689600000",
    "2025-02-31T00:00:00Z, 1740960000000",
    "2025-11-28T24:00:00Z, 1764374400000",
    "+002025-11-29T12:00:00.000Z, 1764417600000",
    "'Sat, 29 Nov 2025 12:00:00 GMT', 1764417600000",
  })
  void parse_reads_the_iso_forms_js_date_parse_reads(String text, long expected) {
    assertThat(IsoTime.parse(text)).hasValue(expected);
  }

  @ParameterizedTest(name = "[{0}] is not a date")
  @ValueSource(strings = {"", "yesterday", "2025-13-01", "2025-11-32", "2025-11-29T25:00Z", "2025-11-29T24:01Z",
      "2025-11-29T12:60Z", "2025-11-29T12", "-000000-01-01T00:00:00Z", "2025-11-29T12:00:00+24:00"})
  void parse_refuses_what_js_date_parse_refuses(String text) {
    assertThat(IsoTime.parse(text)).isEmpty();
  }

  @Test
  void format_and_parse_round_trip() {
    long t = 1764400000123L;
    assertThat(IsoTime.parse(IsoTime.format(t))).hasValue(t);
  }

  @ParameterizedTest(name = "[{0}] is a zod datetime: {1}")
  @CsvSource({
    "2026-11-29T12:00:00.000Z, true",
    "2026-11-29T12:00:00Z, true",
    "2026-11-29T12:00:00.123456789Z, true",
    "2024-02-29T00:00:00Z, true",
    "2026-11-29T12:00Z, false",
    "2023-02-29T00:00:00Z, false",
    "2026-11-31T00:00:00Z, false",
    "2026-11-29T12:00:00+00:00, false",
    "2026-11-29T12:00:00, false",
    "2026-11-29, false",
    "2026-11-29T24:00:00Z, false",
    "2026-11-29T12:00:00.Z, false",
  })
  void receipt_times_must_be_zod_datetimes(String text, boolean ok) {
    assertThat(IsoTime.isZodDatetime(text)).isEqualTo(ok);
  }
}
