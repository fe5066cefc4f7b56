package io.mbxrelay.http;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.mbxrelay.crypto.Ed25519KeyPair;
import io.mbxrelay.testing.Http;
import io.mbxrelay.testing.RelayHarness;
import io.mbxrelay.testing.TestHost;
import io.mbxrelay.wire.CanonicalJson;
import io.mbxrelay.wire.Json;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Challenge and enrolment with the host-key challenge authority (docs/protocol.md §4.1; enrolment bounds). */
class EnrolmentCallsTest {

  private static Http.Resp post(RelayHarness r, String path, String body) throws Exception {
    return Http.send(r.url(), "POST", path, body);
  }

  private static String challenge(RelayHarness r, String host, String pub) throws Exception {
    Http.Resp c = post(r, "/v1/relay/challenge", "{\"host\":\"" + host + "\",\"pubkey\":\"" + pub + "\"}");
    assertThat(c.status()).as(c.raw()).isEqualTo(200);
    return c.json().get("challenge").asText();
  }

  private static String enrolBody(Ed25519KeyPair k, String host, String challenge, String ownerFp) {
    ObjectNode rec = Json.MAPPER.createObjectNode().put("v", 1).put("challenge", challenge).put("host", host)
        .put("pubkey", k.publicKeyB64()).put("owner_fp", ownerFp);
    return Json.stringify(Json.MAPPER.createObjectNode().put("host", host).put("pubkey", k.publicKeyB64())
        .put("owner_fp", ownerFp).put("sig", k.signB64(CanonicalJson.canonicalBytes(rec))));
  }

  @Test
  void challenge_input_errors_have_the_exact_texts(@TempDir Path dir) throws Exception {
    try (RelayHarness r = RelayHarness.start(dir)) {
      String pub = Ed25519KeyPair.generate().publicKeyB64();
      assertThat(post(r, "/v1/relay/challenge", "{\"host\":\"a\"}").raw())
          .isEqualTo("{\"error\":\"host and pubkey required\"}");
      assertThat(post(r, "/v1/relay/challenge", "{\"host\":\"-bad\",\"pubkey\":\"" + pub + "\"}").raw())
          .isEqualTo("{\"error\":\"bad host name\"}");
      assertThat(post(r, "/v1/relay/challenge", "{\"host\":\"ok\",\"pubkey\":\"AAAA\"}").raw())
          .isEqualTo("{\"error\":\"bad host key\"}");
      Http.Resp c = post(r, "/v1/relay/challenge", "{\"host\":\"ok\",\"pubkey\":\"" + pub + "\"}");
      assertThat(c.status()).isEqualTo(200);
      assertThat(c.json().get("challenge").asText()).matches("[A-Za-z0-9_-]{22}");
    }
  }

  @Test
  void enrolment_needs_the_pending_challenge_signed_by_the_key(@TempDir Path dir) throws Exception {
    try (RelayHarness r = RelayHarness.start(dir)) {
      Ed25519KeyPair k = Ed25519KeyPair.generate();
      Ed25519KeyPair other = Ed25519KeyPair.generate();
      Http.Resp none = post(r, "/v1/relay/enrol", enrolBody(k, "alpha", "AAAAAAAAAAAAAAAAAAAAAA", ""));
      assertThat(none.status()).isEqualTo(401);
      assertThat(none.error()).isEqualTo("no pending enrolment challenge");

      String ch = challenge(r, "alpha", k.publicKeyB64());
      ObjectNode forged = (ObjectNode) Json.parse(enrolBody(k, "alpha", ch, ""));
      forged.put("sig", Json.parse(enrolBody(other, "alpha", ch, "")).get("sig").asText());
      Http.Resp bad = post(r, "/v1/relay/enrol", Json.stringify(forged));
      assertThat(bad.status()).isEqualTo(401);
      assertThat(bad.error()).isEqualTo("bad enrolment signature");

      Http.Resp ok = post(r, "/v1/relay/enrol", enrolBody(k, "alpha", ch, ""));
      assertThat(ok.status()).isEqualTo(200);
      assertThat(ok.raw()).isEqualTo("{\"ok\":true}");
      // the challenge is consumed
      Http.Resp replay = post(r, "/v1/relay/enrol", enrolBody(k, "alpha", ch, ""));
      assertThat(replay.error()).isEqualTo("no pending enrolment challenge");
      // re-enrolment is idempotent
      assertThat(post(r, "/v1/relay/enrol", enrolBody(k, "alpha2", challenge(r, "alpha2", k.publicKeyB64()), ""))
          .status()).isEqualTo(200);
      assertThat(new TestHost(r.url(), "alpha2", k).get("/v2/relay/info").json().get("you").get("host").asText())
          .isEqualTo("alpha2");
    }
  }

