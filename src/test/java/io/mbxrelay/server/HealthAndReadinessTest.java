package io.mbxrelay.server;

import static org.assertj.core.api.Assertions.assertThat;

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
import java.util.function.Predicate;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code /health} and {@code /ready} on the admin port, with real failures: another connection holds the SQLite write
 * lock on {@code relay.db} (BEGIN IMMEDIATE), which either stalls the writer past the readiness bound (long
 * {@code busy_timeout}) or makes every write fail at once with SQLITE_BUSY (short {@code busy_timeout}), exactly as a
 * stuck writer or an unwritable store would. The lock is used instead of chmod because tests run as root, for whom
 * file modes do not stop writes.
 */
class HealthAndReadinessTest {
  /** Lines these tests provoke on purpose (issue 22 item 7): kept out of the build output, asserted where provoked. */
  @org.junit.jupiter.api.extension.RegisterExtension
  static final io.mbxrelay.testing.ExpectedLog LOGS = io.mbxrelay.testing.ExpectedLog.forClass()
      .and("io.mbxrelay.server.AdminVerticle", ch.qos.logback.classic.Level.WARN, "readiness probe failed")
      .and("io.mbxrelay.writer.StoreWriterVerticle", ch.qos.logback.classic.Level.WARN, "transaction failed [kind: UNAVAILABLE]");

  @TempDir
  Path dir;

  private static Http.Resp waitFor(String base, String path, Predicate<Http.Resp> until) throws Exception {
    long deadline = System.currentTimeMillis() + 15_000;
    Http.Resp r = Http.send(base, "GET", path, null);
    while (!until.test(r) && System.currentTimeMillis() < deadline) {
      Thread.sleep(50);
      r = Http.send(base, "GET", path, null);
    }
    return r;
  }

  private static Connection lockStore(Path storeDir) throws Exception {
    Connection c = DriverManager.getConnection("jdbc:sqlite:" + storeDir.resolve(SqliteSettings.DB_FILE));
    try (Statement st = c.createStatement()) {
      st.execute("BEGIN IMMEDIATE");
    }
    return c;
  }

  private static void unlock(Connection c) throws Exception {
    try (Statement st = c.createStatement()) {
      st.execute("ROLLBACK");
    }
    c.close();
  }

  /** Issue 22 item 9: the admin server answered Vert.x's HTML "Resource not found" for a path it does not serve. */
  @Test
  void unknown_admin_paths_and_methods_answer_json_like_every_other_error() throws Exception {
    try (RelayHarness relay = RelayHarness.start(dir)) {
      Http.Resp missing = Http.send(relay.adminUrl(), "GET", "/no-such-page", null);
      assertThat(missing.status()).isEqualTo(404);
      assertThat(missing.raw()).isEqualTo("{\"error\":\"not found\"}");
      Http.Resp method = Http.send(relay.adminUrl(), "DELETE", "/health", null);
      assertThat(method.status()).isEqualTo(405);
      assertThat(method.raw()).isEqualTo("{\"error\":\"method not allowed\"}");
    }
  }

  @Test
  void health_and_ready_answer_200_on_the_admin_port_and_not_on_the_relay_port() throws Exception {
    try (RelayHarness relay = RelayHarness.start(dir)) {
      Http.Resp health = Http.send(relay.adminUrl(), "GET", "/health", null);
      assertThat(health.status()).isEqualTo(200);
      assertThat(health.json().get("status").asText()).isEqualTo("up");
      assertThat(health.json().get("event_loops").asInt()).isEqualTo(2);
      Http.Resp ready = waitFor(relay.adminUrl(), "/ready", r -> r.status() == 200);
      assertThat(ready.status()).as(ready.raw()).isEqualTo(200);
      assertThat(ready.raw()).isEqualTo("{\"ready\":true}");
      // the relay port keeps the wire contract: unsigned unknown paths are 401 there
      for (String p : new String[] {"/metrics", "/health", "/ready"}) {
        assertThat(Http.send(relay.url(), "GET", p, null).status()).as(p).isEqualTo(401);
      }
    }
  }

  @Test
  void ready_goes_503_while_the_writer_is_stalled_past_the_bound_and_back_to_200_when_it_answers() throws Exception {
    try (RelayHarness relay = RelayHarness.start(dir, Map.of(
        "MBX_RELAY_STORE_BUSY_TIMEOUT_MS", "20000",
        "MBX_RELAY_ADMIN_READY_TIMEOUT_MS", "300",
        "MBX_RELAY_ADMIN_PROBE_INTERVAL_MS", "100"), Clock.systemUTC(), Ed25519KeyPair.generate())) {
      assertThat(waitFor(relay.adminUrl(), "/ready", r -> r.status() == 200).status()).isEqualTo(200);
      Connection lock = lockStore(relay.dir);
      Http.Resp stalled;
      try {
        stalled = waitFor(relay.adminUrl(), "/ready", r -> r.status() == 503);
        assertThat(Http.send(relay.adminUrl(), "GET", "/health", null).status()).isEqualTo(200);
        assertThat(Scrape.of(relay.adminUrl()).value("mbxrelay_ready")).isZero();
      } finally {
        unlock(lock);
      }
      assertThat(stalled.status()).isEqualTo(503);
      assertThat(stalled.json().get("ready").asBoolean()).isFalse();
      assertThat(stalled.json().get("failing").get(0).asText())
          .isEqualTo("writer did not answer the probe transaction within 300 ms");
      Http.Resp back = waitFor(relay.adminUrl(), "/ready", r -> r.status() == 200);
      assertThat(back.status()).as(back.raw()).isEqualTo(200);
      assertThat(Scrape.of(relay.adminUrl()).value("mbxrelay_ready")).isEqualTo(1);
    }
  }

