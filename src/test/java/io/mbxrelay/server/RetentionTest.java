package io.mbxrelay.server;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.mbxrelay.auth.ClientAddress;
import io.mbxrelay.crypto.Ed25519;
import io.mbxrelay.crypto.Ed25519KeyPair;
import io.mbxrelay.store.StoreCommand;
import io.mbxrelay.testing.Envelopes;
import io.mbxrelay.testing.MutableClock;
import io.mbxrelay.testing.RelayHarness;
import io.mbxrelay.testing.TestHost;
import io.mbxrelay.wire.B64;
import io.mbxrelay.wire.CanonicalJson;
import io.mbxrelay.wire.IsoTime;
import io.mbxrelay.wire.Json;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Retention, expiry notices and tombstones with an injected clock (docs/protocol.md §7.6, §4.10, §5 "Sweep"). */
class RetentionTest {

  private static TestHost host(RelayHarness r, MutableClock clock, String name) throws Exception {
    TestHost h = new TestHost(r.url(), name);
    h.clock = clock::millis;
    return h.enrol();
  }

  private static ExpirySweepVerticle.Run sweep(RelayHarness r) throws Exception {
    return r.server.sweepNow().toCompletionStage().toCompletableFuture().get(60, TimeUnit.SECONDS);
  }

  @Test
  void items_expire_after_retention_the_sender_gets_one_signed_notice_and_a_late_retry_is_a_duplicate(
      @TempDir Path dir) throws Exception {
    MutableClock clock = new MutableClock(Instant.now());
    Ed25519KeyPair relayKey = Ed25519KeyPair.generate();
    try (RelayHarness r = RelayHarness.start(dir, Map.of(), clock, relayKey)) {
      TestHost a = host(r, clock, "alpha");
      TestHost b = host(r, clock, "beta");
      String id = Envelopes.newId();
      byte[] wire = Envelopes.sealed(id);
      JsonNode first = a.pushEnvelope(b, id, wire).json().get("results").get(0);
      String acceptedAt = first.get("accept").get("at").asText();

      clock.advance(Duration.ofDays(14).minusMinutes(1));
      assertThat(sweep(r).counts().rows()).isZero();
      assertThat(b.pull(0, null, null).json().get("items")).hasSize(1);

      clock.advance(Duration.ofMinutes(2));
      io.mbxrelay.testing.Scrape before = io.mbxrelay.testing.Scrape.of(r.adminUrl());
      ExpirySweepVerticle.Run run = sweep(r);
      assertThat(run.counts().envelopes()).isEqualTo(1);
      assertThat(run.counts().notices()).isEqualTo(1);
      io.mbxrelay.testing.Scrape after = io.mbxrelay.testing.Scrape.of(r.adminUrl());
      assertThat(after.value("mbxrelay_sweep_runs_total") - before.value("mbxrelay_sweep_runs_total")).isEqualTo(1);
      assertThat(after.value("mbxrelay_sweep_items_expired_total")
          - before.value("mbxrelay_sweep_items_expired_total")).isEqualTo(1);
      assertThat(after.value("mbxrelay_sweep_notices_enqueued_total")
          - before.value("mbxrelay_sweep_notices_enqueued_total")).isEqualTo(1);
      assertThat(b.pull(0, null, null).json().get("items")).isEmpty();

      JsonNode notices = a.pull(0, null, null).json().get("items");
      assertThat(notices).hasSize(1);
      JsonNode n = notices.get(0);
      assertThat(n.get("kind").asText()).isEqualTo("expired");
      assertThat(n.get("sender_pubkey").asText()).isEqualTo(relayKey.publicKeyB64());
      assertThat(n.get("item_id").asText()).isEqualTo("expired:" + id + ":" + b.pub());
      byte[] nw = B64.decodeLenient(n.get("wire_b64").asText()).orElseThrow();
      JsonNode parsed = Json.parse(new String(nw, java.nio.charset.StandardCharsets.UTF_8));
      assertThat(nw).isEqualTo(CanonicalJson.canonicalBytes(parsed));
      JsonNode notice = parsed.get("notice");
      assertThat(notice.get("type").asText()).isEqualTo("relay-expired");
      assertThat(notice.get("item_id").asText()).isEqualTo(id);
      assertThat(notice.get("target_pubkey").asText()).isEqualTo(b.pub());
      assertThat(notice.get("accepted_at").asText()).isEqualTo(acceptedAt);
      assertThat(notice.get("expired_at").asText()).isEqualTo(IsoTime.format(clock.millis()));
      assertThat(Ed25519.verify(relayKey.publicKeyB64(), CanonicalJson.canonicalBytes(notice),
          parsed.get("sig").asText())).isTrue();

      // a late retry meets the tombstone: duplicate with the original at, never a re-delivery
      JsonNode retry = a.pushEnvelope(b, id, wire).json().get("results").get(0);
      assertThat(retry.get("status").asText()).isEqualTo("duplicate");
      assertThat(retry.get("accept").get("at").asText()).isEqualTo(acceptedAt);
      assertThat(b.pull(0, null, null).json().get("items")).isEmpty();

      // the notice is sent once
      assertThat(sweep(r).counts().notices()).isZero();
      assertThat(a.pull(0, null, null).json().get("items")).hasSize(1);

      // tombstones are kept until retention + 7 days, then pruned
      clock.advance(Duration.ofDays(7).minusMinutes(10));
      assertThat(sweep(r).dedupPruned()).isZero();
      assertThat(a.pushEnvelope(b, id, wire).json().get("results").get(0).get("status").asText()).isEqualTo("duplicate");
      clock.advance(Duration.ofMinutes(20));
      assertThat(sweep(r).dedupPruned()).isGreaterThanOrEqualTo(1);
    }
  }

