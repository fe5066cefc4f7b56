package io.mbxrelay.wire;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;

class EnvelopeCheckTest {

  static final String ID = "01KB0000000000000000000000";

  /** A valid sealed v3 envelope as the reference client puts it on the wire. */
  static ObjectNode sealed() {
    return (ObjectNode)
        Json.parse(
            "{\"v\":3,\"id\":\"" + ID + "\",\"ts\":\"2026-11-29T12:00:00.000Z\",\"from\":\"alice@alpha\","
                + "\"to\":[\"bob@beta\"],\"thread\":\"" + ID + "\",\"reply_to\":null,\"kind\":\"message\","
                + "\"subject\":\"hello\",\"body\":\"Y2lwaGVy\",\"needs_reply\":false,\"refs\":[],"
                + "\"meta\":{\"mentions\":[],\"directives\":[],\"tags\":[],\"task_refs\":[]},"
                + "\"authority\":null,"
                + "\"enc\":{\"v\":1,\"alg\":\"x25519+xchacha20poly1305\",\"epk\":\"" + B64.encode(new byte[32])
                + "\",\"nonce\":\"" + B64.encode(new byte[24]) + "\",\"body\":\"Y2lwaGVy\"},"
                + "\"sig\":{\"alg\":\"ed25519\",\"host\":\"alpha\",\"key\":\"3475-0f98-bd59-fcfc\",\"value\":\"x\"}}");
  }

  private static String reasonAfter(Consumer<ObjectNode> change) {
    ObjectNode e = sealed();
    change.accept(e);
    return EnvelopeCheck.check(e).orElse("valid");
  }

  @Test
  void a_valid_sealed_envelope_passes() {
    assertThat(EnvelopeCheck.check(sealed())).isEmpty();
  }

  @Test
  void a_valid_plaintext_envelope_passes_the_shape_check() {
    assertThat(reasonAfter(e -> e.putNull("enc"))).isEqualTo("valid");
  }

  @Test
  void something_that_is_not_an_object_is_refused() {
    assertThat(EnvelopeCheck.check(Json.parse("\"x\""))).contains("not an object");
    assertThat(EnvelopeCheck.check(Json.parse("null"))).contains("not an object");
    assertThat(EnvelopeCheck.check(null)).contains("not an object");
    // JS typeof [] is "object": an array fails on the version, as in the reference
    assertThat(EnvelopeCheck.check(Json.parse("[]"))).contains("unsupported version");
  }

  @Test
  void the_version_must_be_3() {
    assertThat(reasonAfter(e -> e.put("v", 2))).isEqualTo("unsupported version");
    assertThat(reasonAfter(e -> e.put("v", "3"))).isEqualTo("unsupported version");
    assertThat(reasonAfter(e -> e.put("v", 3.0))).isEqualTo("valid");
  }

  @Test
  void the_id_must_be_a_ulid() {
    assertThat(reasonAfter(e -> e.put("id", "01kb0000000000000000000000"))).isEqualTo("bad id");
    assertThat(reasonAfter(e -> e.put("id", "01KB000000000000000000000I"))).isEqualTo("bad id");
    assertThat(reasonAfter(e -> e.remove("id"))).isEqualTo("bad id");
  }

  @Test
  void from_must_be_an_address_of_at_most_300_characters() {
    assertThat(reasonAfter(e -> e.put("from", "alice"))).isEqualTo("bad from");
    assertThat(reasonAfter(e -> e.put("from", "a@" + "h".repeat(299)))).isEqualTo("from over 300 characters");
  }

  @Test
  void to_must_be_a_non_empty_list_of_short_strings() {
    assertThat(reasonAfter(e -> e.putArray("to"))).isEqualTo("bad to");
    assertThat(reasonAfter(e -> e.putArray("to").add(1))).isEqualTo("bad to");
    assertThat(reasonAfter(e -> e.put("to", "bob@beta"))).isEqualTo("bad to");
    assertThat(reasonAfter(e -> {
      ArrayNode to = e.putArray("to");
      for (int i = 0; i < 101; i++) {
        to.add("b" + i + "@beta");
      }
    })).isEqualTo("more than 100 recipients");
    assertThat(reasonAfter(e -> e.putArray("to").add("x".repeat(301)))).isEqualTo("recipient over 300 characters");
  }

