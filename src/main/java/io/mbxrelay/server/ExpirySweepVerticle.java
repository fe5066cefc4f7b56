package io.mbxrelay.server;

import io.mbxrelay.writer.StoreClient;
import io.mbxrelay.metrics.RateLimitedLogger;
import io.mbxrelay.config.RelayConfig;
import io.mbxrelay.crypto.Ed25519KeyPair;
import io.mbxrelay.store.guard.ClockGuard;
import io.mbxrelay.store.StoreCommand;
import io.mbxrelay.store.model.SweepCounts;
import io.mbxrelay.wire.IsoTime;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.VerticleBase;
import java.util.Objects;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Timer verticle: the expiry sweep (docs/protocol.md §7.6, §5 "Sweep"), at start and every {@code sweepIntervalMs}.
 * Each run sends at most {@code sweepMaxBatches} bounded {@link StoreCommand.SweepBatch} transactions of at most
 * {@code sweepBatchRows} rows to the writer, one after the other, so pushes queue between batches and never wait
 * for a whole sweep; then prunes dedup rows past the horizon (retention + 7 days) in bounded transactions; then, if
 * anything happened, logs a {@code relay-sweep} ops entry. While the store clock is paused after a wall-clock step
 * ({@link ClockGuard#expiryPaused()}) a run deletes and prunes nothing.
 */
public final class ExpirySweepVerticle extends VerticleBase {
  private static final Logger LOG = LoggerFactory.getLogger(ExpirySweepVerticle.class);
  private static final RateLimitedLogger PAUSED = new RateLimitedLogger(LOG);

  /**
   * One run's totals.
   *
   * @param counts item and notice counts
   * @param dedupPruned tombstones pruned
   * @param batches sweep transactions used
   * @param paused the run did nothing because the store clock is paused after a wall-clock step (issue 10 item 7)
   */
  public record Run(SweepCounts counts, int dedupPruned, int batches, boolean paused) {}

  private final StoreClient writes;
  private final RelayConfig config;
  private final Ed25519KeyPair relayKey;
  private final ClockGuard clock;
  private final Consumer<Run> onRun;
  private long timer = -1;
  private Future<Run> current;

  /**
   * @param writes writer facade
   * @param config configuration (timers, retention)
   * @param relayKey signs expiry notices
   * @param clock the store's guarded time: sweeps use it, and skip everything while it is paused
   * @param onRun observer of each completed run (metrics, tests)
   */
  public ExpirySweepVerticle(StoreClient writes, RelayConfig config, Ed25519KeyPair relayKey, ClockGuard clock,
      Consumer<Run> onRun) {
    this.writes = Objects.requireNonNull(writes);
    this.config = Objects.requireNonNull(config);
    this.relayKey = Objects.requireNonNull(relayKey);
    this.clock = Objects.requireNonNull(clock);
    this.onRun = Objects.requireNonNull(onRun);
  }

  @Override
  public Future<?> start() {
    vertx.runOnContext(v -> runOnce());
    timer = vertx.setPeriodic(config.timers().sweepIntervalMs(), id -> runOnce());
    return Future.succeededFuture();
  }

  @Override
  public Future<?> stop() {
    vertx.cancelTimer(timer);
    return Future.succeededFuture();
  }

  /**
   * Runs one sweep on this verticle's context; safe from any thread.
   *
   * @return the run's totals
   */
  public Future<Run> trigger() {
    Promise<Run> p = Promise.promise();
    context.runOnContext(v -> runOnce().onComplete(p));
    return p.future();
  }

  /**
   * Runs one sweep, or joins the one in progress. Call on this verticle's context.
   *
   * @return the run's totals
   */
  public Future<Run> runOnce() {
    if (current != null) {
      return current;
    }
    if (clock.expiryPaused()) {
      // A wall-clock step: expiring and pruning by it could delete every queue and every tombstone at once. Wait
      // until the clock agrees again or an operator accepts it (ClockGuard, issue 10 item 7).
      PAUSED.warn("paused", "expiry sweep skipped: the store clock is paused [reason: {}]", clock.status().reason());
      Run skipped = new Run(SweepCounts.NONE, 0, 0, true);
      onRun.accept(skipped);
      return Future.succeededFuture(skipped);
    }
    long now = clock.nowMs();
    Promise<Run> done = Promise.promise();
    batch(now, 0, SweepCounts.NONE, done);
    current = done.future()
        .compose(run -> logIfAny(now, run).map(run))
        .onComplete(ar -> {
          current = null;
          if (ar.succeeded()) {
            onRun.accept(ar.result());
          } else {
            LOG.warn("expiry sweep failed [error: {}]", ar.cause().getMessage());
          }
        });
    return current;
  }

  private void batch(long now, int n, SweepCounts acc, Promise<Run> done) {
    RelayConfig.Timers t = config.timers();
    writes.send(new StoreCommand.SweepBatch(now, t.sweepBatchRows(), relayKey::signB64)).onSuccess(c -> {
      SweepCounts total = acc.plus(c);
      if (c.rows() == t.sweepBatchRows() && n + 1 < t.sweepMaxBatches()) {
        batch(now, n + 1, total, done);
      } else {
        prune(now, n + 1, total, 0, done);
      }
    }).onFailure(done::fail);
  }

  private void prune(long now, int batches, SweepCounts counts, int pruned, Promise<Run> done) {
    RelayConfig.Timers t = config.timers();
    long horizon = now - (config.limits().retentionDays() + 7L) * 86_400_000L;
    writes.send(new StoreCommand.PruneDedup(IsoTime.format(horizon), t.sweepBatchRows())).onSuccess(k -> {
      if (k == t.sweepBatchRows() && batches + 1 < t.sweepMaxBatches()) {
        prune(now, batches + 1, counts, pruned + k, done);
      } else {
        done.complete(new Run(counts, pruned + k, batches + 1, false));
      }
    }).onFailure(done::fail);
  }

  private Future<Boolean> logIfAny(long now, Run run) {
    SweepCounts c = run.counts();
    if (c.rows() == 0 && run.dedupPruned() == 0) {
      return Future.succeededFuture(false);
    }
    String receipt = "{\"v\":1,\"type\":\"relay-sweep\",\"at\":\"" + IsoTime.format(now) + "\",\"retention_days\":"
        + config.limits().retentionDays() + ",\"expired\":{\"envelope\":" + c.envelopes() + ",\"receipt\":"
        + c.receipts() + ",\"expired\":" + c.expired() + "},\"notices\":" + c.notices()
        + ",\"notices_skipped\":{\"not_enrolled\":" + c.skippedNotEnrolled() + ",\"over_cap\":" + c.skippedOverCap()
        + "},\"dedup_pruned\":" + run.dedupPruned() + ",\"freed_bytes\":" + c.freedBytes() + "}";
    LOG.info("expiry sweep [expired: {}] [notices: {}] [skipped: {}] [dedup pruned: {}] [freed bytes: {}]",
        c.rows(), c.notices(), c.skippedNotEnrolled() + c.skippedOverCap(), run.dedupPruned(), c.freedBytes());
    return writes.send(new StoreCommand.LogOp("sweep", receipt));
  }
}
