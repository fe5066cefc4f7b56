package io.mbxrelay.host.seal;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.google.crypto.tink.aead.internal.InsecureNonceXChaCha20Poly1305;
import com.google.crypto.tink.subtle.Hkdf;
import com.google.crypto.tink.subtle.X25519;
import io.mbxrelay.wire.B64;
import io.mbxrelay.wire.Json;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.InvalidKeyException;
import java.security.SecureRandom;
import java.util.Optional;

/**
 * Seals and opens one envelope body exactly as AgentMBX 0.5.x hosts do (docs/host-library.md "Sealing"):
 * <ol>
 *   <li>a fresh ephemeral X25519 key per envelope; {@code shared = X25519(ephemeral, recipient enc key)};</li>
 *   <li>{@code key = HKDF-SHA256(ikm = shared, salt = ephemeral public key (32 bytes), info = UTF-8 of
 *       "agentmbx-enc-1:" + envelope id, 32 bytes)};</li>
 *   <li>{@code ciphertext = XChaCha20-Poly1305(key, 24-byte random nonce, plaintext, no associated data)}, the
 *       16-byte tag appended;</li>
 *   <li>{@code enc = {v:1, alg:"x25519+xchacha20poly1305", epk, nonce, body}}, each value standard base64.</li>
 * </ol>
 * The envelope id in the HKDF info binds the body to its envelope; the host signature over the envelope (with the
 * ciphertext in place of the body) binds the rest. All primitives are Google Tink's ({@code subtle} X25519 and HKDF,
 * and its explicit-nonce XChaCha20-Poly1305, which is an internal Tink class: the nonce must be given because the
 * wire carries it in its own field and the test vectors fix it; it is always 24 fresh random bytes here).
 * Stateless and thread-safe.
 */
public final class BodySeal {

  /** The only algorithm ({@code enc.alg}). */
  public static final String ALG = "x25519+xchacha20poly1305";
  /** Nonce size, bytes. */
  public static final int NONCE_BYTES = 24;
  /** Poly1305 tag size, bytes. */
  public static final int TAG_BYTES = 16;

  private static final String INFO_PREFIX = "agentmbx-enc-1:";
  private static final SecureRandom RANDOM = new SecureRandom();

  private BodySeal() {}

  /**
   * The {@code enc} member of a sealed envelope (its {@code v} is 1 and {@code alg} {@link #ALG}).
   *
   * @param epk the ephemeral X25519 public key, 32 bytes
   * @param nonce the XChaCha20 nonce, 24 bytes
   * @param body ciphertext with the 16-byte tag appended
   */
  public record Enc(byte[] epk, byte[] nonce, byte[] body) {
    /** Copies the arrays. */
    public Enc {
      epk = epk.clone();
      nonce = nonce.clone();
      body = body.clone();
    }

    /** @return a copy of the ephemeral public key */
    @Override
    public byte[] epk() {
      return epk.clone();
    }

    /** @return a copy of the nonce */
    @Override
    public byte[] nonce() {
      return nonce.clone();
    }

    /** @return a copy of the ciphertext and tag */
    @Override
    public byte[] body() {
      return body.clone();
    }

    /**
     * @return the base64 ciphertext, as it also stands in the envelope's {@code body} on the wire
     */
    public String bodyB64() {
      return B64.encode(body);
    }

    /**
     * The wire form, members in the reference's order.
     *
     * @return {@code {v:1, alg, epk, nonce, body}}
     */
    public ObjectNode toJson() {
      return Json.MAPPER.createObjectNode().put("v", 1).put("alg", ALG).put("epk", B64.encode(epk))
          .put("nonce", B64.encode(nonce)).put("body", bodyB64());
    }