  @Test
  void receipts_expire_without_notice_and_a_gone_sender_is_counted_not_notified(@TempDir Path dir) throws Exception {
    MutableClock clock = new MutableClock(Instant.now());
    try (RelayHarness r = RelayHarness.start(dir, Map.of(), clock, Ed25519KeyPair.generate())) {
      TestHost a = host(r, clock, "alpha");
      TestHost b = host(r, clock, "beta");
      String msg = Envelopes.newId();
      var rec = Json.MAPPER.createObjectNode().put("v", 1).put("type", "receipt").put("msg", msg)
          .put("recipient", "bob@beta").put("state", "read").put("at", "2026-11-29T12:00:00.000Z").put("seq", 1);
      var w = Json.MAPPER.createObjectNode();
      w.set("rec", rec);
      w.put("sig", a.key.signB64(CanonicalJson.canonicalBytes(rec)));
      assertThat(a.push(TestHost.item("receipt", "receipt:" + msg + ":bob@beta:1", List.of(b.pub()),
          List.of(CanonicalJson.canonicalBytes(w)))).json().get("results").get(0).get("status").asText())
          .isEqualTo("accepted");
      clock.advance(Duration.ofDays(15));
      ExpirySweepVerticle.Run run = sweep(r);
      assertThat(run.counts().receipts()).isEqualTo(1);
      assertThat(run.counts().notices()).isZero();
      assertThat(a.pull(0, null, null).json().get("items")).isEmpty();
    }
  }

