package io.mbxrelay.metrics;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.mbxrelay.crypto.Ed25519KeyPair;
import io.mbxrelay.testing.Envelopes;
import io.mbxrelay.testing.Http;
import io.mbxrelay.testing.RelayHarness;
import io.mbxrelay.testing.Scrape;
import io.mbxrelay.testing.TestHost;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Clock;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Every relay counter with a code path moves when that path runs over real HTTP, seen through a scrape of the admin
 * {@code /metrics}; labels stay bounded (no keys, ids or names).
 */
class RelayMetricsHttpTest {
  @TempDir
  static Path dir;
  static RelayHarness relay;

  @BeforeAll
  static void start() throws Exception {
    relay = RelayHarness.start(dir, Map.of("MBX_RELAY_ADMIN_QUEUE_SCAN_INTERVAL_MS", "100"), Clock.systemUTC(),
        Ed25519KeyPair.generate());
  }

  @AfterAll
  static void stop() {
    relay.close();
  }

  private static TestHost host(String name) throws Exception {
    return new TestHost(relay.url(), name).enrol();
  }

  private static double delta(Scrape before, Scrape after, String name, String... labels) {
    return after.value(name, labels) - before.value(name, labels);
  }

  private static String status(Http.Resp r) {
    return r.json().get("results").get(0).get("status").asText();
  }

  @Test
  void accepted_duplicate_and_each_reachable_reject_class_move_their_counter() throws Exception {
    TestHost a = host("m-alpha");
    TestHost b = host("m-beta");
    Scrape before = Scrape.of(relay.adminUrl());
    String id = Envelopes.newId();
    byte[] wire = Envelopes.sealed(id);
    assertThat(status(a.pushEnvelope(b, id, wire))).isEqualTo("accepted");
    assertThat(status(a.pushEnvelope(b, id, wire))).isEqualTo("duplicate");
    byte[] other = (" " + new String(wire, StandardCharsets.UTF_8)).getBytes(StandardCharsets.UTF_8);
    assertThat(status(a.pushEnvelope(b, id, other))).isEqualTo("rejected:conflict");
    assertThat(status(a.push(TestHost.item("envelope", "", List.of(b.pub()), List.of(wire)))))
        .isEqualTo("rejected:bad item id");
    ObjectNode badWire = TestHost.item("envelope", Envelopes.newId(), List.of(b.pub()), List.of(wire));
    ((ObjectNode) badWire.get("targets").get(0)).put("wire_b64", "!!!");
    assertThat(status(a.push(badWire))).isEqualTo("rejected:bad wire");
    String stranger = Ed25519KeyPair.generate().publicKeyB64();
    String id2 = Envelopes.newId();
    assertThat(status(a.push(TestHost.item("envelope", id2, List.of(stranger), List.of(Envelopes.sealed(id2))))))
        .isEqualTo("rejected:target not enrolled");
    String id3 = Envelopes.newId();
    assertThat(status(a.push(TestHost.item("envelope", id3, List.of(b.pub(), b.pub()),
        List.of(Envelopes.sealed(id3), Envelopes.sealed(id3)))))).isEqualTo("rejected:duplicate target");
    String id4 = Envelopes.newId();
    assertThat(status(a.pushEnvelope(b, id4, new byte[600_000]))).isEqualTo("rejected:item over size limit");
    assertThat(status(a.pushEnvelope(b, Envelopes.newId(), "{}".getBytes(StandardCharsets.UTF_8))))
        .startsWith("rejected:bad envelope");
    assertThat(status(a.push(TestHost.item("receipt", "receipt:x", List.of(b.pub()),
        List.of("{}".getBytes(StandardCharsets.UTF_8)))))).isEqualTo("rejected:bad receipt");
    Scrape after = Scrape.of(relay.adminUrl());

    assertThat(delta(before, after, "mbxrelay_items_accepted_total")).isEqualTo(1);
    assertThat(delta(before, after, "mbxrelay_items_duplicate_total")).isEqualTo(1);
    for (String reason : List.of("conflict", "bad_item", "bad_wire", "not_enrolled", "duplicate_target", "size",
        "envelope", "receipt")) {
      assertThat(delta(before, after, "mbxrelay_items_rejected_total", "reason=\"" + reason + "\""))
          .as(reason).isEqualTo(1);
    }
    assertThat(delta(before, after, "mbxrelay_items_rejected_total", "reason=\"other\"")).isZero();
    assertThat(after.raw).doesNotContain(a.pub()).doesNotContain(b.pub()).doesNotContain(id).doesNotContain("m-beta");
    // every push went through the single writer on its fixed address
    assertThat(delta(before, after, "vertx_eventbus_processed_total", "address=\"mbx.store.write\"")).isPositive();
    assertThat(delta(before, after, "mbxrelay_writer_transaction_seconds_count")).isPositive();
    assertThat(delta(before, after, "mbxrelay_writer_transaction_commands_count")).isPositive();
    assertThat(delta(before, after, "mbxrelay_writer_commit_seconds_count")).isPositive();
  }

