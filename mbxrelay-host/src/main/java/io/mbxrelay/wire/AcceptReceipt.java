package io.mbxrelay.wire;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Objects;

/**
 * The relay's accept receipt and the push result that carries it (docs/protocol.md §3 "Success result", §4.5): the canonical
 * bytes the relay signs, and the result object as {@code JSON.stringify} writes it. Written field by field rather than
 * through a JSON tree because a push answers up to 200 of them and each is signed: the output is byte-identical to
 * {@link CanonicalJson#canonicalize} of the same object (tested against the generic writer and the vectors).
 *
 * @param relayPubkey the relay key (base64)
 * @param epoch the store epoch
 * @param senderPubkey the pushing host's key
 * @param itemId the item id as pushed
 * @param targets per target in request order
 * @param at ISO time ({@code toISOString} form)
 */
public record AcceptReceipt(String relayPubkey, String epoch, String senderPubkey, String itemId, List<Target> targets,
    String at) {

  /**
   * One target of the receipt.
   *
   * @param hostPubkey the target key as pushed
   * @param seq its seq (a JS safe integer in practice; larger values print as JS would)
   * @param wireHash lowercase hex SHA-256 of the stored wire bytes
   */
  public record Target(String hostPubkey, long seq, String wireHash) {}

  public AcceptReceipt {
    Objects.requireNonNull(relayPubkey);
    Objects.requireNonNull(epoch);
    Objects.requireNonNull(senderPubkey);
    Objects.requireNonNull(itemId);
    targets = List.copyOf(targets);
    Objects.requireNonNull(at);
  }

  /**
   * The signed form: canonical JSON, keys {@code at,epoch,item_id,relay_pubkey,sender_pubkey,targets,type,v} and
   * {@code host_pubkey,seq,wire_hash} per target (docs/protocol.md §1 "Fixed canonical key orders").
   *
   * @return UTF-8 bytes to sign
   */
  public byte[] canonicalBytes() {
    StringBuilder b = new StringBuilder(256 + 160 * targets.size());
    b.append("{\"at\":");
    JsonText.string(at, b);
    b.append(",\"epoch\":");
    JsonText.string(epoch, b);
    b.append(",\"item_id\":");
    JsonText.string(itemId, b);
    b.append(",\"relay_pubkey\":");
    JsonText.string(relayPubkey, b);
    b.append(",\"sender_pubkey\":");
    JsonText.string(senderPubkey, b);
    b.append(",\"targets\":[");
    for (int i = 0; i < targets.size(); i++) {
      Target t = targets.get(i);
      b.append(i == 0 ? "{\"host_pubkey\":" : ",{\"host_pubkey\":");
      JsonText.string(t.hostPubkey(), b);
      b.append(",\"seq\":").append(Json.number(t.seq())).append(",\"wire_hash\":");
      JsonText.string(t.wireHash(), b);
      b.append('}');
    }
    b.append("],\"type\":\"relay-accept\",\"v\":1}");
    return b.toString().getBytes(StandardCharsets.UTF_8);
  }

  /**
   * Appends the push result (insertion order {@code item_id, status, targets, accept, sig}, the accept in the order
   * {@code v,type,relay_pubkey,epoch,sender_pubkey,item_id,targets,at}) as {@code JSON.stringify} writes it.
   *
   * @param fresh {@code accepted} when true, else {@code duplicate}
   * @param sigB64 the relay's base64 signature over {@link #canonicalBytes()}
   * @param out where to append
   */
  public void appendResult(boolean fresh, String sigB64, StringBuilder out) {
    out.append("{\"item_id\":");
    JsonText.string(itemId, out);
    out.append(fresh ? ",\"status\":\"accepted\",\"targets\":[" : ",\"status\":\"duplicate\",\"targets\":[");
    for (int i = 0; i < targets.size(); i++) {
      Target t = targets.get(i);
      out.append(i == 0 ? "{\"host_pubkey\":" : ",{\"host_pubkey\":");
      JsonText.string(t.hostPubkey(), out);
      out.append(",\"seq\":").append(Json.number(t.seq())).append('}');
    }
    out.append("],\"accept\":{\"v\":1,\"type\":\"relay-accept\",\"relay_pubkey\":");
    JsonText.string(relayPubkey, out);
    out.append(",\"epoch\":");
    JsonText.string(epoch, out);
    out.append(",\"sender_pubkey\":");
    JsonText.string(senderPubkey, out);
    out.append(",\"item_id\":");
    JsonText.string(itemId, out);
    out.append(",\"targets\":[");
    for (int i = 0; i < targets.size(); i++) {
      Target t = targets.get(i);
      out.append(i == 0 ? "{\"host_pubkey\":" : ",{\"host_pubkey\":");
      JsonText.string(t.hostPubkey(), out);
      out.append(",\"seq\":").append(Json.number(t.seq())).append(",\"wire_hash\":");
      JsonText.string(t.wireHash(), out);
      out.append('}');
    }
    out.append("],\"at\":");
    JsonText.string(at, out);
    out.append("},\"sig\":");
    JsonText.string(sigB64, out);
    out.append('}');
  }

  /**
   * Appends a refused item's result {@code {item_id, status:"rejected:<why>", targets:[]}} (docs/protocol.md §3).
   *
   * @param itemId the item id echoed ({@code ""} when it was not a string)
   * @param why the reason after {@code rejected:}
   * @param out where to append
   */
  public static void appendRejected(String itemId, String why, StringBuilder out) {
    out.append("{\"item_id\":");
    JsonText.string(itemId, out);
    out.append(",\"status\":");
    JsonText.string("rejected:" + why, out);
    out.append(",\"targets\":[]}");
  }
}
