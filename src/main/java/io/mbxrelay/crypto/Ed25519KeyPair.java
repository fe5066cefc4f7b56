package io.mbxrelay.crypto;

import io.mbxrelay.wire.B64;
import java.security.SecureRandom;
import java.util.Arrays;

/**
 * An Ed25519 key pair (host or relay key) built from its 32-byte RFC 8032 seed ({@code docs/protocol.md §1} "Ed25519
 * keys"). Signing is pure Ed25519 and deterministic.
 *
 * <p>Immutable and thread-safe (safe on any event loop): signing goes through the {@link Ed25519Engine} in use
 * (AWS-LC with one JCA {@code Signature} per thread, or BouncyCastle's stateless RFC 8032 functions), never a shared
 * signer object; the signature bytes are the same on either.
 * {@link #toString()} shows only the fingerprint; the seed never leaves except through {@link #seedB64()}.
 */
public final class Ed25519KeyPair {

  /** Seed and public key size, bytes. */
  public static final int KEY_BYTES = 32;
  /** Signature size, bytes. */
  public static final int SIGNATURE_BYTES = 64;

  private static final SecureRandom RANDOM = new SecureRandom();

  private final byte[] seed;
  private final byte[] publicKey;
  private final String publicKeyB64;
  /**
   * Made on the first signature, not here: loading a key (the relay's at start, a CLI's) does not wait for the engine
   * to load (ACCP takes a few hundred ms). Racing threads may each make one; they are equivalent.
   */
  private volatile Ed25519Engine.Signer signer;

  private Ed25519KeyPair(byte[] seed) {
    this.seed = seed.clone();
    this.publicKey = new byte[KEY_BYTES];
    org.bouncycastle.math.ec.rfc8032.Ed25519.generatePublicKey(this.seed, 0, this.publicKey, 0);
    this.publicKeyB64 = B64.encode(publicKey);
  }

  /**
   * The key pair of a 32-byte seed (the base64 "privateKey" of the reference).
   *
   * @param seed32 exactly 32 bytes (copied)
   * @return the key pair
   * @throws IllegalArgumentException if {@code seed32} is null or not 32 bytes (the message names only the
   *     length)
   */
  public static Ed25519KeyPair fromSeed(byte[] seed32) {
    if (seed32 == null || seed32.length != KEY_BYTES) {
      throw new IllegalArgumentException(
          "Ed25519 seed must be 32 bytes, got " + (seed32 == null ? "none" : seed32.length + " bytes"));
    }
    return new Ed25519KeyPair(seed32);
  }

  /**
   * A new random key pair (seed from {@link SecureRandom}).
   *
   * @return the key pair
   */
  public static Ed25519KeyPair generate() {
    byte[] seed = new byte[KEY_BYTES];
    RANDOM.nextBytes(seed);
    try {
      return new Ed25519KeyPair(seed);
    } finally {
      Arrays.fill(seed, (byte) 0);
    }
  }

  /**
   * The raw public key.
   *
   * @return a fresh copy of the 32 bytes
   */
  public byte[] publicKey() {
    return publicKey.clone();
  }

  /**
   * The public key as standard padded base64 (44 characters), the wire form of a pubkey.
   *
   * @return the base64 public key
   */
  public String publicKeyB64() {
    return publicKeyB64;
  }

  /**
   * The seed as standard padded base64 (44 characters): secret, for the key file and {@code keygen} only.
   *
   * @return the base64 seed
   */
  public String seedB64() {
    return B64.encode(seed);
  }

  /**
   * Signs {@code message} (pure Ed25519, RFC 8032).
   *
   * @param message the bytes to sign, e.g. UTF-8 of canonical JSON
   * @return the 64-byte signature
   */
  public byte[] sign(byte[] message) {
    Ed25519Engine.Signer s = signer;
    if (s == null) {
      s = Ed25519Engine.inUse().signer(seed, publicKey);
      signer = s;
    }
    return s.sign(message);
  }

  /**
   * Signs and encodes as the wire wants it: standard padded base64 (88 characters).
   *
   * @param message the bytes to sign
   * @return the base64 signature
   */
  public String signB64(byte[] message) {
    return B64.encode(sign(message));
  }

  /**
   * The key fingerprint, e.g. {@code 3f9a-0c11-7d2e-b845} ({@link Fingerprint#of(byte[])}).
   *
   * @return the fingerprint
   */
  public String fingerprint() {
    return Fingerprint.of(publicKey);
  }

  /** Prints the fingerprint only, never key material. */
  @Override
  public String toString() {
    return "Ed25519KeyPair[" + fingerprint() + "]";
  }
}
