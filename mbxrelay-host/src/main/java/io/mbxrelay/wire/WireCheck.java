package io.mbxrelay.wire;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.Optional;

/**
 * The content check of a pushed item ({@code docs/protocol.md §3} "Content check (checkWire)"), run per target after
 * the size check. Returns the reject reason, i.e. the text after {@code rejected:}. Stateless and thread-safe.
 */
public final class WireCheck {

  /** Item kind of a sealed envelope. */
  public static final String ENVELOPE = "envelope";
  /** Item kind of a delivery receipt. */
  public static final String RECEIPT = "receipt";

  private WireCheck() {}

  /**
   * Verifies a detached Ed25519 signature; given by the caller ({@code io.mbxrelay.crypto.Ed25519::verify}) so that
   * {@code wire} names no higher layer. Must return false, never throw, for malformed keys or signatures.
   */
  @FunctionalInterface
  public interface SignatureVerifier {
    /**
     * @param pubkeyB64 the signer's raw 32-byte public key, standard base64
     * @param message the signed bytes
     * @param sigB64 the 64-byte signature, standard base64
     * @return whether the signature is valid for the message under the key
     */
    boolean verify(String pubkeyB64, byte[] message, String sigB64);
  }

  /**
   * Checks one item's wire bytes.
   *
   * <p>The bytes are decoded with {@link Utf8#decode(byte[])} (Node {@code buffer.toString('utf8')})
   * and parsed as JSON ({@code bad wire} on failure; a leading BOM fails, as in JS). Then:
   * <ul>
   *   <li>{@code envelope}: {@link EnvelopeCheck} → {@code bad envelope: <reason>}; {@code id} ≠ itemId →
   *       {@code item id is not the envelope id}; {@code enc} null → {@code envelope body is not sealed}.</li>
   *   <li>any other kind is checked as a receipt (the caller has already refused kinds other than envelope and
   *       receipt): the JSON must be an object whose {@code rec} passes {@link ReceiptCheck#isValidRec} and whose
   *       {@code sig} is a string (other members are tolerated, as in the reference) → else {@code bad receipt};
   *       itemId ≠ {@link ReceiptCheck#itemIdFor} → {@code item id is not the receipt id}; {@code sig} must verify
   *       over canonical(rec) with the pushing host's key → else {@code receipt is not signed by the sending
   *       host}.</li>
   * </ul>
   *
   * @param kind the item kind ({@code envelope} or {@code receipt})
   * @param itemId the pushed {@code item_id}
   * @param wire the exact decoded wire bytes
   * @param senderPubkeyB64 the pushing (authenticated) host's public key, base64
   * @param verifier checks a receipt's signature ({@code io.mbxrelay.crypto.Ed25519::verify})
   * @return the reject reason, or empty when the content is acceptable
   */
  public static Optional<String> check(String kind, String itemId, byte[] wire, String senderPubkeyB64,
      SignatureVerifier verifier) {
    JsonNode v;
    try {
      v = Json.parse(wire);
    } catch (IllegalArgumentException e) {
      return Optional.of("bad wire");
    }
    if (ENVELOPE.equals(kind)) {
      Optional<String> shape = EnvelopeCheck.check(v);
      if (shape.isPresent()) {
        return Optional.of("bad envelope: " + shape.get());
      }
      JsonNode id = v.get("id");
      if (!id.textValue().equals(itemId)) {
        return Optional.of("item id is not the envelope id");
      }
      if (v.get("enc").isNull()) {
        return Optional.of("envelope body is not sealed");
      }
      return Optional.empty();
    }
    JsonNode rec = v.isObject() ? v.get("rec") : null;
    JsonNode sig = v.isObject() ? v.get("sig") : null;
    if (!ReceiptCheck.isValidRec(rec) || sig == null || !sig.isTextual()) {
      return Optional.of("bad receipt");
    }
    if (!ReceiptCheck.itemIdFor(rec).equals(itemId)) {
      return Optional.of("item id is not the receipt id");
    }
    if (!verifier.verify(senderPubkeyB64, CanonicalJson.canonicalBytes(rec), sig.textValue())) {
      return Optional.of("receipt is not signed by the sending host");
    }
    return Optional.empty();
  }
}
