package io.mbxrelay.http;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.mbxrelay.testing.Envelopes;
import io.mbxrelay.testing.Http;
import io.mbxrelay.testing.RelayHarness;
import io.mbxrelay.testing.TestHost;
import io.mbxrelay.wire.B64;
import io.mbxrelay.wire.CanonicalJson;
import io.mbxrelay.wire.Json;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Per-item checks with their exact reject texts, batch limits, body caps and bad input (docs/protocol.md §3,
 * §4.1, §4.9). Nothing here may answer 500 or change the store.
 */
class ItemChecksAndBadInputTest {
  @TempDir
  static Path dir;
  static RelayHarness relay;
  static TestHost a;
  static TestHost b;

  @BeforeAll
  static void start() throws Exception {
    relay = RelayHarness.start(dir);
    a = new TestHost(relay.url(), "alpha").enrol();
    b = new TestHost(relay.url(), "beta").enrol();
  }

  @AfterAll
  static void stop() {
    relay.close();
  }

  private static String status(ObjectNode item) throws Exception {
    Http.Resp r = a.push(item);
    assertThat(r.status()).as(r.raw()).isEqualTo(200);
    return r.json().get("results").get(0).get("status").asText();
  }

  private static ObjectNode envelopeItem(String id, byte[] wire) {
    return TestHost.item("envelope", id, List.of(b.pub()), List.of(wire));
  }

  private static long head() throws Exception {
    return b.pull(0, 1, null).json().get("head_seq").asLong();
  }

  @Test
  void item_level_checks_reject_with_the_reference_texts_and_store_nothing() throws Exception {
    long before = head();
    String id = Envelopes.newId();
    ObjectNode noId = envelopeItem(id, Envelopes.sealed(id));
    noId.remove("item_id");
    Http.Resp r = a.push(noId);
    assertThat(r.json().get("results").get(0).get("item_id").asText()).isEmpty();
    assertThat(r.json().get("results").get(0).get("status").asText()).isEqualTo("rejected:bad item id");
    assertThat(status(envelopeItem("x".repeat(301), Envelopes.sealed(id)))).isEqualTo("rejected:bad item id");
    ObjectNode kind = envelopeItem(id, Envelopes.sealed(id));
    kind.put("kind", "expired");
    assertThat(status(kind)).isEqualTo("rejected:bad kind");
    ObjectNode noTargets = envelopeItem(id, Envelopes.sealed(id));
    noTargets.putArray("targets");
    assertThat(status(noTargets)).isEqualTo("rejected:bad targets");
    ObjectNode notArray = envelopeItem(id, Envelopes.sealed(id));
    notArray.put("targets", "x");
    assertThat(status(notArray)).isEqualTo("rejected:bad targets");
    assertThat(head()).isEqualTo(before);
  }

  @Test
  void target_checks_reject_with_the_reference_texts_and_store_nothing() throws Exception {
    long before = head();
    String id = Envelopes.newId();
    ObjectNode badWire = envelopeItem(id, Envelopes.sealed(id));
    ((ObjectNode) badWire.get("targets").get(0)).put("wire_b64", "not base64!");
    assertThat(status(badWire)).isEqualTo("rejected:bad wire");
    ObjectNode numWire = envelopeItem(id, Envelopes.sealed(id));
    ((ObjectNode) numWire.get("targets").get(0)).put("wire_b64", 5);
    assertThat(status(numWire)).isEqualTo("rejected:bad wire");
    assertThat(status(envelopeItem(id, "not json".getBytes(StandardCharsets.UTF_8)))).isEqualTo("rejected:bad wire");
    assertThat(status(envelopeItem(id, Envelopes.sealed(id, 600_000)))).isEqualTo("rejected:item over size limit");
    assertThat(status(envelopeItem(id, "{\"v\":2}".getBytes(StandardCharsets.UTF_8))))
        .isEqualTo("rejected:bad envelope: unsupported version");
    assertThat(status(envelopeItem(Envelopes.newId(), Envelopes.sealed(id))))
        .isEqualTo("rejected:item id is not the envelope id");
    String plain = new String(Envelopes.sealed(id), StandardCharsets.UTF_8);
    plain = plain.substring(0, plain.indexOf(",\"enc\":")) + ",\"enc\":null}";
    assertThat(status(envelopeItem(id, plain.getBytes(StandardCharsets.UTF_8))))
        .isEqualTo("rejected:envelope body is not sealed");
    assertThat(head()).isEqualTo(before);
  }

