package io.mbxrelay.http;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.mbxrelay.testing.Envelopes;
import io.mbxrelay.testing.Http;
import io.mbxrelay.testing.RelayHarness;
import io.mbxrelay.testing.TestHost;
import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Pulls answered from memory when the host's queue has nothing past {@code after} ({@code store.EmptyPageCache}), over
 * real HTTP on the SQLite store: the same bytes a read gives, and never a page that hides a committed item.
 */
class EmptyPagesTest {

  private static long counter(RelayHarness r, String name) throws Exception {
    return LongPollTest.gauge(r, name);
  }

  private static final String FROM_MEMORY = "mbxrelay_pull_pages_from_memory_total";

  @Test
  void an_empty_pull_is_read_once_then_answered_from_memory_with_the_same_bytes(@TempDir Path dir) throws Exception {
    try (RelayHarness r = RelayHarness.start(dir)) {
      TestHost a = new TestHost(r.url(), "alpha").enrol();
      TestHost b = new TestHost(r.url(), "beta").enrol();
      Http.Resp read = b.get("/v2/relay/items?after=0");
      assertThat(counter(r, FROM_MEMORY)).as("the first pull is read").isZero();
      Http.Resp remembered = b.get("/v2/relay/items?after=0");
      assertThat(counter(r, FROM_MEMORY)).as("the second is not").isEqualTo(1);
      assertThat(remembered.status()).isEqualTo(200);
      assertThat(remembered.raw()).isEqualTo(read.raw());

      // an item commits: the next pull reads it, whatever the earlier pulls taught the cache
      String id = Envelopes.newId();
      assertThat(a.pushEnvelope(b, id, Envelopes.sealed(id)).json().get("results").get(0).get("status").asText())
          .isEqualTo("accepted");
      JsonNode page = b.get("/v2/relay/items?after=0").json();
      assertThat(page.get("items")).hasSize(1);
      assertThat(page.get("items").get(0).get("item_id").asText()).isEqualTo(id);
      assertThat(counter(r, FROM_MEMORY)).isEqualTo(1);
      long seq = page.get("last_seq").asLong();
      assertThat(page.get("head_seq").asLong()).isEqualTo(seq);

      // acked: the host's next pull (after its last seq) is answered from memory, as the read would answer it
      String epoch = page.get("epoch").asText();
      assertThat(b.ack(epoch, seq).status()).isEqualTo(200);
      JsonNode after = b.get("/v2/relay/items?after=" + seq).json();
      assertThat(counter(r, FROM_MEMORY)).isEqualTo(2);
      assertThat(after.get("items")).isEmpty();
      assertThat(after.get("head_seq").asLong()).isEqualTo(seq);
      assertThat(after.get("last_seq").asLong()).isEqualTo(seq);
      assertThat(after.get("more").asBoolean()).isFalse();
      assertThat(after.get("epoch").asText()).isEqualTo(epoch);
      // an older cursor is read (the cache knows nothing below the item's seq), and learns that the queue is empty
      assertThat(b.get("/v2/relay/items?after=0").json().get("items")).isEmpty();
      assertThat(counter(r, FROM_MEMORY)).isEqualTo(2);
      assertThat(b.get("/v2/relay/items?after=0").json().get("head_seq").asLong()).isEqualTo(seq);
      assertThat(counter(r, FROM_MEMORY)).isEqualTo(3);
    }
  }

