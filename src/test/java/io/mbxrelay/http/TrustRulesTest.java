package io.mbxrelay.http;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
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
import java.nio.file.Path;
import java.time.Clock;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Names, revocation, deny list, allowlists, rotation, enc-key ads, replay protection and the per-address window in
 * each trust-proxy mode, over real HTTP (issue 3; docs/protocol.md §2, §4.1–§4.4, §4.6, §7.2, §7.8).
 */
class TrustRulesTest {
  private static final String ADMIN = "admin-token-0123456789abcdef0123456789";

  private static RelayHarness relay(Path dir) throws Exception {
    return relay(dir, Ed25519KeyPair.generate());
  }

  private static RelayHarness relay(Path dir, Ed25519KeyPair relayKey) throws Exception {
    return RelayHarness.start(dir, Map.of("MBX_RELAY_ADMIN_TOKEN", ADMIN), Clock.systemUTC(), relayKey);
  }

  private static byte[] envelope(String id) {
    return Envelopes.sealed(id);
  }

  private static Http.Resp admin(RelayHarness r, String method, String body, String token) throws Exception {
    return Http.sendHeaders(r.url(), method, "/admin/deny", body,
        token == null ? Map.of() : Map.of("authorization", "Bearer " + token));
  }

  // ---- names (docs/protocol.md §4.1, §4.6; §7.2) ----

  @Test
  void names_shared_across_owners_coexist_and_a_name_squatter_never_receives_the_hosts_mail(@TempDir Path dir)
      throws Exception {
    try (RelayHarness r = relay(dir)) {
      TestHost owner = new TestHost(r.url(), "macbook").enrol();
      TestHost squatter = new TestHost(r.url(), "MacBook").enrol();
      TestHost sender = new TestHost(r.url(), "sender").enrol();
      String id = Envelopes.newId();
      assertThat(sender.pushEnvelope(owner, id, envelope(id)).json().at("/results/0/status").asText())
          .isEqualTo("accepted");
      assertThat(squatter.pull(0, null, null).json().get("items")).isEmpty();
      assertThat(owner.pull(0, null, null).json().at("/items/0/item_id").asText()).isEqualTo(id);
    }
  }

  @Test
  void a_crowded_name_never_refuses_enrolment_but_makes_v1_hops_and_lookups_by_name_ambiguous(@TempDir Path dir)
      throws Exception {
    try (RelayHarness r = relay(dir)) {
      List<TestHost> hosts = new ArrayList<>();
      for (int i = 0; i < 17; i++) {
        hosts.add(new TestHost(r.url(), i % 2 == 0 ? "common" : "COMMON").enrol());
      }
      TestHost h = hosts.get(0);
      String ts = Long.toString(System.currentTimeMillis());
      Http.Resp byName = Http.send(r.url(), "GET", "/v2/relay/items?after=0", null, null, "common", ts,
          Http.sign(h.key, "GET", "/v2/relay/items?after=0", ts, null));
      assertThat(byName.status()).isEqualTo(401);
      assertThat(byName.raw()).isEqualTo("{\"error\":\"bad relay hop\"}");
      // by key still works
      assertThat(h.pull(0, null, null).status()).isEqualTo(200);
      publishV2Ad(h, Ed25519KeyPair.generate(), System.currentTimeMillis());
      assertThat(h.get("/v2/relay/enc-key?host=common").raw()).isEqualTo("{\"error\":\"unknown host\"}");
      assertThat(h.get("/v2/relay/enc-key?pubkey=" + enc(h.pub())).status()).isEqualTo(200);
    }
  }

  // ---- revocation and the deny list (docs/protocol.md §7.8) ----