  @Test
  void the_kind_must_be_known() {
    assertThat(reasonAfter(e -> e.put("kind", "memo"))).isEqualTo("bad kind");
    assertThat(reasonAfter(e -> e.remove("kind"))).isEqualTo("bad kind");
  }

  @Test
  void enc_must_be_present() {
    assertThat(reasonAfter(e -> e.remove("enc"))).isEqualTo("bad enc");
    assertThat(reasonAfter(e -> e.put("enc", "sealed"))).isEqualTo("bad enc");
  }

  @Test
  void the_body_is_capped_in_utf8_bytes_by_whether_it_is_sealed() {
    assertThat(reasonAfter(e -> e.put("body", 1))).isEqualTo("bad body");
    assertThat(reasonAfter(e -> e.put("body", "x".repeat(349_549)))).isEqualTo("body over 349548 bytes");
    assertThat(reasonAfter(e -> e.put("body", "x".repeat(349_548)))).isEqualTo("valid");
    assertThat(reasonAfter(e -> {
      e.putNull("enc");
      e.put("body", "é".repeat(131_073)); // 262,146 bytes but 131,073 UTF-16 units
    })).isEqualTo("body over 262144 bytes");
    assertThat(reasonAfter(e -> {
      e.putNull("enc");
      e.put("body", "\uD800".repeat(87_382)); // lone surrogates count 3 bytes each: 262,146
    })).isEqualTo("body over 262144 bytes");
  }

  @Test
  void the_subject_must_be_a_short_single_line() {
    assertThat(reasonAfter(e -> e.putNull("subject"))).isEqualTo("bad subject");
    assertThat(reasonAfter(e -> e.put("subject", "s".repeat(201)))).isEqualTo("subject over 200 characters");
    for (String bad : new String[] {"a\nb", "a\rb", "\u0000", "\u007f", "\u0085", "x\u2028", "\u2029", "\t"}) {
      assertThat(reasonAfter(e -> e.put("subject", bad))).isEqualTo("subject contains control characters");
    }
    assertThat(reasonAfter(e -> e.put("subject", "ünïcödé 😀"))).isEqualTo("valid");
  }

  @Test
  void ts_thread_reply_to_needs_reply_and_refs_are_checked_in_order() {
    assertThat(reasonAfter(e -> e.put("ts", "yesterday"))).isEqualTo("bad ts");
    assertThat(reasonAfter(e -> e.put("ts", 1764400000000L))).isEqualTo("bad ts");
    assertThat(reasonAfter(e -> e.put("thread", "t".repeat(301)))).isEqualTo("bad thread");
    assertThat(reasonAfter(e -> e.remove("reply_to"))).isEqualTo("bad reply_to");
    assertThat(reasonAfter(e -> e.put("reply_to", 7))).isEqualTo("bad reply_to");
    assertThat(reasonAfter(e -> e.put("reply_to", ID))).isEqualTo("valid");
    assertThat(reasonAfter(e -> e.put("needs_reply", "false"))).isEqualTo("bad needs_reply");
    assertThat(reasonAfter(e -> e.putArray("refs").add(true))).isEqualTo("bad refs");
    assertThat(reasonAfter(e -> e.putArray("refs").add("r".repeat(2049))))
        .isEqualTo("more than 100 refs or a ref over 2048 characters");
  }

  @Test
  void a_sealed_body_needs_the_known_algorithm_and_key_sizes() {
    assertThat(reasonAfter(e -> ((ObjectNode) e.get("enc")).put("v", 2))).isEqualTo("unsupported enc version");
    assertThat(reasonAfter(e -> e.putArray("enc"))).isEqualTo("unsupported enc version");
    assertThat(reasonAfter(e -> ((ObjectNode) e.get("enc")).put("alg", "aes")))
        .isEqualTo("unsupported enc algorithm");
    assertThat(reasonAfter(e -> ((ObjectNode) e.get("enc")).put("epk", B64.encode(new byte[31]))))
        .isEqualTo("bad enc epk");
    assertThat(reasonAfter(e -> ((ObjectNode) e.get("enc")).put("nonce", B64.encode(new byte[12]))))
        .isEqualTo("bad enc nonce");
    assertThat(reasonAfter(e -> ((ObjectNode) e.get("enc")).put("body", ""))).isEqualTo("bad enc body");
    assertThat(reasonAfter(e -> ((ObjectNode) e.get("enc")).put("body", "x".repeat(349_549))))
        .isEqualTo("sealed body over 349548 bytes");
    // lenient decode as in Node: url alphabet and no padding still count as 32 bytes
    assertThat(reasonAfter(e -> ((ObjectNode) e.get("enc")).put("epk", B64.base64UrlNoPad(new byte[32]))))
        .isEqualTo("valid");
  }

