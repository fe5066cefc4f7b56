package io.mbxrelay.host;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.mbxrelay.crypto.Ed25519KeyPair;
import io.mbxrelay.wire.CanonicalJson;
import io.mbxrelay.wire.Hashes;
import io.mbxrelay.wire.Json;
import java.nio.charset.StandardCharsets;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;

/** docs/protocol.md §4.5: each check of the sender's accept receipt, on results built and signed like the relay does. */
class AcceptCheckTest {

  final Ed25519KeyPair relay = Ed25519KeyPair.generate();
  final Ed25519KeyPair sender = Ed25519KeyPair.generate();
  final String target = Ed25519KeyPair.generate().publicKeyB64();
  final byte[] wire = "{\"v\":3}".getBytes(StandardCharsets.UTF_8);
  final PushItem item = PushItem.envelope("01ARZ3NDEKTSV4RRFFQ69G5FAV", target, wire);

  ObjectNode accept() {
    ObjectNode a = Json.MAPPER.createObjectNode().put("v", 1).put("type", "relay-accept")
        .put("relay_pubkey", relay.publicKeyB64()).put("epoch", "e-1").put("sender_pubkey", sender.publicKeyB64())
        .put("item_id", item.itemId());
    a.putArray("targets").addObject().put("host_pubkey", target).put("seq", 1759400000000L)
        .put("wire_hash", Hashes.sha256Hex(wire));
    a.put("at", "2026-11-29T12:00:00.000Z");
    return a;
  }

  /** A result whose accept was changed by {@code edit} and then signed with {@code signer}. */
  ObjectNode result(String status, Consumer<ObjectNode> edit, Ed25519KeyPair signer) {
    ObjectNode a = accept();
    edit.accept(a);
    ObjectNode r = Json.MAPPER.createObjectNode().put("item_id", item.itemId()).put("status", status);
    r.putArray("targets").addObject().put("host_pubkey", target).put("seq", 1759400000000L);
    r.set("accept", a);
    r.put("sig", signer.signB64(CanonicalJson.canonicalBytes(a)));
    return r;
  }

  ItemOutcome check(ObjectNode result) {
    return AcceptCheck.check(item, result, sender.publicKeyB64(), relay.publicKeyB64());
  }

  String why(ObjectNode result) {
    ItemOutcome o = check(result);
    assertThat(o).isInstanceOf(ItemOutcome.Unverified.class);
    return ((ItemOutcome.Unverified) o).why();
  }

  @Test
  void aCorrectlySignedReceiptIsAccepted() {
    ItemOutcome o = check(result("accepted", a -> {}, relay));
    assertThat(o).isInstanceOf(ItemOutcome.Accepted.class);
    ItemOutcome.Accepted acc = (ItemOutcome.Accepted) o;
    assertThat(acc.duplicate()).isFalse();
    assertThat(acc.targets()).containsExactly(new ItemOutcome.TargetSeq(target, 1759400000000L));
    assertThat(acc.epoch()).isEqualTo("e-1");
    assertThat(((ItemOutcome.Accepted) check(result("duplicate", a -> {}, relay))).duplicate()).isTrue();
  }

  @Test
  void aRejectionKeepsTheWireReason() {
    ObjectNode r = Json.MAPPER.createObjectNode().put("item_id", item.itemId())
        .put("status", "rejected:quota:queue depth exceeded for bob");
    assertThat(check(r)).isEqualTo(new ItemOutcome.Rejected(item.itemId(), "quota:queue depth exceeded for bob"));
  }

  @Test
  void everyFailedCheckIsUnverified() {
    assertThat(why(result("stored", a -> {}, relay))).isEqualTo("unknown status");
    assertThat(why(result("accepted", a -> {}, Ed25519KeyPair.generate())))
        .isEqualTo("receipt signature does not verify with the pinned relay key");
    assertThat(why(result("accepted", a -> a.put("type", "relay-expired"), relay)))
        .isEqualTo("not a relay-accept receipt");
    assertThat(why(result("accepted", a -> a.put("relay_pubkey", sender.publicKeyB64()), relay)))
        .isEqualTo("receipt names another relay key");
    assertThat(why(result("accepted", a -> a.put("sender_pubkey", target), relay)))
        .isEqualTo("receipt names another sender");
    assertThat(why(result("accepted", a -> a.put("item_id", "other"), relay))).isEqualTo("receipt names another item");
    assertThat(why(result("accepted", a -> ((ObjectNode) a.get("targets").get(0)).put("wire_hash",
        Hashes.sha256Hex(new byte[1])), relay))).startsWith("receipt wire hash differs");
    assertThat(why(result("accepted", a -> ((ObjectNode) a.get("targets").get(0)).put("seq", 9007199254740992d),
        relay))).isEqualTo("receipt seq is not a safe integer");
    assertThat(why(result("accepted", a -> ((ObjectNode) a.get("targets").get(0)).put("seq", 1.5), relay)))
        .isEqualTo("receipt seq is not a safe integer");
    assertThat(why(result("accepted", a -> ((ObjectNode) a.get("targets").get(0)).put("host_pubkey",
        sender.publicKeyB64()), relay))).isEqualTo("receipt has no entry for a pushed target");
    assertThat(why(result("accepted", a -> a.withArray("targets").addObject().put("host_pubkey", "x"), relay)))
        .isEqualTo("receipt targets differ from the pushed targets");
    ObjectNode noSig = result("accepted", a -> {}, relay);
    noSig.remove("sig");
    assertThat(why(noSig)).isEqualTo("no receipt signature");
  }

  @Test
  void theSignatureIsCheckedOverTheAcceptAsReceivedIncludingExtraFields() {
    // Signed with the extra member: verifies. Extra member added after signing: does not.
    assertThat(check(result("accepted", a -> a.put("note", "x"), relay))).isInstanceOf(ItemOutcome.Accepted.class);
    ObjectNode r = result("accepted", a -> {}, relay);
    ((ObjectNode) r.get("accept")).put("note", "x");
    assertThat(why(r)).isEqualTo("receipt signature does not verify with the pinned relay key");
  }
}
