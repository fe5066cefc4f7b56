package io.mbxrelay.server;

import static org.assertj.core.api.Assertions.assertThat;

import io.mbxrelay.store.sqlite.SqliteSettings;
import io.mbxrelay.testing.ChildRelay;
import io.mbxrelay.testing.Envelopes;
import io.mbxrelay.testing.Http;
import io.mbxrelay.testing.TestHost;
import io.mbxrelay.wire.Json;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 10 item 11: another process holds the SQLite write lock on {@code relay.db} for 12 s while 40 hosts push.
 * Every push gets an HTTP answer (200 after the lock goes, or 503 "store unavailable" at the writer's deadline); none
 * has its connection closed by the idle timer first. The relay is the shaded jar in a child process; this test's JVM
 * is the other process holding the lock. {@code busy_timeout} 6 s makes the second writer transaction wait until the
 * lock goes (12 s), past the 10 s idle timeout: before the fix the writer's deadline (30 s) let the idle timer close
 * those connections without an answer.
 */
class WriterDeadlineIT {
  private static final int PUSHES = 40;

  @Test
  void pushes_queued_behind_another_process_holding_the_write_lock_for_12_s_all_get_an_answer(@TempDir Path dir)
      throws Exception {
    try (ChildRelay relay = ChildRelay.start(dir, Map.of("MBX_RELAY_STORE_BUSY_TIMEOUT_MS", "6000"))) {
      TestHost a = new TestHost(relay.url(), "deadline-a").enrol();
      TestHost b = new TestHost(relay.url(), "deadline-b").enrol();
      ExecutorService pool = Executors.newFixedThreadPool(PUSHES);
      List<Future<String>> answers = new ArrayList<>();
      long held;
      try (Connection lock = DriverManager.getConnection("jdbc:sqlite:" + dir.resolve(SqliteSettings.DB_FILE))) {
        try (Statement st = lock.createStatement()) {
          st.execute("BEGIN IMMEDIATE");
        }
        long start = System.nanoTime();
        for (int i = 0; i < PUSHES; i++) {
          answers.add(pool.submit(() -> push(relay.url(), a, b)));
        }
        Thread.sleep(Math.max(0, 12_000 - TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start)));
        held = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        try (Statement st = lock.createStatement()) {
          st.execute("ROLLBACK");
        }
      }
      List<String> outcomes = new ArrayList<>();
      for (Future<String> f : answers) {
        outcomes.add(f.get(60, TimeUnit.SECONDS));
      }
      pool.shutdownNow();
      assertThat(held).isGreaterThanOrEqualTo(12_000);
      // a push whose BEGIN waited out the busy timeout was not stored; one the writer did not answer within the
      // event-bus deadline has an unknown outcome (issue 20 item 4)
      String notStored = "503 {\"error\":\"store unavailable; retry later\",\"outcome\":\"not_stored\"}";
      String unknown = "503 {\"error\":\"store unavailable; retry later\",\"outcome\":\"unknown\"}";
      assertThat(outcomes).as("every push answered 200 or 503, none left without an answer")
          .allMatch(o -> o.equals("200") || o.equals(notStored) || o.equals(unknown));
      assertThat(outcomes).containsAnyOf(notStored, unknown);
      // the relay is fine once the lock is gone
      String id = Envelopes.newId();
      assertThat(a.pushEnvelope(b, id, Envelopes.sealed(id)).json().get("results").get(0).get("status").asText())
          .isEqualTo("accepted");
    }
  }

  /** One signed push on its own HTTP/1.1 connection; "200", "503 &lt;body&gt;" or the exception's class name. */
  private static String push(String base, TestHost from, TestHost to) {
    String id = Envelopes.newId();
    var body = Json.MAPPER.createObjectNode();
    body.putArray("items").add(TestHost.item("envelope", id, List.of(to.pub()), List.of(Envelopes.sealed(id))));
    String text = Json.stringify(body);
    String ts = Long.toString(System.currentTimeMillis());
    HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
        .connectTimeout(Duration.ofSeconds(5)).build();
    HttpRequest req = HttpRequest.newBuilder(URI.create(base + "/v2/relay/items")).timeout(Duration.ofSeconds(45))
        .header("content-type", "application/json").header("x-mbx-key", from.pub()).header("x-mbx-ts", ts)
        .header("x-mbx-sig", Http.sign(from.key, "POST", "/v2/relay/items", ts, text))
        .POST(HttpRequest.BodyPublishers.ofString(text, StandardCharsets.UTF_8)).build();
    try {
      HttpResponse<String> r = client.send(req, HttpResponse.BodyHandlers.ofString());
      return r.statusCode() == 200 ? "200" : r.statusCode() + " " + r.body();
    } catch (Exception e) {
      return e.getClass().getSimpleName() + ": " + e.getMessage();
    }
  }
}
