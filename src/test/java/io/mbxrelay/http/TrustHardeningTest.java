package io.mbxrelay.http;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.mbxrelay.auth.ClientAddress;
import io.mbxrelay.crypto.Ed25519KeyPair;
import io.mbxrelay.testing.Envelopes;
import io.mbxrelay.testing.Http;
import io.mbxrelay.testing.MutableClock;
import io.mbxrelay.testing.RelayHarness;
import io.mbxrelay.testing.TestHost;
import io.mbxrelay.wire.B64;
import io.mbxrelay.wire.CanonicalJson;
import io.mbxrelay.wire.IsoTime;
import io.mbxrelay.wire.Json;
import io.mbxrelay.wire.KeySpelling;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Clock;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Regression tests for issue 11 items 3, 4 (trust routes), 5, 6 and 13, over real HTTP against a real relay. Each
 * test names the attack it reproduces; each failed on the code before the fix (docs/security.md).
 */
class TrustHardeningTest {
  private static final String ADMIN = "admin-token-0123456789abcdef0123456789";
  private static final long DAY = 86_400_000L;

  private static RelayHarness relay(Path dir) throws Exception {
    return RelayHarness.start(dir, Map.of("MBX_RELAY_ADMIN_TOKEN", ADMIN), Clock.systemUTC(),
        Ed25519KeyPair.generate());
  }

  /** Another of the 4 base64 spellings of the same 32 key bytes (docs/protocol.md §1: 2 unused bits in the last character). */
  private static String otherSpelling(String pub) {
    String alt = KeySpelling.spellings(pub).get(3);
    assertThat(alt).isNotEqualTo(pub);
    assertThat(B64.isPubkey(alt)).isTrue();
    assertThat(B64.decodeLenient(alt).orElseThrow()).isEqualTo(B64.decodeLenient(pub).orElseThrow());
    return alt;
  }

  private static String q(String s) {
    return URLEncoder.encode(s, StandardCharsets.UTF_8);
  }

  private static ObjectNode ad(TestHost h, Ed25519KeyPair encKey, long iatMs, long expMs) {
    return Json.MAPPER.createObjectNode().put("v", 2).put("type", "enc-ad").put("host", h.name)
        .put("host_pubkey", h.pub()).put("enc_pub", encKey.publicKeyB64()).put("iat", IsoTime.format(iatMs))
        .put("exp", IsoTime.format(expMs));
  }

  private static Http.Resp postAd(TestHost h, ObjectNode ad, Ed25519KeyPair signer) throws Exception {
    ObjectNode body = Json.MAPPER.createObjectNode();
    body.set("ad", ad);
    body.put("sig", signer.signB64(CanonicalJson.canonicalBytes(ad)));
    return h.post("/v2/relay/enc-key", Json.stringify(body));
  }

  // ---- item 3 and 4: rotation, revocation and the deny list ----

  private static ObjectNode rotation(String host, String oldPub, String newPub, Ed25519KeyPair oldSigner,
      Ed25519KeyPair newSigner) {
    ObjectNode rec = Json.MAPPER.createObjectNode().put("v", 1).put("type", "host-rotation").put("host", host)
        .put("old_pub", oldPub).put("new_pub", newPub).put("new_enc_pub", B64.encode(new byte[32]))
        .put("iat", IsoTime.format(System.currentTimeMillis()));
    byte[] c = CanonicalJson.canonicalBytes(rec);
    ObjectNode rot = Json.MAPPER.createObjectNode();
    rot.set("rec", rec);
    rot.put("old_sig", oldSigner.signB64(c));
    rot.put("new_sig", newSigner.signB64(c));
    ObjectNode body = Json.MAPPER.createObjectNode();
    body.set("rotation", rot);
    return body;
  }

  private static Http.Resp rotate(RelayHarness r, ObjectNode body) throws Exception {
    return Http.send(r.url(), "POST", "/v2/relay/rotate", Json.stringify(body));
  }