  @Test
  void incomplete_and_malformed_enrolments_are_400_with_their_texts(@TempDir Path dir) throws Exception {
    try (RelayHarness r = RelayHarness.start(dir)) {
      Ed25519KeyPair k = Ed25519KeyPair.generate();
      String pub = k.publicKeyB64();
      Http.Resp missingOwner = post(r, "/v1/relay/enrol", "{\"host\":\"a\",\"pubkey\":\"" + pub + "\",\"sig\":\"x\"}");
      assertThat(missingOwner.status()).isEqualTo(400);
      assertThat(missingOwner.error()).isEqualTo("incomplete enrolment");
      Http.Resp emptySig = post(r, "/v1/relay/enrol",
          "{\"host\":\"a\",\"pubkey\":\"" + pub + "\",\"owner_fp\":\"\",\"sig\":\"\"}");
      assertThat(emptySig.error()).isEqualTo("incomplete enrolment");
      Http.Resp badOwner = post(r, "/v1/relay/enrol",
          "{\"host\":\"a\",\"pubkey\":\"" + pub + "\",\"owner_fp\":\"has space\",\"sig\":\"x\"}");
      assertThat(badOwner.status()).isEqualTo(400);
      assertThat(badOwner.error()).isEqualTo("bad enrolment fields");
      assertThat(badOwner.json().get("code").asText()).isEqualTo("BAD_REQUEST");
      Http.Resp badKey = post(r, "/v1/relay/enrol",
          "{\"host\":\"a\",\"pubkey\":\"AAAA\",\"owner_fp\":\"\",\"sig\":\"x\"}");
      assertThat(badKey.error()).isEqualTo("bad enrolment fields");
    }
  }

  @Test
  void enrolment_calls_share_a_per_address_window_of_30_a_minute(@TempDir Path dir) throws Exception {
    try (RelayHarness r = RelayHarness.start(dir, Map.of("MBX_RELAY_LIMITS_ENROL_CALLS_PER_MINUTE", "30"),
        java.time.Clock.systemUTC(), Ed25519KeyPair.generate())) {
      String pub = Ed25519KeyPair.generate().publicKeyB64();
      for (int i = 0; i < 15; i++) {
        assertThat(post(r, "/v1/relay/challenge", "{\"host\":\"a\",\"pubkey\":\"" + pub + "\"}").status()).isEqualTo(200);
        assertThat(post(r, "/v1/relay/enrol", "{}").status()).isEqualTo(400);
      }
      Http.Resp limited = post(r, "/v1/relay/challenge", "{\"host\":\"a\",\"pubkey\":\"" + pub + "\"}");
      assertThat(limited.status()).isEqualTo(429);
      // the window is per client address and only for the unsigned enrolment calls
      assertThat(Http.send(r.url(), "GET", "/v2/relay/info", null).status()).isEqualTo(200);
    }
  }

  @Test
  void open_challenges_are_capped_by_shedding_the_oldest_and_a_key_asking_again_gets_its_open_one(@TempDir Path dir)
      throws Exception {
    try (RelayHarness r = RelayHarness.start(dir, Map.of("MBX_RELAY_LIMITS_MAX_OPEN_CHALLENGES", "3"),
        java.time.Clock.systemUTC(), Ed25519KeyPair.generate())) {
      String[] keys = new String[4];
      String[] nonces = new String[4];
      for (int i = 0; i < 4; i++) {
        keys[i] = Ed25519KeyPair.generate().publicKeyB64();
      }
      for (int i = 0; i < 3; i++) {
        nonces[i] = challenge(r, "h" + i, keys[i]);
      }
      // issue 11 item 6: a full table sheds its oldest challenge (h0's) instead of answering 503 BUSY to new keys
      nonces[3] = challenge(r, "h3", keys[3]);
      // issue 11 item 5: a key with an open challenge gets the same nonce again
      assertThat(challenge(r, "h3", keys[3])).isEqualTo(nonces[3]);
      assertThat(challenge(r, "h1", keys[1])).isEqualTo(nonces[1]);
      assertThat(challenge(r, "h0", keys[0])).as("h0's was shed: a new one").isNotEqualTo(nonces[0]);
    }
  }
}
