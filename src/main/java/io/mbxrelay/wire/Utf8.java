package io.mbxrelay.wire;

/**
 * UTF-8 decoding exactly as Node's {@code buffer.toString('utf8')} (the WHATWG Encoding Standard decoder): each
 * maximal invalid subpart becomes one U+FFFD. Java's own decoder differs on some inputs (for example it turns
 * the encoded surrogate {@code ED A0 80} into one U+FFFD where Node produces three), and the decoded text feeds
 * signatures (the hop's raw body, {@code docs/protocol.md §2}) and validation ({@code docs/protocol.md §3}), so it must match.
 * A leading BOM is kept, as Node keeps it. Stateless and thread-safe.
 */
public final class Utf8 {

  private static final char REPLACEMENT = '\uFFFD';

  private Utf8() {}

  /** Eight bytes of an array at once, for the ASCII scan of {@link #isValid}. */
  private static final java.lang.invoke.VarHandle LONGS =
      java.lang.invoke.MethodHandles.byteArrayViewVarHandle(long[].class, java.nio.ByteOrder.LITTLE_ENDIAN);

  /**
   * Whether the bytes are well-formed UTF-8 (no overlong forms, no surrogates, nothing above U+10FFFF, no truncated
   * sequence), i.e. whether {@link #decode(byte[])} would produce no replacement character of its own. For such bytes
   * the decoded text re-encodes to the same bytes, so callers may parse or hash the bytes directly.
   *
   * @param b the bytes (not null)
   * @return true when well-formed
   */
  public static boolean isValid(byte[] b) {
    int n = b.length;
    int i = 0;
    while (i < n) {
      int c = b[i];
      if (c >= 0) {
        i++;
        // ASCII eight bytes at a time (a push body is ASCII: base64 and JSON)
        while (i + 8 <= n && ((long) LONGS.get(b, i) & 0x8080808080808080L) == 0) {
          i += 8;
        }
        continue;
      }
      c &= 0xFF;
      if (c >= 0xC2 && c <= 0xDF) {
        if (i + 1 >= n || !cont(b[i + 1])) {
          return false;
        }
        i += 2;
      } else if (c >= 0xE0 && c <= 0xEF) {
        if (i + 2 >= n) {
          return false;
        }
        int c1 = b[i + 1] & 0xFF;
        int lo = c == 0xE0 ? 0xA0 : 0x80;
        int hi = c == 0xED ? 0x9F : 0xBF;
        if (c1 < lo || c1 > hi || !cont(b[i + 2])) {
          return false;
        }
        i += 3;
      } else if (c >= 0xF0 && c <= 0xF4) {
        if (i + 3 >= n) {
          return false;
        }
        int c1 = b[i + 1] & 0xFF;
        int lo = c == 0xF0 ? 0x90 : 0x80;
        int hi = c == 0xF4 ? 0x8F : 0xBF;
        if (c1 < lo || c1 > hi || !cont(b[i + 2]) || !cont(b[i + 3])) {
          return false;
        }
        i += 4;
      } else {
        return false;
      }
    }
    return true;
  }

  private static boolean cont(byte x) {
    return (x & 0xC0) == 0x80;
  }

  /**
   * Decodes bytes as Node does.
   *
   * @param bytes the bytes (not null)
   * @return the text, with U+FFFD for every maximal invalid subpart and for a truncated sequence at the end
   */
  public static String decode(byte[] bytes) {
    StringBuilder out = new StringBuilder(bytes.length);
    int needed = 0;
    int seen = 0;
    int codePoint = 0;
    int lower = 0x80;
    int upper = 0xBF;
    for (int i = 0; i < bytes.length; i++) {
      int b = bytes[i] & 0xFF;
      if (needed == 0) {
        if (b <= 0x7F) {
          out.append((char) b);
        } else if (b >= 0xC2 && b <= 0xDF) {
          needed = 1;
          codePoint = b & 0x1F;
        } else if (b >= 0xE0 && b <= 0xEF) {
          if (b == 0xE0) {
            lower = 0xA0;
          } else if (b == 0xED) {
            upper = 0x9F;
          }
          needed = 2;
          codePoint = b & 0x0F;
        } else if (b >= 0xF0 && b <= 0xF4) {
          if (b == 0xF0) {
            lower = 0x90;
          } else if (b == 0xF4) {
            upper = 0x8F;
          }
          needed = 3;
          codePoint = b & 0x07;
        } else {
          out.append(REPLACEMENT);
        }
        continue;
      }
      if (b < lower || b > upper) {
        needed = 0;
        seen = 0;
        codePoint = 0;
        lower = 0x80;
        upper = 0xBF;
        out.append(REPLACEMENT);
        i--; // the byte starts over
        continue;
      }
      lower = 0x80;
      upper = 0xBF;
      codePoint = (codePoint << 6) | (b & 0x3F);
      if (++seen == needed) {
        out.appendCodePoint(codePoint);
        needed = 0;
        seen = 0;
        codePoint = 0;
      }
    }
    if (needed != 0) {
      out.append(REPLACEMENT);
    }
    return out.toString();
  }
}