  @Test
  void live_enrolments_are_a_gauge_that_follows_enrolment_and_revocation() throws Exception {
    double before = Scrape.of(relay.adminUrl()).value("mbxrelay_enrolments_live");
    TestHost a = host("l-alpha");
    host("l-beta");
    assertThat(Scrape.of(relay.adminUrl()).value("mbxrelay_enrolments_live")).isEqualTo(before + 2);
    io.mbxrelay.store.model.DenyOutcome d = relay.server.writes()
        .send(new io.mbxrelay.store.StoreCommand.Deny("host_fp", a.key.fingerprint(), "test"))
        .toCompletionStage().toCompletableFuture().get(10, java.util.concurrent.TimeUnit.SECONDS);
    assertThat(d.revoked()).isEqualTo(1);
    assertThat(Scrape.of(relay.adminUrl()).value("mbxrelay_enrolments_live")).isEqualTo(before + 1);
  }

  @Test
  void pull_pages_items_and_acks_by_outcome_move_their_counters() throws Exception {
    TestHost a = host("p-alpha");
    TestHost b = host("p-beta");
    for (int i = 0; i < 3; i++) {
      String id = Envelopes.newId();
      assertThat(status(a.pushEnvelope(b, id, Envelopes.sealed(id)))).isEqualTo("accepted");
    }
    Scrape before = Scrape.of(relay.adminUrl());
    Http.Resp page1 = b.pull(0, 2, null);
    Http.Resp page2 = b.pull(page1.json().get("last_seq").asLong(), 2, null);
    assertThat(page2.json().get("items").size()).isEqualTo(1);
    String epoch = relay.server.epoch();
    long last = page2.json().get("last_seq").asLong();
    assertThat(b.ack(epoch, last).status()).isEqualTo(200);
    assertThat(b.ack("not-the-epoch", last).status()).isEqualTo(409);
    assertThat(b.ack(epoch, last + 1_000_000).status()).isEqualTo(400);
    Scrape after = Scrape.of(relay.adminUrl());

    assertThat(delta(before, after, "mbxrelay_pull_pages_total")).isEqualTo(2);
    assertThat(delta(before, after, "mbxrelay_pull_items_total")).isEqualTo(3);
    assertThat(delta(before, after, "mbxrelay_acks_total", "outcome=\"ok\"")).isEqualTo(1);
    assertThat(delta(before, after, "mbxrelay_acks_total", "outcome=\"epoch_changed\"")).isEqualTo(1);
    assertThat(delta(before, after, "mbxrelay_acks_total", "outcome=\"bad_ack\"")).isEqualTo(1);
    assertThat(delta(before, after, "mbxrelay_acked_items_total")).isEqualTo(3);
  }

  @Test
  void hop_failures_are_counted_by_reason_class_on_the_401_path() throws Exception {
    TestHost a = host("h-alpha");
    Ed25519KeyPair unknown = Ed25519KeyPair.generate();
    Scrape before = Scrape.of(relay.adminUrl());
    String path = "/v2/relay/items?after=0";
    String now = Long.toString(System.currentTimeMillis());
    String old = Long.toString(System.currentTimeMillis() - 3_600_000);
    assertThat(Http.send(relay.url(), "GET", path, null).status()).isEqualTo(401);
    assertThat(Http.send(relay.url(), "GET", path, null, a.pub(), null, "soon", "c2ln").status()).isEqualTo(401);
    assertThat(Http.send(relay.url(), "GET", path, null, a.pub(), null, old, Http.sign(a.key, "GET", path, old, null))
        .status()).isEqualTo(401);
    assertThat(Http.send(relay.url(), "GET", path, null, unknown.publicKeyB64(), null, now,
        Http.sign(unknown, "GET", path, now, null)).status()).isEqualTo(401);
    assertThat(Http.send(relay.url(), "GET", path, null, a.pub(), null, now,
        Http.sign(unknown, "GET", path, now, null)).status()).isEqualTo(401);
    // info takes an optional hop: a missing hop there is not a failure
    assertThat(Http.send(relay.url(), "GET", "/v2/relay/info", null).status()).isEqualTo(200);
    Scrape after = Scrape.of(relay.adminUrl());

    for (String reason : List.of("missing_headers", "bad_ts", "stale", "unknown_key", "bad_signature")) {
      assertThat(delta(before, after, "mbxrelay_hop_failures_total", "reason=\"" + reason + "\""))
          .as(reason).isEqualTo(1);
    }
  }