  @Test
  void a_denied_key_is_revoked_at_once_and_stays_revoked_across_restart_and_re_enrolment(@TempDir Path dir)
      throws Exception {
    Ed25519KeyPair key = Ed25519KeyPair.generate();
    Ed25519KeyPair relayKey = Ed25519KeyPair.generate();
    try (RelayHarness r = relay(dir, relayKey)) {
      TestHost h = new TestHost(r.url(), "laptop", key).enrol();
      assertThat(h.get("/v2/relay/items?after=0").status()).isEqualTo(200);
      Http.Resp added = admin(r, "POST", "{\"kind\":\"host_fp\",\"value\":\"" + key.fingerprint() + "\"}", ADMIN);
      assertThat(added.raw()).isEqualTo("{\"ok\":true,\"kind\":\"host_fp\",\"value\":\"" + key.fingerprint()
          + "\",\"added\":true,\"revoked\":1}");
      Http.Resp hop = h.get("/v2/relay/items?after=0");
      assertThat(hop.status()).isEqualTo(401);
      assertThat(hop.raw()).isEqualTo("{\"error\":\"bad relay hop\"}");
      assertThat(h.get("/v2/relay/info").json().has("you")).isFalse();
      Http.Resp again = h.tryEnrol();
      assertThat(again.status()).isEqualTo(403);
      assertThat(again.raw()).isEqualTo("{\"error\":\"this host key was revoked on this relay\",\"code\":\"REVOKED\"}");
      // removing the entry never un-revokes
      assertThat(admin(r, "DELETE", "{\"kind\":\"host_fp\",\"value\":\"" + key.fingerprint() + "\"}", ADMIN).raw())
          .contains("\"removed\":true");
    }
    try (RelayHarness r = relay(dir, relayKey)) {
      TestHost h = new TestHost(r.url(), "laptop", key);
      assertThat(h.tryEnrol().status()).isEqualTo(403);
      assertThat(h.get("/v2/relay/items?after=0").status()).isEqualTo(401);
    }
  }

  @Test
  void a_key_denied_before_it_enrols_is_refused_enrolment(@TempDir Path dir) throws Exception {
    try (RelayHarness r = relay(dir)) {
      TestHost h = new TestHost(r.url(), "laptop");
      assertThat(admin(r, "POST", "{\"kind\":\"host_fp\",\"value\":\"" + h.pub() + "\",\"note\":\"stolen\"}", ADMIN)
          .json().get("revoked").asInt()).isZero();
      Http.Resp e = h.tryEnrol();
      assertThat(e.status()).isEqualTo(403);
      assertThat(e.raw()).isEqualTo("{\"error\":\"enrolment not authorized: this host is on the relay's deny list\","
          + "\"code\":\"DENIED\"}");
      JsonNode list = admin(r, "GET", null, ADMIN).json().get("entries");
      assertThat(list).hasSize(1);
      assertThat(list.get(0).get("value").asText()).isEqualTo(h.key.fingerprint());
      assertThat(list.get(0).get("note").asText()).isEqualTo("stolen");
    }
  }

  @Test
  void the_admin_endpoint_without_its_token_answers_like_any_unknown_path(@TempDir Path dir) throws Exception {
    try (RelayHarness r = relay(dir)) {
      TestHost h = new TestHost(r.url(), "h").enrol();
      Http.Resp noToken = admin(r, "POST", "{\"kind\":\"host_fp\",\"value\":\"" + h.pub() + "\"}", null);
      Http.Resp unknown = Http.send(r.url(), "POST", "/admin/nothing", "{}");
      assertThat(noToken.status()).isEqualTo(401);
      assertThat(noToken.raw()).isEqualTo(unknown.raw()).isEqualTo("{\"error\":\"bad relay hop\"}");
      assertThat(admin(r, "GET", null, ADMIN.substring(1) + "x").raw()).isEqualTo("{\"error\":\"bad relay hop\"}");
      // a valid hop without the token is a known host on an unknown path: 404, never the admin action
      assertThat(h.post("/admin/deny", "{\"kind\":\"host_fp\",\"value\":\"" + h.pub() + "\"}").raw())
          .isEqualTo("{\"error\":\"not found\"}");
      assertThat(h.get("/v2/relay/items?after=0").status()).isEqualTo(200);
      assertThat(admin(r, "POST", "{\"kind\":\"nope\",\"value\":\"x\"}", ADMIN).status()).isEqualTo(400);
    }
    // with no token configured the endpoint does not exist at all
    try (RelayHarness r = RelayHarness.start(dir.resolve("b"))) {
      assertThat(admin(r, "GET", null, ADMIN).raw()).isEqualTo("{\"error\":\"bad relay hop\"}");
    }
  }

  // ---- sender allowlist (docs/protocol.md §4.3) ----

  private static ObjectNode senderList(TestHost target, List<String> senders, long iatMs) {
    ObjectNode list = Json.MAPPER.createObjectNode().put("v", 1).put("type", "relay-senders")
        .put("host_pubkey", target.pub());
    senders.forEach(list.putArray("senders")::add);
    list.put("iat", IsoTime.format(iatMs));
    return list;
  }

