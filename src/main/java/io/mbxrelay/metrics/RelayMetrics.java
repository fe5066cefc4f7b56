package io.mbxrelay.metrics;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.config.MeterFilter;
import io.micrometer.core.instrument.distribution.DistributionStatisticConfig;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.binder.system.FileDescriptorMetrics;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.mbxrelay.config.RelayConfig;
import io.mbxrelay.store.StoreException;
import io.vertx.core.VertxOptions;
import io.vertx.micrometer.Label;
import io.vertx.micrometer.MicrometerMetricsFactory;
import io.vertx.micrometer.MicrometerMetricsOptions;
import io.vertx.micrometer.VertxPrometheusOptions;
import io.vertx.core.spi.VertxMetricsFactory;
import java.time.Duration;
import java.util.EnumMap;
import java.util.EnumSet;
import java.util.Map;
import java.util.Objects;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;
import java.util.function.DoubleSupplier;
import java.util.function.IntSupplier;
import java.util.function.LongSupplier;

/**
 * The relay's meters (docs/architecture.md "Logs and metrics"): meter names as constants, every label value from a
 * bounded enum ({@link RejectReason}, {@link HopFailure}, {@link Outcome}). No host key, item id, host name, account
 * or free text ever becomes a label value.
 *
 * <p>One instance per relay process, built by the composition root before Vert.x so that Vert.x's own HTTP server,
 * event-bus (address label on: {@code io.mbxrelay.writer.Addresses} is a small fixed set), JVM and process meters land
 * in the same {@link PrometheusMeterRegistry}. Names below are Micrometer names; the Prometheus exposition turns
 * {@code mbxrelay.items.accepted} into {@code mbxrelay_items_accepted_total}, a timer into
 * {@code _seconds_bucket/_sum/_count/_max}.
 *
 * <p>Threading: every method is safe on any thread (Micrometer meters are thread-safe; the bound suppliers are read
 * on the scrape thread and must be too).
 */
public final class RelayMetrics implements AutoCloseable {
  /** Counter: push items answered {@code accepted} (at least one target fresh). */
  public static final String ITEMS_ACCEPTED = "mbxrelay.items.accepted";
  /** Counter: push items answered {@code duplicate} (every target already stored with the same bytes). */
  public static final String ITEMS_DUPLICATE = "mbxrelay.items.duplicate";
  /** Counter, label {@code reason} ({@link RejectReason}): push items answered {@code rejected:…}. */
  public static final String ITEMS_REJECTED = "mbxrelay.items.rejected";
  /** Gauge: stored items over all targets (all kinds), from the periodic queue scan. */
  public static final String QUEUE_ITEMS = "mbxrelay.queue.items";
  /** Gauge: stored wire bytes over all targets, from the periodic queue scan. */
  public static final String QUEUE_BYTES = "mbxrelay.queue.bytes";
  /** Gauge: stored items of the target with the most items, from the periodic queue scan. */
  public static final String QUEUE_LARGEST_TARGET_ITEMS = "mbxrelay.queue.largest.target.items";
  /** Gauge: stored bytes of the target with the most bytes, from the periodic queue scan. */
  public static final String QUEUE_LARGEST_TARGET_BYTES = "mbxrelay.queue.largest.target.bytes";
  /** Gauge: per-target item quota ({@code limits.maxQueueItems}), for "queue near quota" ratios. */
  public static final String QUEUE_LIMIT_ITEMS = "mbxrelay.queue.limit.items";
  /** Gauge: per-target byte quota ({@code limits.maxQueueBytes}). */
  public static final String QUEUE_LIMIT_BYTES = "mbxrelay.queue.limit.bytes";
  /** Gauge: items the whole store may hold ({@code limits.maxStoreItems}). */
  public static final String STORE_LIMIT_ITEMS = "mbxrelay.store.limit.items";
  /** Gauge: wire bytes the whole store may hold ({@code limits.maxStoreBytes}). */
  public static final String STORE_LIMIT_BYTES = "mbxrelay.store.limit.bytes";
  /** Counter: queue scans that failed (the gauges then keep their last values). */
  public static final String QUEUE_SCAN_FAILURES = "mbxrelay.queue.scan.failures";
  /** Gauge: write commands waiting for the writer's next transaction. */
  public static final String WRITER_QUEUE_DEPTH = "mbxrelay.writer.queue.depth";
  /** Timer: writer transaction, BEGIN to end of COMMIT (or to the failure), seconds. */
  public static final String WRITER_TRANSACTION = "mbxrelay.writer.transaction";
  /** Distribution summary: commands per writer transaction (group commit size). */
  public static final String WRITER_TRANSACTION_COMMANDS = "mbxrelay.writer.transaction.commands";
  /** Timer: the COMMIT statement alone (the WAL fsync under {@code synchronous=FULL}), seconds. */
  public static final String WRITER_COMMIT = "mbxrelay.writer.commit";
  /** Counter, label {@code kind} ({@link Outcome#UNAVAILABLE}, {@link Outcome#CORRUPT}, {@link Outcome#INTERNAL}). */
  public static final String WRITER_COMMIT_FAILURES = "mbxrelay.writer.commit.failures";
  /** Gauge: 1 when the writer stopped after corruption (fail-stop), else 0. */
  public static final String WRITER_FAIL_STOPPED = "mbxrelay.writer.fail.stopped";
  /** Gauge: 1 when {@code /ready} would answer 200, else 0. */
  public static final String READY = "mbxrelay.ready";
  /** Timer: readiness probe transactions, send to answer, seconds. */
  public static final String READY_PROBE = "mbxrelay.ready.probe";
  /** Counter: pull pages served (200 answers of {@code GET /v2/relay/items}). */
  public static final String PULL_PAGES = "mbxrelay.pull.pages";
  /** Counter: items served in pull pages. */
  public static final String PULL_ITEMS = "mbxrelay.pull.items";
  /** Counter, label {@code outcome} ({@link Outcome#OK}, {@link Outcome#EPOCH_CHANGED}, {@link Outcome#BAD_ACK}). */
  public static final String ACKS = "mbxrelay.acks";
  /** Counter: items deleted by acks. */
  public static final String ACKED_ITEMS = "mbxrelay.acked.items";
  /**
   * Counter, label {@code outcome} ({@link Outcome#OK}, {@link Outcome#FULL}, {@link Outcome#REVOKED},
   * {@link Outcome#NAME_TAKEN}, {@link Outcome#DENIED}): enrolment calls that reached the authority.
   */
  public static final String ENROLMENTS = "mbxrelay.enrolments";
  /** Counter, label {@code reason} ({@link HopFailure}): required signed hops that did not verify (401). */
  public static final String HOP_FAILURES = "mbxrelay.hop.failures";
  /** Host keys revoked, by cause (label {@code cause}: {@code deny}, {@code rotation}). */
  public static final String REVOCATIONS = "mbxrelay.revocations";
  /** Label name of a revocation's cause. */
  public static final String TAG_CAUSE = "cause";

