package io.mbxrelay.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import io.mbxrelay.testing.ChildRelay;
import io.mbxrelay.testing.Envelopes;
import io.mbxrelay.testing.Http;
import io.mbxrelay.testing.TestHost;
import io.mbxrelay.wire.B64;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Real child processes killed with SIGKILL or halted at a crash point (docs/protocol.md §7.5 "Restart / crash"
 * and its crash windows).
 */
class CrashRecoveryIT {

  private static TestHost host(ChildRelay relay, String name, io.mbxrelay.crypto.Ed25519KeyPair key) throws Exception {
    return new TestHost(relay.url(), name, key);
  }

  @Test
  void a_sigkilled_relay_restarts_with_every_accepted_item_the_same_key_and_epoch_and_working_dedup(@TempDir Path dir)
      throws Exception {
    io.mbxrelay.crypto.Ed25519KeyPair ka = io.mbxrelay.crypto.Ed25519KeyPair.generate();
    io.mbxrelay.crypto.Ed25519KeyPair kb = io.mbxrelay.crypto.Ed25519KeyPair.generate();
    List<String> ids = new ArrayList<>();
    List<byte[]> wires = new ArrayList<>();
    List<Long> seqs = new ArrayList<>();
    String epoch;
    String relayKey;
    try (ChildRelay relay = ChildRelay.start(dir, Map.of())) {
      TestHost a = host(relay, "alpha", ka).enrol();
      TestHost b = host(relay, "beta", kb).enrol();
      JsonNode info = Http.send(relay.url(), "GET", "/v2/relay/info", null).json();
      epoch = info.get("epoch").asText();
      relayKey = info.get("relay_pubkey").asText();
      for (int i = 0; i < 3; i++) {
        String id = Envelopes.newId();
        byte[] w = Envelopes.sealed(id);
        JsonNode r = a.pushEnvelope(b, id, w).json().get("results").get(0);
        assertThat(r.get("status").asText()).isEqualTo("accepted");
        ids.add(id);
        wires.add(w);
        seqs.add(r.get("targets").get(0).get("seq").asLong());
      }
      relay.kill();
    }
    try (ChildRelay relay = ChildRelay.start(dir, Map.of())) {
      TestHost a = host(relay, "alpha", ka);
      TestHost b = host(relay, "beta", kb);
      JsonNode info = b.get("/v2/relay/info").json();
      assertThat(info.get("epoch").asText()).isEqualTo(epoch);
      assertThat(info.get("relay_pubkey").asText()).isEqualTo(relayKey);
      assertThat(info.get("you").get("pubkey").asText()).isEqualTo(b.pub()); // enrolment survived
      JsonNode page = b.pull(0, null, epoch).json();
      assertThat(page.get("items")).hasSize(3);
      for (int i = 0; i < 3; i++) {
        JsonNode it = page.get("items").get(i);
        assertThat(it.get("seq").asLong()).isEqualTo(seqs.get(i));
        assertThat(B64.decodeLenient(it.get("wire_b64").asText()).orElseThrow()).isEqualTo(wires.get(i));
      }
      JsonNode dup = a.pushEnvelope(b, ids.get(1), wires.get(1)).json().get("results").get(0);
      assertThat(dup.get("status").asText()).isEqualTo("duplicate");
      assertThat(dup.get("targets").get(0).get("seq").asLong()).isEqualTo(seqs.get(1));
      String id = Envelopes.newId();
      long fresh = a.pushEnvelope(b, id, Envelopes.sealed(id)).json().get("results").get(0).get("targets").get(0)
          .get("seq").asLong();
      assertThat(fresh).isGreaterThan(seqs.get(2));
    }
  }

  @Test
  void a_crash_after_commit_before_reply_makes_the_retry_a_duplicate_with_the_stored_seq(@TempDir Path dir)
      throws Exception {
    io.mbxrelay.crypto.Ed25519KeyPair ka = io.mbxrelay.crypto.Ed25519KeyPair.generate();
    io.mbxrelay.crypto.Ed25519KeyPair kb = io.mbxrelay.crypto.Ed25519KeyPair.generate();
    String id = Envelopes.newId();
    byte[] wire = Envelopes.sealed(id);
    try (ChildRelay relay = ChildRelay.start(dir, Map.of("MBX_RELAY_TEST_CRASH", "after-commit-before-reply"))) {
      TestHost a = host(relay, "alpha", ka).enrol();
      TestHost b = host(relay, "beta", kb).enrol();
      assertThatThrownBy(() -> a.pushEnvelope(b, id, wire)).isInstanceOf(IOException.class);
      assertThat(relay.awaitExit()).isEqualTo(86);
    }
    try (ChildRelay relay = ChildRelay.start(dir, Map.of())) {
      TestHost a = host(relay, "alpha", ka);
      TestHost b = host(relay, "beta", kb);
      JsonNode retry = a.pushEnvelope(b, id, wire).json().get("results").get(0);
      assertThat(retry.get("status").asText()).isEqualTo("duplicate");
      JsonNode items = b.pull(0, null, null).json().get("items");
      assertThat(items).hasSize(1);
      assertThat(items.get(0).get("seq").asLong()).isEqualTo(retry.get("targets").get(0).get("seq").asLong());
      assertThat(B64.decodeLenient(items.get(0).get("wire_b64").asText()).orElseThrow()).isEqualTo(wire);
    }
  }

  @Test
  void a_crash_before_commit_stores_nothing_and_the_retry_is_accepted_exactly_once(@TempDir Path dir)
      throws Exception {
    io.mbxrelay.crypto.Ed25519KeyPair ka = io.mbxrelay.crypto.Ed25519KeyPair.generate();
    io.mbxrelay.crypto.Ed25519KeyPair kb = io.mbxrelay.crypto.Ed25519KeyPair.generate();
    String id = Envelopes.newId();
    byte[] wire = Envelopes.sealed(id);
    try (ChildRelay relay = ChildRelay.start(dir, Map.of("MBX_RELAY_TEST_CRASH", "before-commit"))) {
      TestHost a = host(relay, "alpha", ka).enrol();
      TestHost b = host(relay, "beta", kb).enrol();
      assertThatThrownBy(() -> a.pushEnvelope(b, id, wire)).isInstanceOf(IOException.class);
      assertThat(relay.awaitExit()).isEqualTo(86);
    }
    try (ChildRelay relay = ChildRelay.start(dir, Map.of())) {
      TestHost a = host(relay, "alpha", ka);
      TestHost b = host(relay, "beta", kb);
      assertThat(b.pull(0, null, null).json().get("items")).isEmpty();
      JsonNode retry = a.pushEnvelope(b, id, wire).json().get("results").get(0);
      assertThat(retry.get("status").asText()).isEqualTo("accepted");
      JsonNode again = a.pushEnvelope(b, id, wire).json().get("results").get(0);
      assertThat(again.get("status").asText()).isEqualTo("duplicate");
      JsonNode items = b.pull(0, null, null).json().get("items");
      assertThat(items).hasSize(1);
      assertThat(items.get(0).get("item_id").asText()).isEqualTo(id);
    }
  }
}
