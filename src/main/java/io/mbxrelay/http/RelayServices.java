package io.mbxrelay.http;

import io.mbxrelay.writer.StoreClient;
import io.mbxrelay.auth.Challenges;
import io.mbxrelay.auth.ClientAddress;
import io.mbxrelay.auth.EnrolmentAuthority;
import io.mbxrelay.auth.SlidingWindowLimiter;
import io.mbxrelay.config.RelayConfig;
import io.mbxrelay.crypto.Ed25519KeyPair;
import io.mbxrelay.metrics.RelayMetrics;
import java.time.Clock;
import java.util.Objects;

/**
 * What every HTTP verticle instance shares: configuration, relay identity, the read and write paths and the
 * bounded in-memory state (challenges, rate windows). Built once by {@link RelayServer}; all members are thread-safe.
 *
 * @param config validated configuration
 * @param relayKey the relay's signing key (signs accept receipts)
 * @param epoch the store epoch for this process's lifetime
 * @param version software version reported in info
 * @param reads read path
 * @param enrolments the committed enrolments in memory (hop checks), kept by the writer
 * @param writes write path (the single writer)
 * @param challenges open enrolment challenges (in memory, or shared in the database: docs/scale-out.md)
 * @param enrolRate per-client-address window for challenge/enrol/rotate
 * @param pushRate per-sender-key window for pushes
 * @param authority the enrolment authority
 * @param clientAddress how the client address is found (trust proxy mode)
 * @param clock time source
 * @param trust replay cache, admin token and issuer keys (issue 3)
 * @param metrics the relay's meters
 * @param waiters long-poll pulls waiting for items (woken by the writer)
 * @param pageBudget pull page bytes held in memory at once
 * @param bodyBudget request body bytes held in memory at once (issue 11 item 2)
 */
public record RelayServices(
    RelayConfig config,
    Ed25519KeyPair relayKey,
    String epoch,
    String version,
    io.mbxrelay.store.spi.RelayReads reads,
    io.mbxrelay.store.EnrolmentCache enrolments,
    StoreClient writes,
    Challenges challenges,
    SlidingWindowLimiter enrolRate,
    SlidingWindowLimiter pushRate,
    EnrolmentAuthority authority,
    ClientAddress clientAddress,
    Clock clock,
    TrustServices trust,
    RelayMetrics metrics,
    io.mbxrelay.http.PullWaiters waiters,
    io.mbxrelay.budget.PageBudget pageBudget,
    io.mbxrelay.http.BodyBudget bodyBudget) {

  public RelayServices {
    Objects.requireNonNull(config);
    Objects.requireNonNull(relayKey);
    Objects.requireNonNull(epoch);
    Objects.requireNonNull(version);
    Objects.requireNonNull(reads);
    Objects.requireNonNull(enrolments);
    Objects.requireNonNull(writes);
    Objects.requireNonNull(challenges);
    Objects.requireNonNull(enrolRate);
    Objects.requireNonNull(pushRate);
    Objects.requireNonNull(authority);
    Objects.requireNonNull(clientAddress);
    Objects.requireNonNull(clock);
    Objects.requireNonNull(trust);
    Objects.requireNonNull(metrics);
    Objects.requireNonNull(waiters);
    Objects.requireNonNull(pageBudget);
    Objects.requireNonNull(bodyBudget);
  }
}
