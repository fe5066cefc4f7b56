package io.mbxrelay.server;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.mbxrelay.auth.ClientAddress;
import io.mbxrelay.crypto.Ed25519KeyPair;
import io.mbxrelay.store.sqlite.SqliteOps;
import io.mbxrelay.testing.Envelopes;
import io.mbxrelay.testing.Http;
import io.mbxrelay.testing.MutableClock;
import io.mbxrelay.testing.RelayHarness;
import io.mbxrelay.testing.Scrape;
import io.mbxrelay.testing.TestHost;
import io.mbxrelay.wire.IsoTime;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 10 item 7: a +30-day wall-clock step expired every queued item in one sweep (with notices) and pruned the
 * dedup tombstones, so a resend of an acked item was delivered again; items accepted while the clock ran ahead
 * expired 44 days after real acceptance. With the store's {@code ClockGuard} the step pauses expiry and pruning, is
 * visible as a metric and in {@code GET /clock}, {@code accepted_at} stays on trusted time and never goes backwards,
 * and the pause ends when the clock agrees again or the operator resumes it; across a restart the persisted watermark
 * keeps the pause. Time is a {@link MutableClock}: {@code advance} is time passing, {@code step} a wall-clock step.
 */
class ClockStepTest {
  /** Lines these tests provoke on purpose (issue 22 item 7): kept out of the build output, asserted where provoked. */
  @org.junit.jupiter.api.extension.RegisterExtension
  static final io.mbxrelay.testing.ExpectedLog LOGS = io.mbxrelay.testing.ExpectedLog.forClass()
      .and("io.mbxrelay.server.RelayServer", ch.qos.logback.classic.Level.WARN, "expiry and dedup pruning paused")
      .and("io.mbxrelay.server.RelayServer", ch.qos.logback.classic.Level.WARN, "expiry and dedup pruning resumed")
      .and("io.mbxrelay.server.ExpirySweepVerticle", ch.qos.logback.classic.Level.WARN, "expiry sweep skipped: the store clock is paused");


  private static TestHost host(RelayHarness r, MutableClock clock, String name) throws Exception {
    TestHost h = new TestHost(r.url(), name);
    h.clock = clock::millis;
    return h.enrol();
  }

  private static ExpirySweepVerticle.Run sweep(RelayHarness r) throws Exception {
    return r.server.sweepNow().toCompletionStage().toCompletableFuture().get(60, TimeUnit.SECONDS);
  }

  private static JsonNode push(TestHost from, TestHost to, String id, byte[] wire) throws Exception {
    return from.pushEnvelope(to, id, wire).json().get("results").get(0);
  }

  private static long at(JsonNode result) {
    return IsoTime.parse(result.get("accept").get("at").asText()).orElseThrow();
  }

  @Test
  void a_30_day_forward_step_pauses_expiry_and_pruning_until_the_clock_agrees_again_or_the_operator_resumes(
      @TempDir Path dir) throws Exception {
    MutableClock clock = new MutableClock(Instant.now());
    try (RelayHarness r = RelayHarness.start(dir, Map.of(), clock, Ed25519KeyPair.generate())) {
      TestHost a = host(r, clock, "alpha");
      TestHost b = host(r, clock, "beta");
      String acked = Envelopes.newId();
      byte[] ackedWire = Envelopes.sealed(acked);
      long first = at(push(a, b, acked, ackedWire));
      JsonNode page = b.pull(0, null, null).json();
      assertThat(b.ack(r.server.epoch(), page.get("last_seq").asLong()).status()).isEqualTo(200);
      String queued = Envelopes.newId();
      push(a, b, queued, Envelopes.sealed(queued));
      clock.advance(Duration.ofDays(10)); // under a +30-day step both would go: the item expires, the tombstone prunes

      clock.step(Duration.ofDays(30));
      ExpirySweepVerticle.Run run = sweep(r);
      assertThat(run.paused()).isTrue();
      assertThat(run.counts().rows()).isZero();
      assertThat(run.dedupPruned()).isZero();
      assertThat(b.pull(0, null, null).json().get("items")).as("nothing expired").hasSize(1);
      assertThat(push(a, b, acked, ackedWire).get("status").asText()).as("tombstone kept: no re-delivery")
          .isEqualTo("duplicate");
      String during = Envelopes.newId();
      long duringAt = at(push(a, b, during, Envelopes.sealed(during)));
      assertThat(duringAt).as("accepted_at on trusted time, not 30 days ahead")
          .isBetween(first + Duration.ofDays(10).toMillis(), first + Duration.ofDays(10).plusHours(1).toMillis());
      Scrape scrape = Scrape.of(r.adminUrl());
      assertThat(scrape.value("mbxrelay_clock_paused")).isEqualTo(1);
      assertThat(scrape.value("mbxrelay_clock_step_seconds")).isEqualTo(Duration.ofDays(30).toSeconds());
      assertThat(scrape.value("mbxrelay_clock_steps_total")).isEqualTo(1);
      JsonNode status = Http.send(r.adminUrl(), "GET", "/clock", null).json();
      assertThat(status.get("paused").asBoolean()).isTrue();

      // NTP steps it back: consistent again, the sweep runs with trusted time and finds nothing due (day 10)
      clock.step(Duration.ofDays(-30));
      run = sweep(r);
      assertThat(run.paused()).isFalse();
      assertThat(run.counts().rows()).isZero();
      assertThat(Scrape.of(r.adminUrl()).value("mbxrelay_clock_paused")).isZero();
      String after = Envelopes.newId();
      assertThat(at(push(a, b, after, Envelopes.sealed(after)))).as("never backwards").isGreaterThanOrEqualTo(duringAt);

      // a real jump the operator confirms: expiry resumes with the wall clock
      clock.step(Duration.ofDays(30));
      assertThat(sweep(r).paused()).isTrue();
      Http.Resp resumed = Http.send(r.adminUrl(), "POST", "/clock/resume", null);
      assertThat(resumed.status()).as(resumed.raw()).isEqualTo(200);
      assertThat(resumed.json().get("paused").asBoolean()).isFalse();
      run = sweep(r);
      assertThat(run.paused()).isFalse();
      assertThat(run.counts().envelopes()).isEqualTo(3);
      assertThat(run.dedupPruned()).isPositive();
      assertThat(SqliteOps.log(dir, 50)).extracting(n -> n.get("op").asText())
          .contains("clock-paused", "clock-resumed");
    }
    LOGS.assertSeen("expiry and dedup pruning paused"); // issue 22 item 7: the line this test provokes
    LOGS.assertSeen("expiry and dedup pruning resumed"); // issue 22 item 7: the line this test provokes
  }

