package io.mbxrelay.wire;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.mbxrelay.crypto.Ed25519;
import io.mbxrelay.crypto.Ed25519KeyPair;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

class WireCheckTest {

  private static final Ed25519KeyPair BETA = Ed25519KeyPair.fromSeed(filled(2));
  private static final Ed25519KeyPair GAMMA = Ed25519KeyPair.fromSeed(filled(3));
  private static final String ID = EnvelopeCheckTest.ID;

  private static byte[] filled(int b) {
    byte[] seed = new byte[32];
    java.util.Arrays.fill(seed, (byte) b);
    return seed;
  }

  private static byte[] utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  private static byte[] signedReceipt(Ed25519KeyPair signer, ObjectNode rec) {
    ObjectNode w = Json.MAPPER.createObjectNode();
    w.set("rec", rec);
    w.put("sig", signer.signB64(CanonicalJson.canonicalBytes(rec)));
    return utf8(CanonicalJson.canonicalize(w));
  }

  @Test
  void a_sealed_envelope_under_its_own_id_is_accepted() {
    byte[] wire = utf8(Json.stringify(EnvelopeCheckTest.sealed()));
    assertThat(WireCheck.check("envelope", ID, wire, BETA.publicKeyB64(), Ed25519::verify)).isEmpty();
  }

  @Test
  void envelope_rejections_carry_the_exact_reasons() {
    assertThat(WireCheck.check("envelope", ID, utf8(Json.stringify(EnvelopeCheckTest.sealed().put("v", 2))), "", Ed25519::verify))
        .contains("bad envelope: unsupported version");
    assertThat(WireCheck.check("envelope", "01KB0000000000000000000001", utf8(Json.stringify(EnvelopeCheckTest.sealed())), "", Ed25519::verify))
        .contains("item id is not the envelope id");
    assertThat(WireCheck.check("envelope", ID, utf8(Json.stringify(EnvelopeCheckTest.sealed().putNull("enc"))), "", Ed25519::verify))
        .contains("envelope body is not sealed");
  }

  @Test
  void garbage_is_a_bad_wire() {
    assertThat(WireCheck.check("envelope", ID, utf8("not json"), "", Ed25519::verify)).contains("bad wire");
    assertThat(WireCheck.check("receipt", ID, new byte[] {(byte) 0xff, (byte) 0xfe}, "", Ed25519::verify)).contains("bad wire");
    assertThat(WireCheck.check("envelope", ID, new byte[0], "", Ed25519::verify)).contains("bad wire");
  }

  @Test
  void invalid_utf8_inside_a_json_string_still_parses_with_replacement_characters() throws Exception {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    String json = Json.stringify(EnvelopeCheckTest.sealed().put("subject", "SUBJ"));
    int at = json.indexOf("SUBJ");
    out.write(utf8(json.substring(0, at)));
    out.write(new byte[] {'a', (byte) 0xC3, 'b', (byte) 0xFF, (byte) 0xED, (byte) 0xA0, (byte) 0x80});
    out.write(utf8(json.substring(at + 4)));
    assertThat(WireCheck.check("envelope", ID, out.toByteArray(), BETA.publicKeyB64(), Ed25519::verify)).isEmpty();
    assertThat(Utf8.decode(out.toByteArray())).contains("a\uFFFDb\uFFFD\uFFFD\uFFFD\uFFFD");
  }

  @Test
  void a_receipt_signed_by_the_pushing_host_is_accepted() {
    ObjectNode rec = ReceiptCheckTest.rec();
    String itemId = ReceiptCheck.itemIdFor(rec);
    assertThat(WireCheck.check("receipt", itemId, signedReceipt(BETA, rec), BETA.publicKeyB64(), Ed25519::verify)).isEmpty();
  }

  @Test
  void a_receipt_with_an_extra_key_is_a_bad_receipt() {
    ObjectNode rec = ReceiptCheckTest.rec();
    String itemId = ReceiptCheck.itemIdFor(rec);
    rec.put("extra", true);
    assertThat(WireCheck.check("receipt", itemId, signedReceipt(BETA, rec), BETA.publicKeyB64(), Ed25519::verify))
        .contains("bad receipt");
    assertThat(WireCheck.check("receipt", itemId, utf8("{\"rec\":" + Json.stringify(ReceiptCheckTest.rec()) + "}"),
        BETA.publicKeyB64(), Ed25519::verify)).contains("bad receipt");
    assertThat(WireCheck.check("receipt", itemId, utf8("[1]"), BETA.publicKeyB64(), Ed25519::verify)).contains("bad receipt");
  }

  @Test
  void a_receipt_under_another_item_id_is_refused() {
    ObjectNode rec = ReceiptCheckTest.rec();
    assertThat(WireCheck.check("receipt", "receipt:whatever", signedReceipt(BETA, rec), BETA.publicKeyB64(), Ed25519::verify))
        .contains("item id is not the receipt id");
  }

  @Test
  void a_receipt_signed_by_another_key_is_refused() {
    ObjectNode rec = ReceiptCheckTest.rec();
    String itemId = ReceiptCheck.itemIdFor(rec);
    assertThat(WireCheck.check("receipt", itemId, signedReceipt(GAMMA, rec), BETA.publicKeyB64(), Ed25519::verify))
        .contains("receipt is not signed by the sending host");
  }
}
