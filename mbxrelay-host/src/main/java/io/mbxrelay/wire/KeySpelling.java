package io.mbxrelay.wire;

import java.util.Arrays;
import java.util.List;
import java.util.Optional;

/**
 * The spellings of an Ed25519 public key ({@code docs/protocol.md §1} "Ed25519 keys"; issue 11 item 4). A 32-byte key is 43
 * base64 characters plus one {@code =}; the 43rd character carries 4 key bits and 2 unused bits, so every key has 4
 * spellings that pass {@link B64#isPubkey(String)} and decode to the same bytes. Node emits only the one with the
 * unused bits zero (the <em>canonical</em> spelling, what {@link B64#encode} gives); the others come only from
 * hand-made requests. Keys are compared, stored, revoked and denied in the canonical spelling, never as sent.
 *
 * <p>Stateless and thread-safe.
 */
public final class KeySpelling {
  private static final String ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

  private KeySpelling() {}

  /** Base64 digit values of the standard alphabet; -1 elsewhere (ASCII only). */
  private static final byte[] VALUES = new byte[128];

  static {
    java.util.Arrays.fill(VALUES, (byte) -1);
    for (int i = 0; i < ALPHABET.length(); i++) {
      VALUES[ALPHABET.charAt(i)] = (byte) i;
    }
  }

  /**
   * The canonical spelling of a key field. One pass over the 44 characters and no decoding: a valid key field is
   * 43 standard base64 characters and one {@code =} (43 × 6 bits = 32 bytes + 2 unused bits), so it is exactly
   * {@link B64#isPubkey(String)}, and its canonical spelling clears the 2 unused bits of the 43rd character.
   *
   * @param pubkey a relay "pubkey" field as sent (may be null)
   * @return standard padded base64 of the 32 decoded bytes, or empty when {@code pubkey} is not a valid key field
   *     ({@link B64#isPubkey(String)})
   */
  public static Optional<String> canonical(String pubkey) {
    int last = lastDigit(pubkey);
    if (last < 0) {
      return Optional.empty();
    }
    if ((last & 3) == 0) {
      return Optional.of(pubkey); // already canonical: no allocation (every honest client's key)
    }
    return Optional.of(pubkey.substring(0, 42) + ALPHABET.charAt(last & ~3) + "=");
  }

  /**
   * Whether a key field is valid and already in its canonical spelling. O(44), no allocation: safe on the hot path.
   *
   * @param pubkey the key field as sent (may be null)
   * @return true when {@link #canonical(String)} would return it unchanged
   */
  public static boolean isCanonical(String pubkey) {
    int last = lastDigit(pubkey);
    return last >= 0 && (last & 3) == 0;
  }

  /** The value of the 43rd character when {@code s} is a valid key field ({@link B64#isPubkey}), else -1. */
  private static int lastDigit(String s) {
    if (s == null || s.length() != 44 || s.charAt(43) != '=') {
      return -1;
    }
    for (int i = 0; i < 43; i++) {
      char c = s.charAt(i);
      if (c >= 128 || VALUES[c] < 0) {
        return -1;
      }
    }
    return VALUES[s.charAt(42)];
  }

  /**
   * The canonical spelling when {@code pubkey} is a valid key field, else {@code pubkey} unchanged (so a lookup with
   * it finds nothing, exactly as before).
   *
   * @param pubkey the key field as sent (may be null)
   * @return the canonical spelling or the input
   */
  public static String canonicalOrSelf(String pubkey) {
    return canonical(pubkey).orElse(pubkey);
  }

  /**
   * Whether two key fields name the same key.
   *
   * @param a a key field (may be null)
   * @param b a key field (may be null)
   * @return true when both are valid key fields ({@link B64#isPubkey(String)}) with the same decoded bytes
   */
  public static boolean same(String a, String b) {
    Optional<String> ca = canonical(a);
    return ca.isPresent() && ca.equals(canonical(b));
  }

  /**
   * Every spelling of a key that passes {@link B64#isPubkey(String)}, canonical first: for looking up rows stored
   * before keys were canonicalized.
   *
   * @param pubkey a valid key field in any spelling
   * @return the 4 spellings, canonical first; a single-element list with {@code pubkey} when it is not a valid key
   *     field
   */
  public static List<String> spellings(String pubkey) {
    Optional<String> c = canonical(pubkey);
    if (c.isEmpty()) {
      return List.of(pubkey);
    }
    String canon = c.get();
    int last = ALPHABET.indexOf(canon.charAt(42));
    String stem = canon.substring(0, 42);
    String[] out = new String[4];
    for (int i = 0; i < 4; i++) {
      out[i] = stem + ALPHABET.charAt(last | i) + "=";
    }
    return Arrays.asList(out);
  }
}
