package io.mbxrelay.wire;

import java.util.Arrays;
import java.util.Base64;
import java.util.Optional;

/**
 * Base64 rules of the wire ({@code docs/protocol.md §1} "Encodings"): standard padded output, the
 * {@code ^[A-Za-z0-9+/]+={0,2}$} input check (matched by a linear scan, not a regex), and a decoder as lenient as Node's
 * {@code Buffer.from(s, 'base64')}. Stateless and thread-safe.
 */
public final class B64 {

  private static final byte[] VALUES = new byte[256];

  static {
    Arrays.fill(VALUES, (byte) -1);
    String std = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (int i = 0; i < 64; i++) {
      VALUES[std.charAt(i)] = (byte) i;
    }
    VALUES['-'] = 62;
    VALUES['_'] = 63;
  }

  private B64() {}

  /**
   * Standard base64 with padding ({@code +/}, {@code =}); e.g. a 32-byte key gives 44 characters.
   *
   * @param bytes the bytes (not null)
   * @return the base64 text
   */
  public static String encode(byte[] bytes) {
    return Base64.getEncoder().encodeToString(bytes);
  }

  /**
   * Base64url without padding, used for nonces and challenges (16 bytes → 22 characters).
   *
   * @param bytes the bytes (not null)
   * @return the base64url text without {@code =}
   */
  public static String base64UrlNoPad(byte[] bytes) {
    return Base64.getUrlEncoder().withoutPadding().encodeToString(bytes);
  }

  /**
   * The wire's base64 input check: the whole string matches {@code ^[A-Za-z0-9+/]+={0,2}$} (non-empty; the
   * length modulo 4 is deliberately not checked, as in the reference). {@code docs/protocol.md §1} "wire_b64".
   *
   * @param s the text, may be null (→ false)
   * @return whether it passes the check
   */
  public static boolean isStdB64(String s) {
    if (s == null) {
      return false;
    }
    // The regex above, matched in one linear pass (a push checks one such string per target, ~1.4 KB each).
    int n = s.length();
    int i = 0;
    while (i < n) {
      char c = s.charAt(i);
      if (c >= 128 || VALUES[c] < 0 || c == '-' || c == '_') {
        break;
      }
      i++;
    }
    if (i == 0 || n - i > 2) {
      return false;
    }
    for (int j = i; j < n; j++) {
      if (s.charAt(j) != '=') {
        return false;
      }
    }
    return true;
  }

  /**
   * Decodes like Node's {@code Buffer.from(s, 'base64')}: accepts the standard and the url alphabet (mixed),
   * missing padding, skips every character outside both alphabets, and stops at the first {@code =}. A
   * dangling single character at the end yields nothing; 2 or 3 trailing characters yield 1 or 2 bytes.
   * Like Node's legacy decoder for two-byte strings, each UTF-16 unit is looked up by its low 8 bits.
   *
   * @param s the text; null → empty
   * @return the decoded bytes (possibly zero-length); empty only for null input. Never throws.
   */
  public static Optional<byte[]> decodeLenient(String s) {
    if (s == null) {
      return Optional.empty();
    }
    byte[] out = new byte[(s.length() / 4) * 3 + 3];
    int written = 0;
    int acc = 0;
    int have = 0;
    for (int i = 0; i < s.length(); i++) {
      int c = s.charAt(i) & 0xFF;
      if (c == '=') {
        break;
      }
      int v = VALUES[c];
      if (v < 0) {
        continue;
      }
      acc = (acc << 6) | v;
      have++;
      if (have == 4) {
        out[written++] = (byte) (acc >> 16);
        out[written++] = (byte) (acc >> 8);
        out[written++] = (byte) acc;
        acc = 0;
        have = 0;
      }
    }
    if (have == 2) {
      out[written++] = (byte) (acc >> 4);
    } else if (have == 3) {
      out[written++] = (byte) (acc >> 10);
      out[written++] = (byte) (acc >> 2);
    }
    return Optional.of(Arrays.copyOf(out, written));
  }

  /**
   * {@link #isStdB64(String)} of the ASCII text {@code b[off, off + len)} (one byte per character: the caller passes
   * bytes that are a JSON string's content, without escapes).
   *
   * @param b the bytes
   * @param off start
   * @param len length
   * @return whether the text matches {@code ^[A-Za-z0-9+/]+={0,2}$}
   */
  public static boolean isStdB64(byte[] b, int off, int len) {
    int end = off + len;
    int i = off;
    while (i < end) {
      int c = b[i];
      if (c < 0 || VALUES[c] < 0 || c == '-' || c == '_') {
        break;
      }
      i++;
    }
    if (i == off || end - i > 2) {
      return false;
    }
    for (int j = i; j < end; j++) {
      if (b[j] != '=') {
        return false;
      }
    }
    return true;
  }

  /**
   * The JDK's standard decoder over {@code b[off, off + len)}: for text that passed {@link #isStdB64(byte[], int, int)}
   * and whose length is a multiple of 4 (well-formed padded base64) it gives the same bytes as
   * {@link #decodeLenient(byte[], int, int)}, much faster (intrinsified on x86; issue 18).
   *
   * @param b the bytes
   * @param off start
   * @param len length
   * @return the decoded bytes
   * @throws IllegalArgumentException when the text is not standard base64 (a character outside {@code A-Za-z0-9+/},
   *     padding anywhere but the end, a bad length)
   */
  public static byte[] decodeStd(byte[] b, int off, int len) {
    java.nio.ByteBuffer out = Base64.getDecoder().decode(java.nio.ByteBuffer.wrap(b, off, len));
    byte[] a = out.array();
    return out.arrayOffset() == 0 && out.position() == 0 && out.remaining() == a.length ? a
        : Arrays.copyOfRange(a, out.arrayOffset() + out.position(), out.arrayOffset() + out.limit());
  }

  /**
   * {@link #decodeLenient(String)} of the text {@code b[off, off + len)}, one byte per character.
   *
   * @param b the bytes
   * @param off start
   * @param len length
   * @return the decoded bytes (possibly zero-length)
   */
  public static byte[] decodeLenient(byte[] b, int off, int len) {
    byte[] out = new byte[(len / 4) * 3 + 3];
    int written = 0;
    int acc = 0;
    int have = 0;
    for (int i = off, end = off + len; i < end; i++) {
      int c = b[i] & 0xFF;
      if (c == '=') {
        break;
      }
      int v = VALUES[c];
      if (v < 0) {
        continue;
      }
      acc = (acc << 6) | v;
      have++;
      if (have == 4) {
        out[written++] = (byte) (acc >> 16);
        out[written++] = (byte) (acc >> 8);
        out[written++] = (byte) acc;
        acc = 0;
        have = 0;
      }
    }
    if (have == 2) {
      out[written++] = (byte) (acc >> 4);
    } else if (have == 3) {
      out[written++] = (byte) (acc >> 10);
      out[written++] = (byte) (acc >> 2);
    }
    return Arrays.copyOf(out, written);
  }

  /**
   * A relay "pubkey" field: a 44-character string matching {@link #isStdB64(String)} that decodes to 32
   * bytes ({@code docs/protocol.md §1} "Ed25519 keys").
   *
   * @param s the text, may be null (→ false)
   * @return whether it is a valid public key string
   */
  public static boolean isPubkey(String s) {
    return s != null && s.length() == 44 && isStdB64(s) && decodeLenient(s).map(b -> b.length == 32).orElse(false);
  }
}
