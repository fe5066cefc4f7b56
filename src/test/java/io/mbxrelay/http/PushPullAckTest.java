package io.mbxrelay.http;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.mbxrelay.crypto.Ed25519;
import io.mbxrelay.testing.Envelopes;
import io.mbxrelay.testing.Http;
import io.mbxrelay.testing.RelayHarness;
import io.mbxrelay.testing.TestHost;
import io.mbxrelay.wire.B64;
import io.mbxrelay.wire.CanonicalJson;
import io.mbxrelay.wire.Hashes;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Push, pull and ack over real HTTP against the real server (docs/protocol.md §3, §7.3, §7.4). */
class PushPullAckTest {
  @TempDir
  static Path dir;
  static RelayHarness relay;

  @BeforeAll
  static void start() throws Exception {
    relay = RelayHarness.start(dir);
  }

  @AfterAll
  static void stop() {
    relay.close();
  }

  private TestHost host(String name) throws Exception {
    return new TestHost(relay.url(), name).enrol();
  }

  @Test
  void a_non_canonical_oddly_spaced_wire_comes_back_byte_for_byte_with_its_exact_hash() throws Exception {
    TestHost a = host("alpha");
    TestHost b = host("beta");
    String id = Envelopes.newId();
    String compact = new String(Envelopes.sealed(id), StandardCharsets.UTF_8);
    byte[] odd = ("  " + compact.replace(",\"kind\"", " ,\n\t\"kind\"") + " \n").getBytes(StandardCharsets.UTF_8);
    Http.Resp push = a.pushEnvelope(b, id, odd);
    assertThat(push.status()).isEqualTo(200);
    JsonNode res = push.json().get("results").get(0);
    assertThat(res.get("status").asText()).isEqualTo("accepted");
    assertThat(res.get("accept").get("targets").get(0).get("wire_hash").asText()).isEqualTo(Hashes.sha256Hex(odd));

    Http.Resp pull = b.pull(0, null, null);
    assertThat(pull.status()).isEqualTo(200);
    JsonNode item = pull.json().get("items").get(0);
    assertThat(B64.decodeLenient(item.get("wire_b64").asText()).orElseThrow()).isEqualTo(odd);
    assertThat(item.get("item_id").asText()).isEqualTo(id);
    assertThat(item.get("kind").asText()).isEqualTo("envelope");
    assertThat(item.get("sender_pubkey").asText()).isEqualTo(a.pub());
  }

  @Test
  void the_accept_receipt_is_signed_by_the_relay_key_over_its_canonical_form() throws Exception {
    TestHost a = host("gamma");
    TestHost b = host("delta");
    String id = Envelopes.newId();
    JsonNode res = a.pushEnvelope(b, id, Envelopes.sealed(id)).json().get("results").get(0);
    JsonNode accept = res.get("accept");
    assertThat(accept.fieldNames()).toIterable()
        .containsExactly("v", "type", "relay_pubkey", "epoch", "sender_pubkey", "item_id", "targets", "at");
    assertThat(accept.get("relay_pubkey").asText()).isEqualTo(relay.relayKey.publicKeyB64());
    assertThat(accept.get("sender_pubkey").asText()).isEqualTo(a.pub());
    assertThat(accept.get("epoch").asText()).isEqualTo(relay.server.epoch());
    assertThat(res.get("targets").get(0).get("seq").asLong()).isEqualTo(accept.get("targets").get(0).get("seq").asLong());
    assertThat(Ed25519.verify(relay.relayKey.publicKeyB64(), CanonicalJson.canonicalBytes(accept),
        res.get("sig").asText())).isTrue();
  }

  @Test
  void a_retry_is_a_duplicate_with_the_original_seq_and_at_and_a_changed_wire_is_a_conflict() throws Exception {
    TestHost a = host("eps");
    TestHost b = host("zeta");
    String id = Envelopes.newId();
    byte[] wire = Envelopes.sealed(id);
    JsonNode first = a.pushEnvelope(b, id, wire).json().get("results").get(0);
    Thread.sleep(5);
    JsonNode second = a.pushEnvelope(b, id, wire).json().get("results").get(0);
    assertThat(second.get("status").asText()).isEqualTo("duplicate");
    assertThat(second.get("targets").get(0).get("seq").asLong()).isEqualTo(first.get("targets").get(0).get("seq").asLong());
    assertThat(second.get("accept").get("at").asText()).isEqualTo(first.get("accept").get("at").asText());
    assertThat(Ed25519.verify(relay.relayKey.publicKeyB64(), CanonicalJson.canonicalBytes(second.get("accept")),
        second.get("sig").asText())).isTrue();

    JsonNode conflict = a.pushEnvelope(b, id, Envelopes.sealed(id)).json().get("results").get(0);
    assertThat(conflict.get("status").asText()).isEqualTo("rejected:conflict");
    assertThat(conflict.get("targets")).isEmpty();
    assertThat(conflict.has("accept")).isFalse();
    assertThat(b.pull(0, null, null).json().get("items")).hasSize(1);
  }

