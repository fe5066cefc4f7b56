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
 * the retry is a {@code duplicate} at the original seq. Each kind is counted.
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
