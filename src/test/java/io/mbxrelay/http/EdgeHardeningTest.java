package io.mbxrelay.http;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.mbxrelay.crypto.Ed25519KeyPair;
import io.mbxrelay.testing.Envelopes;
import io.mbxrelay.testing.Http;
import io.mbxrelay.testing.RawHttp;
import io.mbxrelay.testing.RelayHarness;
import io.mbxrelay.testing.TestHost;
import io.mbxrelay.wire.B64;
import io.mbxrelay.wire.CanonicalJson;
import io.mbxrelay.wire.IsoTime;
import io.mbxrelay.wire.Json;
import io.mbxrelay.wire.KeySpelling;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 11 items 1, 2 (header part), 4 and 9 over real HTTP against a relay with the default configuration. Each
 * test reproduces a reported attack; on the code before the fix each one fails.
 */
class EdgeHardeningTest {
  @TempDir
  static Path dir;
  static RelayHarness relay;
  static TestHost a;
  static TestHost b;

  @BeforeAll
  static void start() throws Exception {
    relay = RelayHarness.start(dir);
    a = new TestHost(relay.url(), "edge-a").enrol();
    b = new TestHost(relay.url(), "edge-b").enrol();
  }

  @AfterAll
  static void stop() {
    relay.close();
  }

  private static int port() {
    return relay.server.port();
  }

  private static long now() {
    return System.currentTimeMillis();
  }

  private static final String BAD_HOP = "{\"error\":\"bad relay hop\"}";

  /** Rotates {@code host} onto a fresh key: the old key is revoked (docs/protocol.md §4.4). */
  private static Ed25519KeyPair revokeByRotation(TestHost host) throws Exception {
    Ed25519KeyPair next = Ed25519KeyPair.generate();
    ObjectNode rec = Json.MAPPER.createObjectNode().put("v", 1).put("type", "host-rotation").put("host", host.name)
        .put("old_pub", host.pub()).put("new_pub", next.publicKeyB64()).put("new_enc_pub", B64.encode(new byte[32]))
        .put("iat", IsoTime.format(now()));
    byte[] c = CanonicalJson.canonicalBytes(rec);
    ObjectNode rot = Json.MAPPER.createObjectNode();
    rot.set("rec", rec);
    rot.put("old_sig", host.key.signB64(c)).put("new_sig", next.signB64(c));
    ObjectNode body = Json.MAPPER.createObjectNode();
    body.set("rotation", rot);
    assertThat(Http.send(relay.url(), "POST", "/v2/relay/rotate", Json.stringify(body)).status()).isEqualTo(200);
    return next;
  }

  /** Challenge and enrolment for {@code key} under the key field {@code spelling} (any of its 4 spellings). */
  private static Http.Resp enrolAs(Ed25519KeyPair key, String name, String spelling) throws Exception {
    Http.Resp ch = Http.send(relay.url(), "POST", "/v1/relay/challenge", Json.stringify(
        Json.MAPPER.createObjectNode().put("host", name).put("pubkey", spelling)));
    assertThat(ch.status()).as(ch.raw()).isEqualTo(200);
    ObjectNode rec = Json.MAPPER.createObjectNode().put("v", 1).put("challenge", ch.json().get("challenge").asText())
        .put("host", name).put("pubkey", spelling).put("owner_fp", "");
    ObjectNode body = Json.MAPPER.createObjectNode().put("host", name).put("pubkey", spelling).put("owner_fp", "")
        .put("sig", key.signB64(CanonicalJson.canonicalBytes(rec)));
    return Http.send(relay.url(), "POST", "/v1/relay/enrol", Json.stringify(body));
  }

  /** A signed GET naming the caller by the key field {@code spelling}. */
  private static Http.Resp getAs(Ed25519KeyPair key, String spelling, String pathAndQuery) throws Exception {
    String ts = Long.toString(now());
    return Http.send(relay.url(), "GET", pathAndQuery, null, spelling, null, ts,
        Http.sign(key, "GET", pathAndQuery, ts, null));
  }

  // ---- item 1: numbers in linear time ----

