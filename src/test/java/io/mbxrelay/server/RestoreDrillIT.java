package io.mbxrelay.server;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.mbxrelay.crypto.Ed25519KeyPair;
import io.mbxrelay.testing.ChildRelay;
import io.mbxrelay.testing.Envelopes;
import io.mbxrelay.testing.Http;
import io.mbxrelay.testing.TestHost;
import io.mbxrelay.wire.Json;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The restore drill of docs/protocol.md §7.5 "Restore" with real processes and the real CLI. */
class RestoreDrillIT {

  private static long seq(JsonNode pushResponse) {
    return pushResponse.get("results").get(0).get("targets").get(0).get("seq").asLong();
  }

  @Test
  void backup_while_serving_then_restore_rotates_the_epoch_and_senders_repush_what_came_after(@TempDir Path tmp)
      throws Exception {
    Path dir = tmp.resolve("store");
    Path backup = tmp.resolve("backups/relay-1.db");
    Ed25519KeyPair ka = Ed25519KeyPair.generate();
    Ed25519KeyPair kb = Ed25519KeyPair.generate();
    List<String> ids = new ArrayList<>();
    List<byte[]> wires = new ArrayList<>();
    long maxSeq = 0;
    String oldEpoch;
    try (ChildRelay relay = ChildRelay.start(dir, Map.of())) {
      TestHost a = new TestHost(relay.url(), "alpha", ka).enrol();
      TestHost b = new TestHost(relay.url(), "beta", kb).enrol();
      oldEpoch = Http.send(relay.url(), "GET", "/v2/relay/info", null).json().get("epoch").asText();
      for (int i = 0; i < 3; i++) {
        String id = Envelopes.newId();
        byte[] w = Envelopes.sealed(id);
        ids.add(id);
        wires.add(w);
        maxSeq = Math.max(maxSeq, seq(a.pushEnvelope(b, id, w).json()));
      }
      ChildRelay.Cli bk = ChildRelay.cli(Map.of(), "backup", backup.toString(), "--store-dir", dir.toString());
      assertThat(bk.exit()).as(bk.err()).isZero();
      assertThat(Json.parse(bk.out()).get("type").asText()).isEqualTo("relay-backup");
      for (int i = 0; i < 2; i++) { // after the backup
        String id = Envelopes.newId();
        byte[] w = Envelopes.sealed(id);
        ids.add(id);
        wires.add(w);
        maxSeq = Math.max(maxSeq, seq(a.pushEnvelope(b, id, w).json()));
      }
      ChildRelay.Cli refused = ChildRelay.cli(Map.of(), "restore", backup.toString(), "--store-dir", dir.toString());
      assertThat(refused.exit()).isEqualTo(1);
      assertThat(refused.err()).contains("RELAY_RUNNING");
      relay.stop();
    }
    ChildRelay.Cli rs = ChildRelay.cli(Map.of(), "restore", backup.toString(), "--store-dir", dir.toString());
    assertThat(rs.exit()).as(rs.err()).isZero();
    JsonNode receipt = Json.parse(rs.out());
    assertThat(receipt.get("epoch").get("from").asText()).isEqualTo(oldEpoch);
    try (ChildRelay relay = ChildRelay.start(dir, Map.of())) {
      TestHost a = new TestHost(relay.url(), "alpha", ka);
      TestHost b = new TestHost(relay.url(), "beta", kb);
      String newEpoch = Http.send(relay.url(), "GET", "/v2/relay/info", null).json().get("epoch").asText();
      assertThat(newEpoch).isNotEqualTo(oldEpoch).isEqualTo(receipt.get("epoch").get("to").asText());
      Http.Resp stale = b.pull(0, null, oldEpoch);
      assertThat(stale.status()).isEqualTo(409);
      assertThat(stale.json().get("epoch").asText()).isEqualTo(newEpoch);
      // the senders re-push every relay-accepted row: pre-backup items are duplicates, post-backup ones accepted once
      for (int i = 0; i < ids.size(); i++) {
        JsonNode r = a.pushEnvelope(b, ids.get(i), wires.get(i)).json();
        String status = r.get("results").get(0).get("status").asText();
        assertThat(status).isEqualTo(i < 3 ? "duplicate" : "accepted");
        if (i >= 3) {
          assertThat(seq(r)).as("post-restore seqs stay above every seq handed out before").isGreaterThan(maxSeq);
        }
      }
      for (int i = 0; i < ids.size(); i++) {
        assertThat(a.pushEnvelope(b, ids.get(i), wires.get(i)).json().get("results").get(0).get("status").asText())
            .isEqualTo("duplicate");
      }
      JsonNode items = b.pull(0, null, newEpoch).json().get("items");
      Set<String> seen = new HashSet<>();
      for (JsonNode it : items) {
        assertThat(seen.add(it.get("item_id").asText())).as("each item once").isTrue();
      }
      assertThat(seen).containsExactlyInAnyOrderElementsOf(ids);
      relay.stop();
    }
    ChildRelay.Cli log = ChildRelay.cli(Map.of(), "log", "--json", "--store-dir", dir.toString());
    assertThat(log.exit()).isZero();
    List<String> ops = new ArrayList<>();
    Json.parse(log.out()).forEach(e -> ops.add(e.get("op").asText()));
    assertThat(ops).contains("backup", "restore");
  }