  private static ObjectNode receipt(io.mbxrelay.crypto.Ed25519KeyPair signer, String msg, long seq) {
    ObjectNode rec = Json.MAPPER.createObjectNode().put("v", 1).put("type", "receipt").put("msg", msg)
        .put("recipient", "bob@beta").put("state", "delivered").put("at", "2026-11-29T12:00:00.000Z").put("seq", seq);
    ObjectNode wire = Json.MAPPER.createObjectNode();
    wire.set("rec", rec);
    wire.put("sig", signer.signB64(CanonicalJson.canonicalBytes(rec)));
    return wire;
  }

  @Test
  void receipts_must_be_well_formed_signed_by_the_pushing_host_and_carry_their_id() throws Exception {
    String msg = Envelopes.newId();
    ObjectNode good = receipt(a.key, msg, 3);
    byte[] wire = CanonicalJson.canonicalBytes(good);
    String id = "receipt:" + msg + ":bob@beta:3";
    assertThat(status(TestHost.item("receipt", id, List.of(b.pub()), List.of(wire)))).isEqualTo("accepted");
    assertThat(status(TestHost.item("receipt", "receipt:" + msg + ":bob@beta:4", List.of(b.pub()), List.of(wire))))
        .isEqualTo("rejected:item id is not the receipt id");
    byte[] foreign = CanonicalJson.canonicalBytes(receipt(b.key, msg, 5));
    assertThat(status(TestHost.item("receipt", "receipt:" + msg + ":bob@beta:5", List.of(b.pub()), List.of(foreign))))
        .isEqualTo("rejected:receipt is not signed by the sending host");
    ObjectNode extra = receipt(a.key, msg, 6);
    ((ObjectNode) extra.get("rec")).put("extra", 1);
    assertThat(status(TestHost.item("receipt", "receipt:" + msg + ":bob@beta:6", List.of(b.pub()),
        List.of(CanonicalJson.canonicalBytes(extra))))).isEqualTo("rejected:bad receipt");
  }

  @Test
  void a_batch_that_is_not_an_array_or_is_too_long_is_400() throws Exception {
    Http.Resp notArray = a.post("/v2/relay/items", "{\"items\":{}}");
    assertThat(notArray.status()).isEqualTo(400);
    assertThat(notArray.error()).isEqualTo("batch must be an array of at most 200");
    StringBuilder big = new StringBuilder("{\"items\":[");
    for (int i = 0; i < 201; i++) {
      big.append(i == 0 ? "" : ",").append("{}");
    }
    assertThat(a.post("/v2/relay/items", big.append("]}").toString()).status()).isEqualTo(400);
  }

  @Test
  void malformed_json_wrong_types_and_huge_numbers_get_400_or_a_reject_never_500() throws Exception {
    long before = head();
    for (String body : new String[] {"", "{", "null", "[]", "\"x\"", "{\"items\":null}",
        "{\"items\":[null]}", "{\"items\":[1,\"x\",[]]}", "{\"items\":[{\"item_id\":1e999,\"kind\":\"envelope\"}]}",
        "{\"items\":[{\"item_id\":\"a\",\"kind\":\"envelope\",\"targets\":[null,5]}]}"}) {
      Http.Resp r = a.post("/v2/relay/items", body);
      assertThat(r.status()).as(body + " -> " + r.raw()).isIn(200, 400);
      assertThat(r.raw()).doesNotContain("Exception").doesNotContain("at io.");
    }
    for (String body : new String[] {"", "{", "{\"epoch\":{},\"through\":[1,2]}",
        "{\"epoch\":\"x\",\"through\":1e308}", "{\"through\":\"12abc\"}"}) {
      Http.Resp r = b.post("/v2/relay/ack", body);
      assertThat(r.status()).as(body + " -> " + r.raw()).isIn(400, 409);
    }
    Http.Resp hugeAfter = b.get("/v2/relay/items?after=1e400&limit=-5");
    assertThat(hugeAfter.status()).isEqualTo(200);
    assertThat(hugeAfter.json().get("items")).isEmpty();
    Http.Resp nanAfter = b.get("/v2/relay/items?after=abc&limit=abc");
    assertThat(nanAfter.status()).isEqualTo(200);
    assertThat(head()).isEqualTo(before);
  }