  @Test
  void a_fan_out_with_one_bad_target_stores_nothing_for_any_target() throws Exception {
    TestHost a = host("eta");
    TestHost b = host("theta");
    TestHost c = host("iota");
    TestHost stranger = new TestHost(relay.url(), "kappa"); // never enrolled
    String id = Envelopes.newId();
    ObjectNode item = TestHost.item("envelope", id, List.of(b.pub(), c.pub(), stranger.pub()),
        List.of(Envelopes.sealed(id), Envelopes.sealed(id), Envelopes.sealed(id)));
    JsonNode res = a.push(item).json().get("results").get(0);
    assertThat(res.get("status").asText()).isEqualTo("rejected:target not enrolled");
    assertThat(b.pull(0, null, null).json().get("items")).isEmpty();
    assertThat(c.pull(0, null, null).json().get("items")).isEmpty();
    assertThat(b.pull(0, null, null).json().get("head_seq").asLong()).isZero();
  }

  @Test
  void one_item_to_several_targets_is_stored_once_per_target_and_a_repeated_target_is_refused() throws Exception {
    TestHost a = host("lambda");
    TestHost b = host("mu");
    TestHost c = host("nu");
    String id = Envelopes.newId();
    byte[] wb = Envelopes.sealed(id);
    byte[] wc = Envelopes.sealed(id);
    JsonNode res = a.push(TestHost.item("envelope", id, List.of(b.pub(), c.pub()), List.of(wb, wc)))
        .json().get("results").get(0);
    assertThat(res.get("status").asText()).isEqualTo("accepted");
    assertThat(res.get("targets")).hasSize(2);
    assertThat(B64.decodeLenient(b.pull(0, null, null).json().get("items").get(0).get("wire_b64").asText()).orElseThrow())
        .isEqualTo(wb);
    assertThat(B64.decodeLenient(c.pull(0, null, null).json().get("items").get(0).get("wire_b64").asText()).orElseThrow())
        .isEqualTo(wc);

    String id2 = Envelopes.newId();
    JsonNode dup = a.push(TestHost.item("envelope", id2, List.of(b.pub(), b.pub()),
        List.of(Envelopes.sealed(id2), Envelopes.sealed(id2)))).json().get("results").get(0);
    assertThat(dup.get("status").asText()).isEqualTo("rejected:duplicate target");
    assertThat(b.pull(0, null, null).json().get("items")).hasSize(1);
  }