  @Test
  void authority_is_null_or_an_owner_signature_or_a_grant() {
    assertThat(reasonAfter(e -> e.remove("authority"))).isEqualTo("bad authority");
    assertThat(reasonAfter(e -> e.putArray("authority"))).isEqualTo("bad authority");
    assertThat(reasonAfter(e -> e.putObject("authority").put("owner_sig", "s").put("owner_fp", "f")))
        .isEqualTo("valid");
    assertThat(reasonAfter(e -> e.putObject("authority").put("owner_sig", "s")))
        .isEqualTo("bad owner authority");
    assertThat(reasonAfter(e -> e.putObject("authority").put("session_sig", "s")))
        .isEqualTo("bad grant authority");
    assertThat(reasonAfter(e -> {
      ObjectNode a = e.putObject("authority").put("session_sig", "s");
      grant(a.putObject("grant"));
    })).isEqualTo("valid");
    assertThat(reasonAfter(e -> {
      ObjectNode a = e.putObject("authority").put("session_sig", "s");
      grant(a.putObject("grant")).put("agent", 5);
    })).isEqualTo("bad grant.agent");
    assertThat(reasonAfter(e -> {
      ObjectNode a = e.putObject("authority").put("session_sig", "s");
      grant(a.putObject("grant")).putArray("caps").add(1);
    })).isEqualTo("bad grant.caps");
  }

  private static ObjectNode grant(ObjectNode g) {
    g.put("v", 2);
    for (String f : new String[] {"id", "iss", "sub", "agent", "host", "iat", "exp", "nonce", "sig"}) {
      g.put(f, f);
    }
    g.putArray("caps").add("decision");
    return g;
  }

  @Test
  void meta_lists_and_optional_fields_are_checked() {
    assertThat(reasonAfter(e -> e.remove("meta"))).isEqualTo("bad meta");
    assertThat(reasonAfter(e -> ((ObjectNode) e.get("meta")).remove("tags"))).isEqualTo("bad meta.tags");
    assertThat(reasonAfter(e -> ((ObjectNode) e.get("meta")).put("sender_verification", "trusted")))
        .isEqualTo("bad sender verification");
    assertThat(reasonAfter(e -> ((ObjectNode) e.get("meta")).put("hop", 1001))).isEqualTo("bad hop");
    assertThat(reasonAfter(e -> ((ObjectNode) e.get("meta")).put("hop", 1.5))).isEqualTo("bad hop");
    assertThat(reasonAfter(e -> ((ObjectNode) e.get("meta")).put("hop", 1000.0))).isEqualTo("valid");
    assertThat(reasonAfter(e -> ((ObjectNode) e.get("meta")).put("origin", "web"))).isEqualTo("bad origin");
    assertThat(reasonAfter(e -> ((ObjectNode) e.get("meta")).put("project", "p".repeat(301))))
        .isEqualTo("bad project");
    assertThat(reasonAfter(e -> ((ObjectNode) e.get("meta")).putNull("project_key"))).isEqualTo("bad project key");
    assertThat(reasonAfter(e -> ((ObjectNode) e.get("meta")).putArray("local_names").add("Bob")))
        .isEqualTo("bad local names");
    assertThat(reasonAfter(e -> ((ObjectNode) e.get("meta")).putArray("local_names").add("bob")))
        .isEqualTo("valid");
  }

  @Test
  void the_first_failure_wins() {
    JsonNode e = sealed().put("id", "nope").put("kind", "nope").put("subject", "\n");
    assertThat(EnvelopeCheck.check(e)).contains("bad id");
  }
}
