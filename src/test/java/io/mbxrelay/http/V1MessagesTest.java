package io.mbxrelay.http;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.mbxrelay.crypto.Ed25519KeyPair;
import io.mbxrelay.testing.Envelopes;
import io.mbxrelay.testing.Http;
import io.mbxrelay.testing.MutableClock;
import io.mbxrelay.testing.RelayHarness;
import io.mbxrelay.testing.TestHost;
import io.mbxrelay.wire.CanonicalJson;
import io.mbxrelay.wire.IsoTime;
import io.mbxrelay.wire.Json;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The v1 message endpoints for hosts that predate v2 (docs/protocol.md §3 "v1 endpoints", §7.11). */
class V1MessagesTest {

  /** A v1 request: hop by name (x-mbx-host, no x-mbx-key), path signed without the query. */
  private static Http.Resp v1(RelayHarness r, TestHost h, String method, String pathAndQuery, String body)
      throws Exception {
    String ts = Long.toString(h.clock.getAsLong());
    int q = pathAndQuery.indexOf('?');
    String path = q < 0 ? pathAndQuery : pathAndQuery.substring(0, q);
    String text = io.mbxrelay.crypto.HopText.signedText(method, path, ts, body == null ? "" : body);
    return Http.send(r.url(), method, pathAndQuery, body, null, h.name, ts,
        h.key.signB64(text.getBytes(StandardCharsets.UTF_8)));
  }

  private static ObjectNode envelope(String id, String to) {
    ObjectNode env = (ObjectNode) Json.parse(new String(Envelopes.sealed(id), StandardCharsets.UTF_8));
    env.putArray("to").add(to);
    return env;
  }

  private static String batch(ObjectNode... envs) {
    ObjectNode b = Json.MAPPER.createObjectNode();
    var arr = b.putArray("envelopes");
    for (ObjectNode e : envs) {
      arr.add(e);
    }
    return Json.stringify(b);
  }

  @Test
  void a_v1_host_pushes_by_name_and_pulls_parsed_envelopes_with_a_cursor_then_acks(@TempDir Path dir)
      throws Exception {
    MutableClock clock = MutableClock.now();
    try (RelayHarness r = RelayHarness.start(dir, Map.of(), clock, Ed25519KeyPair.generate())) {
      TestHost a = new TestHost(r.url(), "alpha").enrol();
      TestHost b = new TestHost(r.url(), "beta").enrol();
      a.clock = clock::millis;
      b.clock = clock::millis;
      String id = Envelopes.newId();
      ObjectNode env = envelope(id, "bob@Beta");
      Http.Resp push = v1(r, a, "POST", "/v1/relay/messages", batch(env));
      assertThat(push.status()).as(push.raw()).isEqualTo(200);
      assertThat(push.raw()).isEqualTo("{\"stored\":1}");
      // a retry (re-signed with a fresh ts, as clients do) is counted as stored and stores nothing new
      clock.advance(1);
      assertThat(v1(r, a, "POST", "/v1/relay/messages", batch(env)).raw()).isEqualTo("{\"stored\":1}");

      Http.Resp pull = v1(r, b, "GET", "/v1/relay/messages?after=0", null);
      assertThat(pull.status()).isEqualTo(200);
      JsonNode items = pull.json().get("items");
      assertThat(items).hasSize(1);
      assertThat(items.get(0).get("envelope")).isEqualTo(env);
      assertThat(items.get(0).get("from").asText()).isEqualTo("alpha");
      long cursor = pull.json().get("cursor").asLong();
      assertThat(cursor).isEqualTo(items.get(0).get("seq").asLong());

      // v1 items never expire
      clock.advance(Duration.ofDays(30));
      r.server.sweepNow().toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
      assertThat(v1(r, b, "GET", "/v1/relay/messages?after=0", null).json().get("items")).hasSize(1);

      assertThat(v1(r, b, "POST", "/v1/relay/ack", "{\"cursor\":" + cursor + "}").raw()).isEqualTo("{\"ok\":true}");
      assertThat(v1(r, b, "GET", "/v1/relay/messages?after=0", null).json().get("items")).isEmpty();
    }
  }