  /**
   * The report: a 15,000-character {@code 111…1x} {@code x-mbx-ts} on any path (even unauthenticated info) tied up an
   * event loop for seconds, and 4 of them held other clients 12–18 s. Each answer and an honest client's request
   * sent alongside now come back at once. The bound (1 s per request, several at once on 2 cores) only separates
   * "parsed in a linear pass" from "quadratic backtracking"; it is not a performance assertion.
   */
  @Test
  void a_15000_character_ts_is_answered_at_once_on_any_path_and_does_not_hold_other_clients() throws Exception {
    String ts = "1".repeat(15_000) + "x";
    String sig = a.key.signB64(new byte[1]);
    String info = "GET /v2/relay/info HTTP/1.1\r\nHost: r\r\nx-mbx-key: " + a.pub() + "\r\nx-mbx-ts: " + ts
        + "\r\nx-mbx-sig: " + sig + "\r\n\r\n";
    String push = "POST /v2/relay/items HTTP/1.1\r\nHost: r\r\nx-mbx-key: " + a.pub() + "\r\nx-mbx-ts: " + ts
        + "\r\nx-mbx-sig: " + sig + "\r\ncontent-length: 2\r\n\r\n";
    ExecutorService pool = Executors.newFixedThreadPool(5);
    try {
      List<Future<long[]>> answers = new ArrayList<>();
      for (int i = 0; i < 4; i++) {
        boolean infoPath = i % 2 == 0;
        answers.add(pool.submit(() -> {
          long start = System.nanoTime();
          RawHttp.Answer r = RawHttp.exchange(port(), infoPath ? info : push,
              infoPath ? null : "{}".getBytes(StandardCharsets.UTF_8), 10_000);
          return new long[] {r.status(), (System.nanoTime() - start) / 1_000_000};
        }));
      }
      long start = System.nanoTime();
      Http.Resp honest = b.get("/v2/relay/info");
      long honestMs = (System.nanoTime() - start) / 1_000_000;
      assertThat(honest.json().get("you").get("pubkey").asText()).isEqualTo(b.pub());
      assertThat(honestMs).as("an honest request sent alongside, ms").isLessThan(1000);
      for (int i = 0; i < answers.size(); i++) {
        long[] r = answers.get(i).get();
        assertThat(r[0]).as("status").isEqualTo(i % 2 == 0 ? 200 : 401); // info never 401s; it just has no "you"
        assertThat(r[1]).as("ms for request %d", i).isLessThan(1000);
      }
    } finally {
      pool.shutdownNow();
    }
  }

  /**
   * The report: one enrolled host's 40 KB {@code through} held the relay 27–37 s. The same shape in v1 {@code cursor}
   * and (as long as the request line allows) pull {@code after}/{@code limit}.
   */
  @Test
  void a_40_kb_through_or_cursor_and_a_15_kb_after_are_answered_at_once() throws Exception {
    String huge = "1".repeat(40_000) + "x";
    long start = System.nanoTime();
    Http.Resp ack = a.post("/v2/relay/ack", Json.stringify(Json.MAPPER.createObjectNode()
        .put("epoch", relay.server.epoch()).put("through", huge)));
    assertThat(ack.status()).isEqualTo(400);
    assertThat(ack.error()).isEqualTo("ack beyond the last allocated seq: treat as an epoch change");
    Http.Resp v1 = a.post("/v1/relay/ack", Json.stringify(Json.MAPPER.createObjectNode().put("cursor", huge)));
    assertThat(v1.status()).isLessThan(500);
    String longAfter = "1".repeat(15_000) + "x";
    assertThat(a.get("/v2/relay/items?after=" + longAfter + "&limit=" + "9".repeat(200) + "x").status())
        .isEqualTo(200);
    assertThat(a.get("/v1/relay/messages?after=" + longAfter).status()).isEqualTo(200);
    assertThat((System.nanoTime() - start) / 1_000_000).as("ms for the four requests").isLessThan(2000);
  }

  // ---- item 2: what the headers decide is answered before the body is read ----