  /**
   * Counter, label {@code outcome} ({@link UnavailableOutcome}): 503 "store unavailable" answers, by what the client
   * may conclude (issue 20 item 4).
   */
  public static final String UNAVAILABLE_ANSWERS = "mbxrelay.unavailable.answers";

  /** What a 503 "store unavailable" answer told its client (bounded label values). */
  public enum UnavailableOutcome {
    /** A state-changing request that failed before COMMIT: {@code "outcome":"not_stored"}. */
    NOT_STORED,
    /** A state-changing request whose COMMIT failed or timed out: {@code "outcome":"unknown"}. */
    UNKNOWN,
    /** A read (no {@code outcome} member). */
    READ;

    /** The label value: lower-case name. */
    public String label() {
      return name().toLowerCase(java.util.Locale.ROOT);
    }
  }

  /** Why a host key was revoked (bounded label values). */
  public enum RevocationCause {
    /** A deny-list entry matched it (admin endpoint). */
    DENY,
    /** The host rotated to a new key (docs/protocol.md §4.4). */
    ROTATION;

    /** The label value: lower-case name. */
    public String label() {
      return name().toLowerCase(java.util.Locale.ROOT);
    }
  }
  /** Counter: expiry sweep runs. */
  public static final String SWEEP_RUNS = "mbxrelay.sweep.runs";
  /** Counter: items expired by sweeps. */
  public static final String SWEEP_ITEMS_EXPIRED = "mbxrelay.sweep.items.expired";
  /** Counter: expiry notices enqueued for senders by sweeps. */
  public static final String SWEEP_NOTICES_ENQUEUED = "mbxrelay.sweep.notices.enqueued";
  /** Counter: expiry notices skipped by sweeps (sender gone or over quota). */
  public static final String SWEEP_NOTICES_SKIPPED = "mbxrelay.sweep.notices.skipped";
  /** Gauge: unix time of the last finished sweep, seconds; 0 until the first. */
  public static final String SWEEP_LAST_RUN = "mbxrelay.sweep.last.run.timestamp.seconds";
  /** Gauge: configured sweep interval ({@code timers.sweepIntervalMs}), seconds. */
  public static final String SWEEP_INTERVAL = "mbxrelay.sweep.interval.seconds";
  /** Gauge: entries in the hop replay cache (0 until that cache exists). */
  public static final String REPLAY_CACHE_SIZE = "mbxrelay.replay.cache.size";
  /** Gauge: hosts' public keys held decoded for signature checks (bound: {@code trust.verifierCacheMaxKeys}). */
  public static final String VERIFIER_CACHE_KEYS = "mbxrelay.verifier.cache.keys";
  /** Counter: keys dropped from the verifier cache to keep it within its bound, since start. */
  public static final String VERIFIER_CACHE_EVICTED = "mbxrelay.verifier.cache.evicted";
  /** Gauge: request body bytes held in memory now, bytes (issue 11 item 2). */
  public static final String BODY_BUDGET_USED = "mbxrelay.http.body.budget.used";
  /** Counter: requests refused 503 because the body budget was full. */
  public static final String BODY_BUDGET_REFUSED = "mbxrelay.http.body.budget.refused";
  /** Counter: items a pull withheld because their wire no longer matched their hash (issue 10 item 1). */
  public static final String PULL_ITEMS_DAMAGED = "mbxrelay.pull.items.damaged";
  /** Gauge: live (not revoked) enrolments. */
  public static final String ENROLMENTS_LIVE = "mbxrelay.enrolments.live";
  /** Gauge: long-poll pulls waiting for an item (issue 9). */
  public static final String PULL_WAITING = "mbxrelay.pull.waiting";
  /** Gauge: connections the relay port serves now, over every HTTP instance (issue 18 goal 4). */
  public static final String CONNECTIONS_OPEN = "mbxrelay.http.connections.open";
  /** Gauge: the connection cap in force ({@code http.maxConnections} or the file limit less the reserve). */
  public static final String CONNECTIONS_MAX = "mbxrelay.http.connections.max";
  /** Counter: connections refused over the cap (answered 503 + {@code Retry-After}, or closed). */
  public static final String CONNECTIONS_REFUSED = "mbxrelay.http.connections.refused";
  /** Counter: pull pages cut because the client read nothing for {@code http.pageStallMs} (issue 22 item 1). */
  public static final String PULL_PAGES_CUT = "mbxrelay.pull.pages.cut";
  /** Gauge: wire bytes of pull pages held while being written, bytes (issue 10 item 12). */
  public static final String PULL_PAGE_BYTES_HELD = "mbxrelay.pull.page.held";
  /** Counter: pull pages answered from memory, without a read (issue 18 goal 5, {@code store.EmptyPageCache}). */
  public static final String PULL_PAGES_FROM_MEMORY = "mbxrelay.pull.pages.from.memory";
  /** Gauge: hosts whose queue the empty-page cache knows something about. */
  public static final String PULL_EMPTY_PAGE_CACHE_SIZE = "mbxrelay.pull.empty.page.cache.size";
  /** Exact replays of state-changing hops refused (401). */
  public static final String REPLAYS_REFUSED = "mbxrelay.replay.refused";
  /** Live replay-cache entries evicted to stay within its bounds. */
  public static final String REPLAY_CACHE_EVICTED = "mbxrelay.replay.cache.evicted";
  /** Gauge: age of the JWKS snapshot, seconds (0 until the JWKS authority exists). */
  public static final String JWKS_AGE = "mbxrelay.jwks.age.seconds";
  /** 1 while expiry and dedup pruning are paused after a wall-clock step (issue 10 item 7). */
  public static final String CLOCK_PAUSED = "mbxrelay.clock.paused";
  /** Wall clock minus the store's trusted time at the latest reading, seconds (positive: the wall clock is ahead). */
  public static final String CLOCK_STEP = "mbxrelay.clock.step.seconds";
  /** Gauge: free space of the store's file system at the last reading, bytes (issue 10 item 9). */
  public static final String STORE_FREE_BYTES = "mbxrelay.store.free.bytes";
  /** Gauge: the free-space floor {@code store.minFreeBytes}, bytes. */
  public static final String STORE_MIN_FREE_BYTES = "mbxrelay.store.min.free.bytes";
  /** Gauge: 1 while the store counts as full (under the floor, or after {@code SQLITE_FULL} until space returns). */
  public static final String STORE_DISK_FULL = "mbxrelay.store.disk.full";
  /** Counter: push requests the writer refused because free space was under the floor (503). */
  public static final String STORE_DISK_REFUSALS = "mbxrelay.store.disk.refusals";
  /** Gauge: writer transactions committed but not yet in the commit watermark file (issue 10 item 3). */
  public static final String WATERMARK_LAG = "mbxrelay.watermark.lag.transactions";
  /** Counter: commit watermark writes that failed (the watermark lags until one succeeds). */
  public static final String WATERMARK_WRITE_FAILURES = "mbxrelay.watermark.write.failures";
  /** Wall-clock steps larger than {@code timers.maxClockStepMs} detected since start. */
  public static final String CLOCK_STEPS = "mbxrelay.clock.steps";
  /** Counter, label {@code outcome} ({@link Outcome#OK}, {@link Outcome#FAILED}): JWKS refreshes. */
  public static final String JWKS_REFRESHES = "mbxrelay.jwks.refreshes";
  /** Gauge, always 1, label {@code version}: the running build (one series per process; issue 12 item 4). */
  public static final String BUILD_INFO = "mbxrelay.build.info";
  /** Gauge: size of the store's database file {@code relay.db}, bytes (issue 12 item 4). */
  public static final String STORE_FILE_BYTES = "mbxrelay.store.file.bytes";
  /**
   * Gauge: size of the store's write-ahead log {@code relay.db-wal}, bytes; 0 when there is none. SQLite reuses the
   * file once everything was copied and no reader reads it, so under steady reading it grows to about
   * {@code store.walAutocheckpointPages} pages and stays there; past that only while checkpoints cannot finish (issue 12
   * item 4).
   */
  public static final String STORE_WAL_BYTES = "mbxrelay.store.wal.bytes";
  /**
   * Timer: background WAL checkpoints ({@code store.checkpointIntervalMs}, SQLite): each copies the log frames
   * committed since the last one into {@code relay.db}, and fsyncs it when it reached the log's end, beside the writer
   * (issue 18). Attempts made while the writer's own checkpoint ran are not recorded.
   */
  public static final String STORE_CHECKPOINT = "mbxrelay.store.checkpoint";
  /** Counter: background WAL checkpoints that failed (the writer's own checkpoints bound the log meanwhile). */
  public static final String STORE_CHECKPOINT_FAILURES = "mbxrelay.store.checkpoint.failures";
  /**
   * Gauge: WAL frames the last background checkpoint could not copy yet because a reader still needed them; NaN
   * before the first one. It stays near 0 unless a long read holds the log.
   */
  public static final String STORE_CHECKPOINT_BACKLOG = "mbxrelay.store.checkpoint.backlog.frames";
  /** Label name of the build version. */
  public static final String TAG_VERSION = "version";
  /**
   * Gauge, always 1, label {@code engine} ({@link io.mbxrelay.crypto.Ed25519Engine.Kind#label()}: {@code aws-lc} or
   * {@code bouncycastle}): the library that signs and verifies Ed25519 (one series per process; issue 18).
   */
  public static final String ED25519_ENGINE_INFO = "mbxrelay.ed25519.engine.info";
  /** Label name of the Ed25519 engine. */
  public static final String TAG_ENGINE = "engine";
  /** How many finished expiry sweeps {@link #recentSweeps()} keeps. */
  public static final int RECENT_SWEEPS = 10;

