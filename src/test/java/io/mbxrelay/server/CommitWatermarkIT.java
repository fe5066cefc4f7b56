package io.mbxrelay.server;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.mbxrelay.crypto.Ed25519KeyPair;
import io.mbxrelay.store.sqlite.CommitWatermark;
import io.mbxrelay.testing.ChildRelay;
import io.mbxrelay.testing.Envelopes;
import io.mbxrelay.testing.Http;
import io.mbxrelay.testing.TestHost;
import io.mbxrelay.testing.WalFile;
import io.mbxrelay.wire.B64;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 10 item 3 with the real jar: receipted pushes, SIGKILL, one flipped byte in one WAL frame. SQLite's recovery
 * stops at the damaged frame and silently drops it and every later commit; the relay sees that its store is behind the
 * commit watermark and refuses it (exit 3, WAL left as it was) until the operator accepts the loss with
 * {@code serve --accept-lost-commits}, which rotates the epoch, so the senders' re-push brings every item back exactly
 * once.
 */
class CommitWatermarkIT {
  private static final int ITEMS = 300;
  private static final int PER_REQUEST = 25;

  private static List<String> serveArgs(Path dir, String... more) {
    List<String> a = new ArrayList<>(List.of("serve", "--port", "0", "--bind", "127.0.0.1", "--store-dir",
        dir.toString()));
    a.addAll(List.of(more));
    return a;
  }

  @Test
  void a_flipped_byte_in_a_wal_frame_after_sigkill_is_refused_and_served_only_after_the_operator_accepts_the_loss(
      @TempDir Path dir) throws Exception {
    Ed25519KeyPair ka = Ed25519KeyPair.generate();
    Ed25519KeyPair kb = Ed25519KeyPair.generate();
    try (ChildRelay relay = ChildRelay.start(dir, Map.of())) {
      new TestHost(relay.url(), "alpha", ka).enrol();
      new TestHost(relay.url(), "beta", kb).enrol();
      relay.stop(); // enrolments checkpointed into relay.db: the WAL of the next run holds only the pushes
    }
    Map<String, byte[]> items = new LinkedHashMap<>();
    String epoch;
    // background checkpoints off for the pushes: the damage below needs every push's commit still in the WAL
    try (ChildRelay relay = ChildRelay.start(dir, Map.of("MBX_RELAY_STORE_CHECKPOINT_INTERVAL_MS", "0"))) {
      TestHost a = new TestHost(relay.url(), "alpha", ka);
      TestHost b = new TestHost(relay.url(), "beta", kb);
      epoch = Http.send(relay.url(), "GET", "/v2/relay/info", null).json().get("epoch").asText();
      for (int r = 0; r < ITEMS / PER_REQUEST; r++) {
        List<ObjectNode> batch = new ArrayList<>();
        for (int i = 0; i < PER_REQUEST; i++) {
          String id = Envelopes.newId();
          byte[] w = Envelopes.sealed(id, 512);
          items.put(id, w);
          batch.add(TestHost.item("envelope", id, List.of(b.pub()), List.of(w)));
        }
        Http.Resp resp = a.push(batch.toArray(ObjectNode[]::new));
        assertThat(resp.status()).isEqualTo(200);
        for (JsonNode res : resp.json().get("results")) {
          assertThat(res.get("status").asText()).isEqualTo("accepted");
          assertThat(res.get("accept")).isNotNull(); // a signed accept receipt: the sender may forget the item
        }
      }
      long committed = CommitWatermark.storeCommits(dir.resolve("relay.db"));
      long deadline = System.nanoTime() + 10_000_000_000L;
      while (CommitWatermark.read(dir).orElseThrow().commits() < committed && System.nanoTime() < deadline) {
        Thread.sleep(20); // polling the child with a deadline: the watermark follows within its interval
      }
      assertThat(CommitWatermark.read(dir).orElseThrow().commits()).isGreaterThanOrEqualTo(committed);
      relay.kill();
    }

    Path wal = dir.resolve("relay.db-wal");
    List<WalFile.Frame> frames = WalFile.validFrames(wal);
    List<WalFile.Frame> commits = frames.stream().filter(WalFile.Frame::commit).toList();
    assertThat(WalFile.backfilled(dir.resolve("relay.db-shm"))).as("nothing checkpointed yet").isZero();
    assertThat(commits.size()).as("one commit per push request at least").isGreaterThanOrEqualTo(ITEMS / PER_REQUEST);
    // one flipped byte in the page of the frame after the middle commit: that commit and every later one are lost
    WalFile.Frame victim = frames.get(commits.get(commits.size() / 2).index() + 1);
    WalFile.flip(wal, victim.offset() + 24 + 1000);
    assertThat(WalFile.validFrames(wal)).hasSize(victim.index());
    byte[] walBefore = Files.readAllBytes(wal);

    ChildRelay.Cli refused = ChildRelay.cli(Map.of("MBX_RELAY_ADMIN_PORT", "0"),
        serveArgs(dir).toArray(String[]::new));
    assertThat(refused.exit()).as(refused.err()).isEqualTo(3);
    assertThat(refused.err()).contains("store refused:").contains("is behind its commit watermark")
        .contains(dir.resolve("relay.watermark").toString()).contains("mbxrelay serve --accept-lost-commits")
        .contains("mbxrelay restore BACKUP");
    assertThat(Files.readAllBytes(wal)).as("the refused store's WAL is kept as evidence").isEqualTo(walBefore);
    ChildRelay.Cli check = ChildRelay.cli(Map.of(), "check", "--store-dir", dir.toString());
    assertThat(check.exit()).isEqualTo(3);
    assertThat(check.err()).contains("behind its commit watermark");

    try (ChildRelay relay = ChildRelay.start(dir, Map.of(), "--accept-lost-commits")) {
      assertThat(String.join("\n", relay.output)).contains("epoch rotated at startup (lost commits accepted)");
      TestHost a = new TestHost(relay.url(), "alpha", ka);
      TestHost b = new TestHost(relay.url(), "beta", kb);
      String newEpoch = b.get("/v2/relay/info").json().get("epoch").asText();
      assertThat(newEpoch).isNotEqualTo(epoch);
      assertThat(CommitWatermark.read(dir).orElseThrow().epoch()).isEqualTo(newEpoch);
      JsonNode stale = b.pull(0, null, epoch).json();
      assertThat(stale.get("epoch").asText()).isEqualTo(newEpoch); // a 409 body: the receiver resets to 0
      // The sender sees the new epoch and re-pushes what it holds (docs/protocol.md §7.5): lost items come back accepted,
      // survivors are duplicates.
      int accepted = 0;
      int duplicate = 0;
      List<Map.Entry<String, byte[]>> all = new ArrayList<>(items.entrySet());
      for (int r = 0; r < all.size(); r += PER_REQUEST) {
        List<ObjectNode> batch = new ArrayList<>();
        for (Map.Entry<String, byte[]> e : all.subList(r, Math.min(all.size(), r + PER_REQUEST))) {
          batch.add(TestHost.item("envelope", e.getKey(), List.of(b.pub()), List.of(e.getValue())));
        }
        for (JsonNode res : a.push(batch.toArray(ObjectNode[]::new)).json().get("results")) {
          switch (res.get("status").asText()) {
            case "accepted" -> accepted++;
            case "duplicate" -> duplicate++;
            default -> throw new AssertionError(res.toString());
          }
        }
      }
      assertThat(accepted).as("items the damaged WAL lost").isGreaterThan(0);
      assertThat(duplicate).as("items committed before the damaged frame").isGreaterThan(0);
      Map<String, byte[]> got = new HashMap<>();
      long after = 0;
      while (true) {
        JsonNode page = b.pull(after, 500, newEpoch).json();
        for (JsonNode it : page.get("items")) {
          assertThat(got.put(it.get("item_id").asText(), B64.decodeLenient(it.get("wire_b64").asText()).orElseThrow()))
              .as("delivered once").isNull();
        }
        after = page.get("last_seq").asLong();
        if (!page.get("more").asBoolean()) {
          break;
        }
      }
      assertThat(got.keySet()).isEqualTo(items.keySet());
      got.forEach((id, w) -> assertThat(w).isEqualTo(items.get(id)));
      relay.stop();
    }
    try (ChildRelay relay = ChildRelay.start(dir, Map.of())) { // accepted once: a plain start works again
      assertThat(relay.process.isAlive()).isTrue();
    }
  }

