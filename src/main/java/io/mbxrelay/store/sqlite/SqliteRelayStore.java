package io.mbxrelay.store.sqlite;

import io.mbxrelay.config.RelayConfig;
import io.mbxrelay.store.model.Enrolment;
import io.mbxrelay.store.EnrolmentCache;
import io.mbxrelay.store.RelayLedger;
import io.mbxrelay.store.RelayStore;
import io.mbxrelay.store.StoreCommand;
import io.mbxrelay.store.StoreException;
import io.mbxrelay.store.StoreOpenException;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Clock;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * The embedded relay store: the {@link RelayLedger} over the SQLite backend ({@link SqliteBackend}), opened from a
 * store directory (docs/architecture.md "Store: ledger and backends"). The SQLite-only parts (open report, commit
 * count and timer, the enrolment cache) are reached through it.
 *
 * <p>Threading: owned by one thread (the writer).
 */
public final class SqliteRelayStore implements RelayStore {
  /** Called after all commands of a transaction ran and before COMMIT, and right after it (test crash harness). */
  public interface CommitHook extends RelayLedger.CommitHook {}

  private final SqliteBackend backend;
  private final RelayLedger ledger;
  private final io.mbxrelay.store.model.OpenReport report;

  private SqliteRelayStore(SqliteBackend backend, RelayLedger ledger, io.mbxrelay.store.model.OpenReport report) {
    this.backend = backend;
    this.ledger = ledger;
    this.report = report;
  }

  /**
   * Opens (creating or migrating when needed) the store in {@code storeDir}.
   *
   * @param storeDir the store directory (created 0700 when missing)
   * @param relayPubkey the relay's public key; a new store pins it, an existing one must match
   * @param clock time source (tests inject one)
   * @param limits protocol limits (quotas, retention, caps)
   * @param busyTimeoutMs SQLite busy timeout
   * @param heartbeatStaleMs a stored heartbeat further than this from now rotates the epoch; 0 = never
   * @return the open store
   * @throws StoreOpenException newer schema, another relay key, not a store, or unreadable
   */
  public static SqliteRelayStore open(Path storeDir, String relayPubkey, Clock clock, RelayConfig.Limits limits,
      long busyTimeoutMs, long heartbeatStaleMs) throws StoreOpenException {
    return open(storeDir, relayPubkey, clock, limits, busyTimeoutMs, heartbeatStaleMs, false);
  }

  /**
   * Opens the store after comparing it with its commit watermark ({@link SqliteOpener#open}).
   *
   * @param storeDir the store directory (created 0700 when missing)
   * @param relayPubkey the relay's public key; a new store pins it, an existing one must match
   * @param clock time source (tests inject one)
   * @param limits protocol limits (quotas, retention, caps)
   * @param busyTimeoutMs SQLite busy timeout
   * @param heartbeatStaleMs a stored heartbeat further than this from now rotates the epoch; 0 = never
   * @param acceptLostCommits the operator accepts a store behind its watermark ({@code serve --accept-lost-commits})
   * @return the open store
   * @throws StoreOpenException newer schema, another relay key, not a store, unreadable; a
   *     {@link io.mbxrelay.store.StoreRefusedException} for a store behind its watermark
   */
  public static SqliteRelayStore open(Path storeDir, String relayPubkey, Clock clock, RelayConfig.Limits limits,
      long busyTimeoutMs, long heartbeatStaleMs, boolean acceptLostCommits) throws StoreOpenException {
    SqliteOpener.Opened opened = SqliteOpener.open(storeDir, relayPubkey, clock, busyTimeoutMs, heartbeatStaleMs,
        acceptLostCommits);
    return new SqliteRelayStore(opened.backend(), new RelayLedger(opened.backend(), clock, limits), opened.report());
  }

  /**
   * Creates the store directory with mode 0700 when it is missing.
   *
   * @param dir the store directory
   * @throws StoreOpenException when it cannot be created
   */
  public static void createStoreDir(Path dir) throws StoreOpenException {
    SqliteOpener.createStoreDir(dir);
  }

  /**
   * Maps a driver exception to a failure class ({@link SqliteBackend#classify}).
   *
   * @param what short context
   * @param e the driver exception
   * @return the classified exception
   */
  public static StoreException classify(String what, SQLException e) {
    return SqliteBackend.classify(what, e);
  }

  /** What the open did (created, epoch rotated and why, migrated and its backup). */
  public io.mbxrelay.store.model.OpenReport openReport() {
    return report;
  }

  /**
   * Whether the store in {@code storeDir} was closed cleanly and not opened since ({@link SqliteOpener#closedCleanly}).
   *
   * @param storeDir the store directory
   * @return true when the clean-close marker is there
   */
  public static boolean closedCleanly(Path storeDir) {
    return SqliteOpener.closedCleanly(storeDir);
  }

  /** Sets when the usage log is used and how long its sweeps are (tests of this package). */
  void usageLog(int directKeys, int sweepTransactions) {
    backend.usageLog(directKeys, sweepTransactions);
  }

  /** The backend under the ledger (tests of this package). */
  SqliteBackend backend() {
    return backend;
  }

  /** The ledger over this store's backend. */
  public RelayLedger ledger() {
    return ledger;
  }

  /** Installs the commit hook (test crash harness only). */
  public void commitHook(CommitHook hook) {
    ledger.commitHook(hook);
  }

  /** See {@link RelayLedger#onNewItems}. */
  @Override
  public void onNewItems(java.util.function.Consumer<java.util.Map<String, Long>> observer) {
    ledger.onNewItems(observer);
  }

  /**
   * Installs the COMMIT timer: called on the writer thread with the duration in ns of every COMMIT statement that
   * returned (the WAL fsync under {@code synchronous=FULL}).
   *
   * @param timer receives the COMMIT duration, ns
   */
  public void commitTimer(java.util.function.LongConsumer timer) {
    backend.commitTimer(timer);
  }

  /**
   * Sets the writer's {@code wal_autocheckpoint} ({@link SqliteBackend#walAutocheckpoint}). Before the writer starts.
   *
   * @param pages log pages that trigger a checkpoint
   * @throws io.mbxrelay.store.StoreException when the pragma fails
   */
  public void walAutocheckpoint(int pages) throws io.mbxrelay.store.StoreException {
    backend.walAutocheckpoint(pages);
  }

  /** Installs the post-commit observer: called on the writer thread with {@code meta.commits} after every COMMIT. */
  public void onCommit(java.util.function.LongConsumer observer) {
    backend.onCommit(observer);
  }

  /** {@code meta.commits} as last committed by this writer (issue 10 item 3). Writer thread only. */
  public long commits() {
    return backend.commits();
  }

  /** The committed enrolments in memory (reads safe on any thread). */
  public EnrolmentCache enrolments() {
    return backend.enrolmentCache();
  }

  @Override
  public String epoch() {
    return ledger.epoch();
  }

  @Override
  public String relayPubkey() {
    return ledger.relayPubkey();
  }

  /** The database file ({@code relay.db}). */
  public Path file() {
    return backend.file();
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

  /** Package-private access for migrations and tests of this package. */
  Connection connection() {
    return backend.connection();
  }
}