  /** Label name of the reason class. */
  public static final String TAG_REASON = "reason";
  /** Label name of the outcome. */
  public static final String TAG_OUTCOME = "outcome";
  /** Label name of the failure kind. */
  public static final String TAG_KIND = "kind";

  private final PrometheusMeterRegistry registry;
  private final FileDescriptorMetrics fileDescriptors = new FileDescriptorMetrics();
  private final Counter accepted;
  private final Counter duplicate;
  private final Map<RejectReason, Counter> rejected = new EnumMap<>(RejectReason.class);
  private final Map<HopFailure, Counter> hopFailures = new EnumMap<>(HopFailure.class);
  private final Map<Outcome, Counter> acks = new EnumMap<>(Outcome.class);
  private final Map<Outcome, Counter> enrolments = new EnumMap<>(Outcome.class);
  private final Map<Outcome, Counter> commitFailures = new EnumMap<>(Outcome.class);
  private final Map<Outcome, Counter> jwksRefreshes = new EnumMap<>(Outcome.class);
  private final Map<RevocationCause, Counter> revocations = new EnumMap<>(RevocationCause.class);
  private final Map<UnavailableOutcome, Counter> unavailableAnswers = new EnumMap<>(UnavailableOutcome.class);
  private LongSupplier replayRefused;
  private LongSupplier replayEvicted;
  private final Counter ackedItems;
  private final Counter pullPages;
  private final Counter pullPagesCut;
  private final Counter pullItems;
  private final Counter scanFailures;
  private final Timer transaction;
  private final DistributionSummary transactionCommands;
  private final Timer commit;
  private final Timer readyProbe;
  private final Counter sweepRuns;
  private final Counter sweepExpired;
  private final Counter sweepEnqueued;
  private final Counter sweepSkipped;
  private final AtomicLong sweepLastRunSeconds = new AtomicLong();
  private final AtomicLong queueItems = new AtomicLong();
  private final AtomicLong queueBytes = new AtomicLong();
  private final AtomicLong largestItems = new AtomicLong();
  private final AtomicLong largestBytes = new AtomicLong();
  private volatile IntSupplier writerQueueDepth = () -> 0;
  private volatile BooleanSupplier writerFailStopped = () -> false;
  private volatile BooleanSupplier ready = () -> false;
  private volatile LongSupplier replayCacheSize = () -> 0;
  private volatile LongSupplier pullWaiting = () -> 0;
  private volatile LongSupplier pagesFromMemory = () -> 0;
  private volatile LongSupplier emptyPageCacheSize = () -> 0;
  private volatile LongSupplier connectionsOpen = () -> 0;
  private volatile LongSupplier connectionsRefused = () -> 0;
  private volatile long connectionsMax;
  private volatile LongSupplier liveEnrolments = () -> 0;
  private Counter damagedItems;
  private volatile LongSupplier bodyBudgetUsed = () -> 0;
  private volatile LongSupplier bodyBudgetRefused = () -> 0;
  private volatile LongSupplier pageBytesHeld = () -> 0;
  private volatile DoubleSupplier jwksAgeSeconds = () -> 0;

