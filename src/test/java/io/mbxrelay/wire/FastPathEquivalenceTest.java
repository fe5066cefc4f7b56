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

  /** Well-formed UTF-8 with every character class that escaping treats differently, in long ASCII runs too. */
  private static byte[] wellFormedBytes(int n) {
    StringBuilder t = new StringBuilder();
    String special = "\"\\\b\f\n\r\t\u0001\u001f\u007f";
    while (t.length() < n) {
      int k = RANDOM.nextInt(10);
      if (k < 5) {
        int run = RANDOM.nextInt(40);
        for (int j = 0; j < run; j++) {
          t.append((char) ('A' + RANDOM.nextInt(26)));
        }
      } else if (k < 8) {
        t.append(special.charAt(RANDOM.nextInt(special.length())));
      } else {
        t.append(k == 8 ? "é" : "\uD83D\uDE00");
      }
    }
    return t.toString().getBytes(StandardCharsets.UTF_8);
  }

  @Test
  void utf8_validity_of_long_ascii_runs_with_an_odd_byte_anywhere_agrees_with_the_node_decoder() {
    for (int i = 0; i < 20_000; i++) {
      byte[] b = new byte[RANDOM.nextInt(64)];
      for (int j = 0; j < b.length; j++) {
        b[j] = (byte) (' ' + RANDOM.nextInt(90));
      }
      if (b.length > 0 && RANDOM.nextBoolean()) {
        b[RANDOM.nextInt(b.length)] = (byte) (0x80 + RANDOM.nextInt(128)); // where the eight-byte scan must stop
      }
      boolean roundTrips = java.util.Arrays.equals(Utf8.decode(b).getBytes(StandardCharsets.UTF_8), b);
      assertThat(Utf8.isValid(b)).as(java.util.HexFormat.of().formatHex(b)).isEqualTo(roundTrips);
    }
  }

  @Test
  void signed_hop_bytes_of_well_formed_bodies_equal_the_canonical_text() {
    for (int i = 0; i < 5_000; i++) {
      byte[] body = wellFormedBytes(RANDOM.nextInt(300));
      String ts = Long.toString(1_764_000_000_000L + RANDOM.nextInt(1_000_000));
      byte[] expected = HopText.signedText("POST", "/v2/relay/items", ts, Utf8.decode(body))
          .getBytes(StandardCharsets.UTF_8);
      assertThat(HopText.signedBytes("POST", "/v2/relay/items", ts, body)).isEqualTo(expected);
    }
  }

  @Test
  void base64_read_from_a_byte_range_checks_and_decodes_like_the_string_functions() {
    String alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    String junk = alphabet + "-_=. \n*é";
    int jdkDecoded = 0;
    for (int i = 0; i < 50_000; i++) {
      StringBuilder t = new StringBuilder();
      int n = RANDOM.nextInt(40);
      boolean wellFormed = RANDOM.nextInt(4) != 0;
      for (int j = 0; j < n; j++) {
        String pool = wellFormed ? alphabet : junk;
        t.append(pool.charAt(RANDOM.nextInt(pool.length())));
      }
      if (wellFormed) {
        t.append("==", 0, RANDOM.nextInt(3));
      }
      String text = t.toString();
      byte[] inner = text.getBytes(StandardCharsets.ISO_8859_1);
      if (!new String(inner, StandardCharsets.ISO_8859_1).equals(text)) {
        continue; // the byte form holds one byte per character only
      }
      byte[] buf = new byte[inner.length + 7];
      System.arraycopy(inner, 0, buf, 3, inner.length);
      boolean std = B64.isStdB64(text);
      assertThat(B64.isStdB64(buf, 3, inner.length)).as(text).isEqualTo(std);
      assertThat(B64.decodeLenient(buf, 3, inner.length)).as(text).isEqualTo(B64.decodeLenient(text).orElseThrow());
      byte[] viaJdk;
      try {
        viaJdk = B64.decodeStd(buf, 3, inner.length);
      } catch (IllegalArgumentException e) {
        viaJdk = null;
      }
      if (viaJdk != null && inner.length > 0 && inner.length % 4 == 0) {
        // what the push reader relies on: the JDK accepts only text the wire's check accepts, and decodes it alike
        assertThat(std).as(text).isTrue();
        assertThat(viaJdk).as(text).isEqualTo(B64.decodeLenient(text).orElseThrow());
        jdkDecoded++;
      }
    }
    assertThat(jdkDecoded).isGreaterThan(5_000);
  }

  /** A random push body, mostly as clients write it, sometimes with what only the tree reader reads. */
  private static String randomPushBody() {
    StringBuilder b = new StringBuilder();
    String ws = RANDOM.nextInt(5) == 0 ? " \n" : "";
    b.append('{').append(ws).append("\"items\"").append(ws).append(':').append(ws).append('[');
    int items = RANDOM.nextInt(4);
    for (int i = 0; i < items; i++) {
      if (i > 0) {
        b.append(',').append(ws);
      }
      int shape = RANDOM.nextInt(30);
      if (shape == 0) {
        b.append(RANDOM.nextBoolean() ? "null" : "[1,2]");
        continue;
      }
      List<String> members = new ArrayList<>();
      if (RANDOM.nextInt(8) != 0) {
        members.add("\"item_id\":" + randomStringValue());
      }
      if (RANDOM.nextInt(8) != 0) {
        members.add("\"kind\":" + (RANDOM.nextBoolean() ? "\"envelope\"" : randomStringValue()));
      }
      if (RANDOM.nextInt(8) != 0) {
        StringBuilder ts = new StringBuilder("\"targets\":");
        if (RANDOM.nextInt(10) == 0) {
          ts.append("{}");
        } else {
          ts.append('[');
          int n = RANDOM.nextInt(3);
          for (int k = 0; k < n; k++) {
            if (k > 0) {
              ts.append(',');
            }
            List<String> tm = new ArrayList<>();
            if (RANDOM.nextInt(6) != 0) {
              tm.add("\"host_pubkey\":" + randomStringValue());
            }
            if (RANDOM.nextInt(6) != 0) {
              tm.add("\"wire_b64\":" + (RANDOM.nextBoolean() ? "\"eyJ2IjozfQ==\"" : randomStringValue()));
            }
            if (RANDOM.nextInt(10) == 0) {
              tm.add("\"host_pubkey\":\"dup\"");
            }
            java.util.Collections.shuffle(tm, RANDOM);
            ts.append('{').append(String.join("," + ws, tm)).append('}');
          }
          ts.append(']');
        }
        members.add(ts.toString());
      }
      if (RANDOM.nextInt(10) == 0) {
        members.add("\"extra\":{\"a\":[true,false,null,1.5e3]}");
      }
      if (RANDOM.nextInt(10) == 0) {
        members.add("\"kind\":\"receipt\""); // a duplicate: the last one wins
      }
      java.util.Collections.shuffle(members, RANDOM);
      b.append('{').append(ws).append(String.join("," + ws, members)).append(ws).append('}');
    }
    b.append(']').append(ws).append('}');
    if (RANDOM.nextInt(20) == 0) {
      b.append("x"); // trailing junk: not JSON
    }
    return b.toString();
  }

  private static String randomStringValue() {
    return switch (RANDOM.nextInt(8)) {
      case 0 -> "42";
      case 1 -> "null";
      case 2 -> "\"with \\\"escape\\\"\"";
      case 3 -> "\"é\"";
      case 4 -> "\"\"";
      default -> "\"01JDQ7ZXK2" + RANDOM.nextInt(1000) + "\"";
    };
  }

  /** A comparable rendering of what a reader made of a body (wire texts by what they decode to). */
  private static String render(PushBody.Result r) {
    if (!(r instanceof PushBody.Items items)) {
      return r.getClass().getSimpleName();
    }
    if (items.items() == null) {
      return "items: not an array";
    }
    StringBuilder out = new StringBuilder();
    for (PushBody.Item it : items.items()) {
      out.append('[').append(it.itemId()).append('|').append(it.kind()).append('|');
      if (it.targets() == null) {
        out.append("no targets");
      } else {
        for (PushBody.Target t : it.targets()) {
          out.append('(').append(t.keyAsSent()).append(',')
              .append(t.wire() == null ? "no wire" : t.wire().decode().map(java.util.HexFormat.of()::formatHex)
                  .orElse("bad wire"))
              .append(')');
        }
      }
      out.append(']');
    }
    return out.toString();
  }

  @Test
  void the_direct_push_body_reader_reads_what_the_json_tree_reads() {
    int direct = 0;
    for (int i = 0; i < 20_000; i++) {
      byte[] body = randomPushBody().getBytes(StandardCharsets.UTF_8);
      PushBody.Result viaTree;
      try {
        JsonNode n = Json.parse(body);
        viaTree = n.isNull() ? new PushBody.NotObject()
            : new PushBody.Items(PushBody.fromTree(n.isObject() ? n.get("items") : null));
      } catch (IllegalArgumentException e) {
        viaTree = new PushBody.NotJson();
      }
      assertThat(render(PushBody.parse(body))).as(new String(body, StandardCharsets.UTF_8)).isEqualTo(render(viaTree));
      if (PushBody.directlyReadable(body)) {
        direct++;
      }
    }
    assertThat(direct).as("bodies the direct reader took itself").isGreaterThan(2_000);
  }
}
