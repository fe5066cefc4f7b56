package io.mbxrelay.crypto;

import io.mbxrelay.wire.B64;
import java.util.Optional;

/**
 * Ed25519 signature verification as the reference does it ({@code wire.md §1}): lenient base64 decoding of key
 * and signature, and any problem means "invalid" — this never throws. Stateless and thread-safe (BouncyCastle's
 * stateless RFC 8032 functions).
 */
public final class Ed25519 {

  private Ed25519() {}

  /**
   * Verifies a base64 signature with a base64 public key. Both are decoded like Node's
   * {@code Buffer.from(s, 'base64')} ({@link B64#decodeLenient(String)}); they must then be 32 and 64 bytes.
   *
   * @param pubkeyB64 the signer's public key, base64 (null → false)
   * @param message the signed bytes (null → false)
   * @param sigB64 the signature, base64 (null → false)
   * @return true only for a valid signature
   */
  public static boolean verify(String pubkeyB64, byte[] message, String sigB64) {
    Optional<byte[]> pub = B64.decodeLenient(pubkeyB64);
    Optional<byte[]> sig = B64.decodeLenient(sigB64);
    return pub.isPresent() && sig.isPresent() && verify(pub.get(), message, sig.get());
  }

  /**
   * Verifies a raw signature with a raw public key.
   *
   * @param pub32 the 32-byte public key (other lengths or null → false)
   * @param message the signed bytes (null → false)
   * @param sig64 the 64-byte signature (other lengths or null → false)
   * @return true only for a valid signature
   */
  public static boolean verify(byte[] pub32, byte[] message, byte[] sig64) {
    if (pub32 == null || message == null || sig64 == null
        || pub32.length != Ed25519KeyPair.KEY_BYTES || sig64.length != Ed25519KeyPair.SIGNATURE_BYTES) {
      return false;
    }
    try {
      return org.bouncycastle.math.ec.rfc8032.Ed25519.verify(sig64, 0, pub32, 0, message, 0, message.length);
    } catch (RuntimeException e) {
      return false;
    }
  }
}
