package io.mbxrelay.store.memory;

import io.mbxrelay.config.RelayConfig;
import io.mbxrelay.store.spi.RelayReads;
import io.mbxrelay.store.RelayStore;
import io.mbxrelay.store.RelayStoreContractTest;
import io.vertx.core.Vertx;
import java.time.Clock;

/**
 * The store contract on the in-memory backend, the contract's executable reference. A restart opens a new ledger over
 * the same {@link MemoryStore}, which keeps every row, as a durable store would.
 */
class MemoryRelayStoreTest extends RelayStoreContractTest {
  private MemoryStore state;

  @Override
  protected RelayStore open(RelayConfig.Limits limits, Clock clock) {
    state = new MemoryStore(relayKey);
    return state.newLedger(clock, limits);
  }

  @Override
  protected RelayStore reopen(RelayConfig.Limits limits, Clock clock) {
    return state.newLedger(clock, limits);
  }

  @Override
  protected RelayReads openReads(Vertx vertx) {
    return new MemoryReads(vertx, state, 2);
  }
}