  @Test
  void ready_goes_503_while_the_store_refuses_writes_and_the_failed_commits_are_counted() throws Exception {
    try (RelayHarness relay = RelayHarness.start(dir, Map.of(
        "MBX_RELAY_STORE_BUSY_TIMEOUT_MS", "50",
        "MBX_RELAY_ADMIN_READY_TIMEOUT_MS", "2000",
        "MBX_RELAY_ADMIN_PROBE_INTERVAL_MS", "100"), Clock.systemUTC(), Ed25519KeyPair.generate())) {
      TestHost a = new TestHost(relay.url(), "ro-alpha").enrol();
      TestHost b = new TestHost(relay.url(), "ro-beta").enrol();
      assertThat(waitFor(relay.adminUrl(), "/ready", r -> r.status() == 200).status()).isEqualTo(200);
      Scrape before = Scrape.of(relay.adminUrl());
      Connection lock = lockStore(relay.dir);
      Http.Resp refused;
      Http.Resp push;
      try {
        refused = waitFor(relay.adminUrl(), "/ready", r -> r.status() == 503);
        String id = Envelopes.newId();
        push = a.pushEnvelope(b, id, Envelopes.sealed(id));
      } finally {
        unlock(lock);
      }
      assertThat(refused.json().get("failing").get(0).asText()).isEqualTo("store not writable: store unavailable");
      assertThat(push.status()).isEqualTo(503);
      Scrape after = Scrape.of(relay.adminUrl());
      assertThat(after.value("mbxrelay_writer_commit_failures_total", "kind=\"unavailable\"")
          - before.value("mbxrelay_writer_commit_failures_total", "kind=\"unavailable\"")).isPositive();
      assertThat(waitFor(relay.adminUrl(), "/ready", r -> r.status() == 200).status()).isEqualTo(200);
    }
    LOGS.assertSeen("transaction failed [kind: UNAVAILABLE]"); // issue 22 item 7: the line this test provokes
  }

  @Test
  void an_idle_relay_probed_twenty_times_commits_no_transaction_and_writes_nothing() throws Exception {
    // issue 10 item 14: the probe committed a write transaction every 5 s (14.5 transactions a minute when idle)
    java.util.concurrent.CountDownLatch startupSweep = new java.util.concurrent.CountDownLatch(1);
    RelayServer.Options options = new RelayServer.Options(0, "127.0.0.1", dir, io.mbxrelay.auth.ClientAddress.SOCKET,
        CrashPoint.NONE, Clock.systemUTC(), run -> startupSweep.countDown(), (c, n, f) -> {});
    try (RelayHarness relay = RelayHarness.start(dir, Map.of(
        "MBX_RELAY_TIMERS_HEARTBEAT_MS", "3600000",
        "MBX_RELAY_TIMERS_HEARTBEAT_STALE_MS", "86400000",
        "MBX_RELAY_TIMERS_SWEEP_INTERVAL_MS", "86400000",
        "MBX_RELAY_ADMIN_PROBE_INTERVAL_MS", "3600000"), Ed25519KeyPair.generate(), options)) {
      assertThat(startupSweep.await(30, java.util.concurrent.TimeUnit.SECONDS)).isTrue();
      relay.server.readinessProbe().toCompletionStage().toCompletableFuture().get(30, java.util.concurrent.TimeUnit.SECONDS);
      Path wal = relay.dir.resolve(SqliteSettings.DB_FILE + "-wal");
      try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + relay.dir.resolve(SqliteSettings.DB_FILE))) {
        long version = dataVersion(c);
        long walBytes = java.nio.file.Files.size(wal);
        double transactions = Scrape.of(relay.adminUrl()).value("mbxrelay_writer_transaction_seconds_count");
        for (int i = 0; i < 20; i++) {
          relay.server.readinessProbe().toCompletionStage().toCompletableFuture()
              .get(30, java.util.concurrent.TimeUnit.SECONDS);
        }
        assertThat(Scrape.of(relay.adminUrl()).value("mbxrelay_writer_transaction_seconds_count"))
            .as("writer transactions").isEqualTo(transactions);
        assertThat(dataVersion(c)).as("no commit reached the database").isEqualTo(version);
        assertThat(java.nio.file.Files.size(wal)).as("WAL bytes").isEqualTo(walBytes);
        Http.Resp ready = Http.send(relay.adminUrl(), "GET", "/ready", null);
        assertThat(ready.raw()).isEqualTo("{\"ready\":true}");
      }
    }
  }

  private static long dataVersion(Connection c) throws Exception {
    try (Statement st = c.createStatement(); java.sql.ResultSet rs = st.executeQuery("PRAGMA data_version")) {
      rs.next();
      return rs.getLong(1);
    }
  }
}
