package io.mbxrelay.wire;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;

/**
 * Scans over request bytes eight at a time (SWAR: one {@code long} holds eight bytes, and a few arithmetic steps say
 * whether any of them is of interest). A push body is hundreds of kilobytes of base64 between a few JSON quotes, and
 * the per-byte loops that found those quotes were a tenth of a push's CPU (issue 18); C2 does not vectorise a loop that
 * stops at the first match. Each method gives exactly the per-byte loop's answer. Stateless and thread-safe.
 */
final class AsciiScan {
  private static final VarHandle LONGS = MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);
  private static final long ONES = 0x0101010101010101L;
  private static final long HIGHS = 0x8080808080808080L;

  private AsciiScan() {}

  /** Non-zero when some byte of {@code w} equals {@code c} (exact for "any", not for which). */
  private static long hasByte(long w, int c) {
    long x = w ^ (ONES * c);
    return (x - ONES) & ~x & HIGHS;
  }

  /** Non-zero when some byte of {@code w} is below {@code 0x20} (bytes ≥ 0x80 are not flagged). */
  private static long hasControl(long w) {
    return (w - ONES * 0x20) & ~w & HIGHS;
  }

  /**
   * The first index in {@code [from, to)} whose byte ends a plain JSON string run: {@code "}, backslash, a C0 control,
   * DEL or any byte ≥ 0x80; {@code to} when none does.
   */
  static int endOfPlainString(byte[] b, int from, int to) {
    int i = from;
    while (i + 8 <= to) {
      long w = (long) LONGS.get(b, i);
      if (((w & HIGHS) | hasByte(w, '"') | hasByte(w, '\\') | hasControl(w) | hasByte(w, 0x7F)) != 0) {
        break;
      }
      i += 8;
    }
    for (; i < to; i++) {
      byte c = b[i];
      if (c == '"' || c == '\\' || c < 0x20 || c == 0x7F) { // c < 0: not ASCII
        return i;
      }
    }
    return to;
  }

  /**
   * The first index in {@code [from, to)} whose byte JSON string escaping changes ({@code "}, backslash, a C0
   * control); {@code to} when none does.
   */
  static int nextToEscape(byte[] b, int from, int to) {
    int i = from;
    while (i + 8 <= to) {
      long w = (long) LONGS.get(b, i);
      if ((hasByte(w, '"') | hasByte(w, '\\') | hasControl(w)) != 0) {
        break;
      }
      i += 8;
    }
    for (; i < to; i++) {
      byte c = b[i];
      if (c == '"' || c == '\\' || (c >= 0 && c < 0x20)) {
        return i;
      }
    }
    return to;
  }
}