  /**
   * Registers every relay meter.
   *
   * @param registry the registry Vert.x also reports into
   * @param config validated configuration (quota and sweep interval gauges)
   */
  public RelayMetrics(PrometheusMeterRegistry registry, RelayConfig config) {
    this.registry = Objects.requireNonNull(registry);
    accepted = Counter.builder(ITEMS_ACCEPTED).description("push items accepted").register(registry);
    duplicate = Counter.builder(ITEMS_DUPLICATE).description("push items answered duplicate").register(registry);
    for (RejectReason r : RejectReason.values()) {
      rejected.put(r, Counter.builder(ITEMS_REJECTED).description("push items rejected, by reason class")
          .tag(TAG_REASON, r.label()).register(registry));
    }
    for (HopFailure h : HopFailure.values()) {
      hopFailures.put(h, Counter.builder(HOP_FAILURES).description("required signed hops that did not verify")
          .tag(TAG_REASON, h.label()).register(registry));
    }
    for (Outcome o : EnumSet.of(Outcome.OK, Outcome.EPOCH_CHANGED, Outcome.BAD_ACK)) {
      acks.put(o, Counter.builder(ACKS).description("acks, by outcome").tag(TAG_OUTCOME, o.label())
          .register(registry));
    }
    for (Outcome o : EnumSet.of(Outcome.OK, Outcome.FULL, Outcome.REVOKED, Outcome.NAME_TAKEN, Outcome.DENIED)) {
      enrolments.put(o, Counter.builder(ENROLMENTS).description("enrolments, by outcome")
          .tag(TAG_OUTCOME, o.label()).register(registry));
    }
    for (Outcome o : EnumSet.of(Outcome.UNAVAILABLE, Outcome.CORRUPT, Outcome.INTERNAL)) {
      commitFailures.put(o, Counter.builder(WRITER_COMMIT_FAILURES)
          .description("writer transactions that did not commit, by failure kind").tag(TAG_KIND, o.label())
          .register(registry));
    }
    for (Outcome o : EnumSet.of(Outcome.OK, Outcome.FAILED)) {
      jwksRefreshes.put(o, Counter.builder(JWKS_REFRESHES).description("JWKS refreshes, by outcome")
          .tag(TAG_OUTCOME, o.label()).register(registry));
    }
    for (RevocationCause c : RevocationCause.values()) {
      revocations.put(c, Counter.builder(REVOCATIONS).description("host keys revoked, by cause")
          .tag(TAG_CAUSE, c.label()).register(registry));
    }
    for (UnavailableOutcome o : UnavailableOutcome.values()) {
      unavailableAnswers.put(o, Counter.builder(UNAVAILABLE_ANSWERS)
          .description("503 store unavailable answers, by what the client may conclude").tag(TAG_OUTCOME, o.label())
          .register(registry));
    }
    ackedItems = Counter.builder(ACKED_ITEMS).description("items deleted by acks").register(registry);
    watermarkFailures = Counter.builder(WATERMARK_WRITE_FAILURES).description("failed commit watermark writes")
        .register(registry);
    pullPages = Counter.builder(PULL_PAGES).description("pull pages served").register(registry);
    pullPagesCut = Counter.builder(PULL_PAGES_CUT).description("pull pages cut: the client read nothing for"
        + " http.pageStallMs").register(registry);
    pullItems = Counter.builder(PULL_ITEMS).description("items served in pull pages").register(registry);
    scanFailures = Counter.builder(QUEUE_SCAN_FAILURES).description("failed queue gauge scans").register(registry);
    transaction = Timer.builder(WRITER_TRANSACTION).description("writer transaction, BEGIN to end of COMMIT")
        .publishPercentileHistogram().minimumExpectedValue(Duration.ofNanos(100_000))
        .maximumExpectedValue(Duration.ofSeconds(30)).register(registry);
    transactionCommands = DistributionSummary.builder(WRITER_TRANSACTION_COMMANDS)
        .description("commands per writer transaction").serviceLevelObjectives(1, 2, 4, 8, 16, 32, 64, 128, 256, 512,
            1024, 4096, 10_000).register(registry);
    commit = Timer.builder(WRITER_COMMIT).description("COMMIT statement (WAL fsync)").publishPercentileHistogram()
        .minimumExpectedValue(Duration.ofNanos(100_000)).maximumExpectedValue(Duration.ofSeconds(30))
        .register(registry);
    checkpoint = Timer.builder(STORE_CHECKPOINT).description("background WAL checkpoint (copy and fsync)")
        .publishPercentileHistogram().minimumExpectedValue(Duration.ofNanos(100_000))
        .maximumExpectedValue(Duration.ofSeconds(30)).register(registry);
    checkpointFailures = Counter.builder(STORE_CHECKPOINT_FAILURES).description("failed background WAL checkpoints")
        .register(registry);
    Gauge.builder(STORE_CHECKPOINT_BACKLOG, checkpointBacklog, b -> b.get() < 0 ? Double.NaN : b.get())
        .description("WAL frames the last background checkpoint left for readers").register(registry);
    readyProbe = Timer.builder(READY_PROBE).description("readiness probe transaction, send to answer")
        .register(registry);
    sweepRuns = Counter.builder(SWEEP_RUNS).description("expiry sweep runs").register(registry);
    sweepExpired = Counter.builder(SWEEP_ITEMS_EXPIRED).description("items expired by sweeps").register(registry);
    sweepEnqueued = Counter.builder(SWEEP_NOTICES_ENQUEUED).description("expiry notices enqueued by sweeps")
        .register(registry);
    sweepSkipped = Counter.builder(SWEEP_NOTICES_SKIPPED).description("expiry notices skipped by sweeps")
        .register(registry);
    Gauge.builder(SWEEP_LAST_RUN, sweepLastRunSeconds, AtomicLong::get)
        .description("unix time of the last finished expiry sweep, 0 before the first").register(registry);
    Gauge.builder(SWEEP_INTERVAL, () -> config.timers().sweepIntervalMs() / 1000.0)
        .description("configured expiry sweep interval").register(registry);
    Gauge.builder(QUEUE_ITEMS, queueItems, AtomicLong::get).description("stored items, all targets")
        .register(registry);
    Gauge.builder(QUEUE_BYTES, queueBytes, AtomicLong::get).description("stored wire bytes, all targets")
        .register(registry);
    Gauge.builder(QUEUE_LARGEST_TARGET_ITEMS, largestItems, AtomicLong::get)
        .description("stored items of the fullest target").register(registry);
    Gauge.builder(QUEUE_LARGEST_TARGET_BYTES, largestBytes, AtomicLong::get)
        .description("stored bytes of the largest target").register(registry);
    Gauge.builder(QUEUE_LIMIT_ITEMS, () -> config.limits().maxQueueItems())
        .description("per-target item quota").register(registry);
    Gauge.builder(QUEUE_LIMIT_BYTES, () -> config.limits().maxQueueBytes())
        .description("per-target byte quota").register(registry);
    Gauge.builder(STORE_LIMIT_ITEMS, () -> config.limits().maxStoreItems())
        .description("items the whole store may hold").register(registry);
    Gauge.builder(STORE_LIMIT_BYTES, () -> config.limits().maxStoreBytes())
        .description("wire bytes the whole store may hold").register(registry);
    Gauge.builder(WRITER_QUEUE_DEPTH, () -> writerQueueDepth.getAsInt())
        .description("write commands waiting for the next transaction").register(registry);
    Gauge.builder(WRITER_FAIL_STOPPED, () -> writerFailStopped.getAsBoolean() ? 1 : 0)
        .description("1 when the writer stopped after corruption").register(registry);
    Gauge.builder(READY, () -> ready.getAsBoolean() ? 1 : 0).description("1 when /ready answers 200")
        .register(registry);
    Gauge.builder(BODY_BUDGET_USED, () -> bodyBudgetUsed.getAsLong()).baseUnit("bytes")
        .description("request body bytes held in memory").register(registry);
    FunctionCounter.builder(BODY_BUDGET_REFUSED, this, x -> x.bodyBudgetRefused.getAsLong())
        .description("requests refused because the body budget was full").register(registry);
    damagedItems = Counter.builder(PULL_ITEMS_DAMAGED)
        .description("items withheld from a pull: wire does not match its hash").register(registry);
    Gauge.builder(ENROLMENTS_LIVE, () -> liveEnrolments.getAsLong()).description("live enrolments")
        .register(registry);
    Gauge.builder(PULL_WAITING, () -> pullWaiting.getAsLong()).description("long-poll pulls waiting for an item")
        .register(registry);
    FunctionCounter.builder(PULL_PAGES_FROM_MEMORY, this, x -> x.pagesFromMemory.getAsLong())
        .description("pull pages answered from memory: nothing to read").register(registry);
    Gauge.builder(PULL_EMPTY_PAGE_CACHE_SIZE, () -> emptyPageCacheSize.getAsLong())
        .description("hosts the empty-page cache knows").register(registry);
    Gauge.builder(CONNECTIONS_OPEN, () -> connectionsOpen.getAsLong())
        .description("connections the relay port serves now").register(registry);
    Gauge.builder(CONNECTIONS_MAX, () -> connectionsMax).description("the connection cap in force")
        .register(registry);
    FunctionCounter.builder(CONNECTIONS_REFUSED, this, x -> x.connectionsRefused.getAsLong())
        .description("connections refused over the cap").register(registry);
    Gauge.builder(PULL_PAGE_BYTES_HELD, () -> pageBytesHeld.getAsLong()).baseUnit("bytes")
        .description("wire bytes of pull pages held while being written").register(registry);
    Gauge.builder(REPLAY_CACHE_SIZE, () -> replayCacheSize.getAsLong()).description("hop replay cache entries")
        .register(registry);
    Gauge.builder(VERIFIER_CACHE_KEYS, io.mbxrelay.crypto.Ed25519::cachedKeys)
        .description("hosts' public keys held decoded for signature checks").register(registry);
    FunctionCounter.builder(VERIFIER_CACHE_EVICTED, this, x -> io.mbxrelay.crypto.Ed25519.evictedKeys())
        .description("keys dropped from the verifier cache to keep it within its bound").register(registry);
    Gauge.builder(JWKS_AGE, () -> jwksAgeSeconds.getAsDouble()).description("age of the JWKS snapshot")
        .register(registry);
    fileDescriptors.bindTo(registry);
  }