  private static Http.Resp publishSenders(TestHost target, ObjectNode list, Ed25519KeyPair signer) throws Exception {
    ObjectNode body = Json.MAPPER.createObjectNode();
    body.set("list", list);
    body.put("sig", signer.signB64(CanonicalJson.canonicalBytes(list)));
    return target.post("/v2/relay/senders", Json.stringify(body));
  }

  @Test
  void an_allowlist_refuses_a_stranger_and_every_list_error_has_its_text(@TempDir Path dir) throws Exception {
    try (RelayHarness r = relay(dir)) {
      TestHost target = new TestHost(r.url(), "target").enrol();
      TestHost friend = new TestHost(r.url(), "friend").enrol();
      TestHost stranger = new TestHost(r.url(), "stranger").enrol();
      long now = System.currentTimeMillis();
      assertThat(publishSenders(target, senderList(target, List.of(friend.pub(), friend.pub()), now), target.key).raw())
          .isEqualTo("{\"ok\":true}");
      String a = Envelopes.newId();
      assertThat(stranger.pushEnvelope(target, a, envelope(a)).json().at("/results/0/status").asText())
          .isEqualTo("rejected:sender not accepted by target");
      String b = Envelopes.newId();
      assertThat(friend.pushEnvelope(target, b, envelope(b)).json().at("/results/0/status").asText())
          .isEqualTo("accepted");

      Http.Resp stale = publishSenders(target, senderList(target, List.of(stranger.pub()), now), target.key);
      assertThat(stale.status()).isEqualTo(409);
      assertThat(stale.raw()).isEqualTo("{\"error\":\"a newer sender list is already stored\"}");
      Http.Resp future = publishSenders(target, senderList(target, List.of(), now + 6 * 60_000), target.key);
      assertThat(future.status()).isEqualTo(400);
      assertThat(future.raw()).isEqualTo("{\"error\":\"sender list iat is in the future\"}");
      Http.Resp unsigned = publishSenders(target, senderList(target, List.of(), now + 1000), stranger.key);
      assertThat(unsigned.status()).isEqualTo(401);
      assertThat(unsigned.raw()).isEqualTo("{\"error\":\"sender list is not signed by the target\"}");
      Http.Resp badKey = publishSenders(target, senderList(target, List.of("AAAA"), now + 1000), target.key);
      assertThat(badKey.raw()).isEqualTo("{\"error\":\"bad sender list\"}");
      Http.Resp notMine = publishSenders(target, senderList(friend, List.of(), now + 1000), target.key);
      assertThat(notMine.raw()).isEqualTo("{\"error\":\"bad sender list\"}");
      List<String> many = new ArrayList<>();
      for (int i = 0; i < 1025; i++) {
        many.add(friend.pub());
      }
      assertThat(publishSenders(target, senderList(target, many, now + 1000), target.key).raw())
          .isEqualTo("{\"error\":\"bad sender list\"}");
      // a newer list replaces the older one
      assertThat(publishSenders(target, senderList(target, List.of(stranger.pub()), now + 1000), target.key).status())
          .isEqualTo(200);
      assertThat(stranger.pushEnvelope(target, a, envelope(a)).json().at("/results/0/status").asText())
          .isEqualTo("accepted");
    }
  }

  // ---- rotation (docs/protocol.md §4.4) ----

