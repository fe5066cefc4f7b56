package io.mbxrelay.store.postgres;

import io.agroal.api.AgroalDataSource;
import io.agroal.api.configuration.supplier.AgroalDataSourceConfigurationSupplier;
import io.agroal.api.security.NamePrincipal;
import io.agroal.api.security.SimplePassword;
import io.mbxrelay.crypto.Ed25519KeyPair;
import io.mbxrelay.crypto.RelayKeyException;
import io.mbxrelay.crypto.RelayKeys;
import io.mbxrelay.store.model.Enrolment;
import io.mbxrelay.store.model.OpenReport;
import io.mbxrelay.store.EnrolmentCache;
import io.mbxrelay.store.EpochRule;
import io.mbxrelay.store.StoreException;
import io.mbxrelay.store.StoreOpenException;
import io.mbxrelay.wire.IsoTime;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.function.LongSupplier;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A relay store on PostgreSQL, shared by every relay process pointed at the same database (docs/scale-out.md). One
 * {@code PgStore} per process: it owns the connection pool, the relay identity read from the database, and the
 * process's copy of the live enrolments, which it keeps current with the writes of the other instances through
 * {@code LISTEN mbx_enrolments}.
 *
 * <p>Open: creates or migrates the schema ({@link PgSchema}), then under the open advisory lock takes the relay key
 * and epoch from {@code meta} (the first instance to open an empty database stores them), rotates the epoch when the
 * stored heartbeat is stale (no instance has run for {@code heartbeatStaleMs}), and loads the enrolments.
 *
 * <p>Thread-safe. Writer sessions ({@link #newBackend()}) are used by one thread each.
 */
public final class PgStore implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(PgStore.class);
  /** The notification channel a transaction that changed enrolment rows signals on (payload: the host key). */
  static final String ENROLMENT_CHANNEL = "mbx_enrolments";
  /** This process's id on the {@code mbx_items} channel (skips its own notifications). */
  private final String instanceId = UUID.randomUUID().toString().substring(0, 8);
  /** Wakes this instance's waiting pulls for items committed by other instances (issue 20 item 8). */
  private volatile java.util.function.Consumer<java.util.Set<String>> itemsElsewhere = targets -> {};

  private final AgroalDataSource pool;
  private final Ed25519KeyPair relayKey;
  private final String epoch;
  private final OpenReport report;
  private final EnrolmentCache cache = new EnrolmentCache();
  private final LongSupplier clock;
  private final Settings settings;
  private volatile boolean closed;
  private final Thread listener;
  /** The listener's own connection (closed by {@link #close()} to end its wait at once). */
  private volatile Connection listening;

  /**
   * Connection settings.
   *
   * @param url {@code jdbc:postgresql://HOST[:PORT]/DATABASE[?PARAMS]}
   * @param user user name, or empty for the driver's default
   * @param password password, or empty
   * @param poolSize most connections this process holds (writer sessions, reads, the listener)
   */
  public record Settings(String url, String user, String password, int poolSize) {
    /** Driver properties for a connection of its own (user, password, durable commits, timeouts). */
    public java.util.Properties properties(String applicationName) {
      java.util.Properties p = new java.util.Properties();
      if (user != null && !user.isEmpty()) {
        p.setProperty("user", user);
      }
      if (password != null && !password.isEmpty()) {
        p.setProperty("password", password);
      }
      p.setProperty("options", "-c synchronous_commit=on");
      p.setProperty("ApplicationName", applicationName);
      p.setProperty("connectTimeout", "10");
      p.setProperty("tcpKeepAlive", "true");
      return p;
    }

    /** Never prints the password. */
    @Override
    public String toString() {
      return "Settings[url=" + url.replaceAll("\\?.*$", "?…") + ", user=" + user + ", password="
          + (password == null || password.isEmpty() ? "unset" : "set") + ", poolSize=" + poolSize + "]";
    }
  }


  private PgStore(AgroalDataSource pool, Ed25519KeyPair relayKey, String epoch, OpenReport report, LongSupplier clock,
      Settings settings) {
    this.pool = pool;
    this.relayKey = relayKey;
    this.epoch = epoch;
    this.report = report;
    this.clock = clock;
    this.settings = settings;
    this.listener = new Thread(this::listen, "mbx-pg-enrolments");
    this.listener.setDaemon(true);
  }

  /**
   * Opens (creating or migrating) the store.
   *
   * @param settings connection settings
   * @param givenKeyOrNull the relay key text from {@code MBX_RELAY_KEY} ({@link RelayKeys#parse} format), or null:
   *     stored when the database has no key yet, and must match the stored key otherwise
   * @param clock wall clock, epoch ms
   * @param heartbeatStaleMs a stored heartbeat further than this from now rotates the epoch; 0 = never
   * @return the open store
   * @throws StoreOpenException when the database cannot be reached, holds a different relay key, a newer schema, or
   *     no relay store
   */
  public static PgStore open(Settings settings, String givenKeyOrNull, LongSupplier clock, long heartbeatStaleMs)
      throws StoreOpenException {
    AgroalDataSource pool = null;
    try {
      pool = pool(settings);
      Ed25519KeyPair given = null;
      if (givenKeyOrNull != null && !givenKeyOrNull.isBlank()) {
        try {
          given = RelayKeys.parse(givenKeyOrNull.strip());
        } catch (RelayKeyException e) {
          throw new StoreOpenException(e.getMessage() + " (from " + RelayKeys.ENV + ")", e);
        }
      }
      Identity opened;
      try (Connection c = pool.getConnection()) {
        int before = PgSchema.migrate(c);
        opened = identity(c, given, clock.getAsLong(), heartbeatStaleMs, before == 0);
      }
      PgStore store = new PgStore(pool, opened.key(), opened.epoch(), opened.report(), clock, settings);
      store.reloadEnrolments();
      store.listener.start();
      return store;
    } catch (SQLException e) {
      closeQuietly(pool);
      throw new StoreOpenException("PostgreSQL store " + settings.url().replaceAll("\\?.*$", "") + " cannot be opened: "
          + e.getMessage(), e);
    } catch (IllegalStateException | StoreException e) {
      closeQuietly(pool);
      throw new StoreOpenException(e.getMessage(), e);
    } catch (StoreOpenException e) {
      closeQuietly(pool);
      throw e;
    }
  }

  private static void closeQuietly(AgroalDataSource pool) {
    if (pool != null) {
      pool.close();
    }
  }

  /** The Agroal pool (auto-commit connections; sessions switch it off for their transactions). */
  static AgroalDataSource pool(Settings s) throws SQLException {
    AgroalDataSourceConfigurationSupplier cfg = new AgroalDataSourceConfigurationSupplier()
        .connectionPoolConfiguration(cp -> cp
            .initialSize(0)
            .minSize(0)
            .maxSize(s.poolSize())
            .acquisitionTimeout(Duration.ofSeconds(10))
            .validationTimeout(Duration.ofSeconds(30))
            // a connection idle for a second is checked before it is handed out: after a database restart or a
            // terminated session the stale ones are dropped at borrow, not discovered by a failed pull, push or
            // readiness probe (issue 20 item 5)
            .idleValidationTimeout(Duration.ofSeconds(1))
            .connectionValidator(io.agroal.api.configuration.AgroalConnectionPoolConfiguration.ConnectionValidator
                .defaultValidator())
            .exceptionSorter(io.agroal.api.configuration.AgroalConnectionPoolConfiguration.ExceptionSorter
                .fatalExceptionSorter())
            .connectionFactoryConfiguration(cf -> {
              cf.jdbcUrl(s.url()).connectionProviderClass(org.postgresql.Driver.class).autoCommit(true)
                  // durable before reply: COMMIT returns once the WAL is flushed on the server (and its synchronous
                  // standbys, if the operator configured any), whatever the server's default says
                  .jdbcProperty("options", "-c synchronous_commit=on")
                  .jdbcProperty("ApplicationName", "mbxrelay")
                  .jdbcProperty("connectTimeout", "10")
                  .jdbcProperty("tcpKeepAlive", "true");
              if (s.user() != null && !s.user().isEmpty()) {
                cf.principal(new NamePrincipal(s.user()));
              }
              if (s.password() != null && !s.password().isEmpty()) {
                cf.credential(new SimplePassword(s.password()));
              }
              return cf;
            }));
    return AgroalDataSource.from(cfg);
  }

  /** What {@link #identity} read or stored: the relay key, the epoch served, what the open did. */
  private record Identity(Ed25519KeyPair key, String epoch, OpenReport report) {}

  /**
   * Reads or stores the relay key, the epoch and the heartbeat, under the open lock; rotates the epoch when
   * {@link EpochRule} says so.
   */
  private static Identity identity(Connection c, Ed25519KeyPair given, long now, long heartbeatStaleMs,
      boolean created) throws SQLException, StoreOpenException {
    c.setAutoCommit(false);
    try (Statement st = c.createStatement()) {
      st.execute("SELECT pg_advisory_xact_lock(" + PgSchema.LOCK_NAMESPACE + ", " + PgSchema.LOCK_OPEN + ")");
      Optional<String> stored = meta(c, "relay_key");
      Ed25519KeyPair key;
      boolean keyCreated = false;
      if (stored.isPresent()) {
        try {
          key = RelayKeys.parse(stored.get());
        } catch (RelayKeyException e) {
          throw new StoreOpenException("meta.relay_key in the database is not a valid relay key", e);
        }
        if (given != null && !given.publicKeyB64().equals(key.publicKeyB64())) {
          throw new StoreOpenException("the database belongs to relay key " + key.publicKeyB64() + " but "
              + RelayKeys.ENV + " holds " + given.publicKeyB64() + ": unset it (every instance takes the key from the"
              + " database) or point store.url at this relay's own database");
        }
      } else {
        key = given != null ? given : Ed25519KeyPair.generate();
        keyCreated = given == null;
        putMeta(c, "relay_key", RelayKeys.toFileJson(key).strip());
        putMeta(c, "relay_pubkey", key.publicKeyB64());
      }
      String nowIso = IsoTime.format(now);
      String rotatedReason = null;
      String previous = null;
      Optional<String> epoch = meta(c, "epoch");
      if (epoch.isEmpty()) {
        putMeta(c, "epoch", UUID.randomUUID().toString());
        putMeta(c, "expiry_from", nowIso);
      } else {
        Optional<EpochRule.Rotation> rotation = EpochRule.atOpen(false, meta(c, "heartbeat"), now,
            heartbeatStaleMs);
        if (rotation.isPresent()) {
          rotatedReason = rotation.get().reason();
          previous = epoch.get();
          String next = UUID.randomUUID().toString();
          putMeta(c, "epoch", next);
          putMeta(c, "epoch_rotated", "{\"from\":\"" + previous + "\",\"to\":\"" + next + "\",\"at\":\"" + nowIso
              + "\",\"reason\":\"" + rotatedReason + "\"}");
          try (PreparedStatement ps = c.prepareStatement("INSERT INTO ops(at, op, receipt) VALUES(?, ?, ?)")) {
            ps.setString(1, nowIso);
            ps.setString(2, "epoch-rotated");
            ps.setString(3, "{\"v\":1,\"type\":\"relay-epoch-rotated\",\"at\":\"" + nowIso + "\",\"from\":\""
                + previous + "\",\"to\":\"" + next + "\",\"reason\":\"" + rotatedReason + "\"}");
            ps.executeUpdate();
          }
        }
      }
      putMeta(c, "heartbeat", Long.toString(now));
      String current = meta(c, "epoch").orElseThrow();
      c.commit();
      return new Identity(key, current, new OpenReport(created, keyCreated, rotatedReason, previous, 0, null));
    } catch (SQLException | StoreOpenException | RuntimeException e) {
      c.rollback();
      throw e;
    } finally {
      c.setAutoCommit(true);
    }
  }

  static Optional<String> meta(Connection c, String k) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement("SELECT v FROM meta WHERE k = ?")) {
      ps.setString(1, k);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() ? Optional.of(rs.getString(1)) : Optional.empty();
      }
    }
  }

  /**
   * Writes one {@code relay_meta} row (insert or overwrite), in the caller's transaction.
   *
   * @param c an open connection
   * @param k the key
   * @param v the value
   * @throws SQLException on failure
   */
  public static void putMeta(Connection c, String k, String v) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(
        "INSERT INTO meta(k, v) VALUES(?, ?) ON CONFLICT(k) DO UPDATE SET v = excluded.v")) {
      ps.setString(1, k);
      ps.setString(2, v);
      ps.executeUpdate();
    }
  }

  /** The relay key every instance on this database serves. */
  public Ed25519KeyPair relayKey() {
    return relayKey;
  }

  /** The epoch, fixed while this process runs (an instance that finds another epoch stored stops: see sessions). */
  public String epoch() {
    return epoch;
  }

  /** What the open did. */
  public OpenReport openReport() {
    return report;
  }

  /** This process's copy of the live enrolments, kept current with every instance's writes. */
  public EnrolmentCache enrolmentCache() {
    return cache;
  }

  /** The pool (reads, sessions). */
  AgroalDataSource dataSource() {
    return pool;
  }

  LongSupplier clock() {
    return clock;
  }

  /**
   * A writer session: one connection's worth of transactions, for one thread.
   *
   * @return a new session; close it when done
   */
  public PgLedgerBackend newBackend() {
    return new PgLedgerBackend(this);
  }

  /**
   * The relay's writer store on this database: the ledger over a new writer session. Closing it closes the session,
   * not this store.
   *
   * @param clock time source of the ledger
   * @param limits protocol limits
   * @return the ledger, for one thread
   */
  public io.mbxrelay.store.RelayLedger newLedger(java.time.Clock clock, io.mbxrelay.config.RelayConfig.Limits limits) {
    return new io.mbxrelay.store.RelayLedger(newBackend(), clock, limits);
  }

  /** Replaces the cached enrolments with the committed table. */
  void reloadEnrolments() throws StoreException {
    try (Connection c = pool.getConnection();
        Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT host_pubkey, host_name, owner_fp, account, authorized_by, enrolled_at,"
            + " revoked_at FROM enrolments WHERE revoked_at IS NULL")) {
      List<Enrolment> rows = new ArrayList<>();
      while (rs.next()) {
        rows.add(PgLedgerBackend.enrolment(rs));
      }
      synchronized (cache) {
        cache.replaceAll(rows);
      }
    } catch (SQLException e) {
      throw PgLedgerBackend.mapped("reload enrolments", e);
    }
  }

  /** Re-reads one key's committed row into the cache. */
  void refreshEnrolment(Connection c, String key) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement("SELECT host_pubkey, host_name, owner_fp, account, authorized_by,"
        + " enrolled_at, revoked_at FROM enrolments WHERE host_pubkey = ?")) {
      ps.setString(1, key);
      try (ResultSet rs = ps.executeQuery()) {
        synchronized (cache) {
          if (rs.next()) {
            cache.put(PgLedgerBackend.enrolment(rs));
          } else {
            cache.remove(key);
          }
        }
      }
    }
  }

  /** This process's id on the items channel (a few ASCII characters, new at each open). */
  String instanceId() {
    return instanceId;
  }

  /**
   * Installs what wakes this instance's long-poll pulls when another instance commits items for their hosts (issue 20
   * item 8): called on the listener thread with the targets of one notification; must not block. A notification lost
   * with the listener's connection is not replayed (those pulls answer at their wait's end).
   *
   * @param observer receives an unmodifiable set of target keys
   */
  public void onItemsElsewhere(java.util.function.Consumer<java.util.Set<String>> observer) {
    this.itemsElsewhere = java.util.Objects.requireNonNull(observer);
  }

  /**
   * The listener thread: {@code LISTEN mbx_enrolments} on a connection of its own and re-reads each key another
   * instance changed; {@code LISTEN mbx_items} and wakes this instance's pulls of the targets another instance stored
   * items for. After a lost connection it reconnects and reloads the whole table (a notification sent while it
   * was away is lost), so a missed revocation is picked up within about a second of the connection coming back.
   */
  private void listen() {
    while (!closed) {
      try (Connection c = org.postgresql.Driver.class.getDeclaredConstructor().newInstance()
          .connect(settings.url(), settings.properties("mbxrelay-listener"))) {
        listening = c;
        if (closed) {
          return;
        }
        try (Statement st = c.createStatement()) {
          st.execute("LISTEN " + ENROLMENT_CHANNEL);
          st.execute("LISTEN " + PgItemsChannel.CHANNEL);
        }
        reloadEnrolments();
        PGConnection pg = c.unwrap(PGConnection.class);
        while (!closed) {
          PGNotification[] got = pg.getNotifications(500);
          if (got == null) {
            continue;
          }
          for (PGNotification n : got) {
            if (PgItemsChannel.CHANNEL.equals(n.getName())) {
              java.util.Set<String> targets = PgItemsChannel.targets(n.getParameter(), instanceId);
              if (!targets.isEmpty()) {
                itemsElsewhere.accept(targets);
              }
            } else {
              refreshEnrolment(c, n.getParameter());
            }
          }
        }
      } catch (Exception e) {
        if (!closed) {
          LOG.warn("enrolment change listener lost its connection ({}); reconnecting", e.getMessage());
          try {
            Thread.sleep(1000);
          } catch (InterruptedException ie) {
            return;
          }
        }
      }
    }
  }

  @Override
  public void close() {
    closed = true;
    Connection c = listening;
    if (c != null) {
      try {
        c.close(); // its getNotifications wait ends now
      } catch (SQLException ignored) {
        // closing anyway
      }
    }
    listener.interrupt();
    try {
      listener.join(2000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    pool.close();
  }
}