  private static final java.util.Set<String> STANDARD_METHODS =
      java.util.Set.of("GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH", "TRACE", "CONNECT");

  /**
   * Builds a Prometheus registry and the Vert.x options and metrics factory that report into it: HTTP server and
   * event-bus metrics with the labels {@code route}, {@code method}, {@code code}, {@code local} (relay or admin
   * listener) and {@code address} (event-bus address), JVM and process binders on, histogram buckets only for the
   * HTTP server response time (1 ms..30 s).
   * The registry name is unique per call so several relays in one JVM (tests) do not share meters.
   *
   * @return the registry and what to give {@code Vertx.builder()}
   */
  public static VertxSetup vertxSetup() {
    PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    // Histogram buckets only where a dashboard takes quantiles (HTTP latency here, the writer timers where they are
    // built), each trimmed to a useful range: publishing them for every Vert.x timer tripled the scrape.
    registry.config().meterFilter(new MeterFilter() {
      @Override
      public DistributionStatisticConfig configure(Meter.Id id, DistributionStatisticConfig config) {
        if (!id.getName().equals("vertx.http.server.response.time")) {
          return config;
        }
        return DistributionStatisticConfig.builder().percentilesHistogram(true)
            .minimumExpectedValue((double) Duration.ofMillis(1).toNanos())
            .maximumExpectedValue((double) Duration.ofSeconds(30).toNanos()).build().merge(config);
      }
    });
    // The HTTP method label comes from the request line, i.e. from any client: map anything but the standard methods
    // to "other" so a remote caller cannot mint series (label values must never come from remote input).
    registry.config().meterFilter(MeterFilter.replaceTagValues("method",
        m -> STANDARD_METHODS.contains(m) ? m : "other"));
    MicrometerMetricsOptions metrics = new MicrometerMetricsOptions()
        .setEnabled(true)
        .setRegistryName("mbxrelay-" + UUID.randomUUID())
        .setJvmMetricsEnabled(true)
        .setLabels(EnumSet.of(Label.HTTP_ROUTE, Label.HTTP_METHOD, Label.HTTP_CODE, Label.LOCAL, Label.EB_ADDRESS,
            Label.EB_SIDE, Label.EB_FAILURE, Label.POOL_TYPE, Label.POOL_NAME))
        .setPrometheusOptions(new VertxPrometheusOptions().setEnabled(true).setPublishQuantiles(false));
    // guarded: a connection accepted while the listener opens would otherwise never be answered (ListenRaceGuard)
    return new VertxSetup(registry, new VertxOptions().setMetricsOptions(metrics),
        new ListenRaceGuard(new MicrometerMetricsFactory(registry)));
  }

