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

  private static long lastMs = -1;
  private static final int[] rand = new int[16];

  private Ulid() {}

  /**
   * A new ULID; ids made in the same millisecond count up from the first one's random part, so they sort in the
   * order they were made.
   *
   * @param nowMs the timestamp part, ms since the epoch (0 … 2^48−1)
   * @return the 26-character id
   */
  public static synchronized String next(long nowMs) {
    if (nowMs == lastMs) {
      // monotonic within a millisecond, as the reference: the random part counts up (ids sort in creation order)
      for (int i = rand.length - 1; i >= 0; i--) {
        if (rand[i] < 31) {
          rand[i]++;
          break;
        }
        rand[i] = 0;
      }
    } else {
      for (int i = 0; i < rand.length; i++) {
        rand[i] = RANDOM.nextInt(32);
      }
      lastMs = nowMs;
    }
    char[] c = new char[26];
    long t = nowMs;
    for (int i = 9; i >= 0; i--) {
      c[i] = CROCKFORD[(int) (t & 31)];
      t >>>= 5;
    }
    for (int i = 0; i < rand.length; i++) {
      c[10 + i] = CROCKFORD[rand[i]];
    }
    return new String(c);
  }
}
