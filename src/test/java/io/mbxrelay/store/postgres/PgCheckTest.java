package io.mbxrelay.store.postgres;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.mbxrelay.config.ConfigLoader;
import io.mbxrelay.crypto.Ed25519KeyPair;
import io.mbxrelay.store.StoreCommand;
import io.mbxrelay.wire.Hashes;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.Statement;
import java.time.Clock;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** {@link PgCheck}: a store written by the ledger passes; a counter that disagrees with its rows, or bytes that no longer match their hash, fail. */
class PgCheckTest {
  @Test
  void a_written_store_passes_and_a_wrong_counter_or_changed_bytes_fail() throws Exception {
    String url = PgTestServer.shared().createDatabase();
    PgStore.Settings settings = new PgStore.Settings(url, PgTestServer.SUPERUSER, "", 4);
    String a = Ed25519KeyPair.generate().publicKeyB64();
    String b = Ed25519KeyPair.generate().publicKeyB64();
    try (PgStore pg = PgStore.open(settings, null, System::currentTimeMillis, 0);
        io.mbxrelay.store.RelayLedger s = pg.newLedger(Clock.systemUTC(), ConfigLoader.load(null, Map.of()).limits())) {
      s.execute(new StoreCommand.Enrol("alpha", a, "", null, null));
      s.execute(new StoreCommand.Enrol("beta", b, "", null, null));
      for (int i = 0; i < 5; i++) {
        byte[] w = ("wire" + i).getBytes(StandardCharsets.UTF_8);
        s.execute(new StoreCommand.Push(a, "alpha", "envelope", "id" + i,
            List.of(new StoreCommand.Target(b, w, Hashes.sha256Hex(w), null))));
      }
    }
    ObjectNode ok = PgCheck.check(settings, true);
    assertThat(ok.get("problems")).isEmpty();
    assertThat(ok.get("ok").asBoolean()).isTrue();
    assertThat(ok.get("items_hashed").asLong()).isEqualTo(5);
    try (Connection c = DriverManager.getConnection(url, PgTestServer.SUPERUSER, "");
        Statement st = c.createStatement()) {
      st.execute("UPDATE queue_usage SET items = items + 1");
      st.execute("UPDATE items SET wire = 'x'::bytea WHERE item_id = 'id3'");
    }
    ObjectNode bad = PgCheck.check(settings, true);
    assertThat(bad.get("ok").asBoolean()).isFalse();
    assertThat(bad.get("problems").toString()).contains("queue_usage disagrees").contains("wire does not match");
  }
}