  @Test
  void a_bad_through_is_bad_ack_with_the_head() throws Exception {
    String epoch = relay.server.epoch();
    for (String through : new String[] {"-1", "\"x\"", "9007199254740993", "null1"}) {
      Http.Resp r = b.post("/v2/relay/ack", "{\"epoch\":\"" + epoch + "\",\"through\":" + through + "}");
      if (through.equals("null1")) {
        assertThat(r.status()).isEqualTo(400);
        continue;
      }
      assertThat(r.status()).as(through).isEqualTo(400);
      assertThat(r.json().get("code").asText()).as(through).isEqualTo("BAD_ACK");
    }
  }

  @Test
  void a_non_utf8_wire_inside_a_json_string_round_trips_byte_for_byte() throws Exception {
    String id = Envelopes.newId();
    String s = new String(Envelopes.sealed(id), StandardCharsets.UTF_8);
    int at = s.indexOf("\"subject\":\"") + 11;
    byte[] head = s.substring(0, at).getBytes(StandardCharsets.UTF_8);
    byte[] tail = s.substring(at).getBytes(StandardCharsets.UTF_8);
    byte[] wire = new byte[head.length + 2 + tail.length];
    System.arraycopy(head, 0, wire, 0, head.length);
    wire[head.length] = (byte) 0xC3; // truncated sequence
    wire[head.length + 1] = (byte) 0xFF; // never valid in UTF-8
    System.arraycopy(tail, 0, wire, head.length + 2, tail.length);
    assertThat(status(envelopeItem(id, wire))).isEqualTo("accepted");
    JsonNode items = b.pull(0, null, null).json().get("items");
    boolean found = false;
    for (JsonNode it : items) {
      if (it.get("item_id").asText().equals(id)) {
        assertThat(B64.decodeLenient(it.get("wire_b64").asText()).orElseThrow()).isEqualTo(wire);
        found = true;
      }
    }
    assertThat(found).isTrue();
  }

  private static String rawExchange(String request, byte[] body, int sendBytes) throws Exception {
    try (Socket s = new Socket("127.0.0.1", relay.server.port())) {
      s.setSoTimeout(10_000);
      OutputStream out = s.getOutputStream();
      out.write(request.getBytes(StandardCharsets.US_ASCII));
      if (body != null) {
        try {
          out.write(body, 0, sendBytes);
        } catch (java.io.IOException closedEarly) {
          // the server may close once it answered 413
        }
      }
      out.flush();
      InputStream in = s.getInputStream();
      byte[] buf = new byte[4096];
      int n = in.read(buf);
      return new String(buf, 0, Math.max(n, 0), StandardCharsets.US_ASCII);
    }
  }

  @Test
  void a_declared_length_over_the_cap_is_413_before_any_body_byte_is_sent() throws Exception {
    String resp = rawExchange("POST /v2/relay/items HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        + "Content-Length: 9000000\r\n\r\n", null, 0);
    assertThat(resp).startsWith("HTTP/1.1 413");
    assertThat(resp).endsWith("{\"error\":\"request body too large\"}");
    String small = rawExchange("POST /v1/relay/enrol HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        + "Content-Length: 8193\r\n\r\n", null, 0);
    assertThat(small).startsWith("HTTP/1.1 413");
  }

  @Test
  void a_chunked_body_that_overruns_the_cap_is_413_while_streaming() throws Exception {
    byte[] chunk = ("2000\r\n" + "x".repeat(0x2000) + "\r\n").getBytes(StandardCharsets.US_ASCII);
    // 2 chunks of 8 KiB overrun the 8 KiB enrol cap; the rest of a long body is never needed
    byte[] body = new byte[chunk.length * 2];
    System.arraycopy(chunk, 0, body, 0, chunk.length);
    System.arraycopy(chunk, 0, body, chunk.length, chunk.length);
    String resp = rawExchange("POST /v1/relay/challenge HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        + "Transfer-Encoding: chunked\r\n\r\n", body, body.length);
    assertThat(resp).startsWith("HTTP/1.1 413");
    assertThat(resp).contains("{\"error\":\"request body too large\"}");
  }
}
