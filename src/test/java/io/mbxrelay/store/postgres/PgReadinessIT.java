package io.mbxrelay.store.postgres;

import static org.assertj.core.api.Assertions.assertThat;

import io.mbxrelay.crypto.Ed25519KeyPair;
import io.mbxrelay.testing.ChildRelay;
import io.mbxrelay.testing.Envelopes;
import io.mbxrelay.testing.Http;
import io.mbxrelay.testing.TestHost;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.Statement;
import java.util.Map;
import java.util.function.Predicate;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 20 items 2 and 5: readiness follows whether the instance can commit a write. A database set read-only (its
 * sessions answer {@code 25006}) keeps reads working, so a probe that only reads would keep {@code /ready} 200 while
 * every push is refused; the probe writes, so {@code /ready} turns 503 ("store not writable") and comes back once the
 * database takes writes again, while pushes answer 503 + {@code Retry-After}, never 500.
 */
class PgReadinessIT {

  private static void sql(String url, String statement) throws Exception {
    try (Connection c = DriverManager.getConnection(url.replaceAll("/[^/]+$", "/postgres"), PgTestServer.SUPERUSER, "");
        Statement st = c.createStatement()) {
      st.execute(statement);
    }
  }

  /** Sets the database read-only (or back) and ends its sessions, so every new one starts with the setting. */
  private static void readOnly(String url, boolean on) throws Exception {
    String db = url.substring(url.lastIndexOf('/') + 1);
    sql(url, on ? "ALTER DATABASE " + db + " SET default_transaction_read_only = on"
        : "ALTER DATABASE " + db + " RESET default_transaction_read_only");
    sql(url, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '" + db + "'"
        + " AND pid <> pg_backend_pid()");
  }

  private static Http.Resp awaitReady(ChildRelay r, Predicate<Http.Resp> until) throws Exception {
    long deadline = System.nanoTime() + 30_000_000_000L;
    Http.Resp last;
    do {
      last = Http.send(r.adminUrl(), "GET", "/ready", null);
      if (until.test(last)) {
        return last;
      }
      Thread.sleep(200);
    } while (System.nanoTime() < deadline);
    return last;
  }

  @Test
  void a_read_only_database_makes_ready_503_and_pushes_503_and_both_recover_when_it_takes_writes(@TempDir Path dir)
      throws Exception {
    String url = PgTestServer.shared().createDatabase();
    Map<String, String> env = Map.of("MBX_RELAY_STORE_BACKEND", "postgresql", "MBX_RELAY_STORE_URL", url,
        "MBX_RELAY_STORE_USER", PgTestServer.SUPERUSER, "MBX_RELAY_STORE_POOL_SIZE", "4",
        "MBX_RELAY_HTTP_INSTANCES", "1", "MBX_RELAY_STORE_READ_POOL_SIZE", "2");
    try (ChildRelay r = ChildRelay.start(dir, env)) {
      TestHost a = new TestHost(r.url(), "alpha", Ed25519KeyPair.generate()).enrol();
      TestHost b = new TestHost(r.url(), "beta", Ed25519KeyPair.generate()).enrol();
      assertThat(awaitReady(r, x -> x.status() == 200).status()).isEqualTo(200);

      readOnly(url, true);
      try {
        // (the first answers may also name the read pool: its sessions were just ended)
        Http.Resp notReady = awaitReady(r, x -> x.raw().contains("store not writable"));
        assertThat(notReady.status()).as(notReady.raw()).isEqualTo(503);
        assertThat(notReady.raw()).contains("store not writable");
        String id = Envelopes.newId();
        Http.Resp refused = a.pushEnvelope(b, id, Envelopes.sealed(id));
        assertThat(refused.status()).as(refused.raw()).isEqualTo(503);
        assertThat(refused.error()).isEqualTo("store unavailable; retry later");
        // reads still work on a read-only database: the pull answers its (empty) page
        assertThat(b.pull(0, null, null).status()).isEqualTo(200);
        // still not ready a probe interval later: the failure is the database's, not a passing blip
        Thread.sleep(1500);
        Http.Resp still = Http.send(r.adminUrl(), "GET", "/ready", null);
        assertThat(still.status()).isEqualTo(503);
        assertThat(still.raw()).contains("store not writable").doesNotContain("read pool");
      } finally {
        readOnly(url, false);
      }
      Http.Resp ready = awaitReady(r, x -> x.status() == 200);
      assertThat(ready.status()).as(ready.raw()).isEqualTo(200);
      String id = Envelopes.newId();
      Http.Resp stored = a.pushEnvelope(b, id, Envelopes.sealed(id));
      assertThat(stored.status()).as(stored.raw()).isEqualTo(200);
      assertThat(stored.json().get("results").get(0).get("status").asText()).isEqualTo("accepted");
    }
  }
}