  /**
   * What {@link #vertxSetup()} returns.
   *
   * @param registry the shared Prometheus registry
   * @param options Vert.x options with the metrics options set (callers add their own settings)
   * @param factory the metrics factory bound to {@code registry}
   */
  public record VertxSetup(PrometheusMeterRegistry registry, VertxOptions options, VertxMetricsFactory factory) {}

  /** The registry (the admin server scrapes it). */
  public PrometheusMeterRegistry registry() {
    return registry;
  }

  // ---- push, pull, ack, enrol, hop ----

  /** One push item answered {@code accepted}. */
  public void itemAccepted() {
    accepted.increment();
  }

  /** One push item answered {@code duplicate}. */
  public void itemDuplicate() {
    duplicate.increment();
  }

  /**
   * Counts one push item answered {@code rejected:…}, by its typed reason's class.
   *
   * @param reason the ledger's or the edge's reason
   */
  public void itemRejected(io.mbxrelay.store.model.RejectReason reason) {
    itemRejected(RejectReason.of(reason));
  }

  /**
   * One push item answered {@code rejected:<why>}.
   *
   * @param reason its class ({@link RejectReason#of})
   */
  public void itemRejected(RejectReason reason) {
    rejected.get(reason).increment();
  }

  /**
   * One pull page served.
   *
   * @param items items in the page
   */
  public void pullPage(int items) {
    pullPages.increment();
    pullItems.increment(items);
  }

  /** One pull page cut: its client read nothing for {@code http.pageStallMs}. */
  public void pullPageCut() {
    pullPagesCut.increment();
  }

  /**
   * One ack answered.
   *
   * @param outcome {@link Outcome#OK}, {@link Outcome#EPOCH_CHANGED} or {@link Outcome#BAD_ACK}
   * @param deleted items deleted (0 unless OK)
   */
  public void ack(Outcome outcome, long deleted) {
    Counter c = acks.get(outcome);
    if (c == null) {
      throw new IllegalArgumentException("not an ack outcome: " + outcome);
    }
    c.increment();
    ackedItems.increment(deleted);
  }

  /**
   * One enrolment call that reached the authority.
   *
   * @param outcome {@link Outcome#OK}, {@link Outcome#FULL}, {@link Outcome#REVOKED}, {@link Outcome#NAME_TAKEN} or
   *     {@link Outcome#DENIED}
   */
  public void enrolment(Outcome outcome) {
    Counter c = enrolments.get(outcome);
    if (c == null) {
      throw new IllegalArgumentException("not an enrolment outcome: " + outcome);
    }
    c.increment();
  }

  /**
   * Counts revoked host keys.
   *
   * @param cause why they were revoked
   * @param keys how many keys
   */
  public void revocations(RevocationCause cause, long keys) {
    revocations.get(cause).increment(keys);
  }

  /**
   * Counts a required hop that did not verify.
   *
   * @param reason the bounded failure class
   */
  public void hopFailure(HopFailure reason) {
    hopFailures.get(reason).increment();
  }

  // ---- writer ----

  /**
   * One writer transaction ended. Writer thread.
   *
   * @param commands commands in it
   * @param nanos BEGIN to end of COMMIT or failure, ns
   * @param failure null when committed, else the failure kind
   */
  public void writerTransaction(int commands, long nanos, StoreException.Kind failure) {
    transaction.record(nanos, TimeUnit.NANOSECONDS);
    transactionCommands.record(commands);
    if (failure != null) {
      commitFailures.get(switch (failure) {
        case UNAVAILABLE -> Outcome.UNAVAILABLE;
        case CORRUPT -> Outcome.CORRUPT;
        case INTERNAL -> Outcome.INTERNAL;
      }).increment();
    }
  }

  /**
   * One COMMIT statement returned. Writer thread.
   *
   * @param nanos its duration, ns
   */
  public void commitNanos(long nanos) {
    commit.record(nanos, TimeUnit.NANOSECONDS);
  }

  private final Timer checkpoint;
  private final Counter checkpointFailures;
  private final java.util.concurrent.atomic.AtomicLong checkpointBacklog = new java.util.concurrent.atomic.AtomicLong(-1);

  /**
   * One background WAL checkpoint ended. The checkpointer's thread.
   *
   * @param nanos its duration, ns
   * @param backlogFrames log frames it left for readers; -1 when it failed
   * @param ok false when it failed
   */
  public void checkpointed(long nanos, long backlogFrames, boolean ok) {
    if (ok) {
      checkpoint.record(nanos, TimeUnit.NANOSECONDS);
      checkpointBacklog.set(backlogFrames);
    } else {
      checkpointFailures.increment();
    }
  }

  /** The COMMIT timer ({@link #WRITER_COMMIT}), for recent quantiles ({@link HistogramWindow}); read-only use. */
  public io.micrometer.core.instrument.distribution.HistogramSupport commitHistogram() {
    return commit;
  }

  /**
   * Binds the writer gauges.
   *
   * @param queueDepth commands waiting (read on the scrape thread; approximate is fine)
   * @param failStopped fail-stop flag
   */
  public void bindWriter(IntSupplier queueDepth, BooleanSupplier failStopped) {
    this.writerQueueDepth = Objects.requireNonNull(queueDepth);
    this.writerFailStopped = Objects.requireNonNull(failStopped);
  }

  // ---- readiness and queue scan ----

  /**
   * Binds the store clock guard's meters (issue 10 item 7). The supplier reads the clocks again; it is held here
   * because Micrometer keeps only weak references.
   *
   * @param status the guard's status
   */
  public void bindClock(java.util.function.Supplier<io.mbxrelay.store.guard.ClockGuard.Status> status) {
    this.clockStatus = Objects.requireNonNull(status);
    Gauge.builder(CLOCK_PAUSED, this, m -> m.clockStatus.get().paused() ? 1 : 0)
        .description("1 while expiry and dedup pruning are paused after a wall-clock step").register(registry);
    Gauge.builder(CLOCK_STEP, this, m -> m.clockStatus.get().stepMs() / 1000.0)
        .description("wall clock minus the store's trusted time, seconds").register(registry);
    io.micrometer.core.instrument.FunctionCounter.builder(CLOCK_STEPS, this, m -> m.clockStatus.get().steps())
        .description("wall-clock steps beyond timers.maxClockStepMs detected").register(registry);
  }