  @Test
  void a_401_is_labelled_with_the_route_template_it_was_addressed_to_and_unknown_paths_stay_unlabelled()
      throws Exception {
    // regression (issue 12 item 4): every 401 carried route="" because the hop checks answer before a route matches,
    // so the dashboard's per-route panels never showed an auth failure
    TestHost a = host("r-alpha");
    TestHost b = host("r-beta");
    Ed25519KeyPair unknown = Ed25519KeyPair.generate();
    Scrape before = Scrape.of(relay.adminUrl());
    // missing hop headers: refused from the headers, before the body is read
    assertThat(Http.send(relay.url(), "POST", "/v2/relay/items", "{}").status()).isEqualTo(401);
    // a signature that does not verify: refused after the body was read, by the hop check
    String now = Long.toString(System.currentTimeMillis());
    String ack = "{\"epoch\":\"x\",\"through\":1}";
    assertThat(Http.send(relay.url(), "POST", "/v2/relay/ack", ack, a.pub(), null, now,
        Http.sign(unknown, "POST", "/v2/relay/ack", now, ack)).status()).isEqualTo(401);
    // the admin deny route matched before the hop check (no token): labelled once, not twice
    assertThat(Http.send(relay.url(), "GET", "/admin/deny", null).status()).isEqualTo(401);
    // a path the relay does not serve keeps the empty label (label values never come from the request)
    assertThat(Http.send(relay.url(), "GET", "/no/such/path-" + System.nanoTime(), null).status()).isEqualTo(401);
    // a push that passes keeps its single label
    String id = Envelopes.newId();
    assertThat(status(a.pushEnvelope(b, id, Envelopes.sealed(id)))).isEqualTo("accepted");
    String requests = "vertx_http_server_requests_total";
    // Vert.x counts a request when its response has ended on the server, which can be just after the client has read
    // it: scrape again until the last request is counted (the deltas below are then exact)
    Scrape after = Scrape.of(relay.adminUrl());
    for (long deadline = System.nanoTime() + 5_000_000_000L; System.nanoTime() < deadline
        && delta(before, after, requests, "code=\"200\"", "method=\"POST\"", "route=\"/v2/relay/items\"") < 1; ) {
      Thread.sleep(20); // polling the scrape with a deadline
      after = Scrape.of(relay.adminUrl());
    }

    assertThat(delta(before, after, requests, "code=\"401\"", "method=\"POST\"", "route=\"/v2/relay/items\""))
        .isEqualTo(1);
    assertThat(delta(before, after, requests, "code=\"401\"", "method=\"POST\"", "route=\"/v2/relay/ack\""))
        .isEqualTo(1);
    assertThat(delta(before, after, requests, "code=\"401\"", "method=\"GET\"", "route=\"/admin/deny\""))
        .isEqualTo(1);
    assertThat(delta(before, after, requests, "code=\"401\"", "method=\"GET\"", "route=\"\"")).isEqualTo(1);
    assertThat(delta(before, after, requests, "code=\"200\"", "method=\"POST\"", "route=\"/v2/relay/items\""))
        .isEqualTo(1);
    assertThat(after.raw).doesNotContain("route=\"/admin/deny>").doesNotContain("/no/such/path")
        .doesNotContain("route=\"/v2/relay/items>");
  }

