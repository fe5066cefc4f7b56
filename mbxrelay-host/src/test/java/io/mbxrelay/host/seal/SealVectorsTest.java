package io.mbxrelay.host.seal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.mbxrelay.crypto.Ed25519KeyPair;
import io.mbxrelay.wire.B64;
import io.mbxrelay.wire.Json;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Sealing against vectors made by the reference algorithm (src/test/resources/seal/README.md), round trips, tamper. */
class SealVectorsTest {

  static final JsonNode V = load();

  static JsonNode load() {
    try (InputStream in = SealVectorsTest.class.getResourceAsStream("/seal/vectors.json")) {
      return Json.parse(new String(in.readAllBytes(), StandardCharsets.UTF_8));
    } catch (java.io.IOException e) {
      throw new IllegalStateException(e);
    }
  }

  static byte[] b(String b64) {
    return B64.decodeLenient(b64).orElseThrow();
  }

  static EncKeyPair recipient() {
    return EncKeyPair.fromPrivateB64(V.get("recipient_private").asText());
  }

  @Test
  void theRecipientPublicKeyIsDerivedAsTheReferenceDerivesIt() {
    assertThat(recipient().publicKeyB64()).isEqualTo(V.get("recipient_public").asText());
  }

  @Test
  void everyVectorSealsToTheSameEncBytesAndOpensBack() throws Exception {
    assertThat(V.get("cases")).hasSize(3);
    for (JsonNode c : V.get("cases")) {
      BodySeal.Enc enc = BodySeal.seal(c.get("plaintext").asText().getBytes(StandardCharsets.UTF_8),
          b(V.get("recipient_public").asText()), c.get("envelope_id").asText(), b(c.get("ephemeral_private").asText()),
          b(c.get("nonce").asText()));
      assertThat(Json.stringify(enc.toJson())).as(c.get("name").asText()).isEqualTo(Json.stringify(c.get("enc")));
      byte[] opened = BodySeal.open(BodySeal.Enc.fromJson(c.get("enc")), recipient(), c.get("envelope_id").asText());
      assertThat(new String(opened, StandardCharsets.UTF_8)).isEqualTo(c.get("plaintext").asText());
    }
  }

  @Test
  void theDerivedKeyMatchesTheVector() throws Exception {
    JsonNode c = V.get("cases").get(0);
    assertThat(B64.encode(BodySeal.key(b(c.get("shared_secret").asText()), b(c.get("enc").get("epk").asText()),
        c.get("envelope_id").asText()))).isEqualTo(c.get("key").asText());
  }

  @Test
  void aWholeEnvelopeIsByteForByteTheReferencesWireAndOpens() throws Exception {
    JsonNode v = V.get("envelope");
    Ed25519KeyPair host = Ed25519KeyPair.fromSeed(b(v.get("host_seed").asText()));
    assertThat(host.publicKeyB64()).isEqualTo(v.get("host_public").asText());
    JsonNode f = v.get("fields");
    List<String> to = new ArrayList<>();
    f.get("to").forEach(t -> to.add(t.asText()));
    ObjectNode plain = SealedEnvelope.build(new SealedEnvelope.Draft(f.get("from").asText(), to, f.get("kind").asText(),
        f.get("subject").asText(), f.get("body").asText(), null, null, false, List.of()), f.get("id").asText(),
        io.mbxrelay.wire.IsoTime.parse(f.get("ts").asText()).getAsLong());
    assertThat(Json.stringify(plain)).isEqualTo(Json.stringify(f));
    byte[] wire = SealedEnvelope.seal(plain, b(V.get("recipient_public").asText()), v.get("host_name").asText(), host,
        b(v.get("ephemeral_private").asText()), b(v.get("nonce").asText()));
    assertThat(new String(SealedEnvelope.signedBytes(Json.parse(wire)), StandardCharsets.UTF_8))
        .isEqualTo(v.get("signed_text").asText());
    assertThat(new String(wire, StandardCharsets.UTF_8)).isEqualTo(v.get("wire").asText());
    SealedEnvelope.Opened o = SealedEnvelope.open(v.get("wire").asText().getBytes(StandardCharsets.UTF_8),
        host.publicKeyB64(), recipient());
    assertThat(o.body()).isEqualTo(v.get("plaintext").asText());
    assertThat(o.from()).isEqualTo("owner@alpha");
    assertThat(o.signedByHost()).isEqualTo("alpha");
  }

  @Test
  void randomSealsRoundTripWithFreshEphemeralKeysAndNonces() throws Exception {
    EncKeyPair me = EncKeyPair.generate();
    byte[] pub = b(me.publicKeyB64());
    byte[] text = "same text twice".getBytes(StandardCharsets.UTF_8);
    BodySeal.Enc one = BodySeal.seal(text, pub, "01JD5Z8Q0M3V6W2X9Y4T7R1K0A");
    BodySeal.Enc two = BodySeal.seal(text, pub, "01JD5Z8Q0M3V6W2X9Y4T7R1K0A");
    assertThat(one.epk()).isNotEqualTo(two.epk());
    assertThat(one.nonce()).isNotEqualTo(two.nonce());
    assertThat(one.body()).isNotEqualTo(two.body());
    assertThat(one.body()).hasSize(text.length + BodySeal.TAG_BYTES);
    assertThat(BodySeal.open(one, me, "01JD5Z8Q0M3V6W2X9Y4T7R1K0A")).isEqualTo(text);
    assertThat(BodySeal.open(two, me, "01JD5Z8Q0M3V6W2X9Y4T7R1K0A")).isEqualTo(text);
  }