  private java.util.function.Supplier<io.mbxrelay.store.guard.ClockGuard.Status> clockStatus;

  /**
   * Binds the readiness gauge.
   *
   * @param ready true when {@code /ready} would answer 200
   */
  public void bindReady(BooleanSupplier ready) {
    this.ready = Objects.requireNonNull(ready);
  }

  /**
   * One readiness probe answered (successfully or not).
   *
   * @param nanos send to answer, ns
   */
  public void readyProbe(long nanos) {
    readyProbe.record(nanos, TimeUnit.NANOSECONDS);
  }

  /**
   * Result of one queue scan.
   *
   * @param items stored items, all targets
   * @param bytes stored bytes, all targets
   * @param largestTargetItems items of the fullest target
   * @param largestTargetBytes bytes of the largest target
   */
  public void queueScan(long items, long bytes, long largestTargetItems, long largestTargetBytes) {
    queueItems.set(items);
    queueBytes.set(bytes);
    largestItems.set(largestTargetItems);
    largestBytes.set(largestTargetBytes);
  }

  /**
   * One 503 "store unavailable" answer.
   *
   * @param outcome what it told the client
   */
  public void unavailableAnswer(UnavailableOutcome outcome) {
    unavailableAnswers.get(Objects.requireNonNull(outcome)).increment();
  }

  /** One queue scan failed; the gauges keep their last values. */
  public void queueScanFailed() {
    scanFailures.increment();
  }

  // ---- expiry sweep (called by the sweep verticle) ----

  /**
   * One expiry sweep run finished.
   *
   * @param expired items expired (turned into tombstones or deleted)
   * @param noticesEnqueued expiry notices enqueued for senders
   * @param noticesSkipped expiry notices not enqueued
   */
  public void sweepRun(long expired, long noticesEnqueued, long noticesSkipped) {
    sweepRuns.increment();
    sweepExpired.increment(expired);
    sweepEnqueued.increment(noticesEnqueued);
    sweepSkipped.increment(noticesSkipped);
    long now = System.currentTimeMillis();
    sweepLastRunSeconds.set(now / 1000);
    synchronized (recentSweeps) {
      if (recentSweeps.size() == RECENT_SWEEPS) {
        recentSweeps.removeLast();
      }
      recentSweeps.addFirst(new SweepRecord(now, expired, noticesEnqueued, noticesSkipped));
    }
  }

  /**
   * One finished expiry sweep, as the status page shows it.
   *
   * @param atMs when it finished, unix ms
   * @param itemsExpired items expired (turned into tombstones or deleted)
   * @param noticesEnqueued expiry notices enqueued for senders
   * @param noticesSkipped expiry notices not enqueued
   */
  public record SweepRecord(long atMs, long itemsExpired, long noticesEnqueued, long noticesSkipped) {}

  /**
   * The last JWKS refresh.
   *
   * @param atMs when it ended, unix ms
   * @param ok true when a new snapshot was installed
   */
  public record JwksRefreshRecord(long atMs, boolean ok) {}

  private final java.util.ArrayDeque<SweepRecord> recentSweeps = new java.util.ArrayDeque<>(RECENT_SWEEPS);
  private volatile JwksRefreshRecord lastJwksRefresh;

  /** The last {@value #RECENT_SWEEPS} finished expiry sweeps since start, newest first. Safe on any thread. */
  public java.util.List<SweepRecord> recentSweeps() {
    synchronized (recentSweeps) {
      return java.util.List.copyOf(recentSweeps);
    }
  }

  /** The last JWKS refresh since start, or null before the first (and always without a JWKS authority). */
  public JwksRefreshRecord lastJwksRefresh() {
    return lastJwksRefresh;
  }

  // ---- replay cache and JWKS (bound by their owners) ----

  /**
   * Counts items a pull withheld as damaged.
   *
   * @param n items
   */
  public void damagedItems(int n) {
    damagedItems.increment(n);
  }

  /**
   * Binds the live-enrolments gauge (until bound it reads 0).
   *
   * @param live live enrolments now (counted on each scrape)
   */
  public void bindLiveEnrolments(LongSupplier live) {
    this.liveEnrolments = Objects.requireNonNull(live);
  }

  /**
   * Binds the body budget's gauge and counter (until bound they read 0).
   *
   * @param used bytes held now
   * @param refused requests refused since start
   */
  public void bindBodyBudget(LongSupplier used, LongSupplier refused) {
    this.bodyBudgetUsed = Objects.requireNonNull(used);
    this.bodyBudgetRefused = Objects.requireNonNull(refused);
  }

  /**
   * Binds the connection-cap meters (issue 18 goal 4; until bound they read 0).
   *
   * @param open connections served now
   * @param refused connections refused over the cap since start
   * @param max the cap in force
   */
  public void bindConnections(LongSupplier open, LongSupplier refused, int max) {
    this.connectionsOpen = Objects.requireNonNull(open);
    this.connectionsRefused = Objects.requireNonNull(refused);
    this.connectionsMax = max;
  }

  /**
   * Binds the pull gauges (until bound they read 0).
   *
   * @param waiting long-poll pulls waiting now
   * @param pageBytes pull page bytes held now
   */
  public void bindPulls(LongSupplier waiting, LongSupplier pageBytes) {
    this.pullWaiting = Objects.requireNonNull(waiting);
    this.pageBytesHeld = Objects.requireNonNull(pageBytes);
  }

  /**
   * Binds the empty-page cache's meters (until bound they read 0; a store several instances write has none).
   *
   * @param hits pull pages answered from memory since start
   * @param size hosts with an entry now
   */
  public void bindEmptyPages(LongSupplier hits, LongSupplier size) {
    this.pagesFromMemory = Objects.requireNonNull(hits);
    this.emptyPageCacheSize = Objects.requireNonNull(size);
  }

  /**
   * Binds the replay-cache size gauge (until bound it reads 0).
   *
   * @param size entries in the cache
   */
  public void bindReplayCache(LongSupplier size) {
    this.replayCacheSize = Objects.requireNonNull(size);
  }

