package io.mbxrelay.host.seal;

import com.google.crypto.tink.subtle.X25519;
import io.mbxrelay.wire.B64;
import java.security.InvalidKeyException;
import java.util.Arrays;
import java.util.Optional;

/**
 * A host's X25519 encryption key pair (docs/host-library.md "Sealing"): peers seal envelope bodies for its public
 * key, the host opens them with the private key. Both travel as standard base64 of the raw 32 bytes. The private key
 * is the X25519 scalar as generated (clamping happens inside the scalar multiplication, as in RFC 7748 and the
 * AgentMBX reference). Generation and the scalar multiplication are Google Tink's. Immutable; the private key is
 * never printed ({@link #toString()} shows the public key only).
 */
public final class EncKeyPair {

  /** Key size, bytes. */
  public static final int KEY_BYTES = 32;

  private final byte[] priv;
  private final String pubB64;

  private EncKeyPair(byte[] priv) throws InvalidKeyException {
    this.priv = priv.clone();
    this.pubB64 = B64.encode(X25519.publicFromPrivate(this.priv));
  }

  /**
   * A new random key pair.
   *
   * @return the pair
   */
  public static EncKeyPair generate() {
    try {
      return new EncKeyPair(X25519.generatePrivateKey());
    } catch (InvalidKeyException e) {
      throw new IllegalStateException("X25519 key generation failed", e);
    }
  }

  /**
   * The pair of a stored private key.
   *
   * @param privB64 standard base64 of the 32-byte private key
   * @return the pair
   * @throws IllegalArgumentException when it does not decode to 32 bytes
   */
  public static EncKeyPair fromPrivateB64(String privB64) {
    Optional<byte[]> b = B64.decodeLenient(privB64);
    if (b.isEmpty() || b.get().length != KEY_BYTES) {
      throw new IllegalArgumentException("an X25519 private key is 32 bytes in base64");
    }
    try {
      return new EncKeyPair(b.get());
    } catch (InvalidKeyException e) {
      throw new IllegalArgumentException("not an X25519 private key");
    }
  }

  /**
   * @return the public key, standard base64 (44 characters)
   */
  public String publicKeyB64() {
    return pubB64;
  }

  /**
   * @return the private key, standard base64 (store it owner-only; never log it)
   */
  public String privateKeyB64() {
    return B64.encode(priv);
  }

  byte[] privateKey() {
    return priv.clone();
  }

  /**
   * Whether a text is a usable X25519 public key as the v2 enc-key ad requires it: {@code ^[A-Za-z0-9+/]{43}=$}
   * decoding to 32 bytes.
   *
   * @param b64 the text, may be null
   * @return true when usable
   */
  public static boolean isPublicKey(String b64) {
    return b64 != null && b64.length() == 44 && b64.matches("[A-Za-z0-9+/]{43}=")
        && B64.decodeLenient(b64).map(x -> x.length == KEY_BYTES).orElse(false);
  }

  /**
   * Whether a public key can be sealed to: {@link #isPublicKey} and not one of the low-order points (or their
   * non-canonical encodings) that Tink's X25519 refuses, for which every sender would derive the same key.
   *
   * @param b64 the text, may be null
   * @return true when a body can be sealed for it
   */
  public static boolean isSealable(String b64) {
    if (!isPublicKey(b64)) {
      return false;
    }
    try {
      X25519.computeSharedSecret(PROBE, B64.decodeLenient(b64).orElseThrow());
      return true;
    } catch (InvalidKeyException e) {
      return false;
    }
  }

  private static final byte[] PROBE = X25519.generatePrivateKey();

  @Override
  public String toString() {
    return "EncKeyPair[" + pubB64 + "]";
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof EncKeyPair k && Arrays.equals(priv, k.priv);
  }

  @Override
  public int hashCode() {
    return pubB64.hashCode();
  }
}
