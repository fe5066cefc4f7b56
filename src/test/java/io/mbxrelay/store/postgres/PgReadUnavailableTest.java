package io.mbxrelay.store.postgres;

import static org.assertj.core.api.Assertions.assertThat;

import io.mbxrelay.crypto.Ed25519KeyPair;
import io.mbxrelay.testing.Envelopes;
import io.mbxrelay.testing.RawHttp;
import io.mbxrelay.testing.RelayHarness;
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
 * Issue 20 item 1: a pull while the relay's PostgreSQL connections are terminated and the database refuses new ones
 * answers 503 "store unavailable; retry later" with {@code Retry-After}, as a push does, never 500 "internal error";
 * the push says nothing was stored (issue 20 item 4); both are served again once the database is back.
 */
class PgReadUnavailableTest {
  private static final String UNAVAILABLE = "{\"error\":\"store unavailable; retry later\"}";

  @Test
  void a_pull_while_the_database_is_unreachable_answers_503_with_retry_after_not_500(@TempDir Path dir)
      throws Exception {
    PgTestServer pg = PgTestServer.shared();
    String url = pg.createDatabase();
    String db = url.substring(url.lastIndexOf('/') + 1);
    try (RelayHarness relay = RelayHarness.start(dir, Map.of("MBX_RELAY_STORE_BACKEND", "postgresql",
        "MBX_RELAY_STORE_URL", url, "MBX_RELAY_STORE_USER", PgTestServer.SUPERUSER,
        "MBX_RELAY_STORE_READ_POOL_SIZE", "2"), Clock.systemUTC(), Ed25519KeyPair.generate())) {
      TestHost a = new TestHost(relay.url(), "pg-down-a").enrol();
      TestHost b = new TestHost(relay.url(), "pg-down-b").enrol();
      String id = Envelopes.newId();
      assertThat(a.pushEnvelope(b, id, Envelopes.sealed(id)).status()).isEqualTo(200);
      assertThat(pull(relay, b).status()).isEqualTo(200);

      try (Connection admin = DriverManager.getConnection(pg.jdbcUrl("postgres"), PgTestServer.SUPERUSER, "");
          Statement st = admin.createStatement()) {
        st.execute("ALTER DATABASE " + db + " ALLOW_CONNECTIONS false");
        st.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '" + db + "'");
        try {
          // the pooled connections are dead and no new one is allowed: every read fails at the database
          for (int i = 0; i < 3; i++) {
            RawHttp.Answer r = pull(relay, b);
            assertThat(r.status()).as(r.body()).isEqualTo(503);
            assertThat(r.body()).isEqualTo(UNAVAILABLE);
            assertThat(r.header("retry-after")).isEqualTo("1");
          }
          String id2 = Envelopes.newId();
          var push = a.pushEnvelope(b, id2, Envelopes.sealed(id2));
          assertThat(push.status()).as(push.raw()).isEqualTo(503);
          assertThat(push.raw()).isEqualTo(
              "{\"error\":\"store unavailable; retry later\",\"outcome\":\"not_stored\"}");
        } finally {
          st.execute("ALTER DATABASE " + db + " ALLOW_CONNECTIONS true");
        }
      }
      // back: a dead pooled connection may still fail one read (503), then the pull is served
      int status = 0;
      for (int i = 0; i < 10 && status != 200; i++) {
        RawHttp.Answer r = pull(relay, b);
        status = r.status();
        assertThat(status).as(r.body()).isIn(200, 503);
      }
      assertThat(status).isEqualTo(200);
    }
  }

  private static RawHttp.Answer pull(RelayHarness relay, TestHost h) throws Exception {
    return RawHttp.exchange(relay.server.port(), RawHttp.signedHead(h.key, h.pub(), "GET", "/v2/relay/items?after=0",
        System.currentTimeMillis(), new byte[0], -1), null, 10_000);
  }
}
