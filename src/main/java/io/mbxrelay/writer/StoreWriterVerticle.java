package io.mbxrelay.writer;

import io.mbxrelay.metrics.RateLimitedLogger;
import io.mbxrelay.store.guard.DiskSpace;
import io.mbxrelay.store.RelayStore;
import io.mbxrelay.store.StoreCommand;
import io.mbxrelay.store.StoreException;
import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import io.vertx.core.eventbus.DeliveryOptions;
import io.vertx.core.eventbus.Message;
import io.vertx.core.eventbus.MessageConsumer;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The only writer (docs/architecture.md "One writer"): a worker verticle, deployed exactly once on its own pool of one thread, that
 * owns the store's single write connection. Every write in the process is a {@link StoreCommand} request on
 * {@link Addresses#STORE_WRITE}; the reply is sent only after COMMIT.
 *
 * <p>Group commit: commands that queued while a transaction ran are taken together into one transaction (bounded by
 * {@code batchMax} commands, {@code maxRows} item rows and {@code maxBytes} wire bytes; a single command over a bound
 * runs alone), each in its own savepoint, then committed once and answered. One push request is one command.
 *
 * <p>Once a second, when idle, the writer asks the store to follow changes another process committed (an operator's
 * deny-list command beside the running relay).
 *
 * <p>Free-space floor (issue 10 item 9): while {@link DiskSpace#refusesPushes()} says the store's file system is under
 * {@code store.minFreeBytes}, push commands (v1 and v2) are answered at once with the failure code of {@link WriteFailure#DISK_FLOOR}
 * and never reach SQLite; every other command (acks free space; enrolments, the
 * heartbeat and sweeps are small) still runs. The check reads a cached value: at most one {@code statvfs} a second.
 *
 * <p>Failure replies carry a {@link WriteFailure} code: {@link WriteFailure#NOT_STORED} when the transaction failed
 * before COMMIT (I/O, disk full, busy) or the writer stopped after corruption (fail-stop),
 * {@link WriteFailure#OUTCOME_UNKNOWN} when the COMMIT itself failed, {@link WriteFailure#DISK_FLOOR} under the
 * free-space floor, {@link WriteFailure#BUG} for a bug in one command.
 */
public final class StoreWriterVerticle extends VerticleBase {
  private static final Logger LOG = LoggerFactory.getLogger(StoreWriterVerticle.class);
  private static final RateLimitedLogger WARN = new RateLimitedLogger(LOG);
  private static final DeliveryOptions LOCAL = new DeliveryOptions().setCodecName(LocalCodec.NAME);

  /** Observer of each committed or failed transaction (metrics). */
  public interface TransactionListener {
    /**
     * Called on the writer thread after each transaction, before its replies are sent.
     *
     * @param commands the commands of the transaction, in order
     * @param nanos time from BEGIN to the end of COMMIT
     * @param failure null on success
     */
    void transaction(List<StoreCommand<?>> commands, long nanos, StoreException failure);
  }

  private static final long REFRESH_MS = 1000;
  /**
   * Item rows ({@link StoreCommand#weightRows()}) already queued that make the writer start without waiting for
   * company. A transaction's fixed cost (its COMMIT's fsync and the pages every commit writes: page 1, {@code meta}'s
   * commit count, interior pages; ~9 of the ~67 frames of a goal-5 commit, docs/performance.md) is then shared by at
   * least this many rows. Under steady moderate load (pushes arriving one at a time) fewer are queued and the delay
   * still gathers them. 8 was measured too: single-item pushes from 64 clients then ran twice the transactions at
   * 10–17 % more CPU per request for the same throughput (docs/performance.md "Eleventh session").
   */
  static final int COMPANY_ROWS = 32;
  private final RelayStore store;
  private final int batchMax;
  private final int maxRows;
  private final long maxBytes;
  private final TransactionListener listener;
  private final ArrayDeque<Message<StoreCommand<?>>> pending = new ArrayDeque<>();
  private boolean drainScheduled;
  private volatile boolean failStopped;
  /** {@link System#nanoTime()} of the last COMMIT that stored items, or {@link Long#MIN_VALUE}. */
  private volatile long lastStoredAt = Long.MIN_VALUE;
  private MessageConsumer<StoreCommand<?>> consumer;
  private long refreshTimer = -1;
  /** The commit-delay timer of the drain waiting for company, or -1. */
  private long delayTimer = -1;
  /** Item rows queued while {@link #delayTimer} runs. */
  private int companyRows;
  /** Set when {@link #stop} begins: no new commit-delay timer. */
  private boolean stopping;
  /** Set by the last task of {@link #stop}: the store is closed, nothing may run on it. */
  private boolean closed;
  private final long commitDelayMs;
  /** {@link System#nanoTime()} at the end of the last transaction; meaningful once {@link #anyTxn} is set. */
  private long lastTxnEnd;
  /** Whether a transaction has run (nanoTime's origin is arbitrary: 0 is no "long ago"). */
  private boolean anyTxn;
  private final DiskSpace disk;
  private final java.util.function.Consumer<Runnable> answersAfterCommit;
  private final ItemsCommitted itemsCommitted;
  private final java.util.concurrent.atomic.AtomicLong diskRefusals = new java.util.concurrent.atomic.AtomicLong();

  /**
   * @param store the store; from now on touched only on this verticle's thread
   * @param batchMax most commands per transaction
   * @param maxRows most item rows per transaction ({@link StoreCommand#weightRows()})
   * @param maxBytes most wire bytes per transaction ({@link StoreCommand#weightBytes()})
   * @param commitDelayMs how long a command arriving right after a transaction waits for company, ms (0 = never)
   * @param disk the store's free-space guard (floor {@code store.minFreeBytes})
   * @param answersAfterCommit given, right after each committed transaction (writer thread), the task that sends its
   *     answers; runs it when they may leave (at once, or once the commit watermark covers the commit: issue 22 item 3).
   *     The task may then run on another thread.
   * @param itemsCommitted told on the writer thread, after each COMMIT that stored items, which targets got them
   *     (long-poll waiters); {@link ItemsCommitted#NONE} when nobody waits
   * @param listener transaction observer
   */
  public StoreWriterVerticle(RelayStore store, int batchMax, int maxRows, long maxBytes, long commitDelayMs,
      DiskSpace disk, java.util.function.Consumer<Runnable> answersAfterCommit, ItemsCommitted itemsCommitted,
      TransactionListener listener) {
    this.store = Objects.requireNonNull(store);
    this.answersAfterCommit = Objects.requireNonNull(answersAfterCommit);
    this.itemsCommitted = Objects.requireNonNull(itemsCommitted);
    this.disk = Objects.requireNonNull(disk);
    this.batchMax = batchMax;
    this.maxRows = maxRows;
    this.maxBytes = maxBytes;
    this.commitDelayMs = commitDelayMs;
    this.listener = Objects.requireNonNull(listener);
  }

  /** True after a corruption error stopped the writer; readiness reports it. */
  public boolean failStopped() {
    return failStopped;
  }

  /**
   * When the last transaction that stored items committed ({@link System#nanoTime()}), or {@link Long#MIN_VALUE}:
   * proof that the store took a write, which readiness counts like a passed probe (issue 20 item 5). Any thread.
   */
  public long lastStoredAt() {
    return lastStoredAt;
  }

  /** Push requests refused because free space was under the floor, since start (metrics; any thread). */
  public long diskRefusals() {
    return diskRefusals.get();
  }

  /** Commands waiting for the next transaction (approximate, for metrics). */
  public int queueDepth() {
    return pending.size();
  }

  @Override
  public Future<?> start() {
    store.onNewItems(itemsCommitted::itemsCommitted);
    consumer = vertx.eventBus().localConsumer(Addresses.STORE_WRITE, this::enqueue);
    refreshTimer = vertx.setPeriodic(REFRESH_MS, id -> refresh());
    return consumer.completion();
  }

  private void refresh() {
    if (!pending.isEmpty() || failStopped) {
      return; // the next transaction checks anyway
    }
    try {
      store.refreshIfChangedElsewhere();
    } catch (StoreException e) {
      WARN.warn("refresh failed", "store refresh failed [kind: {}] [error: {}]", e.kind(), e.getMessage());
    } catch (RuntimeException e) {
      WARN.warn("refresh failed", "store refresh failed [error: {}]", e.toString());
    }
  }

  /**
   * Stops taking commands, answers what is still queued, then closes the store. Every task this verticle queued on its
   * context (a drain, the commit-delay timer, deliveries that arrived before the consumer was unregistered) has run
   * or been cancelled when the returned future completes: the undeploy then shuts the writer's worker pool down, and a
   * task still queued behind it used to be handed to that pool and refused (a {@code RejectedExecutionException} on
   * {@code mbx-writer-0} at stop, issue 22 item 7).
   */
  @Override
  public Future<?> stop() {
    stopping = true;
    vertx.cancelTimer(refreshTimer);
    Future<Void> unregistered = consumer == null ? Future.succeededFuture() : consumer.unregister();
    io.vertx.core.Promise<Void> done = io.vertx.core.Promise.promise();
    unregistered.onComplete(ar -> {
      if (delayTimer >= 0) {
        vertx.cancelTimer(delayTimer);
        delayTimer = -1;
      }
      // behind every task already queued on this ordered context (deliveries, a scheduled drain)
      context.runOnContext(v -> {
        try {
          drain(); // answer what is still queued before the connection closes
        } finally {
          closed = true;
          store.close();
          done.complete();
        }
      });
    });
    return done.future();
  }

  private void enqueue(Message<StoreCommand<?>> message) {
    pending.add(message);
    if (delayTimer >= 0) {
      // waiting for company: once enough has come, go without waiting out the delay
      companyRows += message.body().weightRows();
      if (companyRows >= companyRowsNeeded() || pending.size() >= batchMax) {
        vertx.cancelTimer(delayTimer);
        delayTimer = -1;
        context.runOnContext(v -> drain());
      }
      return;
    }
    if (!drainScheduled) {
      drainScheduled = true;
      // runOnContext queues behind deliveries already waiting on this ordered context: when it runs, every command
      // that arrived during the last transaction is in the queue
      context.runOnContext(v -> drainOrWait());
    }
  }

  /**
   * Starts a transaction now, or waits up to {@code commitDelayMs} for company (PostgreSQL's {@code commit_delay}):
   * only when transactions are following each other closely (the last ended less than twice the delay ago) and fewer
   * than {@link #COMPANY_ROWS} rows ({@link StoreCommand#weightRows()}: a push's items, 1 for any other command) and
   * less than a whole transaction ({@code batchMax} commands, {@code maxRows} rows) are queued. An idle writer starts
   * at once, and so does a busy one that finds that much queued: what arrived during its last transaction is company
   * enough, and waiting would only idle the one writer (the rule before waited after every transaction: up to a fifth
   * of the writer's time at saturation).
   */
  private void drainOrWait() {
    if (commitDelayMs > 0 && !stopping && anyTxn && System.nanoTime() - lastTxnEnd < 2_000_000L * commitDelayMs
        && pending.size() < batchMax) {
      int rows = 0;
      for (Message<StoreCommand<?>> m : pending) {
        rows += m.body().weightRows();
        if (rows >= companyRowsNeeded()) {
          break;
        }
      }
      if (rows < companyRowsNeeded()) {
        companyRows = rows;
        delayTimer = vertx.setTimer(commitDelayMs, id -> {
          delayTimer = -1;
          drain();
        });
        return;
      }
    }
    drain();
  }

  private void drain() {
    drainScheduled = false;
    if (closed) {
      pending.forEach(m -> m.fail(WriteFailure.NOT_STORED.code(), "store closed"));
      pending.clear();
      return;
    }
    while (!pending.isEmpty()) {
      List<Message<StoreCommand<?>>> batch = new ArrayList<>(Math.min(pending.size(), batchMax));
      List<Message<StoreCommand<?>>> probes = new ArrayList<>(0);
      int rows = 0;
      long bytes = 0;
      Boolean refusePushes = null; // asked once per batch, and only when a push is in it
      while (!pending.isEmpty() && batch.size() < batchMax) {
        StoreCommand<?> next = pending.peek().body();
        if (next instanceof StoreCommand.Probe) {
          probes.add(pending.poll());
          continue;
        }
        if (isPush(next)) {
          if (refusePushes == null) {
            refusePushes = disk.refusesPushes();
          }
          if (refusePushes) {
            diskRefusals.incrementAndGet();
            pending.poll().fail(WriteFailure.DISK_FLOOR.code(), "store disk below its free-space floor");
            continue;
          }
        }
        if (!batch.isEmpty() && (rows + next.weightRows() > maxRows || bytes + next.weightBytes() > maxBytes)) {
          break;
        }
        rows += next.weightRows();
        bytes += next.weightBytes();
        batch.add(pending.poll());
      }
      if (!batch.isEmpty()) {
        runBatch(batch);
      }
      probes.forEach(this::probe); // after what queued before them; no transaction (issue 10 item 14)
    }
  }

  /** Rows that are company enough: {@link #COMPANY_ROWS}, or a whole transaction when the bound is lower. */
  private int companyRowsNeeded() {
    return Math.min(COMPANY_ROWS, maxRows);
  }

  private static boolean isPush(StoreCommand<?> c) {
    return c instanceof StoreCommand.PushBatch || c instanceof StoreCommand.Push || c instanceof StoreCommand.PushV1;
  }

  /** Wire bytes a committed command may have written (for the free-space estimate). */
  private static long writtenBytes(StoreCommand<?> c) {
    return c instanceof StoreCommand.PushV1 v ? (long) v.wire().length * v.targets().size() : c.weightBytes();
  }

  /** A readiness probe: the write lock taken and released on this thread, nothing committed. */
  private void probe(Message<StoreCommand<?>> m) {
    if (failStopped) {
      m.fail(WriteFailure.NOT_STORED.code(), "store stopped (fail-stop)");
      return;
    }
    try {
      m.reply(store.probeWriter(), LOCAL);
    } catch (StoreException e) {
      m.fail((e.kind() == StoreException.Kind.INTERNAL ? WriteFailure.BUG : WriteFailure.NOT_STORED).code(),
          "store unavailable");
    }
  }

  private void runBatch(List<Message<StoreCommand<?>>> batch) {
    try {
      runBatch0(batch);
    } finally {
      lastTxnEnd = System.nanoTime();
      anyTxn = true;
    }
  }

  private void runBatch0(List<Message<StoreCommand<?>>> batch) {
    if (failStopped) {
      batch.forEach(m -> m.fail(WriteFailure.NOT_STORED.code(), "store stopped (fail-stop)"));
      return;
    }
    List<StoreCommand<?>> commands = new ArrayList<>(batch.size());
    batch.forEach(m -> commands.add(m.body()));
    long start = System.nanoTime();
    List<RelayStore.CommandResult> results;
    try {
      results = store.execute(commands);
    } catch (StoreException e) {
      listener.transaction(commands, System.nanoTime() - start, e);
      if (e.diskFull()) {
        disk.failedFull(); // readiness turns false until space returns
      }
      if (e.kind() == StoreException.Kind.CORRUPT) {
        failStopped = true;
        LOG.error("store corrupt: writer stopped (fail-stop) [error: {}]", e.getMessage());
      } else {
        WARN.warn("transaction failed " + e.kind(), "transaction failed [kind: {}] [commands: {}] [error: {}]",
            e.kind(), commands.size(), e.getMessage());
      }
      // where it failed decides what the callers may conclude: before COMMIT nothing took effect; a failed COMMIT
      // may have (issue 20 item 4)
      WriteFailure kind = e.kind() == StoreException.Kind.INTERNAL ? WriteFailure.BUG
          : e.outcomeUnknown() ? WriteFailure.OUTCOME_UNKNOWN : WriteFailure.NOT_STORED;
      batch.forEach(m -> m.fail(kind.code(), "store unavailable"));
      return;
    } catch (RuntimeException | Error e) {
      // The store rolled back; answer every caller (never leave them to the event-bus timeout) and stop writing:
      // an Error here means the process is not in a state to keep committing (readiness goes false).
      StoreException failure = new StoreException(StoreException.Kind.INTERNAL, "transaction failed", e);
      listener.transaction(commands, System.nanoTime() - start, failure);
      if (e instanceof Error) {
        failStopped = true;
      }
      LOG.error("transaction failed unexpectedly [commands: {}]{}", commands.size(),
          e instanceof Error ? ": writer stopped (fail-stop)" : "", e);
      // an Error may have struck during COMMIT: its outcome is unknown
      WriteFailure kind = e instanceof Error ? WriteFailure.OUTCOME_UNKNOWN : WriteFailure.BUG;
      batch.forEach(m -> m.fail(kind.code(), "store unavailable"));
      return;
    }
    listener.transaction(commands, System.nanoTime() - start, null);
    long written = 0;
    for (StoreCommand<?> c : commands) {
      written += writtenBytes(c);
    }
    disk.committed(written);
    if (written > 0) {
      lastStoredAt = System.nanoTime();
    }
    answersAfterCommit.accept(() -> {
      for (int i = 0; i < batch.size(); i++) {
        RelayStore.CommandResult r = results.get(i);
        Message<StoreCommand<?>> m = batch.get(i);
        if (r.error() == null) {
          m.reply(r.value(), LOCAL);
        } else {
          // rolled back to its savepoint: not stored, whatever else committed
          m.fail((r.error().kind() == StoreException.Kind.INTERNAL ? WriteFailure.BUG : WriteFailure.NOT_STORED)
              .code(), "store command failed");
        }
      }
    });
  }
}