    /**
     * Reads the wire form, with the reference's structural checks and reasons.
     *
     * @param enc the {@code enc} member
     * @return the parsed value
     * @throws SealException {@code bad enc}, {@code unsupported enc version}, {@code unsupported enc algorithm},
     *     {@code bad enc epk}, {@code bad enc nonce}, {@code bad enc body}
     */
    public static Enc fromJson(JsonNode enc) throws SealException {
      if (enc == null || !enc.isObject()) {
        throw new SealException("bad enc");
      }
      if (!enc.path("v").isNumber() || enc.path("v").doubleValue() != 1) {
        throw new SealException("unsupported enc version");
      }
      if (!ALG.equals(enc.path("alg").asText(null)) || !enc.path("alg").isTextual()) {
        throw new SealException("unsupported enc algorithm");
      }
      byte[] epk = bytes(enc.get("epk"), EncKeyPair.KEY_BYTES, "bad enc epk");
      byte[] nonce = bytes(enc.get("nonce"), NONCE_BYTES, "bad enc nonce");
      JsonNode body = enc.get("body");
      if (body == null || !body.isTextual() || body.textValue().isEmpty()) {
        throw new SealException("bad enc body");
      }
      return new Enc(epk, nonce, B64.decodeLenient(body.textValue()).orElseThrow());
    }

    private static byte[] bytes(JsonNode n, int size, String reason) throws SealException {
      Optional<byte[]> b = n != null && n.isTextual() ? B64.decodeLenient(n.textValue()) : Optional.empty();
      if (b.isEmpty() || b.get().length != size) {
        throw new SealException(reason);
      }
      return b.get();
    }
  }

  /**
   * Seals a body for one recipient.
   *
   * @param plaintext the body's UTF-8 bytes
   * @param recipientEncPub the recipient's X25519 public key (32 bytes)
   * @param envelopeId the envelope id (bound into the key derivation)
   * @return the sealed body
   * @throws SealException {@code bad recipient encryption key} (wrong size, or a low-order point)
   */
  public static Enc seal(byte[] plaintext, byte[] recipientEncPub, String envelopeId) throws SealException {
    byte[] nonce = new byte[NONCE_BYTES];
    RANDOM.nextBytes(nonce);
    return seal(plaintext, recipientEncPub, envelopeId, X25519.generatePrivateKey(), nonce);
  }

  /**
   * {@link #seal(byte[], byte[], String)} with the ephemeral key and nonce given: for test vectors only. Reusing
   * either for two envelopes destroys confidentiality.
   */
  static Enc seal(byte[] plaintext, byte[] recipientEncPub, String envelopeId, byte[] ephemeralPriv, byte[] nonce)
      throws SealException {
    if (recipientEncPub == null || recipientEncPub.length != EncKeyPair.KEY_BYTES) {
      throw new SealException("bad recipient encryption key");
    }
    try {
      byte[] epk = X25519.publicFromPrivate(ephemeralPriv);
      byte[] key = key(X25519.computeSharedSecret(ephemeralPriv, recipientEncPub), epk, envelopeId);
      return new Enc(epk, nonce, new InsecureNonceXChaCha20Poly1305(key).encrypt(nonce, plaintext, null));
    } catch (InvalidKeyException e) {
      throw new SealException("bad recipient encryption key");
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("XChaCha20-Poly1305 failed", e);
    }
  }

  /**
   * Opens a sealed body.
   *
   * @param enc the sealed body
   * @param recipient this host's encryption key pair
   * @param envelopeId the envelope id it was sealed under
   * @return the plaintext bytes (the sender's UTF-8)
   * @throws SealException {@code body does not open} (wrong key, wrong envelope id, or any changed byte of epk,
   *     nonce, ciphertext or tag) or {@code bad enc epk} (a low-order point)
   */
  public static byte[] open(Enc enc, EncKeyPair recipient, String envelopeId) throws SealException {
    byte[] shared;
    try {
      shared = X25519.computeSharedSecret(recipient.privateKey(), enc.epk);
    } catch (InvalidKeyException e) {
      throw new SealException("bad enc epk");
    }
    try {
      return new InsecureNonceXChaCha20Poly1305(key(shared, enc.epk, envelopeId)).decrypt(enc.nonce, enc.body, null);
    } catch (GeneralSecurityException e) {
      throw new SealException("body does not open");
    }
  }

  static byte[] key(byte[] shared, byte[] epk, String envelopeId) throws GeneralSecurityException {
    byte[] info = (INFO_PREFIX + (envelopeId == null ? "" : envelopeId)).getBytes(StandardCharsets.UTF_8);
    return Hkdf.computeHkdf("HMACSHA256", shared, epk, info, 32);
  }
}