  /**
   * Registers the replay cache's monotonic counts as counters.
   *
   * @param refused exact replays refused since start
   * @param evicted live entries evicted since start
   */
  public void bindReplayCounters(LongSupplier refused, LongSupplier evicted) {
    // Micrometer keeps only a weak reference to a function counter's state object: hold the suppliers here.
    this.replayRefused = Objects.requireNonNull(refused);
    this.replayEvicted = Objects.requireNonNull(evicted);
    io.micrometer.core.instrument.FunctionCounter.builder(REPLAYS_REFUSED, refused, LongSupplier::getAsLong)
        .description("exact replays of state-changing hops refused").register(registry);
    io.micrometer.core.instrument.FunctionCounter.builder(REPLAY_CACHE_EVICTED, evicted, LongSupplier::getAsLong)
        .description("replay-cache entries evicted to stay within bounds").register(registry);
  }

  /**
   * Binds the JWKS age gauge (until bound it reads 0).
   *
   * @param ageSeconds age of the current JWKS snapshot, seconds
   */
  public void bindJwksAge(DoubleSupplier ageSeconds) {
    this.jwksAgeSeconds = Objects.requireNonNull(ageSeconds);
  }

  /**
   * One JWKS refresh finished.
   *
   * @param ok true when a new snapshot was installed
   */
  public void jwksRefresh(boolean ok) {
    jwksRefreshes.get(ok ? Outcome.OK : Outcome.FAILED).increment();
    lastJwksRefresh = new JwksRefreshRecord(System.currentTimeMillis(), ok);
  }

  private io.mbxrelay.store.guard.DiskSpace disk;
  private LongSupplier diskRefusals;
  private LongSupplier watermarkLag;
  private final Counter watermarkFailures;

  /**
   * Binds the store's free-space meters (issue 10 item 9).
   *
   * @param disk the free-space guard (its readings are cached; a scrape reads the file system at most once a second)
   * @param refusals push requests refused by the floor since start
   */
  public void bindDisk(io.mbxrelay.store.guard.DiskSpace disk, LongSupplier refusals) {
    this.disk = Objects.requireNonNull(disk);
    this.diskRefusals = Objects.requireNonNull(refusals);
    Gauge.builder(STORE_FREE_BYTES, this, m -> {
      long free = m.disk.freeBytes();
      return free == Long.MAX_VALUE ? Double.NaN : free;
    }).description("free space of the store's file system, bytes").register(registry);
    Gauge.builder(STORE_MIN_FREE_BYTES, this, m -> m.disk.floor())
        .description("store.minFreeBytes: under it pushes are refused").register(registry);
    Gauge.builder(STORE_DISK_FULL, this, m -> m.disk.full() ? 1 : 0)
        .description("1 while the store's disk counts as full").register(registry);
    io.micrometer.core.instrument.FunctionCounter.builder(STORE_DISK_REFUSALS, this,
        m -> m.diskRefusals.getAsLong()).description("push requests refused under the free-space floor")
        .register(registry);
  }

  private java.nio.file.Path dbFile;

  /**
   * Registers {@code mbxrelay_build_info{version}} and {@code mbxrelay_ed25519_engine_info{engine}} (value 1 each):
   * what is running, fixed for the life of the process.
   *
   * @param version the software version (one value per process, so the label stays bounded)
   */
  public void buildInfo(String version) {
    Gauge.builder(BUILD_INFO, () -> 1).tag(TAG_VERSION, Objects.requireNonNull(version))
        .description("the running build, value 1").register(registry);
    ed25519EngineInfo(io.mbxrelay.crypto.Ed25519Engine.inUse().kind());
  }

  /**
   * Registers {@code mbxrelay_ed25519_engine_info{engine}} (value 1); {@link #buildInfo} does, with the engine in use.
   *
   * @param engine the engine (two possible label values)
   */
  void ed25519EngineInfo(io.mbxrelay.crypto.Ed25519Engine.Kind engine) {
    Gauge.builder(ED25519_ENGINE_INFO, () -> 1).tag(TAG_ENGINE, engine.label())
        .description("the Ed25519 library in use (aws-lc or bouncycastle), value 1").register(registry);
  }

  /**
   * Binds the store file gauges: {@code relay.db} and its WAL, bytes. Each scrape reads both sizes ({@code stat},
   * no lock, nothing the writer waits for).
   *
   * @param dbFile the store's {@code relay.db}; its WAL is the {@code -wal} file beside it
   */
  public void bindStoreFiles(java.nio.file.Path dbFile) {
    this.dbFile = Objects.requireNonNull(dbFile);
    Gauge.builder(STORE_FILE_BYTES, this, m -> m.storeFileBytes()).description("size of relay.db, bytes")
        .register(registry);
    Gauge.builder(STORE_WAL_BYTES, this, m -> m.storeWalBytes())
        .description("size of relay.db-wal, bytes (0 when there is none)").register(registry);
  }

  /** Size of {@code relay.db} now, bytes; NaN before {@link #bindStoreFiles} or when it cannot be read. */
  public double storeFileBytes() {
    java.nio.file.Path db = dbFile;
    if (db == null) {
      return Double.NaN;
    }
    try {
      return java.nio.file.Files.size(db);
    } catch (java.io.IOException e) {
      return Double.NaN;
    }
  }

  /** Size of {@code relay.db-wal} now, bytes; 0 when there is none, NaN before {@link #bindStoreFiles}. */
  public double storeWalBytes() {
    java.nio.file.Path db = dbFile;
    if (db == null) {
      return Double.NaN;
    }
    try {
      return java.nio.file.Files.size(db.resolveSibling(db.getFileName() + "-wal"));
    } catch (java.nio.file.NoSuchFileException e) {
      return 0; // checkpointed and removed at a clean close, or not created yet
    } catch (java.io.IOException e) {
      return Double.NaN;
    }
  }

  /**
   * Binds the commit watermark's meters (issue 10 item 3).
   *
   * @param lag committed transactions not yet in the watermark file
   */
  public void bindWatermark(LongSupplier lag) {
    this.watermarkLag = Objects.requireNonNull(lag);
    Gauge.builder(WATERMARK_LAG, this, m -> m.watermarkLag.getAsLong())
        .description("writer transactions committed but not yet in relay.watermark").register(registry);
  }

  /**
   * One background write of the commit watermark ended.
   *
   * @param ok false when it failed
   */
  public void watermarkWritten(boolean ok) {
    if (!ok) {
      watermarkFailures.increment();
    }
  }

  /** Prometheus text exposition of every meter (tests; the admin server uses the Vert.x scraping handler). */
  public String scrape() {
    return registry.scrape();
  }

  /** Closes the registry (after Vert.x closed: Vert.x does not close a registry it was given). */
  @Override
  public void close() {
    registry.close();
  }
}
