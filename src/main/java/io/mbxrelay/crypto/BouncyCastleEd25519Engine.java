package io.mbxrelay.crypto;

/**
 * Ed25519 with BouncyCastle's stateless RFC 8032 functions ({@code org.bouncycastle.math.ec.rfc8032.Ed25519}): the
 * reference for what the relay accepts, the fallback engine, and the re-check behind the ACCP engine's "invalid".
 * Stateless and safe on any thread.
 */
final class BouncyCastleEd25519Engine extends Ed25519Engine {

  static final BouncyCastleEd25519Engine INSTANCE = new BouncyCastleEd25519Engine();

  private BouncyCastleEd25519Engine() {}

  @Override
  public Kind kind() {
    return Kind.BOUNCYCASTLE;
  }

  @Override
  public String description() {
    // no version: in the shaded jar BouncyCastle's package reports the relay's manifest (the pom pins 1.82)
    return "BouncyCastle (pure Java)";
  }

  @Override
  Signer signer(byte[] seed32, byte[] pub32) {
    byte[] seed = seed32.clone();
    byte[] pub = pub32.clone();
    return message -> sign(seed, pub, message);
  }

  @Override
  Verifier verifier(byte[] pub32) {
    org.bouncycastle.math.ec.rfc8032.Ed25519.PublicPoint point = point(pub32);
    return point == null ? null : (message, sig64) -> verify(point, message, sig64);
  }

  /**
   * BouncyCastle's key check (a point, canonical, none of the eight small-order points) and decoding: a tenth of a
   * verification, so callers cache the result per key.
   *
   * @param pub32 32 bytes
   * @return the decoded point, or null when BouncyCastle refuses the key
   */
  static org.bouncycastle.math.ec.rfc8032.Ed25519.PublicPoint point(byte[] pub32) {
    return org.bouncycastle.math.ec.rfc8032.Ed25519.validatePublicKeyPartialExport(pub32, 0);
  }

  /** Pure Ed25519 signature with a seed and its public key. */
  static byte[] sign(byte[] seed, byte[] pub, byte[] message) {
    byte[] sig = new byte[Ed25519KeyPair.SIGNATURE_BYTES];
    org.bouncycastle.math.ec.rfc8032.Ed25519.sign(seed, 0, pub, 0, message, 0, message.length, sig, 0);
    return sig;
  }

  /** BouncyCastle's verdict against a decoded point; any exception is "invalid". */
  static boolean verify(org.bouncycastle.math.ec.rfc8032.Ed25519.PublicPoint point, byte[] message, byte[] sig64) {
    try {
      return org.bouncycastle.math.ec.rfc8032.Ed25519.verify(sig64, 0, point, message, 0, message.length);
    } catch (RuntimeException e) {
      return false;
    }
  }
}
