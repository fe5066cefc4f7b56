package io.mbxrelay.http;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.mbxrelay.crypto.Ed25519KeyPair;
import io.mbxrelay.store.sqlite.SqliteSettings;
import io.mbxrelay.testing.Envelopes;
import io.mbxrelay.testing.Http;
import io.mbxrelay.testing.RelayHarness;
import io.mbxrelay.testing.Scrape;
import io.mbxrelay.testing.TestHost;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.Statement;
import java.time.Clock;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 20 item 4: a 503 says whether the push was stored. This test holds SQLite's write lock on {@code relay.db}
 * from a connection of its own while a host pushes. When the writer gives up on the lock first (busy timeout shorter
 * than the writer's deadline), the transaction never began: {@code not_stored}, and the retry is a fresh accept. When
 * the writer's deadline passes first, the push is still queued and commits once the lock goes: {@code unknown}, and
 * the retry is a {@code duplicate} at the original seq. A push under the free-space floor is {@code not_stored} with
 * {@code Retry-After: 60} (the writer types that refusal; issue 19 item 5). Each kind is counted.
 */
class UnavailableOutcomeTest {
  private static final String NOT_STORED =
      "{\"error\":\"store unavailable; retry later\",\"outcome\":\"not_stored\"}";
  private static final String UNKNOWN = "{\"error\":\"store unavailable; retry later\",\"outcome\":\"unknown\"}";

  @Test
  void a_push_whose_transaction_could_not_begin_is_not_stored_and_its_retry_is_accepted(@TempDir Path dir)
      throws Exception {
    try (RelayHarness relay = RelayHarness.start(dir, Map.of("MBX_RELAY_STORE_BUSY_TIMEOUT_MS", "200",
        "MBX_RELAY_STORE_WRITER_TIMEOUT_MS", "10000"), Clock.systemUTC(), Ed25519KeyPair.generate())) {
      TestHost a = new TestHost(relay.url(), "outcome-a").enrol();
      TestHost b = new TestHost(relay.url(), "outcome-b").enrol();
      String id = Envelopes.newId();
      byte[] wire = Envelopes.sealed(id);
      Http.Resp refused;
      try (Connection lock = holdWriteLock(dir)) {
        refused = a.pushEnvelope(b, id, wire);
        rollback(lock);
      }
      assertThat(refused.status()).isEqualTo(503);
      assertThat(refused.raw()).isEqualTo(NOT_STORED);
      JsonNode retry = a.pushEnvelope(b, id, wire).json().get("results").get(0);
      assertThat(retry.get("status").asText()).isEqualTo("accepted");
      Scrape m = Scrape.of(relay.adminUrl());
      assertThat(m.value("mbxrelay_unavailable_answers_total", "outcome=\"not_stored\"")).isEqualTo(1.0);
      assertThat(m.value("mbxrelay_unavailable_answers_total", "outcome=\"unknown\"")).isEqualTo(0.0);
    }
  }

  @Test
  void a_push_the_writer_did_not_answer_in_time_is_unknown_and_its_retry_is_a_duplicate_at_the_same_seq(
      @TempDir Path dir) throws Exception {
    try (RelayHarness relay = RelayHarness.start(dir, Map.of("MBX_RELAY_STORE_BUSY_TIMEOUT_MS", "20000",
        "MBX_RELAY_STORE_WRITER_TIMEOUT_MS", "1000"), Clock.systemUTC(), Ed25519KeyPair.generate())) {
      TestHost a = new TestHost(relay.url(), "outcome-c").enrol();
      TestHost b = new TestHost(relay.url(), "outcome-d").enrol();
      String id = Envelopes.newId();
      byte[] wire = Envelopes.sealed(id);
      Http.Resp timedOut;
      try (Connection lock = holdWriteLock(dir)) {
        timedOut = a.pushEnvelope(b, id, wire); // answered at the writer's deadline, still queued behind the lock
        rollback(lock);
      }
      assertThat(timedOut.status()).isEqualTo(503);
      assertThat(timedOut.raw()).isEqualTo(UNKNOWN);
      // it did commit once the lock went: the retry is a duplicate, and the item is delivered once
      JsonNode retry = a.pushEnvelope(b, id, wire).json().get("results").get(0);
      assertThat(retry.get("status").asText()).isEqualTo("duplicate");
      JsonNode page = b.pull(0, null, null).json();
      assertThat(page.get("items")).hasSize(1);
      assertThat(page.get("items").get(0).get("seq").asLong())
          .isEqualTo(retry.get("targets").get(0).get("seq").asLong());
      Scrape m = Scrape.of(relay.adminUrl());
      assertThat(m.value("mbxrelay_unavailable_answers_total", "outcome=\"unknown\"")).isEqualTo(1.0);
      assertThat(m.value("mbxrelay_unavailable_answers_total", "outcome=\"not_stored\"")).isEqualTo(0.0);
    }
  }

  @Test
  void a_push_refused_under_the_free_space_floor_is_not_stored_with_retry_after_60(@TempDir Path dir)
      throws Exception {
    long floor = 1L << 40; // the largest floor the config takes: more than this machine's disk has free
    org.junit.jupiter.api.Assumptions.assumeTrue(java.nio.file.Files.getFileStore(dir).getUsableSpace() < floor);
    try (RelayHarness relay = RelayHarness.start(dir, Map.of("MBX_RELAY_STORE_MIN_FREE_BYTES", Long.toString(floor)),
        Clock.systemUTC(), Ed25519KeyPair.generate())) {
      TestHost a = new TestHost(relay.url(), "floor-a").enrol(); // enrolments still run under the floor
      TestHost b = new TestHost(relay.url(), "floor-b").enrol();
      String id = Envelopes.newId();
      io.mbxrelay.testing.RawHttp.Answer r = pushRaw(relay, a, b, id);
      assertThat(r.status()).isEqualTo(503);
      assertThat(r.body()).isEqualTo(NOT_STORED);
      assertThat(r.header("retry-after")).isEqualTo("60");
      assertThat(Scrape.of(relay.adminUrl()).value("mbxrelay_unavailable_answers_total", "outcome=\"not_stored\""))
          .isEqualTo(1.0);
    }
  }

  private static io.mbxrelay.testing.RawHttp.Answer pushRaw(RelayHarness relay, TestHost from, TestHost to, String id)
      throws Exception {
    var body = io.mbxrelay.wire.Json.MAPPER.createObjectNode();
    body.putArray("items").add(TestHost.item("envelope", id, java.util.List.of(to.pub()),
        java.util.List.of(Envelopes.sealed(id))));
    byte[] bytes = io.mbxrelay.wire.Json.stringify(body).getBytes(java.nio.charset.StandardCharsets.UTF_8);
    return io.mbxrelay.testing.RawHttp.exchange(relay.server.port(), io.mbxrelay.testing.RawHttp.signedHead(from.key,
        from.pub(), "POST", "/v2/relay/items", System.currentTimeMillis(), bytes, bytes.length), bytes, 10_000);
  }

  /** Another connection takes SQLite's write lock ({@code BEGIN IMMEDIATE}), as another process would. */
  private static Connection holdWriteLock(Path dir) throws Exception {
    Connection c = DriverManager.getConnection("jdbc:sqlite:" + dir.resolve(SqliteSettings.DB_FILE));
    try (Statement st = c.createStatement()) {
      st.execute("BEGIN IMMEDIATE");
    }
    return c;
  }

  private static void rollback(Connection c) throws Exception {
    try (Statement st = c.createStatement()) {
      st.execute("ROLLBACK");
    }
  }
}
