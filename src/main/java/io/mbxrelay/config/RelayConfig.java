package io.mbxrelay.config;

import java.util.Objects;

/**
 * The whole relay configuration: the tuning knobs of {@code conf/relay.json} after environment overrides and
 * validation ({@link ConfigLoader}). Immutable; safe to share between threads and verticles.
 *
 * <p>Units are in the field names (ms, bytes, days). Defaults follow docs/protocol.md §3 "Other constants" and are
 * documented in {@code docs/configuration.md}.
 *
 * @param http HTTP verticles and request limits
 * @param store read pool and writer settings
 * @param limits protocol limits (docs/protocol.md §3, §4.7 {@code info.limits})
 * @param timers heartbeat and expiry sweep timers (docs/protocol.md §5)
 * @param enrolment which enrolment authority decides (docs/protocol.md §7.8)
 * @param admin the admin HTTP server (metrics, health, readiness) and the deny-list admin token
 * @param log log output format
 * @param trust replay protection (issue 3) and client-address grouping (issue 11)
 */
public record RelayConfig(Http http, Store store, Limits limits, Timers timers, Enrolment enrolment, Admin admin,
    Log log, Trust trust) {

  /** The values of {@code store.backend} this build can open ({@code io.mbxrelay.server.RelayServer#start}). */
  public static final java.util.List<String> STORE_BACKENDS = java.util.List.of("sqlite", "postgresql");

  public RelayConfig {
    Objects.requireNonNull(http, "http");
    Objects.requireNonNull(store, "store");
    Objects.requireNonNull(limits, "limits");
    Objects.requireNonNull(timers, "timers");
    Objects.requireNonNull(enrolment, "enrolment");
    Objects.requireNonNull(admin, "admin");
    Objects.requireNonNull(log, "log");
    Objects.requireNonNull(trust, "trust");
    Objects.requireNonNull(admin, "admin");
  }

  /**
   * HTTP side.
   *
   * @param instances number of HTTP verticle instances (event loops serving requests)
   * @param maxBodyBytes streaming body cap for most routes (docs/protocol.md §3: 8 MiB)
   * @param maxSmallBodyBytes streaming body cap for challenge, enrol and rotate (docs/protocol.md §3: 8 KiB) and every GET
   * @param requestTimeoutMs a request whose body has not arrived in full by then is answered 408 and closed
   * @param idleTimeoutMs an idle connection (no bytes either way) is closed after this long; a long-poll pull waits
   *     at most 5 s less (and never more than 60 s)
   * @param maxInFlightBodyBytes request body bytes all connections together may hold at once (issue 11 item 2, issue
   *     10 item 13); a body that would go over it is answered 503 before it is read; 0 = sized from the heap
   *     ({@link #bodyBudgetBytes()})
   * @param h2c whether HTTP/2 over cleartext (upgrade and prior knowledge) is served on the relay port
   * @param maxConcurrentStreams HTTP/2 streams one connection may have open at once (when {@code h2c} is on)
   * @param maxPageBytesInFlight pull page wire bytes held in memory at once over all connections, bytes; 0 = an eighth
   *     of the heap (at least 16 MiB)
   * @param maxInFlightBodyBytesPerClient the most of the body budget one client address holds at once, bytes; 0 = a
   *     quarter of the budget, at least two largest bodies ({@link #bodyBytesPerClient()})
   * @param maxPageBytesInFlightPerClient the most of the page budget one client address holds at once, bytes; 0 = a
   *     quarter of the budget, at least two largest pages ({@link #pageBytesPerClient(int)})
   * @param shutdownGraceMs how long a stop (SIGTERM) lets in-flight requests finish after the listener closed, ms;
   *     connections still open after it are closed (issue 12 item 1)
   * @param pageStallMs a pull page whose writes make no progress (the client reads nothing) for this long is cut: its
   *     connection is closed and its bytes leave the page budget (issue 22 item 1), ms
   * @param maxConnections most connections the relay port holds open at once over every HTTP instance (issue 18 goal
   *     4); a connection over it is answered 503 with {@code Retry-After} and closed; 0 = the process's open-file limit
   *     less {@code reservedFiles} ({@link #connectionLimit(long)})
   * @param reservedFiles file descriptors kept back from the connection cap for the store, the logs, the jar and the
   *     admin port, and for answering refused connections
   */
  public record Http(int instances, int maxBodyBytes, int maxSmallBodyBytes, long requestTimeoutMs, long idleTimeoutMs,
      long maxInFlightBodyBytes, boolean h2c, int maxConcurrentStreams, long maxPageBytesInFlight,
      long maxInFlightBodyBytesPerClient, long maxPageBytesInFlightPerClient, long shutdownGraceMs,
      long pageStallMs, int maxConnections, int reservedFiles) {

    /** The cap used when the open-file limit cannot be read (not a Unix JVM). */
    public static final int FALLBACK_MAX_CONNECTIONS = 10_000;

    /**
     * The connection cap in force: {@code maxConnections} when set, else {@code fileLimit - reservedFiles} (at least
     * 16), else {@link #FALLBACK_MAX_CONNECTIONS} when the limit is unknown.
     *
     * @param fileLimit the process's open-file limit ({@code ulimit -n}), or a value ≤ 0 when unknown
     * @return the most connections held open at once
     */
    public int connectionLimit(long fileLimit) {
      if (maxConnections > 0) {
        return maxConnections;
      }
      if (fileLimit <= 0) {
        return FALLBACK_MAX_CONNECTIONS;
      }
      return (int) Math.max(16, Math.min(Integer.MAX_VALUE, fileLimit - reservedFiles));
    }

    /** The body budget's per-client share in force, bytes (never more than the budget). */
    public long bodyBytesPerClient() {
      long budget = bodyBudgetBytes();
      long share = maxInFlightBodyBytesPerClient > 0 ? maxInFlightBodyBytesPerClient
          : Math.max(2L * maxBodyBytes, budget / 4);
      return Math.min(budget, share);
    }

    /**
     * The page budget's per-client share in force, bytes (never more than the budget).
     *
     * @param maxPullBytes stored bytes per pull page ({@code limits.maxPullBytes})
     */
    public long pageBytesPerClient(int maxPullBytes) {
      long budget = pageBytesInFlight();
      long share = maxPageBytesInFlightPerClient > 0 ? maxPageBytesInFlightPerClient
          : Math.max(2L * maxPullBytes, budget / 4);
      return Math.min(budget, share);
    }

    /** {@link #maxPageBytesInFlight} with its default applied, bytes. */
    public long pageBytesInFlight() {
      return maxPageBytesInFlight > 0 ? maxPageBytesInFlight
          : Math.max(16L << 20, Runtime.getRuntime().maxMemory() / 8);
    }

    /**
     * The in-flight body budget in force, bytes: {@code maxInFlightBodyBytes} when set, else an eighth of the JVM's
     * maximum heap ({@link Runtime#maxMemory()}), never less than {@code maxBodyBytes} (one largest body is always
     * admitted). An eighth because a body is held about 3–4 times while it is checked (the bytes, the hop text, the
     * JSON tree, the decoded wires).
     *
     * @return the budget, bytes
     */
    public long bodyBudgetBytes() {
      if (maxInFlightBodyBytes > 0) {
        return maxInFlightBodyBytes;
      }
      return Math.max(maxBodyBytes, Runtime.getRuntime().maxMemory() / 8);
    }
  }

  /**
   * Store side.
   *
   * @param readPoolSize read-only SQLite connections in the Agroal pool behind the Vert.x JDBC client
   * @param writerBatchMax most write commands (one push request is one command) the writer runs in one transaction
   *     (group commit)
   * @param writerTimeoutMs event-bus timeout of a write request; past it the outcome is unknown (503)
   * @param busyTimeoutMs SQLite {@code busy_timeout} for every connection
   * @param writerBatchMaxRows most item rows (items × targets) one transaction writes; a single command over it still
   *     runs alone
   * @param writerBatchMaxBytes most wire bytes one transaction writes; a single command over it still runs alone
   * @param writerCommitDelayMs when transactions follow each other closely, how long the next one waits for more
   *     commands, ms (0 = never waits)
   * @param watermarkIntervalMs least time between two writes of the commit watermark file ({@code relay.watermark},
   *     issue 10 item 3), ms: the watermark lags the store by at most about this much (0 = after every commit, as
   *     fast as the disk syncs); not used while {@code watermarkBeforeAnswers}
   * @param watermarkBeforeAnswers a transaction's answers wait until {@code relay.watermark} covers its commit, so a
   *     WAL tail lost after an answer is always found at start (issue 22 item 3; sqlite only)
   * @param minFreeBytes free space the store's file system must keep, bytes: below it new pushes are refused (503) and
   *     {@code /ready} is 503, so acks, enrolments and the heartbeat still find room (issue 10 item 9; 0 = no floor)
   * @param walAutocheckpointPages SQLite's {@code wal_autocheckpoint} for the writer, pages: the COMMIT that takes the
   *     write-ahead log past it copies the log into the database (sqlite only; issue 18); with background
   *     checkpoints on, only when they fall behind
   * @param checkpointIntervalMs least time between two background WAL checkpoints, ms: a thread of its own copies the
   *     log into the database at most this often after commits, so no COMMIT waits for a checkpoint (sqlite only;
   *     0 = none, the writer's COMMIT checkpoints at {@code walAutocheckpointPages})
   * @param backend {@code sqlite} (the embedded default: one relay process on one store directory) or
   *     {@code postgresql} (several relay processes on one PostgreSQL database; docs/scale-out.md)
   * @param url PostgreSQL JDBC URL, {@code jdbc:postgresql://HOST[:PORT]/DATABASE[?PARAMS]} (postgresql only)
   * @param user PostgreSQL user (postgresql only; empty = the driver's default)
   * @param password PostgreSQL password (postgresql only; normally from {@code MBX_RELAY_STORE_PASSWORD}); never
   *     printed
   * @param passwordFile file whose content (trailing line break removed) is the PostgreSQL password, for secrets
   *     mounted as files; exclusive with {@code password}
   * @param poolSize connections in the PostgreSQL pool of one relay process (postgresql only)
   */
  public record Store(String backend, int readPoolSize, int writerBatchMax, long writerTimeoutMs, long busyTimeoutMs,
      int writerBatchMaxRows, long writerBatchMaxBytes, long writerCommitDelayMs, long watermarkIntervalMs,
      boolean watermarkBeforeAnswers, long minFreeBytes, int walAutocheckpointPages, long checkpointIntervalMs, String url, String user, String password, String passwordFile,
      int poolSize) {

    /** {@code store.backend} value of the embedded SQLite store. */
    public static final String SQLITE = "sqlite";
    /** {@code store.backend} value of the PostgreSQL store. */
    public static final String POSTGRESQL = "postgresql";

    /** Whether the PostgreSQL backend is selected. */
    public boolean postgresql() {
      return POSTGRESQL.equals(backend);
    }

    /**
     * The PostgreSQL password in force: {@code password}, else the content of {@code passwordFile} with one trailing
     * line break removed, else empty.
     *
     * @return the password (never null)
     * @throws java.io.UncheckedIOException when {@code passwordFile} cannot be read
     */
    public String resolvedPassword() {
      if (password != null && !password.isEmpty()) {
        return password;
      }
      if (passwordFile == null || passwordFile.isEmpty()) {
        return "";
      }
      try {
        String s = java.nio.file.Files.readString(java.nio.file.Path.of(passwordFile));
        return s.endsWith("\r\n") ? s.substring(0, s.length() - 2) : s.endsWith("\n") ? s.substring(0, s.length() - 1) : s;
      } catch (java.io.IOException e) {
        throw new java.io.UncheckedIOException("store.passwordFile " + passwordFile + " cannot be read", e);
      }
    }

    /** Never prints the password (nor anything in the URL after {@code ?}, where a password may be given too). */
    @Override
    public String toString() {
      String shownUrl = url == null ? "" : url.replaceAll("\\?.*$", "?…");
      return "Store[readPoolSize=" + readPoolSize + ", writerBatchMax=" + writerBatchMax + ", writerTimeoutMs="
          + writerTimeoutMs + ", busyTimeoutMs=" + busyTimeoutMs + ", writerBatchMaxRows=" + writerBatchMaxRows
          + ", writerBatchMaxBytes=" + writerBatchMaxBytes + ", writerCommitDelayMs=" + writerCommitDelayMs
          + ", watermarkIntervalMs=" + watermarkIntervalMs + ", watermarkBeforeAnswers=" + watermarkBeforeAnswers
          + ", minFreeBytes=" + minFreeBytes
          + ", walAutocheckpointPages=" + walAutocheckpointPages + ", checkpointIntervalMs=" + checkpointIntervalMs
          + ", backend=" + backend
          + ", url=" + shownUrl + ", user=" + user + ", password=" + (password == null || password.isEmpty()
          ? "unset" : "set") + ", passwordFile=" + passwordFile + ", poolSize=" + poolSize + "]";
    }
  }

  /**
   * Protocol limits, docs/protocol.md §3 "Other constants" and §4.7.
   *
   * @param maxItemBytes decoded wire bytes of one item per target
   * @param maxBatch items per push request
   * @param maxPull items per pull page
   * @param maxPullBytes stored bytes per pull page (one oversize item still goes out alone)
   * @param maxTargets targets per item
   * @param retentionDays days an item is kept before it expires
   * @param maxQueueItems queued items per target
   * @param maxQueueBytes queued bytes per target
   * @param maxSenderItems one sender's queued items per target
   * @param maxSenderBytes one sender's queued bytes per target
   * @param maxOwnerItems queued items over all live hosts of one proven account
   * @param maxOwnerBytes queued bytes over all live hosts of one proven account
   * @param maxEnrolments live enrolments
   * @param maxOpenChallenges open enrolment challenges
   * @param challengeTtlMs challenge lifetime
   * @param enrolCallsPerMinute challenge/enrol/rotate calls per client address per sliding minute
   * @param pushRequestsPerMinute push requests per sender key per sliding minute
   * @param rateTableMaxKeys hard cap on keys in each rate table
   * @param maxPerName live enrolments a v1 name may carry before it is crowded
   * @param maxSenders keys in one sender allowlist
   * @param hopWindowMs allowed clock difference of a signed hop, both directions
   * @param maxSenderTotalItems one sender's queued items over all targets (issue 11 item 8)
   * @param maxSenderTotalBytes one sender's queued bytes over all targets
   * @param maxStoreItems queued items in the whole store
   * @param maxStoreBytes queued wire bytes in the whole store
   */
  public record Limits(
      int maxItemBytes,
      int maxBatch,
      int maxPull,
      int maxPullBytes,
      int maxTargets,
      int retentionDays,
      int maxQueueItems,
      long maxQueueBytes,
      int maxSenderItems,
      long maxSenderBytes,
      int maxOwnerItems,
      long maxOwnerBytes,
      int maxEnrolments,
      int maxOpenChallenges,
      long challengeTtlMs,
      int enrolCallsPerMinute,
      int pushRequestsPerMinute,
      int rateTableMaxKeys,
      int maxPerName,
      int maxSenders,
      long hopWindowMs,
      int maxSenderTotalItems,
      long maxSenderTotalBytes,
      long maxStoreItems,
      long maxStoreBytes) {

    /** Retention in milliseconds. */
    public long retentionMs() {
      return retentionDays * 86_400_000L;
    }
  }

  /**
   * Timer verticles, docs/protocol.md §5.
   *
   * @param heartbeatMs heartbeat write interval
   * @param heartbeatStaleMs a stored heartbeat further than this from now rotates the epoch at start
   * @param sweepIntervalMs expiry sweep interval (a sweep also runs at start)
   * @param sweepBatchRows most expired rows per sweep transaction
   * @param sweepMaxBatches most sweep transactions per run
   * @param maxClockStepMs largest wall-clock step (either way, against the monotonic clock and the store's clock
   *     watermark) taken as time passing; a larger one pauses expiry and dedup pruning (issue 10 item 7,
   *     {@code io.mbxrelay.store.guard.ClockGuard})
   */
  public record Timers(long heartbeatMs, long heartbeatStaleMs, long sweepIntervalMs, int sweepBatchRows, int sweepMaxBatches,
      long maxClockStepMs) {}

  /**
   * Enrolment authority selection (docs/protocol.md §7.8) and the account-token settings ({@code docs/account-tokens.md}).
   *
   * @param authority {@code host-key-challenge} (default, self-hosted relays) or {@code account-token} (hosted)
   * @param relayUrl this relay's public URL: the only token audience accepted (account-token only)
   * @param tokenIssuer the accounts issuer: the only {@code iss} accepted (account-token only)
   * @param jwksUrl where the issuer's JWKS is fetched (account-token only)
   * @param jwksRefreshMs JWKS refresh interval (docs/protocol.md §7.8: 10 min)
   * @param jwksUnknownKidMinIntervalMs least time between refreshes triggered by an unknown {@code kid} (1 min)
   * @param jwksCacheLifetimeMs how long keys of the last successful fetch serve when the JWKS cannot be fetched (1 h)
   * @param tokenMaxLifetimeMs most {@code exp − iat} of an account token (15 min)
   * @param jwksFetchTimeoutMs absolute deadline of one JWKS fetch, connect to last byte (issue 11 item 7)
   */
  public record Enrolment(String authority, String relayUrl, String tokenIssuer, String jwksUrl, long jwksRefreshMs,
      long jwksUnknownKidMinIntervalMs, long jwksCacheLifetimeMs, long tokenMaxLifetimeMs, long jwksFetchTimeoutMs) {}

  /**
   * Replay protection beyond the reference (issue 3 item 7).
   *
   * @param replayCacheMaxEntries most accepted state-changing hops remembered for the hop window in all; over it the
   *     oldest entry is evicted (never a refusal, so no host can lock others out)
   * @param replayCacheMaxPerKey most remembered per caller key; a key over its share loses only its own oldest entries
   * @param ipv6PrefixBits the per-address enrolment-call window counts an IPv6 client per network of this many prefix
   *     bits (issue 11 item 6; 64 = one window per /64), IPv4 per address
   * @param verifierCacheMaxKeys most hosts' public keys kept decoded for signature checks (~750 bytes of heap each);
   *     over it an eighth of them is dropped and decoded again on their next request; 0 keeps none
   */
  public record Trust(int replayCacheMaxEntries, int replayCacheMaxPerKey, int ipv6PrefixBits,
      int verifierCacheMaxKeys) {}


  /**
   * The admin HTTP server: {@code GET /metrics} (Prometheus text), {@code /health} and {@code /ready}. It is a
   * separate listener so the relay port carries only the wire contract, and it binds to loopback by default because
   * the metrics are for the operator's scraper, not for the internet (docs/operations.md "Admin port").
   *
   * @param port admin listen port; 0 = any free port (tests)
   * @param bind admin listen address
   * @param readyTimeoutMs a readiness probe transaction not answered by the writer within this many ms counts as
   *     failed (writer stalled)
   * @param probeIntervalMs how often a readiness probe transaction is sent to the writer, ms
   * @param queueScanIntervalMs how often the queue gauges (items, bytes, largest target) are read on the read pool, ms
   * @param token bearer token for {@code /admin/deny} on the relay port (normally from
   *     {@code MBX_RELAY_ADMIN_TOKEN}); empty disables that endpoint (docs/deny-list.md)
   */
  public record Admin(int port, String bind, long readyTimeoutMs, long probeIntervalMs, long queueScanIntervalMs,
      String token) {
    /** Never prints the token. */
    @Override
    public String toString() {
      return "Admin[port=" + port + ", bind=" + bind + ", readyTimeoutMs=" + readyTimeoutMs + ", probeIntervalMs="
          + probeIntervalMs + ", queueScanIntervalMs=" + queueScanIntervalMs + ", token="
          + (token == null || token.isEmpty() ? "unset" : "set") + "]";
    }
  }

  /**
   * Logging.
   *
   * @param json one JSON object per line instead of the text pattern
   * @param level the root log level: {@code TRACE}, {@code DEBUG}, {@code INFO}, {@code WARN}, {@code ERROR} or
   *     {@code OFF} (any case; validated, issue 12 item 5); SIGHUP reloads it from the configuration file
   */
  public record Log(boolean json, String level) {}
}
