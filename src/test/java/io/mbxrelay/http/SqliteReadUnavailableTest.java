package io.mbxrelay.http;

import static org.assertj.core.api.Assertions.assertThat;

import io.mbxrelay.server.RelayServer;
import io.mbxrelay.store.spi.RelayReads;
import io.mbxrelay.testing.Envelopes;
import io.mbxrelay.testing.RawHttp;
import io.mbxrelay.testing.RelayHarness;
import io.mbxrelay.testing.Scrape;
import io.mbxrelay.testing.TestHost;
import java.lang.reflect.Field;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 20 item 1 on SQLite: a pull whose read pool was closed under it (as a stop does) answers 503 "store
 * unavailable; retry later" with {@code Retry-After}, never 500 "internal error"; reads carry no {@code outcome} and
 * are counted as {@code read} answers.
 */
class SqliteReadUnavailableTest {
  @Test
  void a_pull_after_the_read_pool_closed_answers_503_with_retry_after_not_500(@TempDir Path dir) throws Exception {
    try (RelayHarness relay = RelayHarness.start(dir)) {
      TestHost a = new TestHost(relay.url(), "closed-a").enrol();
      TestHost b = new TestHost(relay.url(), "closed-b").enrol();
      String id = Envelopes.newId();
      assertThat(a.pushEnvelope(b, id, Envelopes.sealed(id)).status()).isEqualTo(200);
      assertThat(pull(relay, b, "/v2/relay/items?after=0").status()).isEqualTo(200); // a page connection is open

      reads(relay.server).close();

      for (String path : new String[] {"/v2/relay/items?after=0", "/v2/relay/enc-key?pubkey=" + a.pub()}) {
        RawHttp.Answer r = pull(relay, b, path);
        assertThat(r.status()).as(path + " " + r.body()).isEqualTo(503);
        assertThat(r.body()).isEqualTo("{\"error\":\"store unavailable; retry later\"}");
        assertThat(r.header("retry-after")).isEqualTo("1");
      }
      assertThat(Scrape.of(relay.adminUrl()).value("mbxrelay_unavailable_answers_total", "outcome=\"read\""))
          .isEqualTo(2.0);
    }
  }

  private static RawHttp.Answer pull(RelayHarness relay, TestHost h, String path) throws Exception {
    return RawHttp.exchange(relay.server.port(), RawHttp.signedHead(h.key, h.pub(), "GET", path,
        System.currentTimeMillis(), new byte[0], -1), null, 10_000);
  }

  /** The server's read side (no accessor: only this test closes it early). */
  private static RelayReads reads(RelayServer server) throws ReflectiveOperationException {
    Field f = RelayServer.class.getDeclaredField("reads");
    f.setAccessible(true);
    return (RelayReads) f.get(server);
  }
}
