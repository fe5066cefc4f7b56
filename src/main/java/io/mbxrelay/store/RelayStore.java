package io.mbxrelay.store;

import io.mbxrelay.store.model.Enrolment;
import java.util.List;
import java.util.Optional;

/**
 * The relay's durable state as the writer sees it (docs/protocol.md §7.2): it runs {@link StoreCommand}s in group
 * commits. {@link RelayLedger} is the implementation, over any {@link LedgerBackend} (docs/architecture.md "Store:
 * ledger and backends"); {@code store.sqlite.SqliteRelayStore} is the ledger over SQLite opened from a store directory.
 *
 * <p>Threading: one instance is owned by exactly one thread, the writer (in the server: the
 * {@code StoreWriterVerticle}'s single worker thread; in the CLI: the main thread). The server's reads (pull, info,
 * lookups) go through {@link RelayReads}; hop checks read the {@link EnrolmentCache}.
 */
public interface RelayStore extends AutoCloseable {

  /**
   * Current store schema version: 3 = the reference's 2 (docs/protocol.md §5) plus the deny list and enrolment clients tables
   * (docs/protocol.md §7.8 "Revocation"); 4 = the same tables with the dedup key ordered by item id first (issue 18); 5 =
   * {@code seqs} holds a floor raised by a trigger when items are deleted, and a target's next seq is the larger of it
   * and its highest queued seq + 1 (issue 18: a push no longer writes a {@code seqs} row). Older stores are migrated in
   * place; the reference cannot open a v3, v4 or v5 store, nor an mbxrelay before 5 a v5 one.
   */
  int SCHEMA_VERSION = 5;

  /** The current epoch, a random UUID v4 string (docs/protocol.md §1). */
  String epoch();

  /** The relay public key this store is pinned to (base64, 44 chars). */
  String relayPubkey();

  /**
   * Runs the commands in one transaction, each in its own savepoint, then commits once (group commit). A command
   * that fails unexpectedly rolls back to its savepoint and gets its own error; the others still commit.
   *
   * @param commands one or more commands, run in order
   * @return one result per command, in order; only returned after COMMIT
   * @throws StoreException when the transaction could not be begun or committed: no command took effect
   */
  List<CommandResult> execute(List<? extends StoreCommand<?>> commands) throws StoreException;

  /**
   * Runs one command in its own transaction.
   *
   * @param command the command
   * @param <R> its result type
   * @return the command's result after COMMIT
   * @throws StoreException when it failed; nothing took effect
   */
  @SuppressWarnings("unchecked")
  default <R> R execute(StoreCommand<R> command) throws StoreException {
    CommandResult result = execute(List.of(command)).get(0);
    if (result.error() != null) {
      throw result.error();
    }
    return (R) result.value();
  }

  /**
   * The enrolment of a key, live or revoked.
   *
   * @param hostPubkey base64 key as sent
   * @return the row, or empty
   * @throws StoreException on I/O failure
   */
  Optional<Enrolment> enrolment(String hostPubkey) throws StoreException;

  /**
   * Last allocated seq of a target ({@code next_seq - 1}, 0 if none).
   *
   * @param targetPubkey target key
   * @return head seq
   * @throws StoreException on I/O failure
   */
  long headSeq(String targetPubkey) throws StoreException;

  /**
   * Readiness probe of the write path that writes nothing (issue 10 item 14): takes the write lock ({@code BEGIN
   * IMMEDIATE}), reads one meta row and rolls back. Nothing is committed, written or fsynced, so an idle relay writes
   * only its heartbeat; a lock held by another process, a read-only store or an I/O error fails it as it would fail a
   * write. On PostgreSQL it commits an overwrite of the {@code meta} row {@code ready_probe} instead (issue 20 item 2:
   * a read-only or full database passes a probe that only reads). Writer thread only, outside a transaction.
   *
   * @return true when the lock was taken and the row read
   * @throws StoreException UNAVAILABLE (busy, read-only, I/O), CORRUPT, or INTERNAL
   */
  boolean probeWriter() throws StoreException;

  /**
   * Result of one command in a batch: exactly one of value and error is set (value may be a result record).
   *
   * @param value the command's result, when it succeeded
   * @param error the command's failure, when it failed
   */
  record CommandResult(Object value, StoreException error) {}

  /**
   * Installs the observer of committed items (the writer's {@code ItemsCommitted} signal): called on the writer thread
   * after each COMMIT that stored at least one item, before that transaction's answers, with the targets that
   * received items, each mapped to its new head seq (the highest seq the transaction stored for it). One observer; a
   * later call replaces it.
   *
   * @param observer receives an unmodifiable map of target key to head seq; must not block
   */
  void onNewItems(java.util.function.Consumer<java.util.Map<String, Long>> observer);

  /**
   * Picks up changes another process committed to the store (for example an operator's deny-list command beside a
   * running relay), so cached state follows them. Writer thread only; the default does nothing.
   *
   * @throws StoreException on I/O failure
   */
  default void refreshIfChangedElsewhere() throws StoreException {}

  /** Closes the writer connection. */
  @Override
  void close();
}
