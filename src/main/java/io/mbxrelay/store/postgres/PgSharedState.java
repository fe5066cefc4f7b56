package io.mbxrelay.store.postgres;

import io.agroal.api.AgroalDataSource;
import io.mbxrelay.auth.Challenges;
import io.mbxrelay.auth.HopReplayCache;
import io.mbxrelay.auth.SharedReplays;
import io.mbxrelay.auth.SlidingWindowLimiter;
import io.mbxrelay.wire.B64;
import io.mbxrelay.wire.KeySpelling;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.WorkerExecutor;
import java.security.SecureRandom;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The request-path state that several relay instances on one PostgreSQL database share instead of keeping it per
 * process (docs/scale-out.md "What is shared, and what stays per instance"; issue 20 items 5 to 7):
 * <ul>
 *   <li><b>enrolment challenges</b> ({@link Challenges}) in {@code challenges}: issued by any instance, answerable at
 *       any, consumed once ({@code DELETE … RETURNING}); the same bounds as in memory (at most
 *       {@code limits.maxOpenChallenges}, the oldest shed; each {@code limits.challengeTtlMs});</li>
 *   <li><b>replay protection</b> ({@link SharedReplays}) in {@code hop_replays}: a state-changing hop accepted by one
 *       instance is refused by every other until its {@code x-mbx-ts} + {@code limits.hopWindowMs} (one
 *       {@code INSERT … ON CONFLICT} per such request, behind the instance's own {@link HopReplayCache});</li>
 *   <li><b>rate windows</b> in {@code rate_windows}: every {@link #RATE_SYNC_MS} each instance publishes the windows of
 *       its {@link SlidingWindowLimiter}s that changed and reads the others' sums, which its limiters then count; the
 *       request path stays in memory.</li>
 * </ul>
 * Expired rows of all three are swept every {@link #SWEEP_MS} by every instance (idempotent deletes).
 *
 * <p>Blocking JDBC runs on the store's reader threads (the shared worker executor {@code mbx-pg-reads}, so the
 * connections taken stay within {@code store.readPoolSize}); futures complete on the caller's context. Nothing is
 * logged per request; challenge nonces are never logged.
 */
public final class PgSharedState implements io.mbxrelay.auth.SharedRequestState {
  private static final Logger LOG = LoggerFactory.getLogger(PgSharedState.class);

  /** How often the rate windows are published and read, ms. */
  public static final long RATE_SYNC_MS = 250;
  /** How often expired rows are swept, ms. */
  public static final long SWEEP_MS = 10_000;

  private static final short KIND_ENROL = 1;
  private static final short KIND_PUSH = 2;

  private final AgroalDataSource pool;
  private final WorkerExecutor workers;
  private final int maxChallenges;
  private final long challengeTtlMs;
  private final LongSupplier clock;
  private final String instance = UUID.randomUUID().toString();
  private final SecureRandom random = new SecureRandom();
  private final AtomicBoolean syncing = new AtomicBoolean();
  private final AtomicBoolean sweeping = new AtomicBoolean();
  private final java.util.concurrent.atomic.AtomicLong shed = new java.util.concurrent.atomic.AtomicLong();
  private long syncFailures; // only in the sync round's completion, one at a time

  /**
   * @param vertx Vert.x (its timers and the reader threads)
   * @param store the open store (its pool)
   * @param readThreads reader threads ({@code store.readPoolSize}; the executor is the readers')
   * @param maxChallenges most open challenges ({@code limits.maxOpenChallenges})
   * @param challengeTtlMs lifetime of a challenge, ms ({@code limits.challengeTtlMs})
   * @param clock wall clock of the timers, epoch ms (the request path passes its own now)
   */
  public PgSharedState(Vertx vertx, PgStore store, int readThreads, int maxChallenges, long challengeTtlMs,
      LongSupplier clock) {
    if (maxChallenges < 1 || challengeTtlMs < 1) {
      throw new IllegalArgumentException("maxChallenges and challengeTtlMs must be positive");
    }
    this.pool = store.dataSource();
    this.workers = vertx.createSharedWorkerExecutor("mbx-pg-reads", readThreads);
    this.maxChallenges = maxChallenges;
    this.challengeTtlMs = challengeTtlMs;
    this.clock = Objects.requireNonNull(clock);
  }

  /**
   * Shares this instance's replay cache and rate windows with the other instances. Deploy the returned verticle
   * (before serving): its timers run the rate sync every {@link #RATE_SYNC_MS} and the sweep every {@link #SWEEP_MS},
   * and stop when it is undeployed. Call once.
   *
   * @param replay the instance's replay cache (consults {@link #firstSeen} after its own memory)
   * @param enrolRate enrolment calls per client address ({@code limits.enrolCallsPerMinute})
   * @param pushRate pushes per sender ({@code limits.pushRequestsPerMinute})
   * @return the timer verticle
   */
  @Override
  public io.vertx.core.Verticle attach(HopReplayCache replay, SlidingWindowLimiter enrolRate,
      SlidingWindowLimiter pushRate) {
    replay.share(this);
    enrolRate.share();
    pushRate.share();
    return new io.vertx.core.AbstractVerticle() {
      @Override
      public void start() {
        vertx.setPeriodic(RATE_SYNC_MS, id -> syncRates(enrolRate, pushRate));
        vertx.setPeriodic(SWEEP_MS, id -> sweep());
      }
    };
  }

  // ---- challenges ----

  @Override
  public Future<Optional<String>> issue(String hostPubkey, long nowMs) {
    String key = KeySpelling.canonicalOrSelf(hostPubkey);
    return run(() -> {
      try (Connection c = pool.getConnection()) {
        for (int attempt = 0; attempt < 3; attempt++) {
          byte[] b = new byte[16];
          random.nextBytes(b);
          String fresh = B64.base64UrlNoPad(b);
          // a new challenge, or a replaced expired one; an unexpired one stays (same nonce, same expiry)
          try (PreparedStatement ps = c.prepareStatement("INSERT INTO challenges(host_pubkey, nonce, expires_at_ms)"
              + " VALUES(?, ?, ?) ON CONFLICT(host_pubkey) DO UPDATE SET nonce = EXCLUDED.nonce,"
              + " expires_at_ms = EXCLUDED.expires_at_ms WHERE challenges.expires_at_ms <= ? RETURNING nonce")) {
            ps.setString(1, key);
            ps.setString(2, fresh);
            ps.setLong(3, nowMs + challengeTtlMs);
            ps.setLong(4, nowMs);
            try (ResultSet rs = ps.executeQuery()) {
              if (rs.next()) {
                shedOverMax(c);
                return Optional.of(rs.getString(1));
              }
            }
          }
          Optional<String> open = pendingOn(c, key, nowMs);
          if (open.isPresent()) {
            return open;
          }
          // consumed between the two statements: issue again
        }
        throw new SQLException("challenge for one key changed under three attempts");
      }
    });
  }

  /** Keeps the newest {@code maxChallenges} (issue order is expiry order: one TTL for all). */
  private void shedOverMax(Connection c) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement("DELETE FROM challenges WHERE host_pubkey IN (SELECT host_pubkey"
        + " FROM challenges ORDER BY expires_at_ms DESC, host_pubkey OFFSET ?)")) {
      ps.setInt(1, maxChallenges);
      int n = ps.executeUpdate();
      if (n > 0) {
        shed.addAndGet(n);
      }
    }
  }

  @Override
  public Future<Optional<String>> pending(String hostPubkey, long nowMs) {
    String key = KeySpelling.canonicalOrSelf(hostPubkey);
    return run(() -> {
      try (Connection c = pool.getConnection()) {
        return pendingOn(c, key, nowMs);
      }
    });
  }

  private static Optional<String> pendingOn(Connection c, String key, long nowMs) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(
        "SELECT nonce FROM challenges WHERE host_pubkey = ? AND expires_at_ms > ?")) {
      ps.setString(1, key);
      ps.setLong(2, nowMs);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() ? Optional.of(rs.getString(1)) : Optional.empty();
      }
    }
  }

  @Override
  public Future<Boolean> consume(String hostPubkey, String nonce) {
    String key = KeySpelling.canonicalOrSelf(hostPubkey);
    return run(() -> {
      try (Connection c = pool.getConnection();
          PreparedStatement ps = c.prepareStatement(
              "DELETE FROM challenges WHERE host_pubkey = ? AND nonce = ? RETURNING 1")) {
        ps.setString(1, key);
        ps.setString(2, nonce);
        try (ResultSet rs = ps.executeQuery()) {
          return rs.next();
        }
      }
    });
  }

  /** Unexpired challenges this instance shed to keep the table within its bound, since start (tests). */
  public long shed() {
    return shed.get();
  }

  // ---- replays ----

  @Override
  public Future<Boolean> firstSeen(byte[] id, long untilMs, long nowMs) {
    return run(() -> {
      // a live row with this id is a replay (no row returned); an expired one not yet swept is replaced
      try (Connection c = pool.getConnection();
          PreparedStatement ps = c.prepareStatement("INSERT INTO hop_replays(id, expires_at_ms) VALUES(?, ?)"
              + " ON CONFLICT(id) DO UPDATE SET expires_at_ms = EXCLUDED.expires_at_ms"
              + " WHERE hop_replays.expires_at_ms < ? RETURNING 1")) {
        ps.setBytes(1, id);
        ps.setLong(2, untilMs);
        ps.setLong(3, nowMs);
        try (ResultSet rs = ps.executeQuery()) {
          return rs.next();
        }
      }
    });
  }

  // ---- rate windows ----

  /** One round: publish what changed here, read the others' sums. Skipped while the previous round runs. */
  private void syncRates(SlidingWindowLimiter enrolRate, SlidingWindowLimiter pushRate) {
    if (!syncing.compareAndSet(false, true)) {
      return;
    }
    long now = clock.getAsLong();
    List<SlidingWindowLimiter.Published> enrol = enrolRate.changes(now);
    List<SlidingWindowLimiter.Published> push = pushRate.changes(now);
    run(() -> {
      try (Connection c = pool.getConnection()) {
        publish(c, KIND_ENROL, enrol);
        publish(c, KIND_PUSH, push);
        Map<String, SlidingWindowLimiter.Elsewhere> enrolThere = new HashMap<>();
        Map<String, SlidingWindowLimiter.Elsewhere> pushThere = new HashMap<>();
        try (PreparedStatement ps = c.prepareStatement("SELECT kind, key, sum(calls), min(first_expires_ms)"
            + " FROM rate_windows WHERE instance <> ? AND calls > 0 AND last_expires_ms > ? GROUP BY kind, key")) {
          ps.setString(1, instance);
          ps.setLong(2, now);
          try (ResultSet rs = ps.executeQuery()) {
            while (rs.next()) {
              (rs.getShort(1) == KIND_ENROL ? enrolThere : pushThere).put(rs.getString(2),
                  new SlidingWindowLimiter.Elsewhere((int) Math.min(Integer.MAX_VALUE, rs.getLong(3)),
                      rs.getLong(4)));
            }
          }
        }
        enrolRate.elsewhere(enrolThere);
        pushRate.elsewhere(pushThere);
        return null;
      }
    }).onComplete(ar -> {
      syncing.set(false);
      if (ar.failed()) {
        // what was not published is published with the next change of its key; the others' last sums stay
        syncFailures++;
        if (syncFailures % 40 == 1) {
          LOG.warn("shared rate windows not synchronised [failures: {}] [error: {}]", syncFailures,
              ar.cause().getClass().getSimpleName());
        }
        requeue(enrolRate, enrol);
        requeue(pushRate, push);
      }
    });
  }

  /** A failed round's changes are not lost: their keys are marked changed again. */
  private static void requeue(SlidingWindowLimiter limiter, List<SlidingWindowLimiter.Published> lost) {
    if (!lost.isEmpty()) {
      limiter.republish(lost.stream().map(SlidingWindowLimiter.Published::key).toList());
    }
  }

  private void publish(Connection c, short kind, List<SlidingWindowLimiter.Published> changed) throws SQLException {
    if (changed.isEmpty()) {
      return;
    }
    try (PreparedStatement ps = c.prepareStatement("INSERT INTO rate_windows(kind, key, instance, calls,"
        + " first_expires_ms, last_expires_ms) VALUES(?, ?, ?, ?, ?, ?) ON CONFLICT(kind, key, instance) DO UPDATE SET"
        + " calls = EXCLUDED.calls, first_expires_ms = EXCLUDED.first_expires_ms,"
        + " last_expires_ms = EXCLUDED.last_expires_ms")) {
      for (SlidingWindowLimiter.Published p : changed) {
        ps.setShort(1, kind);
        ps.setString(2, p.key());
        ps.setString(3, instance);
        ps.setInt(4, p.calls());
        ps.setLong(5, p.firstExpiresMs());
        ps.setLong(6, p.lastExpiresMs());
        ps.addBatch();
      }
      ps.executeBatch();
    }
  }

  // ---- sweep ----

  /** Deletes expired challenges, replay ids and drained or stale rate windows (every instance; idempotent). */
  private void sweep() {
    if (!sweeping.compareAndSet(false, true)) {
      return;
    }
    long now = clock.getAsLong();
    run(() -> {
      try (Connection c = pool.getConnection()) {
        for (String sql : new String[] {"DELETE FROM challenges WHERE expires_at_ms <= ?",
            "DELETE FROM hop_replays WHERE expires_at_ms < ?",
            "DELETE FROM rate_windows WHERE last_expires_ms < ? OR calls = 0"}) {
          try (PreparedStatement ps = c.prepareStatement(sql)) {
            ps.setLong(1, now);
            ps.executeUpdate();
          }
        }
        return null;
      }
    }).onComplete(ar -> {
      sweeping.set(false);
      if (ar.failed()) {
        LOG.warn("shared state not swept [error: {}]", ar.cause().getClass().getSimpleName());
      }
    });
  }

  private <T> Future<T> run(Callable<T> fn) {
    return workers.executeBlocking(fn, false);
  }
}