  /**
   * Issue 22 item 3: with {@code store.watermarkBeforeAnswers} (the default) a push is answered only once
   * {@code relay.watermark} covers its commit, so even the newest commit lost with a damaged WAL frame is found: the
   * relay is killed the moment the last answer arrives (no wait for the watermark's interval), the last transaction's
   * first frame is flipped, and the store is refused. With the setting off, the watermark could still lag by up to
   * its interval here and the loss of that last commit go unnoticed.
   */
  @Test
  void a_lost_newest_commit_is_found_because_its_answer_waited_for_the_watermark(@TempDir Path dir) throws Exception {
    Ed25519KeyPair ka = Ed25519KeyPair.generate();
    Ed25519KeyPair kb = Ed25519KeyPair.generate();
    try (ChildRelay relay = ChildRelay.start(dir, Map.of())) {
      new TestHost(relay.url(), "alpha", ka).enrol();
      new TestHost(relay.url(), "beta", kb).enrol();
      relay.stop(); // enrolments checkpointed into relay.db
    }
    // a long interval: without the answers waiting, the watermark would trail the last commits by up to 5 s
    try (ChildRelay relay = ChildRelay.start(dir, Map.of("MBX_RELAY_STORE_WATERMARK_INTERVAL_MS", "5000"))) {
      TestHost a = new TestHost(relay.url(), "alpha", ka);
      TestHost b = new TestHost(relay.url(), "beta", kb);
      for (int r = 0; r < 6; r++) {
        String id = Envelopes.newId();
        Http.Resp resp = a.push(TestHost.item("envelope", id, List.of(b.pub()), List.of(Envelopes.sealed(id, 512))));
        assertThat(resp.status()).isEqualTo(200);
        assertThat(resp.json().get("results").get(0).get("status").asText()).isEqualTo("accepted");
      }
      relay.kill(); // at once after the last answer
    }
    Path wal = dir.resolve("relay.db-wal");
    List<WalFile.Frame> frames = WalFile.validFrames(wal);
    List<WalFile.Frame> commits = frames.stream().filter(WalFile.Frame::commit).toList();
    assertThat(commits.size()).isGreaterThanOrEqualTo(2);
    // the first frame of the last transaction: only that newest commit is lost
    WalFile.Frame victim = frames.get(commits.get(commits.size() - 2).index() + 1);
    WalFile.flip(wal, victim.offset() + 24 + 1000);
    assertThat(WalFile.validFrames(wal)).hasSize(victim.index());

    ChildRelay.Cli refused = ChildRelay.cli(Map.of("MBX_RELAY_ADMIN_PORT", "0"),
        serveArgs(dir).toArray(String[]::new));
    assertThat(refused.exit()).as(refused.err()).isEqualTo(3);
    assertThat(refused.err()).contains("is behind its commit watermark");
  }
}