  /** A signed v2 pull naming the caller by the given key string. */
  private static Http.Resp pullAs(RelayHarness r, Ed25519KeyPair signer, String keyField) throws Exception {
    String ts = Long.toString(System.currentTimeMillis());
    return Http.send(r.url(), "GET", "/v2/relay/items?after=0", null, keyField, null, ts,
        Http.sign(signer, "GET", "/v2/relay/items?after=0", ts, null));
  }

  @Test
  void a_deny_listed_key_that_never_enrolled_cannot_go_live_by_rotating_an_enrolment_onto_it(@TempDir Path dir)
      throws Exception {
    try (RelayHarness r = relay(dir)) {
      TestHost desk = new TestHost(r.url(), "desk").enrol();
      Ed25519KeyPair stolen = Ed25519KeyPair.generate();
      Http.Resp added = Http.sendHeaders(r.url(), "POST", "/admin/deny",
          "{\"kind\":\"host_fp\",\"value\":\"" + stolen.fingerprint() + "\"}", Map.of("authorization", "Bearer " + ADMIN));
      assertThat(added.json().get("revoked").asInt()).isZero();

      Http.Resp rot = rotate(r, rotation("desk", desk.pub(), stolen.publicKeyB64(), desk.key, stolen));
      assertThat(rot.status()).isEqualTo(409);
      assertThat(rot.raw()).isEqualTo("{\"error\":\"the new key was revoked here\"}");
      assertThat(pullAs(r, stolen, stolen.publicKeyB64()).raw()).isEqualTo("{\"error\":\"bad relay hop\"}");
      // nothing happened to the rotating host
      assertThat(desk.get("/v2/relay/items?after=0").status()).isEqualTo(200);
    }
  }

  @Test
  void a_revoked_key_cannot_come_back_by_a_rotation_onto_another_spelling_of_itself(@TempDir Path dir)
      throws Exception {
    try (RelayHarness r = relay(dir)) {
      TestHost desk = new TestHost(r.url(), "desk").enrol();
      Ed25519KeyPair next = Ed25519KeyPair.generate();
      assertThat(rotate(r, rotation("desk", desk.pub(), next.publicKeyB64(), desk.key, next)).raw())
          .isEqualTo("{\"moved\":0}");
      assertThat(desk.get("/v2/relay/items?after=0").status()).isEqualTo(401); // revoked by the rotation

      TestHost spare = new TestHost(r.url(), "spare").enrol();
      String revokedAlt = otherSpelling(desk.pub());
      Http.Resp back = rotate(r, rotation("spare", spare.pub(), revokedAlt, spare.key, desk.key));
      assertThat(back.status()).isEqualTo(409);
      assertThat(back.raw()).isEqualTo("{\"error\":\"the new key was revoked here\"}");
      assertThat(pullAs(r, desk.key, revokedAlt).raw()).isEqualTo("{\"error\":\"bad relay hop\"}");
      assertThat(spare.get("/v2/relay/items?after=0").status()).isEqualTo(200);
    }
  }

  @Test
  void a_rotation_onto_another_spelling_of_the_same_key_keeps_the_same_host_key(@TempDir Path dir) throws Exception {
    try (RelayHarness r = relay(dir)) {
      TestHost desk = new TestHost(r.url(), "desk").enrol();
      Http.Resp same = rotate(r, rotation("desk", desk.pub(), otherSpelling(desk.pub()), desk.key, desk.key));
      assertThat(same.status()).isEqualTo(400);
      assertThat(same.raw()).isEqualTo("{\"error\":\"rotation keeps the same host key\"}");
      assertThat(desk.get("/v2/relay/items?after=0").status()).isEqualTo(200);
    }
  }