  @Test
  void the_resume_endpoint_needs_the_admin_token_when_one_is_set(@TempDir Path dir) throws Exception {
    String token = "t".repeat(40);
    MutableClock clock = new MutableClock(Instant.now());
    try (RelayHarness r = RelayHarness.start(dir, Map.of("MBX_RELAY_ADMIN_TOKEN", token), clock,
        Ed25519KeyPair.generate())) {
      clock.step(Duration.ofDays(2));
      assertThat(Http.send(r.adminUrl(), "GET", "/clock", null).json().get("paused").asBoolean()).isTrue();
      assertThat(Http.send(r.adminUrl(), "POST", "/clock/resume", null).status()).isEqualTo(403);
      Http.Resp ok = Http.sendHeaders(r.adminUrl(), "POST", "/clock/resume", null,
          Map.of("authorization", "Bearer " + token));
      assertThat(ok.status()).isEqualTo(200);
      assertThat(ok.json().get("paused").asBoolean()).isFalse();
    }
  }

  @Test
  void a_step_while_the_relay_was_down_keeps_expiry_paused_at_start_until_accept_clock(@TempDir Path dir)
      throws Exception {
    MutableClock clock = new MutableClock(Instant.now());
    Ed25519KeyPair key = Ed25519KeyPair.generate();
    String epoch;
    try (RelayHarness r = RelayHarness.start(dir, Map.of(), clock, key)) {
      TestHost a = host(r, clock, "alpha");
      TestHost b = host(r, clock, "beta");
      String id = Envelopes.newId();
      push(a, b, id, Envelopes.sealed(id));
      epoch = r.server.epoch();
    }
    clock.step(Duration.ofDays(30));
    try (RelayHarness r = RelayHarness.start(dir, Map.of(), clock, key)) {
      assertThat(r.server.openReport().epochRotatedReason()).as("the stale-heartbeat rule still holds")
          .isEqualTo("stale heartbeat");
      JsonNode status = Http.send(r.adminUrl(), "GET", "/clock", null).json();
      assertThat(status.get("paused").asBoolean()).isTrue();
      assertThat(status.get("reason").asText()).startsWith("at start the wall clock is 2592000 s ahead");
      assertThat(sweep(r).paused()).isTrue();
      assertThat(r.server.epoch()).isNotEqualTo(epoch);
    }
    // a restart does not forget the pause: the watermark written meanwhile is trusted time
    try (RelayHarness r = RelayHarness.start(dir, Map.of(), clock, key)) {
      assertThat(sweep(r).paused()).isTrue();
    }
    // The sweep at start may finish before the triggered one begins (then the triggered one finds nothing): count
    // what every run of this relay expired.
    java.util.List<ExpirySweepVerticle.Run> runs = new java.util.concurrent.CopyOnWriteArrayList<>();
    RelayServer.Options accept = new RelayServer.Options(0, "127.0.0.1", dir, ClientAddress.SOCKET, CrashPoint.NONE,
        clock, runs::add, (c, n, f) -> {}, true);
    try (RelayHarness r = RelayHarness.start(dir, Map.of(), key, accept)) {
      ExpirySweepVerticle.Run run = sweep(r);
      assertThat(run.paused()).isFalse();
      assertThat(runs).allMatch(x -> !x.paused());
      assertThat(runs.stream().mapToLong(x -> x.counts().envelopes()).sum()).isEqualTo(1);
    }
    LOGS.assertSeen("expiry sweep skipped"); // issue 22 item 7: the line this test provokes
  }
}
