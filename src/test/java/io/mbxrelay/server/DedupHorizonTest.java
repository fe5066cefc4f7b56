package io.mbxrelay.server;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.mbxrelay.crypto.Ed25519KeyPair;
import io.mbxrelay.testing.Envelopes;
import io.mbxrelay.testing.MutableClock;
import io.mbxrelay.testing.RelayHarness;
import io.mbxrelay.testing.TestHost;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 10 item 8, the dedup horizon (docs/protocol.md §7.7: retention + 7 days; §5 "Sweep"), seen by a periodic
 * resender: a sender that re-pushes the same item (same id, same bytes) every day. Within the horizon every resend is
 * a {@code duplicate} carrying the original {@code at}, and a duplicate does not extend the horizon: it runs from the
 * first acceptance. Once the sweep has pruned the tombstone (the item acked or expired, and accepted more than 21
 * days ago) the next resend is a new item and is delivered again. Documented in docs/wire-compatibility.md
 * "Dedup horizon".
 */
class DedupHorizonTest {

  @Test
  void a_daily_resender_gets_duplicates_for_21_days_from_first_acceptance_and_a_new_delivery_after_the_prune(
      @TempDir Path dir) throws Exception {
    MutableClock clock = new MutableClock(Instant.now());
    try (RelayHarness r = RelayHarness.start(dir, Map.of(), clock, Ed25519KeyPair.generate())) {
      TestHost a = new TestHost(r.url(), "alpha");
      a.clock = clock::millis;
      a.enrol();
      TestHost b = new TestHost(r.url(), "beta");
      b.clock = clock::millis;
      b.enrol();
      String id = Envelopes.newId();
      byte[] wire = Envelopes.sealed(id);
      JsonNode first = a.pushEnvelope(b, id, wire).json().get("results").get(0);
      assertThat(first.get("status").asText()).isEqualTo("accepted");
      String at0 = first.get("accept").get("at").asText();
      JsonNode page = b.pull(0, null, null).json();
      assertThat(page.get("items")).hasSize(1);
      long received = page.get("last_seq").asLong();
      assertThat(b.ack(r.server.epoch(), received).status()).isEqualTo(200);

      int newAgainOn = -1;
      for (int day = 1; day <= 23 && newAgainOn < 0; day++) {
        clock.advance(Duration.ofDays(1));
        r.server.sweepNow().toCompletionStage().toCompletableFuture().get(60, TimeUnit.SECONDS);
        JsonNode res = a.pushEnvelope(b, id, wire).json().get("results").get(0);
        if (res.get("status").asText().equals("accepted")) {
          newAgainOn = day;
        } else {
          assertThat(res.get("status").asText()).as("day " + day).isEqualTo("duplicate");
          assertThat(res.get("accept").get("at").asText()).as("day %d: the original at, horizon not extended", day)
              .isEqualTo(at0);
        }
      }
      assertThat(newAgainOn).as("first day the resend is a new item: retention 14 + 7 days, pruned the day after")
          .isEqualTo(22);
      JsonNode again = b.pull(received, null, null).json().get("items");
      assertThat(again).as("delivered again").hasSize(1);
      assertThat(again.get(0).get("item_id").asText()).isEqualTo(id);
      clock.advance(Duration.ofDays(1));
      assertThat(a.pushEnvelope(b, id, wire).json().get("results").get(0).get("status").asText())
          .as("a new horizon from the new acceptance").isEqualTo("duplicate");
    }
  }

  @Test
  void an_item_never_acked_expires_on_day_14_and_its_tombstone_answers_duplicates_until_day_21(@TempDir Path dir)
      throws Exception {
    MutableClock clock = new MutableClock(Instant.now());
    try (RelayHarness r = RelayHarness.start(dir, Map.of(), clock, Ed25519KeyPair.generate())) {
      TestHost a = new TestHost(r.url(), "alpha");
      a.clock = clock::millis;
      a.enrol();
      TestHost b = new TestHost(r.url(), "beta");
      b.clock = clock::millis;
      b.enrol();
      String id = Envelopes.newId();
      byte[] wire = Envelopes.sealed(id);
      a.pushEnvelope(b, id, wire);
      int expiredOn = -1;
      int newAgainOn = -1;
      for (int day = 1; day <= 23 && newAgainOn < 0; day++) {
        clock.advance(Duration.ofDays(1));
        ExpirySweepVerticle.Run run = r.server.sweepNow().toCompletionStage().toCompletableFuture()
            .get(60, TimeUnit.SECONDS);
        if (run.counts().envelopes() == 1) {
          expiredOn = day;
        }
        String status = a.pushEnvelope(b, id, wire).json().get("results").get(0).get("status").asText();
        if (status.equals("accepted")) {
          newAgainOn = day;
        } else {
          assertThat(status).as("day " + day).isEqualTo("duplicate");
        }
      }
      assertThat(expiredOn).isEqualTo(14);
      assertThat(newAgainOn).isEqualTo(22);
    }
  }
}