  @Test
  void an_allowlist_entry_and_an_ad_lookup_name_a_key_whatever_its_spelling(@TempDir Path dir) throws Exception {
    try (RelayHarness r = relay(dir)) {
      TestHost target = new TestHost(r.url(), "target").enrol();
      TestHost friend = new TestHost(r.url(), "friend").enrol();
      long now = System.currentTimeMillis();
      ObjectNode list = Json.MAPPER.createObjectNode().put("v", 1).put("type", "relay-senders")
          .put("host_pubkey", target.pub());
      list.putArray("senders").add(otherSpelling(friend.pub()));
      list.put("iat", IsoTime.format(now));
      ObjectNode body = Json.MAPPER.createObjectNode();
      body.set("list", list);
      body.put("sig", target.key.signB64(CanonicalJson.canonicalBytes(list)));
      assertThat(target.post("/v2/relay/senders", Json.stringify(body)).raw()).isEqualTo("{\"ok\":true}");
      String id = Envelopes.newId();
      assertThat(friend.pushEnvelope(target, id, Envelopes.sealed(id)).json().at("/results/0/status").asText())
          .isEqualTo("accepted");

      Ed25519KeyPair x = Ed25519KeyPair.generate();
      assertThat(postAd(friend, ad(friend, x, now, now + 30 * DAY), friend.key).raw()).isEqualTo("{\"ok\":true}");
      Http.Resp byAlt = target.get("/v2/relay/enc-key?pubkey=" + q(otherSpelling(friend.pub())));
      assertThat(byAlt.status()).isEqualTo(200);
      assertThat(byAlt.json().get("host_pubkey").asText()).isEqualTo(friend.pub());
    }
  }

  // ---- item 5: a third party cannot replace a pending challenge ----

  private static String challenge(RelayHarness r, String host, String pub) throws Exception {
    Http.Resp c = Http.send(r.url(), "POST", "/v1/relay/challenge",
        "{\"host\":\"" + host + "\",\"pubkey\":\"" + pub + "\"}");
    assertThat(c.status()).as(c.raw()).isEqualTo(200);
    return c.json().get("challenge").asText();
  }

  private static String enrolBody(Ed25519KeyPair k, String host, String challenge) {
    ObjectNode rec = Json.MAPPER.createObjectNode().put("v", 1).put("challenge", challenge).put("host", host)
        .put("pubkey", k.publicKeyB64()).put("owner_fp", "");
    return Json.stringify(Json.MAPPER.createObjectNode().put("host", host).put("pubkey", k.publicKeyB64())
        .put("owner_fp", "").put("sig", k.signB64(CanonicalJson.canonicalBytes(rec))));
  }

  @Test
  void challenges_requested_by_others_for_a_victims_key_do_not_invalidate_the_victims_pending_one(
      @TempDir Path dir) throws Exception {
    MutableClock clock = MutableClock.now();
    try (RelayHarness r = RelayHarness.start(dir, Map.of(), clock, Ed25519KeyPair.generate())) {
      Ed25519KeyPair victim = Ed25519KeyPair.generate();
      String mine = challenge(r, "victim", victim.publicKeyB64());
      for (int i = 0; i < 10; i++) {
        // the attacker asks for the victim's key, in both spellings; the nonce is not a secret
        assertThat(challenge(r, "attacker", victim.publicKeyB64())).isEqualTo(mine);
        assertThat(challenge(r, "attacker", otherSpelling(victim.publicKeyB64()))).isEqualTo(mine);
      }
      Http.Resp ok = Http.send(r.url(), "POST", "/v1/relay/enrol", enrolBody(victim, "victim", mine));
      assertThat(ok.raw()).isEqualTo("{\"ok\":true}");

      // the challenge keeps its original expiry however often it is asked for; then a fresh one is issued
      Ed25519KeyPair other = Ed25519KeyPair.generate();
      String first = challenge(r, "o", other.publicKeyB64());
      clock.advance(299_000);
      assertThat(challenge(r, "o", other.publicKeyB64())).isEqualTo(first);
      clock.advance(1_000);
      String fresh = challenge(r, "o", other.publicKeyB64());
      assertThat(fresh).isNotEqualTo(first);
      assertThat(Http.send(r.url(), "POST", "/v1/relay/enrol", enrolBody(other, "o", fresh)).status()).isEqualTo(200);
    }
  }