  @Test
  void after_a_restart_an_idle_host_s_first_pull_comes_from_memory_and_a_queued_item_is_still_read(@TempDir Path dir)
      throws Exception {
    io.mbxrelay.crypto.Ed25519KeyPair relayKey = io.mbxrelay.crypto.Ed25519KeyPair.generate();
    io.mbxrelay.crypto.Ed25519KeyPair alphaKey = io.mbxrelay.crypto.Ed25519KeyPair.generate();
    io.mbxrelay.crypto.Ed25519KeyPair betaKey = io.mbxrelay.crypto.Ed25519KeyPair.generate();
    String queued = Envelopes.newId();
    String acked = Envelopes.newId();
    long ackedSeq;
    try (RelayHarness r = RelayHarness.start(dir, java.util.Map.of(), java.time.Clock.systemUTC(), relayKey)) {
      TestHost a = new TestHost(r.url(), "alpha", alphaKey).enrol();
      TestHost b = new TestHost(r.url(), "beta", betaKey).enrol();
      a.pushEnvelope(b, acked, Envelopes.sealed(acked)); // beta reads and acks it: its queue is empty, head > 0
      JsonNode page = b.get("/v2/relay/items?after=0").json();
      ackedSeq = page.get("last_seq").asLong();
      assertThat(b.ack(page.get("epoch").asText(), ackedSeq).status()).isEqualTo(200);
      b.pushEnvelope(a, queued, Envelopes.sealed(queued)); // alpha never pulls it
    }
    try (RelayHarness r = RelayHarness.start(dir, java.util.Map.of(), java.time.Clock.systemUTC(), relayKey)) {
      TestHost a = new TestHost(r.url(), "alpha", alphaKey);
      TestHost b = new TestHost(r.url(), "beta", betaKey);
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
      while (counter(r, "mbxrelay_pull_empty_page_cache_size") < 2 && System.nanoTime() < deadline) {
        Thread.sleep(20); // the start-up scan runs in the background
      }
      assertThat(counter(r, "mbxrelay_pull_empty_page_cache_size")).as("both hosts learnt at start").isEqualTo(2);
      // beta still holds cursor 0 (say it lost its state): nothing is queued, so memory answers, with the head
      JsonNode empty = b.get("/v2/relay/items?after=0").json();
      assertThat(counter(r, FROM_MEMORY)).isEqualTo(1);
      assertThat(empty.get("items")).isEmpty();
      assertThat(empty.get("head_seq").asLong()).isEqualTo(ackedSeq);
      // alpha's queued item is below what memory knows: read, and served
      JsonNode page = a.get("/v2/relay/items?after=0").json();
      assertThat(counter(r, FROM_MEMORY)).isEqualTo(1);
      assertThat(page.get("items")).hasSize(1);
      assertThat(page.get("items").get(0).get("item_id").asText()).isEqualTo(queued);
    }
  }

  @Test
  void a_waiting_pull_answered_empty_from_memory_still_wakes_for_the_next_item(@TempDir Path dir) throws Exception {
    try (RelayHarness r = RelayHarness.start(dir)) {
      TestHost a = new TestHost(r.url(), "alpha").enrol();
      TestHost b = new TestHost(r.url(), "beta").enrol();
      b.get("/v2/relay/items?after=0"); // read: the cache learns the queue is empty
      long before = counter(r, FROM_MEMORY);
      CompletableFuture<Http.Resp> waiting = CompletableFuture.supplyAsync(() -> {
        try {
          return b.get("/v2/relay/items?after=0&wait=20");
        } catch (Exception e) {
          throw new IllegalStateException(e);
        }
      });
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
      while (counter(r, "mbxrelay_pull_waiting") == 0 && System.nanoTime() < deadline) {
        Thread.sleep(20);
      }
      assertThat(counter(r, "mbxrelay_pull_waiting")).as("the pull waits").isEqualTo(1);
      assertThat(counter(r, FROM_MEMORY)).as("its first look came from memory").isEqualTo(before + 1);
      long start = System.nanoTime();
      String id = Envelopes.newId();
      a.pushEnvelope(b, id, Envelopes.sealed(id));
      Http.Resp page = waiting.get(10, TimeUnit.SECONDS);
      assertThat(TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - start)).as("woken, not timed out").isLessThan(5);
      assertThat(page.json().get("items")).hasSize(1);
      assertThat(page.json().get("items").get(0).get("item_id").asText()).isEqualTo(id);
    }
  }
}