  /**
   * Every push used to be buffered (up to 8 MiB) before its hop was looked at, so unsigned 8 MiB bodies could exhaust
   * the heap. A request whose headers already fail the hop is answered 401 at once, with {@code connection: close},
   * while its declared 8 MB body was never sent: the relay did not wait for it.
   */
  @Test
  void a_hop_the_headers_already_fail_is_answered_401_without_reading_the_declared_body() throws Exception {
    TestHost revoked = new TestHost(relay.url(), "edge-revoked").enrol();
    revokeByRotation(revoked);
    Ed25519KeyPair stranger = Ed25519KeyPair.generate();
    long declared = 8_000_000;
    byte[] none = new byte[0];
    List<String> heads = List.of(
        RawHttp.signedHead(stranger, stranger.publicKeyB64(), "POST", "/v2/relay/items", now(), none, declared),
        RawHttp.signedHead(a.key, a.pub(), "POST", "/v2/relay/items", now() - 330_000, none, declared),
        RawHttp.signedHead(a.key, a.pub(), "POST", "/v2/relay/items", now() + 330_000, none, declared),
        RawHttp.signedHead(revoked.key, revoked.pub(), "POST", "/v2/relay/items", now(), none, declared),
        RawHttp.signedHead(a.key, a.pub(), "POST", "/v2/relay/nothing-here", now(), none, declared)
            .replace("x-mbx-key: " + a.pub(), "x-mbx-key: " + stranger.publicKeyB64()),
        "POST /v2/relay/ack HTTP/1.1\r\nHost: r\r\nx-mbx-host: nobody-here\r\nx-mbx-ts: " + now()
            + "\r\nx-mbx-sig: " + a.key.signB64(none) + "\r\ncontent-length: " + declared + "\r\n\r\n",
        "POST /v2/relay/ack HTTP/1.1\r\nHost: r\r\nx-mbx-key: " + a.pub() + "\r\nx-mbx-ts: abc\r\nx-mbx-sig: "
            + a.key.signB64(none) + "\r\ncontent-length: " + declared + "\r\n\r\n",
        "POST /v2/relay/senders HTTP/1.1\r\nHost: r\r\ncontent-length: " + declared + "\r\n\r\n");
    for (int i = 0; i < heads.size(); i++) {
      String head = heads.get(i);
      RawHttp.Answer r = RawHttp.exchange(port(), head, null, 5000, i == 0);
      assertThat(r.status()).as("case %d: %s", i, head.lines().findFirst().orElseThrow()).isEqualTo(401);
      assertThat(r.body()).isEqualTo(BAD_HOP);
      assertThat(r.header("connection")).isEqualTo("close");
      assertThat(r.closed() || i > 0).as("closed by the relay").isTrue();
    }
    // every GET (info needs no hop) takes at most the 8 KiB of the enrolment calls: no anonymous request holds more
    RawHttp.Answer info = RawHttp.exchange(port(), "GET /v2/relay/info HTTP/1.1\r\nHost: r\r\ncontent-length: "
        + declared + "\r\n\r\n", null, 5000);
    assertThat(info.status()).isEqualTo(413);
    assertThat(info.body()).isEqualTo("{\"error\":\"request body too large\"}");
    RawHttp.Answer pull = RawHttp.exchange(port(), RawHttp.signedHead(a.key, a.pub(), "GET", "/v2/relay/items",
        now(), none, 100_000), null, 5000);
    assertThat(pull.status()).isEqualTo(413);
    // an honest push is still read and stored
    String id = Envelopes.newId();
    assertThat(a.pushEnvelope(b, id, Envelopes.sealed(id)).json().get("results").get(0).get("status").asText())
        .isEqualTo("accepted");
  }

  // ---- item 4: keys compared as canonical spellings ----

