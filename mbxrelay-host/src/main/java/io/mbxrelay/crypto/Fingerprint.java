package io.mbxrelay.crypto;

import io.mbxrelay.wire.B64;
import io.mbxrelay.wire.Hashes;
import java.util.Locale;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * Key fingerprints ({@code docs/protocol.md §1} "Fingerprint"): SHA-256 of the raw 32 public-key bytes, lowercase hex,
 * first 16 digits in groups of 4 joined by {@code -}, e.g. {@code 3f9a-0c11-7d2e-b845}. Stateless, thread-safe.
 */
public final class Fingerprint {

  private static final Pattern DASHED = Pattern.compile("[0-9a-fA-F]{4}(?:-[0-9a-fA-F]{4}){3}");
  private static final Pattern PLAIN = Pattern.compile("[0-9a-fA-F]{16}");

  private Fingerprint() {}

  /**
   * The fingerprint of a raw public key.
   *
   * @param pub32 the public key bytes (any length is hashed as given; keys are 32 bytes)
   * @return e.g. {@code 3f9a-0c11-7d2e-b845}
   */
  public static String of(byte[] pub32) {
    return group(Hashes.sha256Hex(pub32).substring(0, 16));
  }

  /**
   * The fingerprint of a base64 public key (decoded leniently, like the reference).
   *
   * @param pubB64 the base64 public key (not null)
   * @return the fingerprint
   */
  public static String ofB64(String pubB64) {
    return of(B64.decodeLenient(pubB64).orElseThrow(() -> new IllegalArgumentException("no public key")));
  }

  /**
   * Normalizes what an operator types for {@code relay set --key}: a fingerprint with dashes
   * ({@code 3f9a-0c11-7d2e-b845}), upper-case, or without dashes ({@code 3F9A0C117D2EB845}), or a full standard
   * base64 public key ({@link B64#isPubkey(String)}), which becomes its fingerprint. Surrounding whitespace is
   * ignored.
   *
   * @param userInput the text (null → empty)
   * @return the canonical lowercase dashed fingerprint, or empty when the input is none of these forms
   */
  public static Optional<String> normalize(String userInput) {
    if (userInput == null) {
      return Optional.empty();
    }
    String s = userInput.strip();
    if (DASHED.matcher(s).matches() || PLAIN.matcher(s).matches()) {
      return Optional.of(group(s.replace("-", "").toLowerCase(Locale.ROOT)));
    }
    if (B64.isPubkey(s)) {
      return Optional.of(ofB64(s));
    }
    return Optional.empty();
  }

  private static String group(String hex16) {
    return hex16.substring(0, 4) + "-" + hex16.substring(4, 8) + "-" + hex16.substring(8, 12) + "-"
        + hex16.substring(12, 16);
  }
}