  @Test
  void enrolments_are_counted_and_the_queue_gauges_follow_the_store() throws Exception {
    Scrape before = Scrape.of(relay.adminUrl());
    TestHost a = host("q-alpha");
    TestHost b = host("q-beta");
    String id = Envelopes.newId();
    assertThat(status(a.pushEnvelope(b, id, Envelopes.sealed(id)))).isEqualTo("accepted");
    Scrape after = Scrape.of(relay.adminUrl());
    assertThat(delta(before, after, "mbxrelay_enrolments_total", "outcome=\"ok\"")).isEqualTo(2);

    long deadline = System.currentTimeMillis() + 10_000;
    Scrape s = after;
    while (s.value("mbxrelay_queue_items") < 1 && System.currentTimeMillis() < deadline) {
      Thread.sleep(50);
      s = Scrape.of(relay.adminUrl());
    }
    assertThat(s.value("mbxrelay_queue_items")).isGreaterThanOrEqualTo(1);
    assertThat(s.value("mbxrelay_queue_bytes")).isPositive();
    assertThat(s.value("mbxrelay_queue_largest_target_items")).isGreaterThanOrEqualTo(1);
    assertThat(s.value("mbxrelay_queue_largest_target_bytes")).isPositive();
    assertThat(s.value("mbxrelay_queue_limit_items")).isEqualTo(relay.config.limits().maxQueueItems());
    assertThat(s.value("vertx_eventbus_handlers", "address=\"mbx.store.write\"")).isEqualTo(1);
  }

  @Test
  void a_client_chosen_http_method_never_becomes_a_metric_label_value() throws Exception {
    java.net.http.HttpClient client = java.net.http.HttpClient.newHttpClient();
    for (String m : new String[] {"FOOBARMETHOD", "XYZZY" + System.nanoTime()}) {
      java.net.http.HttpResponse<String> r = client.send(java.net.http.HttpRequest.newBuilder(
          java.net.URI.create(relay.url() + "/v2/relay/info")).method(m,
          java.net.http.HttpRequest.BodyPublishers.noBody()).build(), java.net.http.HttpResponse.BodyHandlers.ofString());
      assertThat(r.statusCode()).isEqualTo(401);
    }
    String text = java.net.http.HttpClient.newHttpClient().send(java.net.http.HttpRequest.newBuilder(
        java.net.URI.create(relay.adminUrl() + "/metrics")).build(),
        java.net.http.HttpResponse.BodyHandlers.ofString()).body();
    assertThat(text).doesNotContain("FOOBARMETHOD").doesNotContain("XYZZY").contains("method=\"other\"");
  }

  @Test
  void an_exact_replay_of_a_push_moves_the_replay_counter() throws Exception {
    TestHost a = host("replayer");
    TestHost b = host("replayee");
    String id = Envelopes.newId();
    String body = io.mbxrelay.wire.Json.stringify(io.mbxrelay.wire.Json.MAPPER.createObjectNode().set("items",
        io.mbxrelay.wire.Json.MAPPER.createArrayNode().add(TestHost.item("envelope", id, java.util.List.of(b.pub()),
            java.util.List.of(Envelopes.sealed(id))))));
    String ts = Long.toString(System.currentTimeMillis());
    String sig = Http.sign(a.key, "POST", "/v2/relay/items", ts, body);
    Scrape before = Scrape.of(relay.adminUrl());
    assertThat(Http.send(relay.url(), "POST", "/v2/relay/items", body, a.pub(), null, ts, sig).status()).isEqualTo(200);
    assertThat(Http.send(relay.url(), "POST", "/v2/relay/items", body, a.pub(), null, ts, sig).status()).isEqualTo(401);
    Scrape after = Scrape.of(relay.adminUrl());
    assertThat(delta(before, after, "mbxrelay_replay_refused_total")).isEqualTo(1);
  }