  @Test
  void a_file_copy_restore_keeps_its_epoch_shows_as_head_below_the_checkpoint_and_rotate_epoch_fixes_it(
      @TempDir Path tmp) throws Exception {
    Path dir = tmp.resolve("store");
    Path copy = tmp.resolve("copy.db");
    Ed25519KeyPair ka = Ed25519KeyPair.generate();
    Ed25519KeyPair kb = Ed25519KeyPair.generate();
    long receivedThrough;
    String epoch;
    try (ChildRelay relay = ChildRelay.start(dir, Map.of())) {
      TestHost a = new TestHost(relay.url(), "alpha", ka).enrol();
      TestHost b = new TestHost(relay.url(), "beta", kb).enrol();
      String id = Envelopes.newId();
      a.pushEnvelope(b, id, Envelopes.sealed(id));
      relay.stop();
      Files.copy(dir.resolve("relay.db"), copy); // a "volume snapshot" taken while stopped
      // ...holds the commit watermark of that moment too (a relay.db put back alone is refused: CommitWatermarkTest)
      Files.copy(dir.resolve("relay.watermark"), tmp.resolve("copy.watermark"));
    }
    try (ChildRelay relay = ChildRelay.start(dir, Map.of())) {
      TestHost a = new TestHost(relay.url(), "alpha", ka);
      TestHost b = new TestHost(relay.url(), "beta", kb);
      for (int i = 0; i < 2; i++) {
        String id = Envelopes.newId();
        a.pushEnvelope(b, id, Envelopes.sealed(id));
      }
      JsonNode page = b.pull(0, null, null).json();
      epoch = page.get("epoch").asText();
      receivedThrough = page.get("last_seq").asLong();
      relay.stop();
    }
    Files.copy(copy, dir.resolve("relay.db"), StandardCopyOption.REPLACE_EXISTING);
    Files.copy(tmp.resolve("copy.watermark"), dir.resolve("relay.watermark"), StandardCopyOption.REPLACE_EXISTING);
    Files.deleteIfExists(dir.resolve("relay.db-wal"));
    Files.deleteIfExists(dir.resolve("relay.db-shm"));
    try (ChildRelay relay = ChildRelay.start(dir, Map.of())) {
      TestHost b = new TestHost(relay.url(), "beta", kb);
      JsonNode page = b.pull(receivedThrough, null, epoch).json();
      assertThat(page.get("epoch").asText()).as("a file copy keeps its epoch").isEqualTo(epoch);
      assertThat(page.get("head_seq").asLong()).as("the receiver sees the store went back").isLessThan(receivedThrough);
      Http.Resp ack = b.ack(epoch, receivedThrough);
      assertThat(ack.status()).isEqualTo(400);
      assertThat(ack.json().get("code").asText()).isEqualTo("BAD_ACK");
      relay.stop();
    }
    ChildRelay.Cli rot = ChildRelay.cli(Map.of(), "rotate-epoch", "--store-dir", dir.toString());
    assertThat(rot.exit()).as(rot.err()).isZero();
    try (ChildRelay relay = ChildRelay.start(dir, Map.of())) {
      TestHost b = new TestHost(relay.url(), "beta", kb);
      assertThat(b.pull(0, null, epoch).status()).isEqualTo(409);
    }
  }

  @Test
  void mbx_relay_restore_from_restores_once_per_path(@TempDir Path tmp) throws Exception {
    Path dir = tmp.resolve("store");
    Path backup = tmp.resolve("b.db");
    Ed25519KeyPair kb = Ed25519KeyPair.generate();
    try (ChildRelay relay = ChildRelay.start(dir, Map.of())) {
      new TestHost(relay.url(), "beta", kb).enrol();
      assertThat(ChildRelay.cli(Map.of(), "backup", backup.toString(), "--store-dir", dir.toString()).exit()).isZero();
      relay.stop();
    }
    String first;
    try (ChildRelay relay = ChildRelay.start(dir, Map.of("MBX_RELAY_RESTORE_FROM", backup.toString()))) {
      first = Http.send(relay.url(), "GET", "/v2/relay/info", null).json().get("epoch").asText();
      relay.stop();
    }
    try (ChildRelay relay = ChildRelay.start(dir, Map.of("MBX_RELAY_RESTORE_FROM", backup.toString()))) {
      assertThat(Http.send(relay.url(), "GET", "/v2/relay/info", null).json().get("epoch").asText())
          .as("the same path is not restored twice").isEqualTo(first);
      relay.stop();
    }
    ChildRelay.Cli log = ChildRelay.cli(Map.of(), "log", "--json", "--store-dir", dir.toString());
    long restores = 0;
    for (JsonNode e : Json.parse(log.out())) {
      if (e.get("op").asText().equals("restore")) {
        restores++;
      }
    }
    assertThat(restores).isEqualTo(1);
  }
}