  private static ObjectNode rotation(String host, Ed25519KeyPair oldKey, Ed25519KeyPair newKey, Ed25519KeyPair oldSigner,
      Ed25519KeyPair newSigner) {
    ObjectNode rec = Json.MAPPER.createObjectNode().put("v", 1).put("type", "host-rotation").put("host", host)
        .put("old_pub", oldKey.publicKeyB64()).put("new_pub", newKey.publicKeyB64())
        .put("new_enc_pub", B64.encode(new byte[32])).put("iat", IsoTime.format(System.currentTimeMillis()));
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

  @Test
  void rotation_moves_the_queue_in_order_with_its_dedup_rows_and_allowlists_and_revokes_the_old_key(
      @TempDir Path dir) throws Exception {
    try (RelayHarness r = relay(dir)) {
      TestHost old = new TestHost(r.url(), "desk").enrol();
      TestHost sender = new TestHost(r.url(), "sender").enrol();
      TestHost other = new TestHost(r.url(), "other").enrol();
      long now = System.currentTimeMillis();
      assertThat(publishSenders(old, senderList(old, List.of(sender.pub()), now), old.key).status()).isEqualTo(200);
      assertThat(publishSenders(other, senderList(other, List.of(old.pub()), now), other.key).status()).isEqualTo(200);
      List<String> ids = new ArrayList<>();
      List<byte[]> wires = new ArrayList<>();
      for (int i = 0; i < 3; i++) {
        String id = Envelopes.newId();
        ids.add(id);
        wires.add(envelope(id));
        assertThat(sender.pushEnvelope(old, id, wires.get(i)).json().at("/results/0/status").asText())
            .isEqualTo("accepted");
      }
      Ed25519KeyPair next = Ed25519KeyPair.generate();
      Ed25519KeyPair stranger = Ed25519KeyPair.generate();
      // every error of §4.4, in order
      assertThat(rotate(r, rotation("desk", stranger, next, stranger, next)).raw())
          .isEqualTo("{\"error\":\"the rotated key is not enrolled here\"}");
      ObjectNode notRec = rotation("desk", old.key, next, old.key, next);
      ((ObjectNode) notRec.at("/rotation/rec")).put("type", "other");
      assertThat(rotate(r, notRec).raw()).isEqualTo("{\"error\":\"not a rotation record\"}");
      assertThat(rotate(r, rotation("desk", old.key, old.key, old.key, old.key)).raw())
          .isEqualTo("{\"error\":\"rotation keeps the same host key\"}");
      assertThat(rotate(r, rotation("desk", old.key, next, stranger, next)).raw())
          .isEqualTo("{\"error\":\"rotation is not signed by the pinned host key\"}");
      assertThat(rotate(r, rotation("desk", old.key, next, old.key, stranger)).raw())
          .isEqualTo("{\"error\":\"rotation is not signed by the new host key\"}");
      Http.Resp another = rotate(r, rotation("desk2", old.key, next, old.key, next));
      assertThat(another.status()).isEqualTo(400);
      assertThat(another.raw()).isEqualTo("{\"error\":\"rotation names another host\"}");

      Http.Resp moved = rotate(r, rotation("desk", old.key, next, old.key, next));
      assertThat(moved.raw()).isEqualTo("{\"moved\":3}");
      TestHost rotated = new TestHost(r.url(), "desk", next);
      JsonNode page = rotated.pull(0, null, null).json();
      assertThat(page.get("items")).hasSize(3);
      for (int i = 0; i < 3; i++) {
        assertThat(page.at("/items/" + i + "/item_id").asText()).isEqualTo(ids.get(i));
      }
      assertThat(rotated.get("/v2/relay/info").json().at("/you/host").asText()).isEqualTo("desk");
      // the old key is revoked: hops 401, re-enrolment 403
      assertThat(old.get("/v2/relay/items?after=0").status()).isEqualTo(401);
      assertThat(old.tryEnrol().status()).isEqualTo(403);
      // dedup rows moved: a retry to the new key is a duplicate with the new seq
      JsonNode dup = sender.pushEnvelope(rotated, ids.get(0), wires.get(0)).json().at("/results/0");
      assertThat(dup.get("status").asText()).isEqualTo("duplicate");
      assertThat(dup.at("/targets/0/seq").asLong()).isEqualTo(page.at("/items/0/seq").asLong());
      // its allowlist moved; the old key was swapped for the new in other allowlists
      String x = Envelopes.newId();
      assertThat(other.pushEnvelope(rotated, x, envelope(x)).json().at("/results/0/status").asText())
          .isEqualTo("rejected:sender not accepted by target");
      assertThat(rotated.pushEnvelope(other, x, envelope(x)).json().at("/results/0/status").asText())
          .isEqualTo("accepted");
      // a second rotation from the revoked key: not enrolled; a rotation onto a revoked key: 409
      assertThat(rotate(r, rotation("desk", old.key, next, old.key, next)).status()).isEqualTo(404);
      Http.Resp revokedTarget = rotate(r, rotation("desk", next, old.key, next, old.key));
      assertThat(revokedTarget.status()).isEqualTo(409);
      assertThat(revokedTarget.raw()).isEqualTo("{\"error\":\"the new key was revoked here\"}");
    }
  }

  // ---- enc-key ads (docs/protocol.md §4.2) ----

  private static String enc(String b64) {
    return java.net.URLEncoder.encode(b64, java.nio.charset.StandardCharsets.UTF_8);
  }

  private static ObjectNode ad(TestHost h, Ed25519KeyPair encKey, long iatMs, long expMs) {
    return Json.MAPPER.createObjectNode().put("v", 2).put("type", "enc-ad").put("host", h.name)
        .put("host_pubkey", h.pub()).put("enc_pub", encKey.publicKeyB64()).put("iat", IsoTime.format(iatMs))
        .put("exp", IsoTime.format(expMs));
  }

  private static Http.Resp postAd(TestHost h, ObjectNode ad, Ed25519KeyPair signer) throws Exception {
    ObjectNode body = Json.MAPPER.createObjectNode();
    body.set("ad", ad);
    if (signer != null) {
      body.put("sig", signer.signB64(CanonicalJson.canonicalBytes(ad)));
    }
    return h.post("/v2/relay/enc-key", Json.stringify(body));
  }

  private static void publishV2Ad(TestHost h, Ed25519KeyPair encKey, long now) throws Exception {
    assertThat(postAd(h, ad(h, encKey, now, now + 30L * 86_400_000), h.key).raw()).isEqualTo("{\"ok\":true}");
  }

  @Test
  void enc_key_ads_are_refused_with_each_reason_and_served_by_key_or_name(@TempDir Path dir) throws Exception {
    try (RelayHarness r = relay(dir)) {
      TestHost h = new TestHost(r.url(), "alpha").enrol();
      TestHost viewer = new TestHost(r.url(), "viewer").enrol();
      Ed25519KeyPair x = Ed25519KeyPair.generate(); // any 32 bytes serve as the X25519 key for the relay
      long now = System.currentTimeMillis();
      long day = 86_400_000L;
      assertThat(postAd(h, ad(h, x, now, now + day), null).raw())
          .isEqualTo("{\"error\":\"enc-key ad refused: unsigned\"}");
      ObjectNode shortKey = ad(h, x, now, now + day).put("enc_pub", "AAAA");
      assertThat(postAd(h, shortKey, h.key).raw()).isEqualTo("{\"error\":\"enc-key ad refused: malformed\"}");
      assertThat(postAd(h, ad(viewer, x, now, now + day), h.key).raw())
          .isEqualTo("{\"error\":\"enc-key ad refused: wrong peer\"}");
      assertThat(postAd(h, ad(h, x, now, now + day), viewer.key).raw())
          .isEqualTo("{\"error\":\"enc-key ad refused: bad signature\"}");
      ObjectNode badDate = ad(h, x, now, now + day).put("iat", "yesterday");
      assertThat(postAd(h, badDate, h.key).raw()).isEqualTo("{\"error\":\"enc-key ad refused: malformed\"}");
      assertThat(postAd(h, ad(h, x, now + 6 * 60_000, now + day), h.key).raw())
          .isEqualTo("{\"error\":\"enc-key ad refused: not yet valid\"}");
      assertThat(postAd(h, ad(h, x, now - 2 * day, now - day), h.key).raw())
          .isEqualTo("{\"error\":\"enc-key ad refused: expired\"}");
      assertThat(postAd(h, ad(h, x, now, now + 91 * day), h.key).raw())
          .isEqualTo("{\"error\":\"enc-key ad refused: lifetime over the maximum\"}");
      assertThat(viewer.get("/v2/relay/enc-key?pubkey=" + enc(h.pub())).raw())
          .isEqualTo("{\"error\":\"unknown host\"}");

      ObjectNode good = ad(h, x, now, now + 30 * day).put("extra", "kept in the signed record");
      assertThat(postAd(h, good, h.key).raw()).isEqualTo("{\"ok\":true}");
      // v1 ad
      assertThat(h.post("/v1/relay/enc-key", "{\"enc_pub\":\"" + x.publicKeyB64() + "\"}").raw())
          .isEqualTo("{\"error\":\"enc_pub and sig required\"}");
      ObjectNode v1 = Json.MAPPER.createObjectNode().put("v", 1).put("host", "alpha").put("enc_pub", x.publicKeyB64());
      String v1sig = h.key.signB64(CanonicalJson.canonicalBytes(v1));
      Http.Resp v1bad = h.post("/v1/relay/enc-key", "{\"enc_pub\":\"" + x.publicKeyB64() + "\",\"sig\":\""
          + viewer.key.signB64(CanonicalJson.canonicalBytes(v1)) + "\"}");
      assertThat(v1bad.status()).isEqualTo(401);
      assertThat(v1bad.raw()).isEqualTo("{\"error\":\"bad enc-key signature\"}");
      assertThat(h.post("/v1/relay/enc-key", "{\"host\":\"beta\",\"enc_pub\":\"" + x.publicKeyB64() + "\",\"sig\":\""
          + v1sig + "\"}").raw()).isEqualTo("{\"error\":\"host mismatch\"}");
      assertThat(h.post("/v1/relay/enc-key", "{\"enc_pub\":\"" + x.publicKeyB64() + "\",\"sig\":\"" + v1sig + "\"}")
          .raw()).isEqualTo("{\"ok\":true}");

      Http.Resp byKey = viewer.get("/v2/relay/enc-key?pubkey=" + enc(h.pub()));
      assertThat(byKey.raw()).isEqualTo("{\"host\":\"alpha\",\"host_pubkey\":\"" + h.pub() + "\",\"enc_pub\":\""
          + x.publicKeyB64() + "\",\"sig\":\"" + v1sig + "\",\"ad\":" + CanonicalJson.canonicalize(good)
          + ",\"ad_sig\":\"" + h.key.signB64(CanonicalJson.canonicalBytes(good)) + "\"}");
      assertThat(viewer.get("/v1/relay/enc-key?host=ALPHA").raw()).isEqualTo(byKey.raw());
      assertThat(viewer.get("/v1/relay/enc-key?host=nobody").status()).isEqualTo(404);
      JsonNode you = h.get("/v2/relay/info").json().at("/you/enc_ad");
      assertThat(Json.stringify(you)).isEqualTo("{\"enc_pub\":\"" + x.publicKeyB64() + "\",\"exp\":\""
          + IsoTime.format(now + 30 * day) + "\",\"v1\":\"" + x.publicKeyB64() + "\"}");
    }
  }

  // ---- challenges and the per-address window (docs/protocol.md §4.1, §5) ----

  @Test
  void a_challenge_expires_after_its_ttl(@TempDir Path dir) throws Exception {
    MutableClock clock = MutableClock.now();
    try (RelayHarness r = RelayHarness.start(dir, Map.of(), clock, Ed25519KeyPair.generate())) {
      Ed25519KeyPair k = Ed25519KeyPair.generate();
      Http.Resp c = Http.send(r.url(), "POST", "/v1/relay/challenge",
          "{\"host\":\"a\",\"pubkey\":\"" + k.publicKeyB64() + "\"}");
      String ch = c.json().get("challenge").asText();
      ObjectNode rec = Json.MAPPER.createObjectNode().put("v", 1).put("challenge", ch).put("host", "a")
          .put("pubkey", k.publicKeyB64()).put("owner_fp", "");
      String body = Json.stringify(Json.MAPPER.createObjectNode().put("host", "a").put("pubkey", k.publicKeyB64())
          .put("owner_fp", "").put("sig", k.signB64(CanonicalJson.canonicalBytes(rec))));
      clock.advance(300_000);
      Http.Resp late = Http.send(r.url(), "POST", "/v1/relay/enrol", body);
      assertThat(late.status()).isEqualTo(401);
      assertThat(late.raw()).isEqualTo("{\"error\":\"no pending enrolment challenge\"}");
    }
  }

  private static int calls(RelayHarness r, Map<String, String> headers, int n) throws Exception {
    int ok = 0;
    for (int i = 0; i < n; i++) {
      if (Http.sendHeaders(r.url(), "POST", "/v2/relay/rotate", "{}", headers).status() != 429) {
        ok++;
      }
    }
    return ok;
  }

  @Test
  void the_per_address_window_uses_the_rightmost_forwarded_entry_and_ignores_client_supplied_ones(
      @TempDir Path dir) throws Exception {
    try (RelayHarness r = RelayHarness.start(dir, Map.of("MBX_RELAY_LIMITS_ENROL_CALLS_PER_MINUTE", "3"),
        Clock.systemUTC(), Ed25519KeyPair.generate(), ClientAddress.XFF)) {
      // the client rotates its own left entries; the proxy-appended rightmost one is what counts
      for (int i = 0; i < 3; i++) {
        assertThat(calls(r, Map.of("x-forwarded-for", "10.0.0." + i + ", 203.0.113.7"), 1)).isEqualTo(1);
      }
      Http.Resp limited = Http.sendHeaders(r.url(), "POST", "/v2/relay/rotate", "{}",
          Map.of("x-forwarded-for", "1.2.3.4, 203.0.113.7"));
      assertThat(limited.status()).isEqualTo(429);
      assertThat(calls(r, Map.of("x-forwarded-for", "203.0.113.7, 198.51.100.9"), 3)).isEqualTo(3);
      // CF-Connecting-IP is ignored in this mode
      assertThat(calls(r, Map.of("x-forwarded-for", "203.0.113.7", "cf-connecting-ip", "192.0.2.1"), 1)).isZero();
    }
  }

  @Test
  void the_per_address_window_uses_cf_connecting_ip_in_cloudflare_mode_and_the_socket_by_default(
      @TempDir Path dir) throws Exception {
    try (RelayHarness r = RelayHarness.start(dir.resolve("cf"), Map.of("MBX_RELAY_LIMITS_ENROL_CALLS_PER_MINUTE", "3"),
        Clock.systemUTC(), Ed25519KeyPair.generate(), ClientAddress.CLOUDFLARE)) {
      assertThat(calls(r, Map.of("cf-connecting-ip", "192.0.2.1", "x-forwarded-for", "9.9.9.9"), 4)).isEqualTo(3);
      assertThat(calls(r, Map.of("cf-connecting-ip", "192.0.2.2", "x-forwarded-for", "9.9.9.9"), 3)).isEqualTo(3);
    }
    try (RelayHarness r = RelayHarness.start(dir.resolve("sock"), Map.of("MBX_RELAY_LIMITS_ENROL_CALLS_PER_MINUTE",
        "3"), Clock.systemUTC(), Ed25519KeyPair.generate(), ClientAddress.SOCKET)) {
      // headers are client-controlled without a trusted proxy: all of these are one socket address
      assertThat(calls(r, Map.of("x-forwarded-for", "10.0.0.1"), 1)).isEqualTo(1);
      assertThat(calls(r, Map.of("cf-connecting-ip", "10.0.0.2"), 1)).isEqualTo(1);
      assertThat(calls(r, Map.of("x-forwarded-for", "10.0.0.3"), 2)).isEqualTo(1);
    }
  }

  // ---- replay protection (issue 3 item 7) ----

  @Test
  void an_exact_replay_of_a_push_is_refused_and_the_same_push_re_signed_is_a_duplicate(@TempDir Path dir)
      throws Exception {
    try (RelayHarness r = relay(dir)) {
      TestHost target = new TestHost(r.url(), "target").enrol();
      TestHost sender = new TestHost(r.url(), "sender").enrol();
      String id = Envelopes.newId();
      String body = Json.stringify(Json.MAPPER.createObjectNode().set("items", Json.MAPPER.createArrayNode()
          .add(TestHost.item("envelope", id, List.of(target.pub()), List.of(envelope(id))))));
      String ts = Long.toString(System.currentTimeMillis());
      String sig = Http.sign(sender.key, "POST", "/v2/relay/items", ts, body);
      Http.Resp first = Http.send(r.url(), "POST", "/v2/relay/items", body, sender.pub(), null, ts, sig);
      assertThat(first.json().at("/results/0/status").asText()).isEqualTo("accepted");
      Http.Resp replay = Http.send(r.url(), "POST", "/v2/relay/items", body, sender.pub(), null, ts, sig);
      assertThat(replay.status()).isEqualTo(401);
      assertThat(replay.raw()).isEqualTo("{\"error\":\"bad relay hop\"}");
      Http.Resp resigned = sender.post("/v2/relay/items", body);
      assertThat(resigned.json().at("/results/0/status").asText()).isEqualTo("duplicate");
      // reads are not state-changing: a repeated signed GET is served
      String gts = Long.toString(System.currentTimeMillis());
      String gsig = Http.sign(target.key, "GET", "/v2/relay/items?after=0", gts, null);
      for (int i = 0; i < 2; i++) {
        assertThat(Http.send(r.url(), "GET", "/v2/relay/items?after=0", null, target.pub(), null, gts, gsig).status())
            .isEqualTo(200);
      }
      assertThat(r.server.trust().replay().size()).isGreaterThanOrEqualTo(2);
    }
  }
}