  @Test
  void revocations_by_deny_list_and_by_rotation_move_the_revocation_counter() throws Exception {
    try (RelayHarness r = RelayHarness.start(dir.resolve("revoke"), Map.of("MBX_RELAY_ADMIN_TOKEN", "s3cret-admin-token-with-at-least-32-characters"),
        Clock.systemUTC(), Ed25519KeyPair.generate())) {
      TestHost denied = new TestHost(r.url(), "denied").enrol();
      TestHost rotating = new TestHost(r.url(), "rotating").enrol();
      Scrape before = Scrape.of(r.adminUrl());
      java.net.http.HttpResponse<String> deny = java.net.http.HttpClient.newHttpClient().send(
          java.net.http.HttpRequest.newBuilder(java.net.URI.create(r.url() + "/admin/deny"))
              .header("authorization", "Bearer s3cret-admin-token-with-at-least-32-characters").header("content-type", "application/json")
              .POST(java.net.http.HttpRequest.BodyPublishers.ofString("{\"kind\":\"host_fp\",\"value\":\""
                  + denied.key.fingerprint() + "\"}")).build(),
          java.net.http.HttpResponse.BodyHandlers.ofString());
      assertThat(deny.statusCode()).as(deny.body()).isEqualTo(200);
      Ed25519KeyPair next = Ed25519KeyPair.generate();
      com.fasterxml.jackson.databind.node.ObjectNode rec = io.mbxrelay.wire.Json.MAPPER.createObjectNode()
          .put("v", 1).put("type", "host-rotation").put("host", "rotating").put("old_pub", rotating.pub())
          .put("new_pub", next.publicKeyB64()).put("new_enc_pub", io.mbxrelay.wire.B64.encode(new byte[32]))
          .put("iat", io.mbxrelay.wire.IsoTime.format(System.currentTimeMillis()));
      byte[] canon = io.mbxrelay.wire.CanonicalJson.canonicalBytes(rec);
      com.fasterxml.jackson.databind.node.ObjectNode rotation = io.mbxrelay.wire.Json.MAPPER.createObjectNode();
      rotation.set("rec", rec);
      rotation.put("old_sig", rotating.key.signB64(canon)).put("new_sig", next.signB64(canon));
      com.fasterxml.jackson.databind.node.ObjectNode body = io.mbxrelay.wire.Json.MAPPER.createObjectNode();
      body.set("rotation", rotation);
      Http.Resp rot = Http.send(r.url(), "POST", "/v2/relay/rotate", io.mbxrelay.wire.Json.stringify(body));
      assertThat(rot.status()).as(rot.raw()).isEqualTo(200);
      Scrape after = Scrape.of(r.adminUrl());
      assertThat(delta(before, after, "mbxrelay_revocations_total", "cause", "deny")).isEqualTo(1);
      assertThat(delta(before, after, "mbxrelay_revocations_total", "cause", "rotation")).isEqualTo(1);
    }
  }

  @Test
  void rate_quota_full_enrolment_and_crowded_name_move_their_counters() throws Exception {
    try (RelayHarness small = RelayHarness.start(dir.resolve("small"), Map.of(
        "MBX_RELAY_LIMITS_PUSH_REQUESTS_PER_MINUTE", "2",
        "MBX_RELAY_LIMITS_MAX_QUEUE_ITEMS", "1",
        "MBX_RELAY_LIMITS_MAX_SENDER_ITEMS", "1",
        "MBX_RELAY_LIMITS_MAX_ENROLMENTS", "2",
        "MBX_RELAY_LIMITS_MAX_PER_NAME", "1"), Clock.systemUTC(), Ed25519KeyPair.generate())) {
      TestHost a = new TestHost(small.url(), "twin").enrol();
      TestHost b = new TestHost(small.url(), "twin").enrol();
      Scrape before = Scrape.of(small.adminUrl());
      assertThat(new TestHost(small.url(), "third").tryEnrol().status()).isEqualTo(503);
      String id1 = Envelopes.newId();
      assertThat(status(a.pushEnvelope(b, id1, Envelopes.sealed(id1)))).isEqualTo("accepted");
      String id2 = Envelopes.newId();
      assertThat(status(a.pushEnvelope(b, id2, Envelopes.sealed(id2)))).startsWith("rejected:quota:");
      String id3 = Envelopes.newId();
      // the push rate is read from the headers (issue 11 item 2): 429 before the items are read, counted once
      assertThat(a.pushEnvelope(b, id3, Envelopes.sealed(id3)).status()).isEqualTo(429);
      String path = "/v2/relay/items?after=0";
      String now = Long.toString(System.currentTimeMillis());
      assertThat(Http.send(small.url(), "GET", path, null, null, "twin", now, Http.sign(a.key, "GET", path, now, null))
          .status()).isEqualTo(401);
      Scrape after = Scrape.of(small.adminUrl());

      assertThat(delta(before, after, "mbxrelay_enrolments_total", "outcome=\"full\"")).isEqualTo(1);
      assertThat(delta(before, after, "mbxrelay_items_rejected_total", "reason=\"quota\"")).isEqualTo(1);
      assertThat(delta(before, after, "mbxrelay_items_rejected_total", "reason=\"rate\"")).isEqualTo(1);
      assertThat(delta(before, after, "mbxrelay_hop_failures_total", "reason=\"crowded_name\"")).isEqualTo(1);
    }
  }
}
