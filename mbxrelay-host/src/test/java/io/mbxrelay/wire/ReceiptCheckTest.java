package io.mbxrelay.wire;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;

class ReceiptCheckTest {

  static ObjectNode rec() {
    return (ObjectNode)
        Json.parse(
            "{\"v\":1,\"type\":\"receipt\",\"msg\":\"01KB0000000000000000000000\",\"recipient\":\"bob@beta\","
                + "\"state\":\"delivered\",\"at\":\"2026-11-29T12:00:00.000Z\",\"seq\":7}");
  }

  private static boolean validAfter(Consumer<ObjectNode> change) {
    ObjectNode r = rec();
    change.accept(r);
    return ReceiptCheck.isValidRec(r);
  }

  @Test
  void a_complete_record_is_valid_with_or_without_note_and_did() {
    assertThat(ReceiptCheck.isValidRec(rec())).isTrue();
    assertThat(validAfter(r -> r.put("note", "n".repeat(500)).put("did", "d".repeat(200)))).isTrue();
    assertThat(validAfter(r -> r.put("recipient", "owner@beta.local"))).isTrue();
  }

  @Test
  void extra_keys_make_the_record_invalid() {
    assertThat(validAfter(r -> r.put("extra", 1))).isFalse();
  }

  @Test
  void each_field_is_checked() {
    assertThat(validAfter(r -> r.put("v", 2))).isFalse();
    assertThat(validAfter(r -> r.put("type", "relay-accept"))).isFalse();
    assertThat(validAfter(r -> r.put("msg", "short"))).isFalse();
    assertThat(validAfter(r -> r.put("msg", "m".repeat(41)))).isFalse();
    assertThat(validAfter(r -> r.put("recipient", "bob"))).isFalse();
    assertThat(validAfter(r -> r.put("recipient", "bob@beta@gamma"))).isFalse();
    assertThat(validAfter(r -> r.put("recipient", "Bob@beta"))).isFalse();
    assertThat(validAfter(r -> r.put("recipient", "bob@-beta"))).isFalse();
    assertThat(validAfter(r -> r.put("recipient", "bob@" + "h".repeat(100)))).isFalse();
    assertThat(validAfter(r -> r.put("state", "lost"))).isFalse();
    assertThat(validAfter(r -> r.put("at", "2026-11-29T12:00:00+01:00"))).isFalse();
    assertThat(validAfter(r -> r.putNull("note"))).isFalse();
    assertThat(validAfter(r -> r.put("note", "n".repeat(501)))).isFalse();
    assertThat(validAfter(r -> r.put("did", "d".repeat(201)))).isFalse();
    assertThat(validAfter(r -> r.put("seq", 0))).isFalse();
    assertThat(validAfter(r -> r.put("seq", 1.5))).isFalse();
    assertThat(validAfter(r -> r.put("seq", "7"))).isFalse();
    assertThat(validAfter(r -> r.put("seq", 9007199254740992L))).isFalse();
    assertThat(validAfter(r -> r.remove("seq"))).isFalse();
    assertThat(ReceiptCheck.isValidRec(Json.parse("[]"))).isFalse();
  }

  @Test
  void the_item_id_names_message_recipient_and_seq() {
    assertThat(ReceiptCheck.itemIdFor(rec())).isEqualTo("receipt:01KB0000000000000000000000:bob@beta:7");
    assertThat(ReceiptCheck.itemIdFor(rec().put("seq", 7.0))).isEqualTo("receipt:01KB0000000000000000000000:bob@beta:7");
  }
}