  @Test
  void flippingAnyByteOfEpkNonceCiphertextOrTagStopsItOpening() throws Exception {
    JsonNode c = V.get("cases").get(1);
    BodySeal.Enc enc = BodySeal.Enc.fromJson(c.get("enc"));
    String id = c.get("envelope_id").asText();
    byte[] body = enc.body();
    int[][] flips = {{0, 0}, {0, 31}, {1, 0}, {1, 23}, {2, 0}, {2, body.length - BodySeal.TAG_BYTES - 1},
        {2, body.length - BodySeal.TAG_BYTES}, {2, body.length - 1}};
    for (int[] f : flips) {
      byte[] epk = enc.epk();
      byte[] nonce = enc.nonce();
      byte[] ct = enc.body();
      byte[] target = f[0] == 0 ? epk : f[0] == 1 ? nonce : ct;
      target[f[1]] ^= 0x01;
      BodySeal.Enc bad = new BodySeal.Enc(epk, nonce, ct);
      assertThatThrownBy(() -> BodySeal.open(bad, recipient(), id)).as("field %d byte %d", f[0], f[1])
          .isInstanceOf(SealException.class).hasMessageMatching("body does not open|bad enc epk");
    }
    assertThatThrownBy(() -> BodySeal.open(enc, recipient(), "01JD5Z8Q0M3V6W2X9Y4T7R1K0Z"))
        .as("another envelope id").hasMessage("body does not open");
    assertThatThrownBy(() -> BodySeal.open(enc, EncKeyPair.generate(), id)).as("another key")
        .hasMessage("body does not open");
    assertThat(BodySeal.open(enc, recipient(), id)).as("the untouched one still opens").isNotEmpty();
  }

  @Test
  void aTamperedEnvelopeIsRefusedWithItsReason() throws Exception {
    JsonNode v = V.get("envelope");
    String hostPub = v.get("host_public").asText();
    ObjectNode wire = (ObjectNode) Json.parse(v.get("wire").asText());
    ObjectNode swapped = wire.deepCopy();
    ((ObjectNode) swapped.get("enc")).set("body", V.get("cases").get(0).get("enc").get("body"));
    swapped.set("body", V.get("cases").get(0).get("enc").get("body"));
    assertThatThrownBy(() -> SealedEnvelope.open(bytes(swapped), hostPub, recipient())).hasMessage("bad signature");
    ObjectNode subject = wire.deepCopy().put("subject", "changed");
    assertThatThrownBy(() -> SealedEnvelope.open(bytes(subject), hostPub, recipient())).hasMessage("bad signature");
    assertThatThrownBy(() -> SealedEnvelope.open(bytes(wire), Ed25519KeyPair.generate().publicKeyB64(), recipient()))
        .hasMessage("signed by another host key");
    ObjectNode plain = wire.deepCopy();
    plain.putNull("enc");
    assertThatThrownBy(() -> SealedEnvelope.open(bytes(plain), hostPub, recipient()))
        .hasMessageStartingWith("not sealed");
    ObjectNode unsigned = wire.deepCopy();
    unsigned.remove("sig");
    assertThatThrownBy(() -> SealedEnvelope.open(bytes(unsigned), hostPub, recipient())).hasMessage("unsigned");
    assertThatThrownBy(() -> SealedEnvelope.open(bytes(wire), hostPub, EncKeyPair.generate()))
        .hasMessage("body does not open");
    ObjectNode badId = wire.deepCopy().put("id", "not-a-ulid");
    assertThatThrownBy(() -> SealedEnvelope.open(bytes(badId), hostPub, recipient()))
        .hasMessage("bad envelope: bad id");
  }

  @Test
  void draftsAreCheckedBeforeAnythingIsSealed() {
    assertThatThrownBy(() -> SealedEnvelope.build(SealedEnvelope.Draft.message("a@x", "b@y", " ", "hi"),
        Ulid.next(0), 0)).hasMessage("subject is required");
    assertThatThrownBy(() -> SealedEnvelope.build(SealedEnvelope.Draft.message("a@x", "b@y", "s",
        "x".repeat(262_145)), Ulid.next(0), 0)).hasMessageStartingWith("body is over 256 KB");
    assertThatThrownBy(() -> SealedEnvelope.build(new SealedEnvelope.Draft("a@x", List.of("b@y"), "gossip", "s", "b",
        null, null, false, null), Ulid.next(0), 0)).hasMessage("bad envelope: bad kind");
    assertThatThrownBy(() -> SealedEnvelope.build(SealedEnvelope.Draft.message("nobody", "b@y", "s", "b"),
        Ulid.next(0), 0)).hasMessage("bad envelope: bad from");
    assertThat(SealedEnvelope.build(SealedEnvelope.Draft.message("a@x", "b@y", "two\nlines", "b"), Ulid.next(0), 0)
        .get("subject").asText()).isEqualTo("two lines");
    assertThat(Ulid.PATTERN.matcher(Ulid.next(System.currentTimeMillis())).matches()).isTrue();
    String first = Ulid.next(1_780_000_000_000L);
    String second = Ulid.next(1_780_000_000_000L);
    assertThat(second).as("same millisecond: sorts after").isGreaterThan(first).startsWith(first.substring(0, 10));
    assertThat(Ulid.next(1_780_000_000_001L)).isGreaterThan(second);
  }

  static byte[] bytes(JsonNode n) {
    return Json.stringify(n).getBytes(StandardCharsets.UTF_8);
  }
}
