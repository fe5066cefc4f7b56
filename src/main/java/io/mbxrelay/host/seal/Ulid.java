package io.mbxrelay.host.seal;

import java.security.SecureRandom;
import java.util.regex.Pattern;

/**
 * ULIDs, the envelope ids of AgentMBX (docs/host-library.md "Envelopes"): a 48-bit millisecond timestamp and 80
 * random bits in Crockford base32, 26 characters matching {@code ^[0-9A-HJKMNP-TV-Z]{26}$}. Own code because it is
 * ten lines and no ULID library is on the class path. Thread-safe.
 */
public final class Ulid {

  /** The id rule envelopes are checked against. */
  public static final Pattern PATTERN = Pattern.compile("[0-9A-HJKMNP-TV-Z]{26}");

  private static final SecureRandom RANDOM = new SecureRandom();
  private static final char[] CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ".toCharArray();

  private Ulid() {}

  /**
   * A new ULID.
   *
   * @param nowMs the timestamp part, ms since the epoch (0 … 2^48−1)
   * @return the 26-character id
   */
  public static String next(long nowMs) {
    char[] c = new char[26];
    long t = nowMs;
    for (int i = 9; i >= 0; i--) {
      c[i] = CROCKFORD[(int) (t & 31)];
      t >>>= 5;
    }
    for (int i = 10; i < 26; i++) {
      c[i] = CROCKFORD[RANDOM.nextInt(32)];
    }
    return new String(c);
  }
}
