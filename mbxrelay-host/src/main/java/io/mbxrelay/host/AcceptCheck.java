package io.mbxrelay.host;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.mbxrelay.crypto.Ed25519;
import io.mbxrelay.crypto.Fingerprint;
import io.mbxrelay.wire.CanonicalJson;
import io.mbxrelay.wire.Hashes;
import io.mbxrelay.wire.JsNumber;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The sender's check of one push result and its accept receipt (docs/protocol.md §4.5): the result counts as accepted only if
 * its status is {@code accepted} or {@code duplicate}, {@code accept.type} is {@code relay-accept},
 * {@code accept.relay_pubkey} is the pinned relay key, {@code accept.sender_pubkey} is the sender's own key,
 * {@code accept.item_id} is the pushed id, every pushed target has exactly one receipt entry whose {@code wire_hash}
 * is the SHA-256 of the bytes sent to it and whose {@code seq} is a safe integer (and no other targets appear), and
 * {@code sig} verifies with the pinned relay key over canonical({@code accept} as received). Pure function, no I/O;
 * stateless and thread-safe.
 */
public final class AcceptCheck {

  private AcceptCheck() {}

  /**
   * Classifies one push result.
   *
   * @param item the item as pushed (its ids, targets and exact wire bytes)
   * @param result the result object from {@code results[i]} (any node; null allowed)
   * @param senderPubkey this host's base64 key
   * @param relayPubkey the pinned relay base64 key
   * @return {@link ItemOutcome.Rejected} for {@code rejected:<why>}; {@link ItemOutcome.Accepted} when every check
   *     passes; else {@link ItemOutcome.Unverified} naming the first failed check
   */
  public static ItemOutcome check(PushItem item, JsonNode result, String senderPubkey, String relayPubkey) {
    String id = item.itemId();
    if (result == null || !result.isObject()) {
      return new ItemOutcome.Unverified(id, "result is not an object");
    }
    String status = text(result, "status");
    if (status != null && status.startsWith("rejected:")) {
      return new ItemOutcome.Rejected(id, status.substring("rejected:".length()));
    }
    if (!"accepted".equals(status) && !"duplicate".equals(status)) {
      return new ItemOutcome.Unverified(id, "unknown status");
    }
    JsonNode acceptNode = result.get("accept");
    if (acceptNode == null || !acceptNode.isObject()) {
      return new ItemOutcome.Unverified(id, "no accept receipt");
    }
    ObjectNode accept = (ObjectNode) acceptNode;
    String sig = text(result, "sig");
    if (sig == null) {
      return new ItemOutcome.Unverified(id, "no receipt signature");
    }
    if (!"relay-accept".equals(text(accept, "type"))) {
      return new ItemOutcome.Unverified(id, "not a relay-accept receipt");
    }
    if (!relayPubkey.equals(text(accept, "relay_pubkey"))) {
      return new ItemOutcome.Unverified(id, "receipt names another relay key");
    }
    if (!senderPubkey.equals(text(accept, "sender_pubkey"))) {
      return new ItemOutcome.Unverified(id, "receipt names another sender");
    }
    if (!id.equals(text(accept, "item_id"))) {
      return new ItemOutcome.Unverified(id, "receipt names another item");
    }
    String epoch = text(accept, "epoch");
    String at = text(accept, "at");
    if (epoch == null || at == null) {
      return new ItemOutcome.Unverified(id, "receipt has no epoch or time");
    }
    JsonNode targets = accept.get("targets");
    if (targets == null || !targets.isArray() || targets.size() != item.targets().size()) {
      return new ItemOutcome.Unverified(id, "receipt targets differ from the pushed targets");
    }
    Map<String, JsonNode> byKey = new HashMap<>();
    for (JsonNode t : targets) {
      String k = text(t, "host_pubkey");
      if (k == null || byKey.put(k, t) != null) {
        return new ItemOutcome.Unverified(id, "receipt targets differ from the pushed targets");
      }
    }
    List<ItemOutcome.TargetSeq> seqs = new ArrayList<>(targets.size());
    for (PushItem.Target t : item.targets()) {
      JsonNode entry = byKey.get(t.hostPubkey());
      if (entry == null) {
        return new ItemOutcome.Unverified(id, "receipt has no entry for a pushed target");
      }
      if (!Hashes.sha256Hex(t.wire()).equals(text(entry, "wire_hash"))) {
        return new ItemOutcome.Unverified(id, "receipt wire hash differs from the bytes sent to "
            + fingerprint(t.hostPubkey()));
      }
      JsonNode seq = entry.get("seq");
      if (!isSafeInteger(seq)) {
        return new ItemOutcome.Unverified(id, "receipt seq is not a safe integer");
      }
      seqs.add(new ItemOutcome.TargetSeq(t.hostPubkey(), seq.isIntegralNumber() ? seq.asLong() : (long) seq.asDouble()));
    }
    byte[] signed;
    try {
      signed = CanonicalJson.canonicalBytes(accept);
    } catch (IllegalArgumentException e) {
      return new ItemOutcome.Unverified(id, "receipt cannot be canonicalized");
    }
    if (!Ed25519.verify(relayPubkey, signed, sig)) {
      return new ItemOutcome.Unverified(id, "receipt signature does not verify with the pinned relay key");
    }
    return new ItemOutcome.Accepted(id, seqs, epoch, at, accept.deepCopy(), sig, "duplicate".equals(status));
  }

  /** JS {@code Number.isSafeInteger} of a JSON member. */
  static boolean isSafeInteger(JsonNode n) {
    if (n == null || !n.isNumber()) {
      return false;
    }
    if (n.isIntegralNumber()) {
      long v = n.asLong();
      return n.canConvertToLong() && v >= -(long) JsNumber.MAX_SAFE && v <= (long) JsNumber.MAX_SAFE;
    }
    double d = n.asDouble();
    return Double.isFinite(d) && Math.floor(d) == d && Math.abs(d) <= JsNumber.MAX_SAFE;
  }

  private static String text(JsonNode o, String name) {
    JsonNode n = o == null ? null : o.get(name);
    return n != null && n.isTextual() ? n.textValue() : null;
  }

  private static String fingerprint(String pub) {
    try {
      return Fingerprint.ofB64(pub);
    } catch (IllegalArgumentException e) {
      return "a target";
    }
  }
}
