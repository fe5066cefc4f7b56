package io.mbxrelay.wire;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Random;
import org.junit.jupiter.api.Test;

/** {@link AsciiScan}: the eight-bytes-at-a-time scans find exactly what a byte-by-byte loop finds, at any offset. */
class AsciiScanTest {
  private static final Random RANDOM = new Random(181);

  private static int plainEnd(byte[] b, int from, int to) {
    for (int i = from; i < to; i++) {
      if (b[i] == '"' || b[i] == '\\' || b[i] < 0x20 || b[i] == 0x7F) {
        return i;
      }
    }
    return to;
  }

  private static int escapeAt(byte[] b, int from, int to) {
    for (int i = from; i < to; i++) {
      if (b[i] == '"' || b[i] == '\\' || (b[i] >= 0 && b[i] < 0x20)) {
        return i;
      }
    }
    return to;
  }

  @Test
  void both_scans_stop_where_a_byte_loop_stops_for_every_byte_value_and_position() {
    for (int round = 0; round < 100_000; round++) {
      byte[] b = new byte[RANDOM.nextInt(40)];
      for (int i = 0; i < b.length; i++) {
        b[i] = (byte) ('A' + RANDOM.nextInt(26)); // a plain run
      }
      int odd = RANDOM.nextInt(3);
      for (int k = 0; k < odd && b.length > 0; k++) {
        b[RANDOM.nextInt(b.length)] = (byte) RANDOM.nextInt(256); // anything, anywhere
      }
      int from = b.length == 0 ? 0 : RANDOM.nextInt(b.length);
      int to = from + RANDOM.nextInt(b.length - from + 1);
      assertThat(AsciiScan.endOfPlainString(b, from, to)).isEqualTo(plainEnd(b, from, to));
      assertThat(AsciiScan.nextToEscape(b, from, to)).isEqualTo(escapeAt(b, from, to));
    }
  }
}
