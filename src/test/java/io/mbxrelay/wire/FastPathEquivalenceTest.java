package io.mbxrelay.wire;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.mbxrelay.crypto.HopText;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The hot-path shortcuts of issue 9 against the generic code they replace: each must give byte-identical results on
 * every input, including the awkward ones (invalid UTF-8, control characters, lone surrogates, BOMs, NUL bytes).
 */
class FastPathEquivalenceTest {
  private static final Random RANDOM = new Random(20261130);

  /** Bytes that are mostly JSON-ish text with every awkward byte class mixed in. */
  private static byte[] awkwardBytes(int n) {
    byte[] pool = "{}[]\":,\\ \t\n\r\b\f\u0001\u001f/azAZ09+=".getBytes(StandardCharsets.UTF_8);
    byte[] b = new byte[n];
    for (int i = 0; i < n; i++) {
      int k = RANDOM.nextInt(10);
      if (k < 6) {
        b[i] = pool[RANDOM.nextInt(pool.length)];
      } else if (k < 8) {
        String s = new String(Character.toChars(0x80 + RANDOM.nextInt(0x10FFFF - 0x80)));
        if (Character.isSurrogate(s.charAt(0)) && s.length() == 1) {
          s = "é";
        }
        byte[] u = s.getBytes(StandardCharsets.UTF_8);
        System.arraycopy(u, 0, b, i, Math.min(u.length, n - i));
        i += u.length - 1;
      } else {
        b[i] = (byte) RANDOM.nextInt(256); // often invalid UTF-8
      }
    }
    return b;
  }

  @Test
  void utf8_validity_agrees_with_the_node_decoder_on_random_and_crafted_bytes() {
    List<byte[]> inputs = new ArrayList<>();
    for (int i = 0; i < 20_000; i++) {
      inputs.add(awkwardBytes(RANDOM.nextInt(12)));
    }
    String[] crafted = {"c0 80", "e0 80 80", "ed a0 80", "ed 9f bf", "f0 8f bf bf", "f4 90 80 80", "f4 8f bf bf",
        "e2 82", "c2", "ef bb bf 7b 7d", "f0 9f 98 80", "80", "ff"};
    for (String c : crafted) {
      inputs.add(java.util.HexFormat.ofDelimiter(" ").parseHex(c));
    }
    for (byte[] b : inputs) {
      // valid ⇔ decoding adds no replacement character of its own ⇔ the text re-encodes to the same bytes
      boolean roundTrips = java.util.Arrays.equals(Utf8.decode(b).getBytes(StandardCharsets.UTF_8), b);
      assertThat(Utf8.isValid(b)).as(java.util.HexFormat.of().formatHex(b)).isEqualTo(roundTrips);
    }
  }

  @Test
  void signed_hop_bytes_equal_the_canonical_text_for_any_body() {
    for (int i = 0; i < 5_000; i++) {
      byte[] body = awkwardBytes(RANDOM.nextInt(200));
      String ts = Long.toString(1_764_000_000_000L + RANDOM.nextInt(1_000_000));
      String path = i % 2 == 0 ? "/v2/relay/items" : "/v2/relay/items?after=5&epoch=a%2Bb";
      byte[] expected = HopText.signedText("POST", path, ts, Utf8.decode(body)).getBytes(StandardCharsets.UTF_8);
      assertThat(HopText.signedBytes("POST", path, ts, body)).isEqualTo(expected);
    }
    assertThat(HopText.signedBytes("GET", "/v2/relay/info", "1759400000000", new byte[0]))
        .isEqualTo("{\"body\":\"GET:/v2/relay/info:1759400000000:\",\"method\":\"GET\",\"path\":\"/v2/relay/info\","
            .concat("\"ts\":\"1759400000000\"}").getBytes(StandardCharsets.UTF_8));
  }

  @Test
  void parsing_bytes_gives_the_same_tree_or_the_same_refusal_as_parsing_the_decoded_text() {
    List<byte[]> inputs = new ArrayList<>();
    for (int i = 0; i < 5_000; i++) {
      inputs.add(awkwardBytes(RANDOM.nextInt(40)));
    }
    for (String s : new String[] {"{\"a\":\"é\",\"b\":[1,2.5,-0,1e3]}", "\uFEFF{}", "{\"a\":1,\"a\":2}", "[]", "null",
        "\"x\"", "", " ", "{\"a\":\"\u0001\"}", "{} x", "{\"k\":\"\\ud800\"}"}) {
      inputs.add(s.getBytes(StandardCharsets.UTF_8));
    }
    inputs.add(new byte[] {0, 0, 0, '{', 0, 0, 0, '}'}); // UTF-32 to a sniffer, NUL bytes to Node
    inputs.add(new byte[] {'{', 0, '}', 0});
    inputs.add(new byte[] {(byte) 0xFE, (byte) 0xFF, 0, '{', 0, '}'});
    for (byte[] b : inputs) {
      JsonNode viaText;
      try {
        viaText = Json.parse(Utf8.decode(b));
      } catch (IllegalArgumentException e) {
        assertThatThrownBy(() -> Json.parse(b)).as(java.util.HexFormat.of().formatHex(b))
            .isInstanceOf(IllegalArgumentException.class);
        continue;
      }
      assertThat(Json.parse(b)).as(java.util.HexFormat.of().formatHex(b)).isEqualTo(viaText);
    }
  }