  /**
   * The report: a revoked key re-enrolled under another of its 4 base64 spellings and authenticated with it. Now
   * every spelling is the revoked key, at the enrolment and at the hop.
   */
  @Test
  void a_revoked_key_cannot_re_enrol_or_authenticate_under_another_spelling() throws Exception {
    TestHost desk = new TestHost(relay.url(), "edge-desk").enrol();
    revokeByRotation(desk);
    List<String> spellings = KeySpelling.spellings(desk.pub());
    for (String spelling : spellings) {
      Http.Resp enrol = enrolAs(desk.key, "edge-desk", spelling);
      assertThat(enrol.status()).as(spelling).isEqualTo(403);
      assertThat(enrol.raw()).isEqualTo("{\"error\":\"this host key was revoked on this relay\",\"code\":\"REVOKED\"}");
      Http.Resp hop = getAs(desk.key, spelling, "/v2/relay/items?after=0");
      assertThat(hop.status()).as(spelling).isEqualTo(401);
      assertThat(hop.raw()).isEqualTo(BAD_HOP);
    }
  }

  /**
   * Enrolment, hop and push targets compare keys canonically, store the canonical spelling, and echo what the caller
   * sent where the wire echoes a key ({@code you.pubkey}, an accept receipt's keys). Honest clients send the
   * canonical spelling, so their bytes are unchanged.
   */
  @Test
  void every_spelling_names_one_key_at_the_enrolment_hop_and_push_edges_and_the_wire_echoes_the_sent_spelling()
      throws Exception {
    Ed25519KeyPair k = Ed25519KeyPair.generate();
    String canonical = k.publicKeyB64();
    String alt = KeySpelling.spellings(canonical).get(3);
    // enrolled under a non-canonical spelling: stored canonically, so the canonical spelling authenticates
    assertThat(enrolAs(k, "edge-odd", alt).status()).isEqualTo(200);
    TestHost plain = new TestHost(relay.url(), "edge-odd", k);
    JsonNode you = plain.get("/v2/relay/info").json().get("you");
    assertThat(you.get("pubkey").asText()).isEqualTo(canonical);
    assertThat(getAs(k, alt, "/v2/relay/info").json().get("you").get("pubkey").asText()).as("echoed as sent")
        .isEqualTo(alt);

    // a push to the alternative spelling reaches the one queue and is echoed as sent
    String id = Envelopes.newId();
    byte[] wire = Envelopes.sealed(id);
    JsonNode result = a.push(TestHost.item("envelope", id, List.of(alt), List.of(wire))).json().get("results").get(0);
    assertThat(result.get("status").asText()).isEqualTo("accepted");
    assertThat(result.get("targets").get(0).get("host_pubkey").asText()).isEqualTo(alt);
    assertThat(result.get("accept").get("targets").get(0).get("host_pubkey").asText()).isEqualTo(alt);
    assertThat(plain.pull(0, null, null).json().get("items").get(0).get("item_id").asText()).isEqualTo(id);
    // the canonical spelling of the same item is the same target: a duplicate with the same seq
    JsonNode again = a.push(TestHost.item("envelope", id, List.of(canonical), List.of(wire))).json()
        .get("results").get(0);
    assertThat(again.get("status").asText()).isEqualTo("duplicate");
    assertThat(again.get("targets").get(0).get("seq").asLong())
        .isEqualTo(result.get("targets").get(0).get("seq").asLong());
    // two spellings of one key in one item are one target named twice
    String id2 = Envelopes.newId();
    JsonNode twice = a.push(TestHost.item("envelope", id2, List.of(canonical, alt),
        List.of(Envelopes.sealed(id2), Envelopes.sealed(id2)))).json().get("results").get(0);
    assertThat(twice.get("status").asText()).isEqualTo("rejected:duplicate target");

    // the sender echoed as it spelled its own key
    String id3 = Envelopes.newId();
    String body = Json.stringify(Json.MAPPER.createObjectNode().set("items", Json.MAPPER.createArrayNode()
        .add(TestHost.item("envelope", id3, List.of(b.pub()), List.of(Envelopes.sealed(id3))))));
    String ts = Long.toString(now());
    Http.Resp pushed = Http.send(relay.url(), "POST", "/v2/relay/items", body, alt, null, ts,
        Http.sign(k, "POST", "/v2/relay/items", ts, body));
    JsonNode accept = pushed.json().get("results").get(0).get("accept");
    assertThat(accept.get("sender_pubkey").asText()).isEqualTo(alt);
    assertThat(b.pull(0, null, null).json().get("items")).anySatisfy(
        it -> assertThat(it.get("sender_pubkey").asText()).isEqualTo(canonical));
  }

