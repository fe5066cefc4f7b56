package io.mbxrelay.crypto;

import io.mbxrelay.wire.B64;
import java.util.Optional;

/**
 * Ed25519 signature verification as the reference does it ({@code docs/protocol.md §1}): lenient base64 decoding of key
 * and signature, and any problem means "invalid" — this never throws. What is accepted is BouncyCastle's RFC 8032
 * verification, whichever {@link Ed25519Engine} runs it (AWS-LC where it loads, glued to accept exactly the same).
 * Thread-safe: safe on any event loop.
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
    if (pubkeyB64 == null || message == null) {
      return false;
    }
    Optional<byte[]> sig = B64.decodeLenient(sigB64);
    if (sig.isEmpty() || sig.get().length != Ed25519KeyPair.SIGNATURE_BYTES) {
      return false;
    }
    Ed25519Engine.Verifier verifier = POINTS.get(pubkeyB64);
    if (verifier == null) {
      Optional<byte[]> pub = B64.decodeLenient(pubkeyB64);
      if (pub.isEmpty() || pub.get().length != Ed25519KeyPair.KEY_BYTES) {
        return false;
      }
      verifier = ENGINE.verifier(pub.get());
      if (verifier == null) {
        return false; // not a usable key (BouncyCastle's check): the byte form below refuses it too (tested)
      }
      if (POINTS.size() >= MAX_POINTS) {
        POINTS.clear(); // a plain bound: hosts' keys come back on their next request
      }
      POINTS.put(pubkeyB64, verifier);
    }
    return verifier.verify(message, sig.get());
  }

  private static final Ed25519Engine ENGINE = Ed25519Engine.inUse();

  /**
   * Per-key verifiers by key text, each holding the decoded public point (decoding a key, a square root in the
   * field, is a tenth of a verification, and every request of a host verifies with the same key) and, on the AWS-LC
   * engine, the JDK's key object (about 500 bytes). Bounded by {@link #MAX_POINTS}.
   */
  private static final java.util.concurrent.ConcurrentHashMap<String, Ed25519Engine.Verifier> POINTS =
      new java.util.concurrent.ConcurrentHashMap<>();
  private static final int MAX_POINTS = 50_000;

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
    Ed25519Engine.Verifier verifier = ENGINE.verifier(pub32);
    return verifier != null && verifier.verify(message, sig64);
  }
}