  @Test
  void pages_stop_at_the_limit_and_at_the_byte_budget_and_ack_deletes_through_the_acked_seq() throws Exception {
    TestHost a = host("xi");
    TestHost b = host("omicron");
    for (int i = 0; i < 5; i++) {
      String id = Envelopes.newId();
      assertThat(a.pushEnvelope(b, id, Envelopes.sealed(id)).json().get("results").get(0).get("status").asText())
          .isEqualTo("accepted");
    }
    String epoch = relay.server.epoch();
    Http.Resp r1 = b.pull(0, 2, epoch);
    JsonNode p1 = r1.json();
    assertThat(p1.fieldNames()).toIterable().containsExactly("epoch", "head_seq", "items", "last_seq", "more");
    assertThat(r1.raw()).as("the streamed page is exactly JSON.stringify of the answer")
        .isEqualTo(io.mbxrelay.wire.Json.stringify(p1));
    assertThat(p1.get("items")).hasSize(2);
    assertThat(p1.get("more").asBoolean()).isTrue();
    long last = p1.get("last_seq").asLong();
    assertThat(last).isEqualTo(p1.get("items").get(1).get("seq").asLong());
    JsonNode p2 = b.pull(last, 10, epoch).json();
    assertThat(p2.get("items")).hasSize(3);
    assertThat(p2.get("more").asBoolean()).isFalse();
    assertThat(p2.get("items").get(0).get("seq").asLong()).isGreaterThan(last);
    long head = p2.get("head_seq").asLong();
    assertThat(p2.get("last_seq").asLong()).isEqualTo(head);

    JsonNode ack = b.ack(epoch, last).json();
    assertThat(ack.get("acked_through").asLong()).isEqualTo(last);
    assertThat(ack.get("deleted").asLong()).isEqualTo(2);
    assertThat(ack.get("head_seq").asLong()).isEqualTo(head);
    assertThat(b.pull(0, null, epoch).json().get("items")).hasSize(3);

    Http.Resp beyond = b.ack(epoch, head + 1);
    assertThat(beyond.status()).isEqualTo(400);
    assertThat(beyond.json().get("code").asText()).isEqualTo("BAD_ACK");
    assertThat(beyond.error()).isEqualTo("ack beyond the last allocated seq: treat as an epoch change");
    assertThat(beyond.json().get("head_seq").asLong()).isEqualTo(head);

    Http.Resp stale = b.ack("0a1b2c3d-0000-4000-8000-000000000000", head);
    assertThat(stale.status()).isEqualTo(409);
    assertThat(stale.raw()).isEqualTo("{\"error\":\"relay epoch changed: pull again from 0\",\"code\":\"EPOCH\",\"epoch\":\""
        + epoch + "\",\"head_seq\":" + head + "}");
    assertThat(b.pull(0, null, epoch).json().get("items")).hasSize(3);

    Http.Resp stalePull = b.pull(0, null, "another-epoch");
    assertThat(stalePull.status()).isEqualTo(409);
    assertThat(stalePull.raw()).isEqualTo("{\"error\":\"relay epoch changed: pull again from 0\",\"epoch\":\"" + epoch + "\"}");
    Http.Resp emptyEpoch = b.get("/v2/relay/items?after=0&epoch=");
    assertThat(emptyEpoch.status()).isEqualTo(409);

    assertThat(b.ack(epoch, head).json().get("deleted").asLong()).isEqualTo(3);
    JsonNode empty = b.pull(head, null, epoch).json();
    assertThat(empty.get("items")).isEmpty();
    assertThat(empty.get("last_seq").asLong()).isEqualTo(head);
  }

  @Test
  void a_page_stops_before_the_8_mib_byte_budget_and_the_next_page_continues() throws Exception {
    TestHost a = host("pi");
    TestHost b = host("rho");
    // 26 items of ~340 KB = ~8.8 MB queued: the first page must stop below 8 MiB
    long total = 0;
    for (int i = 0; i < 26; i++) {
      String id = Envelopes.newId();
      byte[] w = Envelopes.sealed(id, 340_000);
      total += w.length;
      JsonNode r = a.pushEnvelope(b, id, w).json().get("results").get(0);
      assertThat(r.get("status").asText()).as(r.toString()).isEqualTo("accepted");
    }
    assertThat(total).isGreaterThan(8L << 20);
    JsonNode page = b.pull(0, null, null).json();
    long bytes = 0;
    for (JsonNode it : page.get("items")) {
      bytes += B64.decodeLenient(it.get("wire_b64").asText()).orElseThrow().length;
    }
    assertThat(bytes).isLessThanOrEqualTo(8L << 20);
    assertThat(page.get("items").size()).isLessThan(26).isGreaterThan(1);
    assertThat(page.get("more").asBoolean()).isTrue();
    JsonNode rest = b.pull(page.get("last_seq").asLong(), null, null).json();
    assertThat(page.get("items").size() + rest.get("items").size()).isEqualTo(26);
  }

  @Test
  void seqs_are_millisecond_timestamps_strictly_increasing_per_target() throws Exception {
    TestHost a = host("sigma");
    TestHost b = host("tau");
    long before = System.currentTimeMillis();
    long prev = 0;
    for (int i = 0; i < 5; i++) {
      String id = Envelopes.newId();
      long seq = a.pushEnvelope(b, id, Envelopes.sealed(id)).json().get("results").get(0).get("targets").get(0)
          .get("seq").asLong();
      assertThat(seq).isGreaterThan(prev).isGreaterThanOrEqualTo(before);
      prev = seq;
    }
  }
}