  // ---- item 9: the signed path is the routed path ----

  /**
   * The report: the hop signs the raw path while the router normalises it: {@code GET /v1/relay/../../v2/relay/items}
   * reached the v2 pull with its query unsigned; {@code POST /v2/relay/./ack}, {@code //v2/relay/ack} and
   * {@code /v2/relay/%61ck} each dodged the replay cache; {@code /v1/relay/./enrol} escaped the 8 KiB cap. Each is
   * refused before routing, even with a valid signature over the raw path, like the reference does for
   * {@code /v2/relay/info/} and {@code //v2/relay/info}.
   */
  @Test
  void non_normalised_paths_are_refused_with_401_before_routing_even_when_signed() throws Exception {
    String ackBody = "{\"epoch\":\"" + relay.server.epoch() + "\",\"through\":0}";
    byte[] ack = ackBody.getBytes(StandardCharsets.UTF_8);
    byte[] none = new byte[0];
    for (String path : List.of("/v1/relay/../../v2/relay/items?after=0", "/v2/relay/items/?after=0",
        "/v2/relay/items/.?after=0", "/v2/relay/%69tems?after=0", "/v1/relay/%2e%2e/%2e%2e/v2/relay/items?after=0",
        "/v2/relay/info/", "//v2/relay/info", "/v2/relay//items")) {
      RawHttp.Answer r = RawHttp.exchange(port(), RawHttp.signedHead(b.key, b.pub(), "GET", path, now(), none, -1),
          null, 5000);
      assertThat(r.status()).as(path).isEqualTo(401);
      assertThat(r.body()).as(path).isEqualTo(BAD_HOP);
    }
    for (String path : List.of("/v2/relay/./ack", "//v2/relay/ack", "/v2/relay/%61ck", "/v2/relay/ack/",
        "/v2/relay/ack/.", "/v2/relay\\ack")) {
      RawHttp.Answer r = RawHttp.exchange(port(), RawHttp.signedHead(b.key, b.pub(), "POST", path, now(), ack,
          ack.length), ack, 5000);
      assertThat(r.status()).as(path).isEqualTo(401);
      assertThat(r.body()).as(path).isEqualTo(BAD_HOP);
    }
    // the reference's own examples, without any hop
    for (String path : List.of("/v2/relay/info/", "//v2/relay/info")) {
      RawHttp.Answer r = RawHttp.exchange(port(), "GET " + path + " HTTP/1.1\r\nHost: r\r\n\r\n", null, 5000);
      assertThat(r.status()).as(path).isEqualTo(401);
      assertThat(r.body()).isEqualTo(BAD_HOP);
    }
    // the 8 KiB enrolment cap cannot be escaped: refused at once, the declared 100 KB never read
    RawHttp.Answer enrol = RawHttp.exchange(port(), "POST /v1/relay/./enrol HTTP/1.1\r\nHost: r\r\n"
        + "content-type: application/json\r\ncontent-length: 100000\r\n\r\n", null, 5000, true);
    assertThat(enrol.status()).isEqualTo(401);
    assertThat(enrol.closed()).isTrue();
    // a v2 path in another case is not the v2 route: its query would be unsigned (v1 rule), so it never reaches it
    RawHttp.Answer upper = RawHttp.exchange(port(), RawHttp.signedHead(b.key, b.pub(), "GET",
        "/V2/relay/items?after=5", now(), none, -1), null, 5000);
    assertThat(upper.status()).isEqualTo(404);
    // the normalised forms still work
    assertThat(RawHttp.exchange(port(), RawHttp.signedHead(b.key, b.pub(), "GET", "/v2/relay/items?after=0", now(),
        none, -1), null, 5000).status()).isEqualTo(200);
    assertThat(RawHttp.exchange(port(), RawHttp.signedHead(b.key, b.pub(), "POST", "/v2/relay/ack", now(), ack,
        ack.length), ack, 5000).status()).isEqualTo(200);
  }
}
