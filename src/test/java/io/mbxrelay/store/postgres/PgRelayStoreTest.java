package io.mbxrelay.store.postgres;

import io.mbxrelay.config.RelayConfig;
import io.mbxrelay.crypto.RelayKeys;
import io.mbxrelay.store.spi.RelayReads;
import io.mbxrelay.store.RelayStore;
import io.mbxrelay.store.RelayStoreContractTest;
import io.vertx.core.Vertx;
import java.time.Clock;
import org.junit.jupiter.api.AfterEach;

/** The store contract on PostgreSQL (a throwaway server, {@link PgTestServer}; a fresh database per store). */
class PgRelayStoreTest extends RelayStoreContractTest {
  private String url;
  private PgStore pg;

  private PgStore openPg(Clock clock) throws Exception {
    return PgStore.open(new PgStore.Settings(url, PgTestServer.SUPERUSER, "", 8), RelayKeys.toFileJson(relayPair),
        clock::millis, 0);
  }

  @Override
  protected RelayStore open(RelayConfig.Limits limits, Clock clock) throws Exception {
    closePg();
    url = PgTestServer.shared().createDatabase();
    pg = openPg(clock);
    return pg.newLedger(clock, limits);
  }

  @Override
  protected RelayStore reopen(RelayConfig.Limits limits, Clock clock) throws Exception {
    closePg();
    pg = openPg(clock);
    return pg.newLedger(clock, limits);
  }

  @Override
  protected RelayReads openReads(Vertx vertx) throws Exception {
    return new PgReads(vertx, pg, 2);
  }

  @AfterEach
  void closePg() {
    if (pg != null) {
      pg.close();
      pg = null;
    }
  }
}
