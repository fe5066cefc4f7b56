package io.mbxrelay.store.spi;

import io.mbxrelay.store.model.DenyEntry;
import io.mbxrelay.store.model.EncAds;
import io.mbxrelay.store.model.Enrolment;
import io.mbxrelay.store.model.HostState;
import io.mbxrelay.store.model.Page;
import io.mbxrelay.store.model.QueueStats;
import io.mbxrelay.budget.PageBudget;
import io.vertx.core.Future;
import java.util.List;
import java.util.Optional;

/**
 * The relay's read path (docs/architecture.md "Store: ledger and backends"): reads that never block the writer and see
 * only committed data. Every method returns a future completed on the caller's context; a failed read fails the
 * future with the backend's exception. Safe on any event loop.
 *
 * <p>A backend implements it next to its {@link LedgerBackend}; the SQLite one is
 * {@link io.mbxrelay.store.sqlite.SqliteReads} (a pool of read-only WAL connections).
 */
public interface RelayReads extends AutoCloseable {

  /** The enrolment of a key, live or revoked, or empty. */
  Future<Optional<Enrolment>> enrolment(String hostPubkey);

  /**
   * Live enrolments carrying a name, case-insensitively, newest enrolled first (docs/protocol.md §2).
   *
   * @param name the name as sent
   * @param limit most rows (callers ask for one more than they accept, to detect a crowded name)
   */
  Future<List<Enrolment>> liveByName(String name, int limit);

  /** What a host sees of itself ({@code you} in info): head, acked through, its ads. */
  Future<HostState> hostState(String hostPubkey);

  /**
   * One pull page in a single consistent snapshot (docs/protocol.md §3).
   *
   * @param target the caller's key
   * @param after exclusive lower seq bound
   * @param limit most items (1..max_pull)
   * @param maxBytes byte budget (sum of stored bytes); a single oversize item still goes out alone
   * @param budget the in-memory page budget the page's bytes are held in (the caller releases them), or null
   * @param client the client's rate key (its share of the budget), or null without a budget
   * @return the page; fails with {@link PageBudget.Exhausted} when items are due but the client's share is used up
   */
  Future<Page> pull(String target, long after, int limit, long maxBytes, PageBudget budget, String client);

  /** {@link #pull(String, long, int, long, PageBudget, String)} without a budget. */
  default Future<Page> pull(String target, long after, int limit, long maxBytes) {
    return pull(target, after, limit, maxBytes, null, null);
  }

  /** Last allocated seq of a target, 0 if none. */
  Future<Long> headSeq(String target);

  /** Receives one live host's queue position from {@link #scanQueueHeads}. */
  @FunctionalInterface
  interface QueueHeadSink {
    /**
     * @param target the host's key (canonical)
     * @param headSeq its last allocated seq, 0 if none
     * @param highestQueued the highest seq still queued for it, 0 when its queue is empty
     */
    void head(String target, long headSeq, long highestQueued);
  }

  /**
   * Every live host's head seq and highest queued seq in one snapshot, handed to {@code sink} on a reader thread (the
   * empty-page cache's start, {@link io.mbxrelay.store.EmptyPageCache#seed}). A store that cannot tell them cheaply
   * hands over nothing.
   *
   * @return the hosts handed over
   */
  default Future<Long> scanQueueHeads(QueueHeadSink sink) {
    return Future.succeededFuture(0L);
  }

  /** Queue totals for the metrics gauges (timer-driven, never per request). */
  Future<QueueStats> queueStats();

  /** A trivial read (readiness). */
  Future<Void> probe();

  /** The enc-key ads of a key while its enrolment is live, or empty. */
  Future<Optional<EncAds>> encAds(String hostPubkey);

  /** The deny list, ordered by time added. */
  Future<List<DenyEntry>> denyList();

  @Override
  void close();
}