  // ---- item 6: IPv6 grouped by prefix; full tables shed instead of locking everyone out ----

  private static int calls(RelayHarness r, String xff, int n) throws Exception {
    int ok = 0;
    for (int i = 0; i < n; i++) {
      if (Http.sendHeaders(r.url(), "POST", "/v2/relay/rotate", "{}", Map.of("x-forwarded-for", xff)).status()
          != 429) {
        ok++;
      }
    }
    return ok;
  }

  private static RelayHarness behindProxy(Path dir, Map<String, String> extra) throws Exception {
    Map<String, String> env = new HashMap<>(Map.of("MBX_RELAY_LIMITS_ENROL_CALLS_PER_MINUTE", "3"));
    env.putAll(extra);
    return RelayHarness.start(dir, env, Clock.systemUTC(), Ed25519KeyPair.generate(), ClientAddress.XFF);
  }

  @Test
  void one_ipv6_slash_64_shares_one_enrolment_call_window_whatever_addresses_it_uses(@TempDir Path dir)
      throws Exception {
    try (RelayHarness r = behindProxy(dir.resolve("64"), Map.of())) {
      assertThat(calls(r, "2001:db8:1:2::1", 1) + calls(r, "2001:db8:1:2::2", 1) + calls(r, "2001:db8:1:2::3", 1))
          .isEqualTo(3);
      assertThat(calls(r, "2001:db8:1:2:ffff:ffff:ffff:9", 1)).as("another address of the same /64").isZero();
      assertThat(calls(r, "[2001:db8:1:2::7]", 1)).as("bracketed").isZero();
      assertThat(calls(r, "2001:db8:1:3::1", 3)).as("the next /64 has its own window").isEqualTo(3);
      // IPv4 counts per address; an IPv4-mapped IPv6 address is that IPv4 address
      assertThat(calls(r, "203.0.113.5", 3)).isEqualTo(3);
      assertThat(calls(r, "::ffff:203.0.113.5", 1)).isZero();
    }
    try (RelayHarness r = behindProxy(dir.resolve("48"), Map.of("MBX_RELAY_TRUST_IPV6_PREFIX_BITS", "48"))) {
      assertThat(calls(r, "2001:db8:1:2::1", 3)).isEqualTo(3);
      assertThat(calls(r, "2001:db8:1:3::1", 1)).as("same /48").isZero();
    }
    try (RelayHarness r = behindProxy(dir.resolve("128"), Map.of("MBX_RELAY_TRUST_IPV6_PREFIX_BITS", "128"))) {
      assertThat(calls(r, "2001:db8:1:2::1", 3)).isEqualTo(3);
      assertThat(calls(r, "2001:db8:1:2::2", 3)).as("per address").isEqualTo(3);
    }
  }

  @Test
  void a_full_rate_table_sheds_its_least_recently_active_address_instead_of_refusing_every_newcomer(
      @TempDir Path dir) throws Exception {
    try (RelayHarness r = behindProxy(dir, Map.of("MBX_RELAY_LIMITS_RATE_TABLE_MAX_KEYS", "4"))) {
      assertThat(calls(r, "198.51.100.66", 4)).as("the heavy caller is limited").isEqualTo(3);
      for (int i = 1; i <= 3; i++) {
        assertThat(calls(r, "192.0.2." + i, 1)).isEqualTo(1);
      }
      // the table is full (4 keys); the heavy caller keeps calling, so it is the most recently active
      assertThat(calls(r, "198.51.100.66", 1)).isZero();
      for (int i = 10; i < 20; i++) {
        assertThat(calls(r, "192.0.2." + i, 1)).as("newcomer " + i).isEqualTo(1);
        assertThat(calls(r, "198.51.100.66", 1)).as("still limited after newcomer " + i).isZero();
      }
    }
  }

