package io.mbxrelay.http;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.mbxrelay.crypto.Ed25519KeyPair;
import io.mbxrelay.testing.Http;
import io.mbxrelay.testing.RawHttp;
import io.mbxrelay.testing.RelayHarness;
import io.mbxrelay.testing.TestHost;
import io.mbxrelay.wire.CanonicalJson;
import io.mbxrelay.wire.Json;
import java.net.URI;
import java.nio.file.Path;
import java.time.Clock;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Error answers whose bytes the reference relay (AgentMBX 0.5.11) is known to send, compared byte for byte over real
 * HTTP (issue 12 items 10, 11, 12: found by running both relays side by side). The reference adds a {@code code}
 * member only to the errors of its enrolment core (and to the v2 ack's); the checks it makes before that core answer
 * {@code {"error":…}} alone.
 */
class ReferenceErrorBodiesTest {
  private static final String BAD_HOP = "{\"error\":\"bad relay hop\"}";

  private static Http.Resp post(RelayHarness r, String path, String body) throws Exception {
    return Http.send(r.url(), "POST", path, body);
  }

  private static String enrolBody(Ed25519KeyPair k, String host, String challenge) {
    ObjectNode rec = Json.MAPPER.createObjectNode().put("v", 1).put("challenge", challenge).put("host", host)
        .put("pubkey", k.publicKeyB64()).put("owner_fp", "");
    return Json.stringify(Json.MAPPER.createObjectNode().put("host", host).put("pubkey", k.publicKeyB64())
        .put("owner_fp", "").put("sig", k.signB64(CanonicalJson.canonicalBytes(rec))));
  }

  @Test
  void an_incomplete_enrolment_is_answered_without_a_code_member_like_the_reference(@TempDir Path dir)
      throws Exception {
    try (RelayHarness r = RelayHarness.start(dir)) {
      String pub = Ed25519KeyPair.generate().publicKeyB64();
      for (String body : List.of("{}", "{\"host\":\"a\",\"pubkey\":\"" + pub + "\",\"sig\":\"x\"}",
          "{\"host\":\"a\",\"pubkey\":\"" + pub + "\",\"owner_fp\":\"\",\"sig\":\"\"}",
          "{\"pubkey\":\"" + pub + "\",\"owner_fp\":\"\",\"sig\":\"x\"}")) {
        Http.Resp resp = post(r, "/v1/relay/enrol", body);
        assertThat(resp.status()).as(body).isEqualTo(400);
        assertThat(resp.raw()).as(body).isEqualTo("{\"error\":\"incomplete enrolment\"}");
      }
    }
  }

  @Test
  void enrolment_core_errors_keep_the_members_the_reference_sends(@TempDir Path dir) throws Exception {
    try (RelayHarness r = RelayHarness.start(dir)) {
      Ed25519KeyPair k = Ed25519KeyPair.generate();
      // the reference's enrolment core throws this one with its code, and the code is part of its answer
      Http.Resp fields = post(r, "/v1/relay/enrol",
          "{\"host\":\"a\",\"pubkey\":\"" + k.publicKeyB64() + "\",\"owner_fp\":\"has space\",\"sig\":\"x\"}");
      assertThat(fields.status()).isEqualTo(400);
      assertThat(fields.raw()).isEqualTo("{\"error\":\"bad enrolment fields\",\"code\":\"BAD_REQUEST\"}");
      // these two are plain errors there: no code
      Http.Resp none = post(r, "/v1/relay/enrol", enrolBody(k, "alpha", "AAAAAAAAAAAAAAAAAAAAAA"));
      assertThat(none.status()).isEqualTo(401);
      assertThat(none.raw()).isEqualTo("{\"error\":\"no pending enrolment challenge\"}");
      post(r, "/v1/relay/challenge", "{\"host\":\"alpha\",\"pubkey\":\"" + k.publicKeyB64() + "\"}");
      Http.Resp forged = post(r, "/v1/relay/enrol", enrolBody(k, "alpha", "AAAAAAAAAAAAAAAAAAAAAA"));
      assertThat(forged.status()).isEqualTo(401);
      assertThat(forged.raw()).isEqualTo("{\"error\":\"bad enrolment signature\"}");
      // challenge errors never carry a code
      assertThat(post(r, "/v1/relay/challenge", "{\"host\":\"-x\",\"pubkey\":\"" + k.publicKeyB64() + "\"}").raw())
          .isEqualTo("{\"error\":\"bad host name\"}");
    }
  }

  @Test
  void a_sig_that_is_not_a_string_fails_as_the_signature_not_as_the_fields_like_the_reference(@TempDir Path dir)
      throws Exception {
    // the reference's field check leaves sig out; a truthy non-string sig meets its challenge lookup and then
    // `typeof sig !== "string"` in the signature check
    try (RelayHarness r = RelayHarness.start(dir)) {
      Ed25519KeyPair k = Ed25519KeyPair.generate();
      String prefix = "{\"host\":\"alpha\",\"pubkey\":\"" + k.publicKeyB64() + "\",\"owner_fp\":\"\",\"sig\":";
      for (String sig : List.of("5", "true", "[1]", "{\"a\":1}")) {
        Http.Resp none = post(r, "/v1/relay/enrol", prefix + sig + "}");
        assertThat(none.status()).as(sig).isEqualTo(401);
        assertThat(none.raw()).as(sig).isEqualTo("{\"error\":\"no pending enrolment challenge\"}");
      }
      post(r, "/v1/relay/challenge", "{\"host\":\"alpha\",\"pubkey\":\"" + k.publicKeyB64() + "\"}");
      for (String sig : List.of("5", "true", "[1]", "{\"a\":1}")) {
        Http.Resp bad = post(r, "/v1/relay/enrol", prefix + sig + "}");
        assertThat(bad.status()).as(sig).isEqualTo(401);
        assertThat(bad.raw()).as(sig).isEqualTo("{\"error\":\"bad enrolment signature\"}");
      }
      // the challenge was not used up by those: a proper signature over it still enrols
      Http.Resp challenge = post(r, "/v1/relay/challenge",
          "{\"host\":\"alpha\",\"pubkey\":\"" + k.publicKeyB64() + "\"}");
      Http.Resp ok = post(r, "/v1/relay/enrol", enrolBody(k, "alpha", challenge.json().get("challenge").asText()));
      assertThat(ok.raw()).isEqualTo("{\"ok\":true}");
    }
  }

  @Test
  void the_enrolment_call_window_answers_the_reference_text(@TempDir Path dir) throws Exception {
    try (RelayHarness r = RelayHarness.start(dir, Map.of("MBX_RELAY_LIMITS_ENROL_CALLS_PER_MINUTE", "2"),
        Clock.systemUTC(), Ed25519KeyPair.generate())) {
      String pub = Ed25519KeyPair.generate().publicKeyB64();
      String body = "{\"host\":\"a\",\"pubkey\":\"" + pub + "\"}";
      assertThat(post(r, "/v1/relay/challenge", body).status()).isEqualTo(200);
      assertThat(post(r, "/v1/relay/enrol", "{}").status()).isEqualTo(400);
      // challenge, enrol and rotate share the window; each answers the same bytes over it
      for (String path : List.of("/v1/relay/challenge", "/v1/relay/enrol", "/v2/relay/rotate")) {
        Http.Resp limited = post(r, path, body);
        assertThat(limited.status()).as(path).isEqualTo(429);
        assertThat(limited.raw()).as(path).isEqualTo("{\"error\":\"too many enrolment calls; retry in a minute\"}");
      }
    }
  }

  @Test
  void info_with_a_trailing_slash_or_a_doubled_slash_is_401_bad_relay_hop_signed_or_not(@TempDir Path dir)
      throws Exception {
    try (RelayHarness r = RelayHarness.start(dir)) {
      TestHost a = new TestHost(r.url(), "alpha").enrol();
      int port = URI.create(r.url()).getPort();
      for (String path : List.of("/v2/relay/info/", "//v2/relay/info")) {
        RawHttp.Answer plain = RawHttp.exchange(port, "GET " + path + " HTTP/1.1\r\nHost: r\r\n\r\n", null, 5000);
        assertThat(plain.status()).as(path).isEqualTo(401);
        assertThat(plain.body()).as(path).isEqualTo(BAD_HOP);
        RawHttp.Answer signed = RawHttp.exchange(port, RawHttp.signedHead(a.key, a.pub(), "GET", path,
            System.currentTimeMillis(), new byte[0], -1), null, 5000);
        assertThat(signed.status()).as(path).isEqualTo(401);
        assertThat(signed.body()).as(path).isEqualTo(BAD_HOP);
      }
      // the normalised path is info, signed or not
      assertThat(Http.send(r.url(), "GET", "/v2/relay/info", null).status()).isEqualTo(200);
      assertThat(a.get("/v2/relay/info").json().get("you").get("pubkey").asText()).isEqualTo(a.pub());
    }
  }
}