  @Test
  void v1_errors_stop_the_batch_and_answer_413_only_when_nothing_was_stored(@TempDir Path dir) throws Exception {
    try (RelayHarness r = RelayHarness.start(dir)) {
      TestHost a = new TestHost(r.url(), "alpha").enrol();
      new TestHost(r.url(), "beta").enrol();
      new TestHost(r.url(), "dup").enrol();
      new TestHost(r.url(), "DUP").enrol();
      Http.Resp unknown = v1(r, a, "POST", "/v1/relay/messages", batch(envelope(Envelopes.newId(), "x@nohost")));
      assertThat(unknown.status()).isEqualTo(413);
      assertThat(unknown.raw()).isEqualTo("{\"stored\":0,\"error\":\"recipient host not enrolled: nohost\"}");
      Http.Resp partial = v1(r, a, "POST", "/v1/relay/messages", batch(envelope(Envelopes.newId(), "b@beta"),
          envelope(Envelopes.newId(), "d@dup"), envelope(Envelopes.newId(), "b@beta")));
      assertThat(partial.status()).isEqualTo(200);
      assertThat(partial.json().get("stored").asInt()).isEqualTo(1);
      assertThat(partial.json().get("error").asText()).isEqualTo(
          "recipient host ambiguous: dup (several hosts use that name here; upgrade to address hosts by key)");
      ObjectNode bad = envelope(Envelopes.newId(), "b@beta");
      bad.put("v", 2);
      assertThat(v1(r, a, "POST", "/v1/relay/messages", batch(bad)).raw())
          .isEqualTo("{\"stored\":0,\"error\":\"bad envelope: unsupported version\"}");
      assertThat(v1(r, a, "POST", "/v1/relay/messages", "{\"envelopes\":5}").raw()).isEqualTo("{\"error\":\"bad batch\"}");
      StringBuilder many = new StringBuilder("{\"envelopes\":[");
      for (int i = 0; i < 201; i++) {
        many.append(i == 0 ? "" : ",").append("{}");
      }
      Http.Resp over = v1(r, a, "POST", "/v1/relay/messages", many.append("]}").toString());
      assertThat(over.status()).isEqualTo(413);
      assertThat(over.json().get("error").asText()).isEqualTo("batch over limit 200");
    }
  }

  @Test
  void a_v1_envelope_refused_on_a_later_recipient_leaves_the_earlier_recipients_head_where_it_was(@TempDir Path dir)
      throws Exception {
    MutableClock clock = MutableClock.now();
    try (RelayHarness r = RelayHarness.start(dir, Map.of("MBX_RELAY_LIMITS_MAX_SENDER_ITEMS", "1"), clock,
        Ed25519KeyPair.generate())) {
      TestHost a = new TestHost(r.url(), "alpha").enrol();
      TestHost b = new TestHost(r.url(), "beta").enrol();
      new TestHost(r.url(), "gamma").enrol();
      a.clock = clock::millis;
      b.clock = clock::millis;
      assertThat(v1(r, a, "POST", "/v1/relay/messages", batch(envelope(Envelopes.newId(), "g@gamma"))).raw())
          .isEqualTo("{\"stored\":1}");
      String headBefore = b.pull(0, null, null).json().get("head_seq").toString();
      clock.advance(5);
      ObjectNode both = envelope(Envelopes.newId(), "b@beta");
      ((com.fasterxml.jackson.databind.node.ArrayNode) both.get("to")).add("g@gamma");
      Http.Resp refused = v1(r, a, "POST", "/v1/relay/messages", batch(both));
      assertThat(refused.status()).isEqualTo(413);
      assertThat(refused.raw()).isEqualTo("{\"stored\":0,\"error\":\"sender share exceeded for gamma\"}");
      Http.Resp page = b.pull(0, null, null);
      assertThat(page.json().get("items")).isEmpty();
      assertThat(page.json().get("head_seq").toString()).as("beta's head after the refused envelope")
          .isEqualTo(headBefore);
    }
  }

  @Test
  void v1_and_v2_share_dedup_and_the_target_allowlist(@TempDir Path dir) throws Exception {
    try (RelayHarness r = RelayHarness.start(dir)) {
      TestHost a = new TestHost(r.url(), "alpha").enrol();
      TestHost b = new TestHost(r.url(), "beta").enrol();
      TestHost c = new TestHost(r.url(), "gamma").enrol();
      String id = Envelopes.newId();
      ObjectNode env = envelope(id, "b@beta");
      byte[] wire = Json.stringify(env).getBytes(StandardCharsets.UTF_8);
      assertThat(a.push(TestHost.item("envelope", id, List.of(b.pub()), List.of(wire))).json().get("results").get(0)
          .get("status").asText()).isEqualTo("accepted");
      assertThat(v1(r, a, "POST", "/v1/relay/messages", batch(env)).raw()).isEqualTo("{\"stored\":1}");
      assertThat(b.pull(0, null, null).json().get("items")).hasSize(1);

      ObjectNode list = Json.MAPPER.createObjectNode().put("v", 1).put("type", "relay-senders").put("host_pubkey", b.pub());
      list.putArray("senders").add(c.pub());
      list.put("iat", IsoTime.format(System.currentTimeMillis()));
      ObjectNode req = Json.MAPPER.createObjectNode();
      req.set("list", list);
      req.put("sig", b.key.signB64(CanonicalJson.canonicalBytes(list)));
      assertThat(b.post("/v2/relay/senders", Json.stringify(req)).status()).isEqualTo(200);
      Http.Resp refused = v1(r, a, "POST", "/v1/relay/messages", batch(envelope(Envelopes.newId(), "b@beta")));
      assertThat(refused.raw()).isEqualTo("{\"stored\":0,\"error\":\"sender not accepted by beta\"}");
      assertThat(v1(r, c, "POST", "/v1/relay/messages", batch(envelope(Envelopes.newId(), "b@beta"))).raw())
          .isEqualTo("{\"stored\":1}");
    }
  }
}