  @Test
  void the_base64_scan_matches_the_wire_regex() {
    Pattern wire = Pattern.compile("^[A-Za-z0-9+/]+={0,2}$");
    String alphabet = "ABCxyz019+/=-_ .\n\u00e9";
    for (int i = 0; i < 50_000; i++) {
      StringBuilder s = new StringBuilder();
      int n = RANDOM.nextInt(9);
      for (int k = 0; k < n; k++) {
        s.append(alphabet.charAt(RANDOM.nextInt(alphabet.length())));
      }
      assertThat(B64.isStdB64(s.toString())).as("'%s'", s).isEqualTo(wire.matcher(s).matches());
    }
    assertThat(B64.isStdB64("QUJD".repeat(100_000))).isTrue();
    assertThat(B64.isStdB64(null)).isFalse();
  }

  @Test
  void iso_times_are_written_like_string_format_on_both_sides_of_year_9999() {
    long[] edges = {0, -1, 1, 253_402_300_799_999L, 253_402_300_800_000L, -62_167_219_200_000L,
        -62_167_219_200_001L, 8_640_000_000_000_000L, -8_640_000_000_000_000L, 1_764_460_800_123L};
    for (long ms : edges) {
      assertThat(IsoTime.format(ms)).isEqualTo(reference(ms));
    }
    for (int i = 0; i < 20_000; i++) {
      long ms = RANDOM.nextLong() % 8_640_000_000_000_000L;
      assertThat(IsoTime.format(ms)).isEqualTo(reference(ms));
    }
  }

  private static String reference(long ms) {
    java.time.OffsetDateTime t = java.time.Instant.ofEpochMilli(ms).atOffset(java.time.ZoneOffset.UTC);
    int year = t.getYear();
    String y = year >= 0 && year <= 9999 ? String.format("%04d", year)
        : (year < 0 ? "-" : "+") + String.format("%06d", Math.abs(year));
    return String.format("%s-%02d-%02dT%02d:%02d:%02d.%03dZ", y, t.getMonthValue(), t.getDayOfMonth(), t.getHour(),
        t.getMinute(), t.getSecond(), t.getNano() / 1_000_000);
  }

  @Test
  void accept_receipts_are_byte_identical_to_the_generic_canonical_and_stringify_writers() {
    String[] ids = {"01ARZ3NDEKTSV4RRFFQ69G5FAV", "receipt:m:owner@h:1", "q\"uote\\back\u0001\u2028é😀", "\ud800x"};
    long[] seqs = {1, 1_764_460_800_123L, (1L << 53) + 1, -(1L << 60)};
    for (String id : ids) {
      for (long seq : seqs) {
        List<AcceptReceipt.Target> targets = List.of(new AcceptReceipt.Target("AAAA+/==", seq, "ab".repeat(32)),
            new AcceptReceipt.Target("t\"2", seq + 1, "cd".repeat(32)));
        AcceptReceipt r = new AcceptReceipt("relay+/=", "7c9e6679-7425-40de-944b-e07fc1f90ae7", "sender", id, targets,
            "2026-11-30T00:00:00.000Z");
        ObjectNode accept = Json.MAPPER.createObjectNode();
        accept.put("v", 1);
        accept.put("type", "relay-accept");
        accept.put("relay_pubkey", r.relayPubkey());
        accept.put("epoch", r.epoch());
        accept.put("sender_pubkey", r.senderPubkey());
        accept.put("item_id", id);
        ArrayNode ats = accept.putArray("targets");
        ObjectNode result = Json.MAPPER.createObjectNode();
        result.put("item_id", id);
        result.put("status", "duplicate");
        ArrayNode rts = result.putArray("targets");
        for (AcceptReceipt.Target t : targets) {
          ats.addObject().put("host_pubkey", t.hostPubkey()).put("seq", t.seq()).put("wire_hash", t.wireHash());
          rts.addObject().put("host_pubkey", t.hostPubkey()).put("seq", t.seq());
        }
        accept.put("at", r.at());
        result.set("accept", accept);
        result.put("sig", "c2ln");
        assertThat(r.canonicalBytes()).isEqualTo(CanonicalJson.canonicalBytes(accept));
        StringBuilder out = new StringBuilder();
        r.appendResult(false, "c2ln", out);
        assertThat(out.toString()).isEqualTo(Json.stringify(result));
        StringBuilder rejected = new StringBuilder();
        AcceptReceipt.appendRejected(id, "quota:queue depth exceeded for \"x\"", rejected);
        ObjectNode rej = Json.MAPPER.createObjectNode();
        rej.put("item_id", id);
        rej.put("status", "rejected:quota:queue depth exceeded for \"x\"");
        rej.putArray("targets");
        assertThat(rejected.toString()).isEqualTo(Json.stringify(rej));
      }
    }
  }

  @Test
  void the_accept_receipt_vector_is_reproduced_by_the_receipt_writer() throws Exception {
    JsonNode vectors;
    try (InputStream in = FastPathEquivalenceTest.class.getResourceAsStream("/vectors.json")) {
      vectors = Json.parse(in.readAllBytes());
    }
    int found = 0;
    for (JsonNode v : vectors.get("signatures")) {
      if (!v.get("what").textValue().startsWith("accept receipt")) {
        continue;
      }
      found++;
      JsonNode rec = v.get("record");
      List<AcceptReceipt.Target> targets = new ArrayList<>();
      for (JsonNode t : rec.get("targets")) {
        targets.add(new AcceptReceipt.Target(t.get("host_pubkey").textValue(), t.get("seq").longValue(),
            t.get("wire_hash").textValue()));
      }
      AcceptReceipt r = new AcceptReceipt(rec.get("relay_pubkey").textValue(), rec.get("epoch").textValue(),
          rec.get("sender_pubkey").textValue(), rec.get("item_id").textValue(), targets, rec.get("at").textValue());
      assertThat(new String(r.canonicalBytes(), StandardCharsets.UTF_8)).isEqualTo(v.get("signed_text").textValue());
    }
    assertThat(found).isEqualTo(1);
  }
}