  @SuppressWarnings("try") // a resource held for the block, not used in it
  @Test
  void a_sweep_of_20000_expired_rows_runs_in_bounded_batches_and_a_push_is_answered_between_them(@TempDir Path dir)
      throws Exception {
    Ed25519KeyPair relayKey = Ed25519KeyPair.generate();
    Ed25519KeyPair gone = Ed25519KeyPair.generate();
    MutableClock clock = new MutableClock(Instant.now());
    // 20,000 expired envelopes from a sender that is not enrolled (so the sweep counts but sends no notices)
    try (RelayHarness r = RelayHarness.start(dir, Map.of(), clock, relayKey)) {
      TestHost b = host(r, clock, "beta");
      r.close();
      try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + dir.resolve("relay.db"));
          PreparedStatement ps = c.prepareStatement("INSERT INTO items(target_pubkey, seq, kind, item_id,"
              + " sender_pubkey, sender_host, wire, wire_hash, bytes, accepted_at, expires_at)"
              + " VALUES(?, ?, 'envelope', ?, ?, 'gone', ?, 'h', 64, '2020-01-01T00:00:00.000Z', ?)")) {
        c.setAutoCommit(false);
        for (int i = 1; i <= 20_000; i++) {
          ps.setString(1, b.pub());
          ps.setLong(2, i);
          ps.setString(3, "id" + i);
          ps.setString(4, gone.publicKeyB64());
          ps.setBytes(5, new byte[64]);
          ps.setString(6, IsoTime.format(clock.millis() - 1000));
          ps.addBatch();
        }
        ps.executeBatch();
        c.commit();
      }
    }
    List<String> order = new CopyOnWriteArrayList<>();
    java.util.concurrent.CountDownLatch startupSweep = new java.util.concurrent.CountDownLatch(1);
    RelayServer.Options options = new RelayServer.Options(0, "127.0.0.1", dir, ClientAddress.SOCKET, CrashPoint.NONE,
        clock, run -> startupSweep.countDown(), (commands, nanos, failure) -> {
          for (StoreCommand<?> c : commands) {
            order.add(c.getClass().getSimpleName());
          }
          order.add("|");
        });
    try (RelayHarness r = RelayHarness.start(dir, Map.of(), relayKey, options)) {
      // the sweep that runs at start takes the first 10,000 (20 batches of 500)
      assertThat(startupSweep.await(60, TimeUnit.SECONDS)).isTrue();
      TestHost a = host(r, clock, "alpha");
      TestHost b = new TestHost(r.url(), "beta", Ed25519KeyPair.generate()); // a fresh target for the push
      b.clock = clock::millis;
      b.enrol();
      order.clear();
      var running = r.server.sweepNow();
      // push while the sweep runs
      String id = Envelopes.newId();
      JsonNode res = a.pushEnvelope(b, id, Envelopes.sealed(id)).json().get("results").get(0);
      assertThat(res.get("status").asText()).isEqualTo("accepted");
      ExpirySweepVerticle.Run run = running.toCompletionStage().toCompletableFuture().get(60, TimeUnit.SECONDS);
      assertThat(run.counts().rows()).isEqualTo(10_000); // 20 batches of 500 per run
      assertThat(run.counts().skippedNotEnrolled()).isEqualTo(10_000);
      // every transaction holds at most one sweep batch
      String joined = String.join(",", order);
      for (String tx : joined.split("\\|")) {
        assertThat(tx.split("SweepBatch", -1).length - 1).isLessThanOrEqualTo(1);
      }
      int firstSweep = order.indexOf("SweepBatch");
      int lastSweep = order.lastIndexOf("SweepBatch");
      int push = order.indexOf("PushBatch");
      // answered before the sweep's last batch, not behind all of them (it may share the first batch's transaction
      // when it reaches the writer together with it, so only the upper bound is the property)
      assertThat(firstSweep).as(joined).isNotNegative();
      assertThat(push).as(joined).isNotNegative().isLessThan(lastSweep);
      assertThat(sweep(r).counts().rows()).isZero();
      try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + dir.resolve("relay.db"));
          Statement st = c.createStatement(); ResultSet rs = st.executeQuery(
              "SELECT receipt FROM ops WHERE op='sweep' ORDER BY id DESC LIMIT 1")) {
        assertThat(rs.next()).isTrue();
        JsonNode receipt = Json.parse(rs.getString(1));
        assertThat(receipt.get("type").asText()).isEqualTo("relay-sweep");
        assertThat(receipt.get("expired").get("envelope").asInt()).isEqualTo(10_000);
        assertThat(receipt.get("notices_skipped").get("not_enrolled").asInt()).isEqualTo(10_000);
      }
    }
  }
}
