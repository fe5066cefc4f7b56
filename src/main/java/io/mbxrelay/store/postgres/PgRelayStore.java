package io.mbxrelay.store.postgres;

import io.mbxrelay.config.RelayConfig;
import io.mbxrelay.store.RelayStore.CommandResult;
import io.mbxrelay.store.Enrolment;
import io.mbxrelay.store.RelayLedger;
import io.mbxrelay.store.RelayStore;
import io.mbxrelay.store.StoreCommand;
import io.mbxrelay.store.StoreException;
import java.time.Clock;
import java.util.List;
import java.util.Optional;

/**
 * The relay's writer store on PostgreSQL: the {@link RelayLedger} over one {@link PgLedgerBackend} session of a
 * {@link PgStore} (docs/scale-out.md). Closing it closes the session, not the {@code PgStore}.
 */
public final class PgRelayStore implements RelayStore {
  private final PgStore store;
  private final RelayLedger ledger;

  /**
   * @param store the open PostgreSQL store
   * @param clock time source of the ledger
   * @param limits protocol limits
   */
  public PgRelayStore(PgStore store, Clock clock, RelayConfig.Limits limits) {
    this.store = store;
    this.ledger = new RelayLedger(store.newBackend(), clock, limits);
  }

  /** The ledger (commit hooks, new-item observers). */
  public RelayLedger ledger() {
    return ledger;
  }

  /** The PostgreSQL store this writer runs on. */
  public PgStore pgStore() {
    return store;
  }

  @Override
  public String epoch() {
    return ledger.epoch();
  }

  @Override
  public String relayPubkey() {
    return ledger.relayPubkey();
  }

  @Override
  public List<CommandResult> execute(List<? extends StoreCommand<?>> commands) throws StoreException {
    return ledger.execute(commands);
  }

  @Override
  public Optional<Enrolment> enrolment(String hostPubkey) throws StoreException {
    return ledger.enrolment(hostPubkey);
  }

  @Override
  public long headSeq(String targetPubkey) throws StoreException {
    return ledger.headSeq(targetPubkey);
  }

  @Override
  public boolean probeWriter() throws StoreException {
    return ledger.probeWriter();
  }

  @Override
  public void refreshIfChangedElsewhere() throws StoreException {
    ledger.refreshIfChangedElsewhere();
  }

  @Override
  public void close() {
    ledger.close();
  }
}