  @Test
  void a_full_challenge_table_sheds_its_oldest_challenge_instead_of_refusing_new_keys(@TempDir Path dir)
      throws Exception {
    try (RelayHarness r = RelayHarness.start(dir, Map.of("MBX_RELAY_LIMITS_MAX_OPEN_CHALLENGES", "3"),
        Clock.systemUTC(), Ed25519KeyPair.generate())) {
      Ed25519KeyPair[] keys = new Ed25519KeyPair[5];
      String[] nonces = new String[5];
      for (int i = 0; i < 5; i++) {
        keys[i] = Ed25519KeyPair.generate();
        nonces[i] = challenge(r, "h" + i, keys[i].publicKeyB64());
      }
      // the two oldest were shed; the newest enrol
      assertThat(Http.send(r.url(), "POST", "/v1/relay/enrol", enrolBody(keys[0], "h0", nonces[0])).raw())
          .isEqualTo("{\"error\":\"no pending enrolment challenge\"}");
      for (int i = 2; i < 5; i++) {
        assertThat(Http.send(r.url(), "POST", "/v1/relay/enrol", enrolBody(keys[i], "h" + i, nonces[i])).raw())
            .isEqualTo("{\"ok\":true}");
      }
    }
  }

  // ---- item 13: an older v2 enc-key ad never replaces a newer one ----

  @Test
  void a_replayed_older_enc_key_ad_is_refused_and_the_newer_key_stays_served(@TempDir Path dir) throws Exception {
    try (RelayHarness r = relay(dir)) {
      TestHost h = new TestHost(r.url(), "alpha").enrol();
      TestHost viewer = new TestHost(r.url(), "viewer").enrol();
      long now = System.currentTimeMillis();
      Ed25519KeyPair oldEnc = Ed25519KeyPair.generate();
      Ed25519KeyPair newEnc = Ed25519KeyPair.generate();
      ObjectNode older = ad(h, oldEnc, now - 3_600_000, now + 29 * DAY);
      ObjectNode newer = ad(h, newEnc, now, now + 30 * DAY);
      assertThat(postAd(h, older, h.key).raw()).isEqualTo("{\"ok\":true}");
      assertThat(postAd(h, newer, h.key).raw()).isEqualTo("{\"ok\":true}");

      Http.Resp replay = postAd(h, older, h.key);
      assertThat(replay.status()).isEqualTo(400);
      assertThat(replay.raw()).isEqualTo("{\"error\":\"enc-key ad refused: not newer than the stored ad\"}");
      // same iat, other key: not newer either
      Http.Resp sameIat = postAd(h, ad(h, oldEnc, now, now + 30 * DAY), h.key);
      assertThat(sameIat.raw()).isEqualTo("{\"error\":\"enc-key ad refused: not newer than the stored ad\"}");
      // the stored ad sent again is fine (a client republishing its current ad)
      assertThat(postAd(h, newer, h.key).raw()).isEqualTo("{\"ok\":true}");

      Http.Resp served = viewer.get("/v2/relay/enc-key?pubkey=" + q(h.pub()));
      assertThat(served.json().at("/ad/enc_pub").asText()).isEqualTo(newEnc.publicKeyB64());
      assertThat(h.get("/v2/relay/info").json().at("/you/enc_ad/enc_pub").asText())
          .isEqualTo(newEnc.publicKeyB64());
      // a newer ad still replaces it
      assertThat(postAd(h, ad(h, oldEnc, now + 1000, now + 30 * DAY), h.key).raw()).isEqualTo("{\"ok\":true}");
      assertThat(viewer.get("/v2/relay/enc-key?pubkey=" + q(h.pub())).json().at("/ad/enc_pub").asText())
          .isEqualTo(oldEnc.publicKeyB64());
    }
  }
}
