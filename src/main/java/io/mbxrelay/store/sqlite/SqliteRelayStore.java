package io.mbxrelay.store.sqlite;

import io.mbxrelay.config.RelayConfig;
import io.mbxrelay.store.AckOutcome;
import io.mbxrelay.store.EnrolOutcome;
import io.mbxrelay.store.Enrolment;
import io.mbxrelay.store.EnrolmentCache;
import io.mbxrelay.store.PushOutcome;
import io.mbxrelay.store.RelayStore;
import io.mbxrelay.store.StoreCommand;
import io.mbxrelay.store.StoreException;
import io.mbxrelay.store.StoreOpenException;
import io.mbxrelay.store.StoreRefusedException;
import io.mbxrelay.store.SweepCounts;
import io.mbxrelay.wire.IsoTime;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Clock;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.sqlite.SQLiteErrorCode;
import org.sqlite.SQLiteException;

/**
 * SQLite implementation of {@link RelayStore} over exactly one write connection (docs/protocol.md §7.2, §5).
 *
 * <p>Threading: not thread-safe; owned by one thread (the writer). Every write runs in {@code BEGIN IMMEDIATE} and
 * results are returned only after {@code COMMIT} returned.
 */
public final class SqliteRelayStore implements RelayStore {
  private static final Logger LOG = LoggerFactory.getLogger(SqliteRelayStore.class);

  /** Called after all commands of a transaction ran and before COMMIT (test crash harness). */
  public interface CommitHook {
    /**
     * @param commands the commands of the transaction about to commit
     * @param committed false before COMMIT, true right after COMMIT returned
     */
    void at(List<? extends StoreCommand<?>> commands, boolean committed);
  }

  private final Path file;
  private final Connection conn;
  private final Clock clock;
  private final RelayConfig.Limits limits;
  private final String relayPubkey;
  private volatile String epoch;
  private CommitHook hook = (c, done) -> {};
  private final TrustCommands trust;
  private java.util.function.LongConsumer commitTimer = nanos -> {};
  private final EnrolmentCache enrolments = new EnrolmentCache();
  private final WriterState state = new WriterState();
  /** Keys whose enrolment row the open transaction changed: read from the database until COMMIT. */
  private final Set<String> dirtyEnrolments = new HashSet<>();
  /** The open transaction may have changed many enrolment rows (deny): read them all from the database. */
  private boolean reloadEnrolments;
  /** SQLite {@code data_version} as last seen: another connection committed when it moves. */
  private long dataVersion = -1;
  private long lastIsoMs;
  private String lastIso;
  /** Targets that received an item in the open transaction (for long-poll pulls, after COMMIT). */
  private final Set<String> newItemTargets = new HashSet<>();
  /** The store reported corruption while open: no clean-close marker is written for it. */
  private boolean damaged;
  private java.util.function.Consumer<Set<String>> newItems = targets -> {};
  /** {@code meta.commits}: writer transactions committed in this store's life (issue 10 item 3, the watermark's count). */
  private long commits;
  private java.util.function.LongConsumer onCommit = n -> {};

  private SqliteRelayStore(Path file, Connection conn, Clock clock, RelayConfig.Limits limits, String relayPubkey,
      String epoch) {
    this.file = file;
    this.conn = conn;
    this.clock = clock;
    this.limits = limits;
    this.relayPubkey = relayPubkey;
    this.epoch = epoch;
    this.trust = new TrustCommands(this, conn, clock);
  }

  /**
   * What {@link #open} did, for the startup log line.
   *
   * @param created a new store was created
   * @param epochRotatedReason why the epoch was rotated at open, or null
   * @param previousEpoch the epoch before that rotation, or null
   * @param migratedFrom the schema version the store was migrated from, 0 when it was not migrated
   * @param migrationBackup the automatic backup taken before that migration (issue 12 item 13), or null
   */
  public record OpenReport(boolean created, String epochRotatedReason, String previousEpoch, int migratedFrom,
      Path migrationBackup) {}

  private OpenReport openReport;
  private final java.util.Map<String, PreparedStatement> statements = new java.util.HashMap<>();

  /**
   * The cached prepared statement for {@code sql}, prepared once per connection (the driver does not cache and the
   * writer runs the same dozen statements for every item). Callers bind every parameter and do not close it; one that
   * is closed anyway (try-with-resources in the start-up code) is prepared again on its next use.
   */
  private PreparedStatement statement(String sql) throws SQLException {
    PreparedStatement ps = statements.get(sql);
    if (ps == null || ps.isClosed()) {
      ps = conn.prepareStatement(sql);
      statements.put(sql, ps);
    }
    return ps;
  }

  private PreparedStatement prepared(String sql) throws SQLException {
    return statement(sql);
  }

  /**
   * Opens (creating or migrating when needed) the store in {@code storeDir}.
   *
   * @param storeDir the store directory (created 0700 when missing)
   * @param relayPubkey the relay's public key; a new store pins it, an existing one must match
   * @param clock time source (tests inject one)
   * @param limits protocol limits (quotas, retention, caps)
   * @param busyTimeoutMs SQLite busy timeout
   * @param heartbeatStaleMs a stored heartbeat further than this from now rotates the epoch (docs/protocol.md §5); 0 = never
   * @return the open store
   * @throws StoreOpenException newer schema, another relay key, not a store, or unreadable
   */
  public static SqliteRelayStore open(Path storeDir, String relayPubkey, Clock clock, RelayConfig.Limits limits,
      long busyTimeoutMs, long heartbeatStaleMs) throws StoreOpenException {
    return open(storeDir, relayPubkey, clock, limits, busyTimeoutMs, heartbeatStaleMs, false);
  }

  /**
   * Opens the store as {@link #open(Path, String, Clock, RelayConfig.Limits, long, long)} does, after comparing it with
   * its commit watermark ({@link CommitWatermark}, issue 10 item 3) on a read-only connection: a store whose
   * {@code meta.commits} is below {@code relay.watermark} (or whose watermark is damaged) lost commits that hosts hold
   * receipts for and is refused before anything writes to it, so its WAL stays as evidence; unless
   * {@code acceptLostCommits}, which opens it with a new epoch (hosts re-push and pull again from 0) and raises its
   * count to the watermark.
   *
   * @param storeDir the store directory (created 0700 when missing)
   * @param relayPubkey the relay's public key; a new store pins it, an existing one must match
   * @param clock time source (tests inject one)
   * @param limits protocol limits (quotas, retention, caps)
   * @param busyTimeoutMs SQLite busy timeout
   * @param heartbeatStaleMs a stored heartbeat further than this from now rotates the epoch (docs/protocol.md §5); 0 = never
   * @param acceptLostCommits the operator accepts a store behind its watermark ({@code serve --accept-lost-commits})
   * @return the open store
   * @throws StoreOpenException newer schema, another relay key, not a store, unreadable; {@link StoreRefusedException}
   *     for a store behind its watermark
   */
  public static SqliteRelayStore open(Path storeDir, String relayPubkey, Clock clock, RelayConfig.Limits limits,
      long busyTimeoutMs, long heartbeatStaleMs, boolean acceptLostCommits) throws StoreOpenException {
    Objects.requireNonNull(relayPubkey);
    createStoreDir(storeDir);
    Path file = storeDir.resolve(SqliteSettings.DB_FILE);
    // no links, no empty relay.db, a new one 0600 (issue 10 item 4, 11 items 11-12)
    boolean created = StoreFiles.prepareDatabase(file);
    CommitWatermark.Verdict verdict = verifyWatermark(storeDir, file, created, acceptLostCommits);
    boolean closedCleanly;
    try {
      closedCleanly = CleanClose.consume(file);
    } catch (IOException e) {
      throw new StoreOpenException("cannot remove the clean-close marker next to " + file + ": " + StoreFiles.reason(e), e);
    }
    Connection conn;
    try {
      conn = DriverManager.getConnection(SqliteSettings.url(file), SqliteSettings.writer(busyTimeoutMs));
    } catch (SQLException e) {
      throw new StoreOpenException("cannot open the store database " + file + ": " + e.getMessage(), e);
    }
    try {
      conn.setAutoCommit(true);
      try (Statement st = conn.createStatement()) {
        // The driver applies these at open; assert them so a driver change cannot silently weaken durability.
        st.execute("PRAGMA journal_mode=WAL");
        st.execute("PRAGMA synchronous=FULL");
        st.execute("PRAGMA foreign_keys=ON");
        // the writer's page cache (default 2 MB): index pages of many targets stay hot across transactions
        st.execute("PRAGMA cache_size=" + SqliteSettings.WRITER_CACHE_KIB);
      }
      if (closedCleanly) {
        LOG.info("store closed cleanly and unchanged since: start-up integrity check skipped [file: {}]", file);
      } else {
        StoreIntegrity.requireQuickCheck(conn, file); // a damaged store is refused, never served (issue 10 item 2)
      }
      Path migrationBackup = backupBeforeMigration(conn, file, clock);
      SqliteRelayStore store = new SqliteRelayStore(file, conn, clock, limits, relayPubkey, null);
      store.openReport = store.initialise(heartbeatStaleMs, verdict, migrationBackup);
      store.refreshIfChangedElsewhere(); // loads the enrolment cache
      return store;
    } catch (SQLException e) {
      closeQuietly(conn);
      if (e instanceof SQLiteException se && se.getResultCode() == SQLiteErrorCode.SQLITE_NOTADB) {
        throw new StoreRefusedException(file + " is not a relay store (not an SQLite database): "
            + StoreIntegrity.remedy(file.getParent()), e);
      }
      throw new StoreOpenException("cannot open the store " + file + ": " + e.getMessage(), e);
    } catch (StoreException e) {
      closeQuietly(conn);
      throw new StoreOpenException("cannot open the store " + file + ": " + e.getMessage(), e);
    } catch (StoreOpenException | RuntimeException e) {
      closeQuietly(conn);
      throw e;
    }
  }

  /**
   * Before a store of an older schema version is migrated: the automatic backup of the store as it is (issue 12 item
   * 13, {@link SqliteOps#backupBeforeMigration}), and a log line naming it. A store that is new, current, newer or not
   * a valid store gets none (the open decides about it as before).
   *
   * @return the backup file, or null when no migration follows
   */
  private static Path backupBeforeMigration(Connection conn, Path file, Clock clock) throws SQLException,
      StoreOpenException {
    int v = SqliteOps.schemaVersionOf(conn);
    if (v < 1 || v >= SCHEMA_VERSION) {
      return null;
    }
    StoreIntegrity.requireValidMetadata(conn, file); // a store that will be refused is not copied first
    try {
      Path backup = SqliteOps.backupBeforeMigration(conn, file.getParent(), v, io.mbxrelay.store.ClockGuard.wallMillis(clock));
      LOG.warn("store schema version {} will be migrated to {}: a one-way step (the reference relay and older"
          + " binaries refuse version {}); the store as it was is backed up first [backup: {}] (docs/wire-compatibility.md"
          + " \"Rolling back to the reference relay\")", v, SCHEMA_VERSION, SCHEMA_VERSION, backup);
      return backup;
    } catch (IOException | SQLException e) {
      String why = e instanceof IOException io ? StoreFiles.reason(io) : e.getMessage();
      throw new StoreOpenException("cannot back up " + file + " before migrating it from schema version " + v + " to "
          + SCHEMA_VERSION + " (" + why + "); nothing was changed. Make room in " + file.getParent()
          + " and start again", e);
    }
  }

  /**
   * Whether the store in {@code storeDir} was closed cleanly (its WAL checkpointed and truncated, the clean-close
   * marker written) and not opened since. For the stop's last log line.
   *
   * @param storeDir the store directory
   * @return true when the marker is there
   */
  public static boolean closedCleanly(Path storeDir) {
    return Files.exists(storeDir.resolve(CleanClose.FILE));
  }

  /**
   * Creates the store directory with mode 0700 when it is missing.
   *
   * @param dir the store directory
   * @throws StoreOpenException when it cannot be created
   */
  public static void createStoreDir(Path dir) throws StoreOpenException {
    try {
      if (!Files.isDirectory(dir)) {
        try {
          Files.createDirectories(dir, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
        } catch (UnsupportedOperationException e) {
          Files.createDirectories(dir);
        }
      }
    } catch (IOException e) {
      throw new StoreOpenException("cannot create the store directory " + dir + ": " + StoreFiles.reason(e), e);
    }
  }

  /**
   * The open-time watermark gate (issue 10 item 3), before the writer connection exists: nothing has written to the
   * store yet, so a refused store keeps its WAL exactly as the crash left it.
   */
  private static CommitWatermark.Verdict verifyWatermark(Path dir, Path db, boolean created, boolean accept)
      throws StoreOpenException {
    CommitWatermark.Verdict v;
    try {
      v = CommitWatermark.verify(dir, db, created);
    } catch (SQLException e) {
      if (StoreIntegrity.isCorruption(e)) {
        throw new StoreRefusedException(db + " cannot be read to compare it with its commit watermark ("
            + e.getMessage() + "): the store is damaged and will not be served. " + StoreIntegrity.remedy(dir), e);
      }
      throw new StoreOpenException("cannot read the store " + db + " to compare it with its commit watermark: "
          + e.getMessage(), e);
    } catch (IOException e) {
      throw new StoreOpenException("cannot read the commit watermark " + dir.resolve(CommitWatermark.FILE) + ": "
          + e.getMessage(), e);
    }
    if (v.behind() && !accept) {
      throw new StoreRefusedException(behindMessage(dir, db, v));
    }
    if (v.behind()) {
      LOG.warn("store behind its commit watermark accepted by the operator (--accept-lost-commits): the epoch rotates"
          + " [store commits: {}] [watermark: {}]", v.storeCommits(),
          v.damaged() ? "damaged" : CommitWatermark.describe(v.mark().orElseThrow()));
    }
    return v;
  }

  /** The refusal text for a store behind its watermark: what happened, what hosts hold, the remedies. */
  static String behindMessage(Path dir, Path db, CommitWatermark.Verdict v) {
    Path wm = dir.resolve(CommitWatermark.FILE);
    String what = v.damaged()
        ? wm + " is damaged (neither of its two records verifies), so the relay cannot tell whether " + db
            + " lost committed transactions."
        : db + " is behind its commit watermark " + wm + ": the store ends at commit " + v.storeCommits()
            + ", but " + CommitWatermark.describe(v.mark().orElseThrow()) + " had been committed and answered."
            + " Committed transactions were lost (a damaged or missing write-ahead log " + db.getFileName()
            + "-wal after a crash, or an older relay.db put back), and hosts may hold accept receipts for items"
            + " this store no longer has.";
    return what + " The store will not be served as it is. Keep the files for analysis (copy the whole store dir"
        + " away). Then either restore the latest good backup (mbxrelay restore BACKUP --store-dir " + dir
        + "), or accept the loss: mbxrelay serve --accept-lost-commits --store-dir " + dir
        + " (the epoch rotates, so senders re-push what they hold and receivers pull again from 0; after a restore by"
        + " file copy, mbxrelay rotate-epoch --store-dir " + dir + " does the same).";
  }

  /** What the open did (created, epoch rotated and why). */
  public OpenReport openReport() {
    return openReport;
  }

  /** Installs the commit hook (test crash harness only). */
  public void commitHook(CommitHook hook) {
    this.hook = Objects.requireNonNull(hook);
  }

  /**
   * Installs the observer of committed items: called on the writer thread after each COMMIT that stored at least one
   * item, before any reply of that transaction, with the targets that received items (long-poll pulls wake on it).
   * A target may be named when a rolled-back command of the transaction had inserted for it: observers re-read.
   *
   * @param observer receives an unmodifiable set of target keys
   */
  public void onNewItems(java.util.function.Consumer<Set<String>> observer) {
    this.newItems = Objects.requireNonNull(observer);
  }

  /**
   * Installs the COMMIT timer: called on the writer thread with the duration in ns of every COMMIT statement that
   * returned (the WAL fsync under {@code synchronous=FULL}), so metrics can tell fsync time from statement time.
   *
   * @param timer receives the COMMIT duration, ns
   */
  public void commitTimer(java.util.function.LongConsumer timer) {
    this.commitTimer = Objects.requireNonNull(timer);
  }

  private OpenReport initialise(long heartbeatStaleMs, CommitWatermark.Verdict verdict, Path migrationBackup)
      throws SQLException, StoreOpenException {
    long now = clock.millis();
    String nowIso = IsoTime.format(now);
    try (Statement st = conn.createStatement()) {
      st.execute("BEGIN IMMEDIATE");
    }
    boolean ok = false;
    try {
      boolean hasMeta = tableExists("meta");
      boolean created = false;
      String rotatedReason = null;
      String previous = null;
      int migratedFrom = 0;
      if (!hasMeta) {
        if (tableExists("items") || tableExists("enrolments")) {
          throw new StoreRefusedException(file + " is not a relay store (tables without meta)");
        }
        try (Statement st = conn.createStatement()) {
          for (String ddl : Schema.CURRENT) {
            st.execute(ddl);
          }
        }
        putMeta("schema_version", Integer.toString(SCHEMA_VERSION));
        putMeta("epoch", UUID.randomUUID().toString());
        putMeta("relay_pubkey", relayPubkey);
        putMeta("expiry_from", nowIso);
        created = true;
      } else {
        String version = meta("schema_version").orElse(null);
        int v;
        try {
          v = version == null ? -1 : Integer.parseInt(version);
        } catch (NumberFormatException e) {
          v = -1;
        }
        if (v < 1) {
          throw new StoreRefusedException(file + " is not a relay store (no valid schema version)");
        }
        if (v > SCHEMA_VERSION) {
          throw new StoreRefusedException("the store schema version " + v + " is newer than this binary supports ("
              + SCHEMA_VERSION + "); run a newer mbxrelay or restore a backup made by this version");
        }
        StoreIntegrity.requireValidMetadata(conn, file); // refuse, never rewrite, bad meta (issue 10 item 5)
        if (v < SCHEMA_VERSION) {
          Migrations.migrate(conn, v);
          putMeta("schema_version", Integer.toString(SCHEMA_VERSION));
          migratedFrom = v;
          addOp("schema-migrated", "{\"v\":1,\"type\":\"relay-schema-migrated\",\"at\":\"" + nowIso + "\",\"from\":" + v
              + ",\"to\":" + SCHEMA_VERSION + ",\"backup\":" + (migrationBackup == null ? "null"
              : "\"" + jsonEsc(migrationBackup.toAbsolutePath().toString()) + "\"") + "}");
        }
        String pinned = meta("relay_pubkey").orElse(null);
        if (pinned == null) {
          putMeta("relay_pubkey", relayPubkey);
        } else if (!pinned.equals(relayPubkey)) {
          throw new StoreRefusedException("this store belongs to another relay key (store pins "
              + io.mbxrelay.crypto.Fingerprint.ofB64(pinned) + "); refusing to open it with relay key "
              + io.mbxrelay.crypto.Fingerprint.ofB64(relayPubkey));
        }
        if (meta("epoch").isEmpty()) {
          putMeta("epoch", UUID.randomUUID().toString());
        }
        if (meta("expiry_from").isEmpty()) {
          // docs/protocol.md §5 expiry_from: history of unknown origin never expires; only items pushed from now on do.
          try (Statement st = conn.createStatement()) {
            st.executeUpdate("UPDATE items SET expires_at = NULL WHERE kind <> 'expired'");
          }
          putMeta("expiry_from", nowIso);
        }
        Optional<String> hb = meta("heartbeat");
        if (verdict.behind()) {
          // The operator accepted a store that lost commits (serve --accept-lost-commits): a new epoch makes senders
          // re-push what they hold and receivers pull again from 0 (docs/protocol.md §7.5), exactly as after a restore.
          rotatedReason = "lost commits accepted";
          previous = meta("epoch").orElseThrow();
          String next = UUID.randomUUID().toString();
          putMeta("epoch", next);
          String hbIso = hb.map(h -> h.matches("[0-9]{1,15}") ? IsoTime.format(Long.parseLong(h)) : h).orElse("");
          putMeta("epoch_rotated", "{\"from\":\"" + previous + "\",\"to\":\"" + next + "\",\"at\":\"" + nowIso
              + "\",\"heartbeat\":\"" + jsonEsc(hbIso) + "\",\"reason\":\"" + rotatedReason + "\"}");
          addOp("epoch-rotated", "{\"v\":1,\"type\":\"relay-epoch-rotated\",\"at\":\"" + nowIso + "\",\"from\":\""
              + previous + "\",\"to\":\"" + next + "\",\"heartbeat\":\"" + jsonEsc(hbIso) + "\",\"reason\":\""
              + rotatedReason + "\",\"store_commits\":" + verdict.storeCommits() + ",\"watermark_commits\":"
              + (verdict.damaged() ? "null" : Long.toString(verdict.mark().orElseThrow().commits()))
              + ",\"by\":\"operator\"}");
        } else if (hb.isPresent() && heartbeatStaleMs > 0) {
          long beat;
          try {
            beat = Long.parseLong(hb.get());
          } catch (NumberFormatException e) {
            beat = Long.MIN_VALUE;
          }
          long wallNow = io.mbxrelay.store.ClockGuard.wallMillis(clock); // the outside world's time, not guarded
          if (beat == Long.MIN_VALUE || Math.abs(wallNow - beat) > heartbeatStaleMs) {
            rotatedReason = beat > wallNow ? "heartbeat in the future" : "stale heartbeat";
            previous = meta("epoch").orElseThrow();
            String next = UUID.randomUUID().toString();
            putMeta("epoch", next);
            String at = nowIso;
            String hbIso = beat == Long.MIN_VALUE ? hb.get() : IsoTime.format(beat);
            putMeta("epoch_rotated", "{\"from\":\"" + previous + "\",\"to\":\"" + next + "\",\"at\":\"" + at
                + "\",\"heartbeat\":\"" + jsonEsc(hbIso) + "\",\"reason\":\"" + rotatedReason + "\"}");
            addOp("epoch-rotated", "{\"v\":1,\"type\":\"relay-epoch-rotated\",\"at\":\"" + at + "\",\"from\":\""
                + previous + "\",\"to\":\"" + next + "\",\"heartbeat\":\"" + jsonEsc(hbIso) + "\",\"reason\":\""
                + rotatedReason + "\",\"by\":\"startup\"}");
          }
        }
      }
      ensureIndexes();
      KeySpellingMigration.run(conn); // keys in their canonical spelling; a scan of enrolments on a clean store
      putMeta("heartbeat", Long.toString(now));
      // every writer transaction counts itself, this one too; a store accepted behind its watermark starts above it
      long next = Math.max(CommitWatermark.storeCommits(conn), verdict.floor()) + 1;
      putMeta(CommitWatermark.META_KEY, Long.toString(next));
      this.epoch = meta("epoch").orElseThrow();
      try (Statement st = conn.createStatement()) {
        st.execute("COMMIT");
      }
      ok = true;
      this.commits = next;
      return new OpenReport(created, rotatedReason, previous, migratedFrom, migratedFrom == 0 ? null : migrationBackup);
    } finally {
      if (!ok) {
        try (Statement st = conn.createStatement()) {
          st.execute("ROLLBACK");
        } catch (SQLException ignored) {
          // the original failure is what matters
        }
      }
    }
  }

  /** Brings indexes and derived tables to this version's shape ({@link Schema#DERIVED}); idempotent. */
  private void ensureIndexes() throws SQLException {
    boolean usageExisted = tableExists("queue_usage");
    boolean totalsExisted = tableExists("sender_totals");
    // An earlier mbxrelay keeps its usage tables with triggers and does not know sender_totals: if its trigger is
    // here, it wrote this store since we last did, and both tables are counted again from the items.
    boolean olderWriter;
    try (PreparedStatement ps = prepared("SELECT 1 FROM sqlite_master WHERE type='trigger' AND name=?")) {
      ps.setString(1, "items_usage_insert");
      try (ResultSet rs = ps.executeQuery()) {
        olderWriter = rs.next();
      }
    }
    try (Statement st = conn.createStatement()) {
      for (String ddl : Schema.DERIVED) {
        st.execute(ddl);
      }
      st.execute(Schema.QUEUE_USAGE);
      st.execute(Schema.SENDER_TOTALS);
      st.execute(Schema.DAMAGED_ITEMS);
      if (!usageExisted || olderWriter) {
        for (String sql : Schema.QUEUE_USAGE_BACKFILL) {
          st.execute(sql);
        }
      }
      if (!totalsExisted || olderWriter) {
        for (String sql : Schema.SENDER_TOTALS_BACKFILL) {
          st.execute(sql);
        }
      }
    }
  }

  private static String jsonEsc(String s) {
    return s.replace("\\", "\\\\").replace("\"", "\\\"");
  }

  private boolean tableExists(String name) throws SQLException {
    try (PreparedStatement ps = prepared("SELECT 1 FROM sqlite_master WHERE type='table' AND name=?")) {
      ps.setString(1, name);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next();
      }
    }
  }

  Optional<String> meta(String k) throws SQLException {
    try (PreparedStatement ps = prepared("SELECT v FROM meta WHERE k=?")) {
      ps.setString(1, k);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() ? Optional.of(rs.getString(1)) : Optional.empty();
      }
    }
  }

  void putMeta(String k, String v) throws SQLException {
    try (PreparedStatement ps = prepared(
        "INSERT INTO meta(k, v) VALUES(?, ?) ON CONFLICT(k) DO UPDATE SET v = excluded.v")) {
      ps.setString(1, k);
      ps.setString(2, v);
      ps.executeUpdate();
    }
  }

  void addOp(String op, String receiptJson) throws SQLException {
    try (PreparedStatement ps = prepared("INSERT INTO ops(at, op, receipt) VALUES(?, ?, ?)")) {
      ps.setString(1, IsoTime.format(clock.millis()));
      ps.setString(2, op);
      ps.setString(3, receiptJson);
      ps.executeUpdate();
    }
    try (Statement st = conn.createStatement()) {
      st.executeUpdate("DELETE FROM ops WHERE id <= (SELECT max(id) FROM ops) - 1000");
    }
  }

  @Override
  public String epoch() {
    return epoch;
  }

  @Override
  public String relayPubkey() {
    return relayPubkey;
  }

  @Override
  public Path file() {
    return file;
  }

  /**
   * The committed enrolments, kept current by this store after every COMMIT (the hop check and the push path read
   * them without a database round trip).
   *
   * @return the shared cache (reads safe on any thread)
   */
  public EnrolmentCache enrolments() {
    return enrolments;
  }

  @Override
  public List<CommandResult> execute(List<? extends StoreCommand<?>> commands) throws StoreException {
    if (commands.isEmpty()) {
      return List.of();
    }
    try {
      followExternalChanges();
      statement("BEGIN IMMEDIATE").execute();
    } catch (SQLException e) {
      dropStatements();
      throw classify("begin failed", e);
    }
    List<CommandResult> results = new ArrayList<>(commands.size());
    try {
      for (StoreCommand<?> command : commands) {
        results.add(runInSavepoint(command));
      }
      writeDirtySeqs();
      writePendingUsage();
      PreparedStatement count = statement(COUNT_COMMIT);
      count.setString(1, Long.toString(commits + 1));
      count.executeUpdate();
      hook.at(commands, false);
      long start = System.nanoTime();
      statement("COMMIT").execute();
      commitTimer.accept(System.nanoTime() - start);
    } catch (SQLException | RuntimeException e) {
      if (e instanceof SQLException) {
        dropStatements(); // the driver may have finalized the failing statement (see dropStatements)
      }
      rollbackQuietly();
      afterRollback();
      StoreException failure = e instanceof SQLException se ? classify("commit failed", se)
          : new StoreException(StoreException.Kind.INTERNAL, "transaction failed", e);
      if (failure.kind() == StoreException.Kind.CORRUPT) {
        damaged = true; // never vouch for this file at close
      }
      throw failure;
    } catch (Error e) {
      // An Error (OutOfMemoryError, StackOverflowError, ...) must not leave the only write connection inside an open
      // transaction: roll back, then let it propagate (the writer fails the batch and stops).
      rollbackQuietly();
      afterRollback();
      throw e;
    }
    commits++;
    afterCommit();
    if (!newItemTargets.isEmpty()) {
      Set<String> targets = Set.copyOf(newItemTargets);
      newItemTargets.clear();
      try {
        newItems.accept(targets);
      } catch (RuntimeException e) {
        LOG.warn("new-item observer failed [error: {}]", e.toString());
      }
    }
    onCommit.accept(commits);
    hook.at(commands, true);
    return results;
  }

  private static final String COUNT_COMMIT = "INSERT INTO meta(k, v) VALUES('" + CommitWatermark.META_KEY
      + "', ?) ON CONFLICT(k) DO UPDATE SET v = excluded.v";

  /**
   * Closes every cached statement so the next use prepares it again. sqlite-jdbc finalizes a statement whose step
   * failed with most error codes ({@code SQLITE_FULL} included) but leaves the Java object open, and every later
   * execution of it fails with "statement is not executing": after one {@code SQLITE_FULL} on COMMIT the writer
   * answered every later transaction 500 until a restart, even once space had returned (issue 10 item 9, found by
   * {@code DiskFullIT}). Failures are rare, preparing a dozen statements again is cheap.
   */
  private void dropStatements() {
    for (PreparedStatement ps : statements.values()) {
      try {
        ps.close();
      } catch (SQLException ignored) {
        // already finalized
      }
    }
    statements.clear();
  }

  /** Installs the post-commit observer: called on the writer thread with {@code meta.commits} after every COMMIT. */
  public void onCommit(java.util.function.LongConsumer observer) {
    this.onCommit = Objects.requireNonNull(observer);
  }

  /** {@code meta.commits} as last committed by this writer (issue 10 item 3). Writer thread only. */
  public long commits() {
    return commits;
  }

  /**
   * Picks up a change another process committed (the {@code deny} CLI beside a running relay): when SQLite's
   * {@code data_version} moved, every cached row is dropped and the enrolments are read again. The writer calls this
   * before each transaction and once a second when idle. Writer thread only.
   *
   * @throws StoreException when the check fails (I/O)
   */
  public void refreshIfChangedElsewhere() throws StoreException {
    try {
      followExternalChanges();
    } catch (SQLException e) {
      dropStatements();
      throw classify("refresh failed", e);
    }
  }

  private void followExternalChanges() throws SQLException {
    long v = dataVersion();
    if (v != dataVersion) {
      dataVersion = v;
      state.dropAll();
      enrolments.replaceAll(allEnrolmentRows());
      commits = Math.max(commits, CommitWatermark.storeCommits(conn));
    }
  }

  private long dataVersion() throws SQLException {
    try (ResultSet rs = statement("PRAGMA data_version").executeQuery()) {
      rs.next();
      return rs.getLong(1);
    }
  }

  /** After COMMIT: the enrolment rows this transaction changed become visible to the hop check. */
  private void afterCommit() {
    try {
      if (reloadEnrolments) {
        enrolments.replaceAll(allEnrolmentRows());
      } else {
        for (String key : dirtyEnrolments) {
          Optional<Enrolment> row = enrolmentFromDb(key);
          if (row.isPresent()) {
            enrolments.put(row.get());
          } else {
            enrolments.remove(key);
          }
        }
      }
    } catch (SQLException e) {
      // The rows are committed; the copy is not. Reading them next time is all it takes: force it.
      LOG.warn("enrolment cache refresh failed [error: {}]", e.getMessage());
      dropStatements();
      dataVersion = -1;
    } finally {
      dirtyEnrolments.clear();
      reloadEnrolments = false;
    }
  }

  /** After ROLLBACK: nothing of this transaction happened; drop what was derived from it. */
  private void afterRollback() {
    newItemTargets.clear();
    dirtyEnrolments.clear();
    reloadEnrolments = false;
    state.dropAll();
  }

  private CommandResult runInSavepoint(StoreCommand<?> command) throws SQLException {
    statement("SAVEPOINT cmd").execute();
    state.journal.clear();
    try {
      Object value;
      try {
        value = run(command);
      } catch (V1Rejected r) {
        rollbackTo();
        return new CommandResult(Optional.of(r.getMessage()), null);
      }
      if (command instanceof StoreCommand.PushV1 && ((Optional<?>) value).isPresent()) {
        rollbackTo();
      } else {
        statement("RELEASE cmd").execute();
      }
      return new CommandResult(value, null);
    } catch (SQLException e) {
      StoreException se = classify("command failed", e);
      if (se.kind() != StoreException.Kind.INTERNAL) {
        throw e; // I/O or corruption: the whole transaction is suspect
      }
      dropStatements();
      rollbackTo();
      return new CommandResult(null, se);
    } catch (RuntimeException e) {
      rollbackTo();
      LOG.error("store command failed [command: {}]", command.getClass().getSimpleName(), e);
      return new CommandResult(null, new StoreException(StoreException.Kind.INTERNAL, "command failed", e));
    }
  }

  private void rollbackTo() throws SQLException {
    statement("ROLLBACK TO cmd").execute();
    statement("RELEASE cmd").execute();
    // Seqs stay as allocated (a gap is allowed, a reuse is not); counted rows of the command are taken back.
    undoCounts(0);
  }

  /** Takes back the counted changes after {@code mark} in the journal (newest first). */
  private void undoCounts(int mark) {
    for (int i = state.journal.size() - 1; i >= mark; i--) {
      WriterState.Delta d = state.journal.remove(i);
      count(d.target(), d.sender(), -d.items(), -d.bytes());
    }
  }

  private void rollbackQuietly() {
    try {
      statement("ROLLBACK").execute();
    } catch (SQLException ignored) {
      // no transaction open any more
    }
  }

  private Object run(StoreCommand<?> command) throws SQLException {
    if (command instanceof StoreCommand.PushBatch b) {
      List<PushOutcome> out = new ArrayList<>(b.items().size());
      for (StoreCommand.Push p : b.items()) {
        out.add(push(p));
      }
      return out;
    } else if (command instanceof StoreCommand.Push p) {
      return push(p);
    } else if (command instanceof StoreCommand.Ack a) {
      return ack(a);
    } else if (command instanceof StoreCommand.Enrol e) {
      dirtyEnrolments.add(e.hostPubkey());
      state.accountUsage.clear(); // the account or liveness of a key may change
      return enrol(e);
    } else if (command instanceof StoreCommand.Heartbeat) {
      long now = clock.millis();
      putMeta("heartbeat", Long.toString(now));
      return now;
    } else if (command instanceof StoreCommand.SweepBatch sb) {
      return sweepBatch(sb);
    } else if (command instanceof StoreCommand.PruneDedup pd) {
      return pruneDedup(pd);
    } else if (command instanceof StoreCommand.PushV1 v1) {
      return pushV1(v1);
    } else if (command instanceof StoreCommand.AckV1 a1) {
      return ackV1(a1);
    } else if (command instanceof StoreCommand.LogOp op) {
      addOp(op.op(), op.receiptJson());
      return true;
    } else if (command instanceof StoreCommand.SetAsideDamaged d) {
      return setAsideDamaged(d);
    } else if (command instanceof StoreCommand.Probe) {
      throw new IllegalArgumentException("a probe runs outside transactions (probeWriter)");
    }
    java.util.Map<String, long[]> sendersBefore = new java.util.HashMap<>();
    if (command instanceof StoreCommand.Rotate r) {
      dirtyEnrolments.add(r.oldPub());
      dirtyEnrolments.add(r.newPub());
      perSender(r.oldPub()).forEach((k, v) -> merge(sendersBefore, k, v));
      perSender(r.newPub()).forEach((k, v) -> merge(sendersBefore, k, v));
    } else if (command instanceof StoreCommand.Deny) {
      reloadEnrolments = true;
    }
    Object trustResult = trust.run(command); // allowlist, enc-key ads, rotation, deny list (TrustCommands)
    if (trustResult != null) {
      if (command instanceof StoreCommand.PublishSenders p) {
        state.removeAllowlist(p.targetPubkey());
      } else if (command instanceof StoreCommand.Rotate r) {
        if (!(trustResult instanceof io.mbxrelay.store.RotateOutcome.Moved)) {
          return trustResult; // refused: nothing moved, so usage, totals and waiters stay as they are
        }
        newItemTargets.add(r.newPub());
        recountUsage(r.oldPub()); // the queue moved by SQL of its own
        recountUsage(r.newPub());
        // items a sender had pushed to both keys stay once: its total drops by the copies left behind
        java.util.Map<String, long[]> after = perSender(r.newPub());
        java.util.Set<String> senders = new java.util.HashSet<>(sendersBefore.keySet());
        senders.addAll(after.keySet());
        for (String sender : senders) {
          long[] b = sendersBefore.getOrDefault(sender, new long[2]);
          long[] a = after.getOrDefault(sender, new long[2]);
          if (a[0] != b[0] || a[1] != b[1]) {
            countRows(null, sender, a[0] - b[0], a[1] - b[1]); // the targets were recounted above
          }
        }
        state.dropUsageAndLists();
      } else if (command instanceof StoreCommand.Deny) {
        state.dropUsageAndLists(); // hosts revoked: account usage counts live hosts only
      }
      return trustResult;
    }
    throw new IllegalArgumentException("unknown command " + command.getClass().getName());
  }

  // ---- push (docs/protocol.md §3 push v2 steps 5-6) ----

  /**
   * One item, all or nothing over its targets. Per target the quota is checked in memory first; within quota the
   * dedup row is inserted ({@code ON CONFLICT DO NOTHING}) and, when it was new, the item row; only a conflicting
   * insert or a quota refusal reads the stored dedup row. That is the rule of docs/protocol.md §3 step 6 (an existing dedup row
   * wins over the quota) with one statement less per fresh item. A single-target item writes nothing before it is
   * known to succeed; a multi-target item runs in its own savepoint.
   */
  private PushOutcome push(StoreCommand.Push p) throws SQLException {
    List<StoreCommand.Target> targets = p.targets();
    Enrolment[] enrolled = new Enrolment[targets.size()];
    for (int i = 0; i < targets.size(); i++) {
      StoreCommand.Target t = targets.get(i);
      Optional<Enrolment> e = enrolmentRow(t.hostPubkey());
      if (e.isEmpty() || !e.get().live()) {
        return new PushOutcome.Rejected("target not enrolled");
      }
      if (!senderAccepted(t.hostPubkey(), p.senderPubkey())) {
        return new PushOutcome.Rejected("sender not accepted by target");
      }
      if (t.precheckFailure() != null) {
        return new PushOutcome.Rejected(t.precheckFailure());
      }
      enrolled[i] = e.get();
    }
    long now = clock.millis();
    String nowIso = iso(now);
    String expiresAt = IsoTime.format(now + limits.retentionMs());
    boolean multi = targets.size() > 1;
    if (multi) {
      statement("SAVEPOINT item").execute();
    }
    boolean fresh = false;
    String earliest = null;
    List<PushOutcome.TargetSeq> out = new ArrayList<>(targets.size());
    // a multi-target item that is rolled back gives its seqs back, so the targets' head_seq does not move
    long[] seqBefore = multi ? new long[targets.size()] : null;
    int mark = state.journal.size();
    for (int i = 0; i < targets.size(); i++) {
      StoreCommand.Target t = targets.get(i);
      String quota = quotaFailure(p.senderPubkey(), enrolled[i], t.wire().length);
      if (quota == null) {
        long next = nextSeq(t.hostPubkey());
        long seq = Math.max(next, now);
        if (insertDedup(p.senderPubkey(), p.itemId(), t.hostPubkey(), t.wireHash(), seq, nowIso)) {
          insertItem(t.hostPubkey(), seq, p.kind(), p.itemId(), p.senderPubkey(), p.senderHost(), t.wire(),
              t.wireHash(), nowIso, expiresAt);
          if (multi) {
            seqBefore[i] = next;
          }
          useSeq(t.hostPubkey(), seq);
          countRows(enrolled[i], p.senderPubkey(), 1, t.wire().length);
          fresh = true;
          out.add(new PushOutcome.TargetSeq(t.hostPubkey(), seq, t.wireHash()));
          continue;
        }
      }
      DedupRow row = dedupRow(p.senderPubkey(), p.itemId(), t.hostPubkey());
      if (row == null) {
        if (quota == null) {
          throw new IllegalStateException("dedup insert ignored but no dedup row found");
        }
        return rejectItem(targets, seqBefore, mark, "quota:" + quota);
      }
      if (!row.wireHash.equals(t.wireHash())) {
        return rejectItem(targets, seqBefore, mark, "conflict");
      }
      out.add(new PushOutcome.TargetSeq(t.hostPubkey(), row.seq, row.wireHash));
      if (earliest == null || row.acceptedAt.compareTo(earliest) < 0) {
        earliest = row.acceptedAt;
      }
    }
    if (multi) {
      statement("RELEASE item").execute();
    }
    return new PushOutcome.Stored(fresh, out, fresh ? nowIso : earliest, epoch);
  }

  /** Refuses an item; a multi-target one is rolled back to its savepoint and its seqs given back. */
  private PushOutcome rejectItem(List<StoreCommand.Target> targets, long[] seqBefore, int mark, String reason)
      throws SQLException {
    if (seqBefore != null) {
      statement("ROLLBACK TO item").execute();
      statement("RELEASE item").execute();
      for (int i = 0; i < targets.size(); i++) {
        if (seqBefore[i] != 0) {
          state.nextSeq.put(targets.get(i).hostPubkey(), seqBefore[i]);
        }
      }
      undoCounts(mark); // earlier targets of this item were counted
    }
    return new PushOutcome.Rejected(reason);
  }

  /** {@code iso(now)} for consecutive items of the same millisecond without formatting again. */
  private String iso(long ms) {
    if (ms != lastIsoMs || lastIso == null) {
      lastIso = IsoTime.format(ms);
      lastIsoMs = ms;
    }
    return lastIso;
  }

  private record DedupRow(String wireHash, long seq, String acceptedAt) {}

  private DedupRow dedupRow(String sender, String itemId, String target) throws SQLException {
    PreparedStatement ps = statement(
        "SELECT wire_hash, seq, accepted_at FROM dedup WHERE sender_pubkey=? AND item_id=? AND target_pubkey=?");
    ps.setString(1, sender);
    ps.setString(2, itemId);
    ps.setString(3, target);
    try (ResultSet rs = ps.executeQuery()) {
      return rs.next() ? new DedupRow(rs.getString(1), rs.getLong(2), rs.getString(3)) : null;
    }
  }

  /** The target's allowlist check (docs/protocol.md §4.3): no list → anyone enrolled; else only listed sender keys. */
  private boolean senderAccepted(String target, String sender) throws SQLException {
    Set<String> list = state.allowlist(target);
    if (list == null) {
      PreparedStatement ps = statement("SELECT senders FROM sender_lists WHERE target_pubkey=?");
      ps.setString(1, target);
      String json;
      try (ResultSet rs = ps.executeQuery()) {
        json = rs.next() ? rs.getString(1) : null;
      }
      if (json == null) {
        list = WriterState.NO_LIST;
      } else {
        list = new HashSet<>();
        for (com.fasterxml.jackson.databind.JsonNode n : io.mbxrelay.wire.Json.parse(json)) {
          if (n.isTextual()) { // canonical spelling: lists stored before keys were canonicalised still match
            list.add(io.mbxrelay.wire.KeySpelling.canonicalOrSelf(n.textValue()));
          }
        }
      }
      state.putAllowlist(target, list);
    }
    return list == WriterState.NO_LIST || list.contains(sender);
  }

  /** Quota checks in the order and with the texts of docs/protocol.md §3 "Quota messages"; null when within quota. */
  private String quotaFailure(String sender, Enrolment target, long bytes) throws SQLException {
    String name = target.hostName();
    WriterState.TargetUsage q = usage(target.hostPubkey());
    if (q.items + 1 > limits.maxQueueItems()) {
      return "queue depth exceeded for " + name;
    }
    if (q.bytes + bytes > limits.maxQueueBytes()) {
      return "queue bytes exceeded for " + name;
    }
    long[] s = senders(target.hostPubkey(), q).get(sender);
    long sItems = s == null ? 0 : s[0];
    long sBytes = s == null ? 0 : s[1];
    if (sItems + 1 > limits.maxSenderItems() || sBytes + bytes > limits.maxSenderBytes()) {
      return "sender share exceeded for " + name;
    }
    if (target.account() != null) {
      long[] o = accountUsage(target.account());
      if (o[0] + 1 > limits.maxOwnerItems()) {
        return "owner queue depth exceeded for " + name;
      }
      if (o[1] + bytes > limits.maxOwnerBytes()) {
        return "owner queue bytes exceeded for " + name;
      }
    }
    // Beyond the AgentMBX protocol (issue 11 item 8): what one sender holds over all targets, and the whole store.
    long[] t = senderTotal(sender);
    if (t[0] + 1 > limits.maxSenderTotalItems() || t[1] + bytes > limits.maxSenderTotalBytes()) {
      return "sender total exceeded";
    }
    long[] all = storeTotals();
    if (all[0] + 1 > limits.maxStoreItems() || all[1] + bytes > limits.maxStoreBytes()) {
      return "relay store full";
    }
    return null;
  }

  /** A sender's queued items and bytes over all targets: its {@code sender_totals} row plus this transaction's. */
  private long[] senderTotal(String sender) throws SQLException {
    long[] u = state.senderTotals.get(sender);
    if (u == null) {
      u = new long[2];
      PreparedStatement ps = statement("SELECT items, bytes FROM sender_totals WHERE sender_pubkey=?");
      ps.setString(1, sender);
      try (ResultSet rs = ps.executeQuery()) {
        if (rs.next()) {
          u[0] = rs.getLong(1);
          u[1] = rs.getLong(2);
        }
      }
      long[] p = state.pendingSenders.get(sender);
      if (p != null) {
        u[0] += p[0];
        u[1] += p[1];
      }
      state.senderTotals.put(sender, u);
    }
    return u;
  }

  /** Queued items and bytes of the whole store, from {@code queue_usage} once, then kept. */
  private long[] storeTotals() throws SQLException {
    if (state.storeTotals == null) {
      long[] u = new long[2];
      try (ResultSet rs = statement("SELECT coalesce(sum(items), 0), coalesce(sum(bytes), 0) FROM queue_usage")
          .executeQuery()) {
        rs.next();
        u[0] = rs.getLong(1);
        u[1] = rs.getLong(2);
      }
      for (long[] p : state.pending.values()) {
        u[0] += p[0];
        u[1] += p[1];
      }
      state.storeTotals = u;
    }
    return state.storeTotals;
  }

  /** A target's queue usage as this transaction sees it: its {@code queue_usage} row plus this transaction's changes. */
  private WriterState.TargetUsage usage(String target) throws SQLException {
    WriterState.TargetUsage u = state.usage.get(target);
    if (u == null) {
      u = new WriterState.TargetUsage();
      PreparedStatement ps = statement("SELECT items, bytes FROM queue_usage WHERE target_pubkey=?");
      ps.setString(1, target);
      try (ResultSet rs = ps.executeQuery()) {
        if (rs.next()) {
          u.items = rs.getLong(1);
          u.bytes = rs.getLong(2);
        }
      }
      long[] p = state.pending.get(target);
      if (p != null) {
        u.items += p[0];
        u.bytes += p[1];
      }
      state.usage.put(target, u);
    }
    return u;
  }

  /** Per-sender shares of a target's queue, counted from its rows the first time they are needed. */
  private java.util.Map<String, long[]> senders(String target, WriterState.TargetUsage u) throws SQLException {
    if (u.bySender == null) {
      java.util.Map<String, long[]> m = new java.util.HashMap<>();
      PreparedStatement ps = statement("SELECT sender_pubkey, count(*), coalesce(sum(bytes), 0) FROM items"
          + " WHERE target_pubkey=? GROUP BY sender_pubkey");
      ps.setString(1, target);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          m.put(rs.getString(1), new long[] {rs.getLong(2), rs.getLong(3)});
        }
      }
      u.bySender = m;
    }
    return u.bySender;
  }

  /** Items and bytes queued for the live hosts of an account (docs/protocol.md §3 owner quota). */
  private long[] accountUsage(String account) throws SQLException {
    long[] u = state.accountUsage.get(account);
    if (u == null) {
      PreparedStatement ps = statement("SELECT coalesce(sum(q.items), 0), coalesce(sum(q.bytes), 0) FROM enrolments e"
          + " JOIN queue_usage q ON q.target_pubkey = e.host_pubkey WHERE e.account=? AND e.revoked_at IS NULL");
      ps.setString(1, account);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        u = new long[] {rs.getLong(1), rs.getLong(2)};
      }
      for (var e : state.pending.entrySet()) { // this transaction's changes are not in queue_usage yet
        Optional<Enrolment> t = enrolmentRow(e.getKey());
        if (t.isPresent() && t.get().live() && account.equals(t.get().account())) {
          u[0] += e.getValue()[0];
          u[1] += e.getValue()[1];
        }
      }
      state.accountUsage.put(account, u);
    }
    return u;
  }

  /**
   * Counts rows added ({@code n > 0}) or deleted ({@code n < 0}) for a target: in the transaction's pending
   * {@code queue_usage} change, in whatever usage is held in memory, and in the command's journal (so a rollback can
   * take it back).
   *
   * @param target the target's enrolment (its account counts only while it is live); a target without an enrolment
   *     row is counted by key only; null counts the sender and the store only
   */
  private void countRows(Enrolment target, String sender, long n, long bytes) {
    state.journal.add(new WriterState.Delta(target, sender, n, bytes));
    count(target, sender, n, bytes);
  }

  private void count(Enrolment target, String sender, long n, long bytes) {
    if (state.storeTotals != null) {
      state.storeTotals[0] += n;
      state.storeTotals[1] += bytes;
    }
    long[] ps = state.pendingSenders.computeIfAbsent(sender, k -> new long[2]);
    ps[0] += n;
    ps[1] += bytes;
    long[] st = state.senderTotals.get(sender);
    if (st != null) {
      st[0] += n;
      st[1] += bytes;
    }
    if (target == null) {
      return; // a sender-only correction (rotation)
    }
    long[] p = state.pending.computeIfAbsent(target.hostPubkey(), k -> new long[2]);
    p[0] += n;
    p[1] += bytes;
    WriterState.TargetUsage u = state.usage.get(target.hostPubkey());
    if (u != null) {
      u.add(sender, n, bytes);
    }
    if (target.account() != null && target.live()) {
      long[] a = state.accountUsage.get(target.account());
      if (a != null) {
        a[0] += n;
        a[1] += bytes;
      }
    }
  }

  /** Writes each touched target's change to {@code queue_usage}: one statement per target per transaction. */
  private void writePendingUsage() throws SQLException {
    if (state.pending.isEmpty() && state.pendingSenders.isEmpty()) {
      return;
    }
    PreparedStatement ps = statement("INSERT INTO queue_usage(target_pubkey, items, bytes) VALUES(?, ?, ?)"
        + " ON CONFLICT(target_pubkey) DO UPDATE SET items = items + excluded.items, bytes = bytes + excluded.bytes");
    for (var e : state.pending.entrySet()) {
      long[] d = e.getValue();
      if (d[0] == 0 && d[1] == 0) {
        continue;
      }
      ps.setString(1, e.getKey());
      ps.setLong(2, d[0]);
      ps.setLong(3, d[1]);
      ps.executeUpdate();
    }
    state.pending.clear();
    PreparedStatement senders = statement("INSERT INTO sender_totals(sender_pubkey, items, bytes) VALUES(?, ?, ?)"
        + " ON CONFLICT(sender_pubkey) DO UPDATE SET items = items + excluded.items, bytes = bytes + excluded.bytes");
    for (var e : state.pendingSenders.entrySet()) {
      long[] d = e.getValue();
      if (d[0] == 0 && d[1] == 0) {
        continue;
      }
      senders.setString(1, e.getKey());
      senders.setLong(2, d[0]);
      senders.setLong(3, d[1]);
      senders.executeUpdate();
    }
    state.pendingSenders.clear();
    state.journal.clear();
  }

  /** Items and bytes per sender queued for one target (its primary-key range). */
  private java.util.Map<String, long[]> perSender(String target) throws SQLException {
    java.util.Map<String, long[]> m = new java.util.HashMap<>();
    PreparedStatement ps = statement("SELECT sender_pubkey, count(*), coalesce(sum(bytes), 0) FROM items"
        + " WHERE target_pubkey=? GROUP BY sender_pubkey");
    ps.setString(1, target);
    try (ResultSet rs = ps.executeQuery()) {
      while (rs.next()) {
        m.put(rs.getString(1), new long[] {rs.getLong(2), rs.getLong(3)});
      }
    }
    return m;
  }

  private static void merge(java.util.Map<String, long[]> into, String key, long[] v) {
    long[] cur = into.computeIfAbsent(key, k -> new long[2]);
    cur[0] += v[0];
    cur[1] += v[1];
  }

  /** Sets a target's {@code queue_usage} from its rows (after SQL that moved rows without counting them). */
  private void recountUsage(String target) throws SQLException {
    PreparedStatement ps = statement("INSERT INTO queue_usage(target_pubkey, items, bytes) SELECT ?, count(*),"
        + " coalesce(sum(bytes), 0) FROM items WHERE target_pubkey=? ON CONFLICT(target_pubkey) DO UPDATE SET"
        + " items = excluded.items, bytes = excluded.bytes");
    ps.setString(1, target);
    ps.setString(2, target);
    ps.executeUpdate();
    state.pending.remove(target);
    state.usage.remove(target);
  }

  /** The next seq a target would get ({@code seqs.next_seq}, 1 when none), read once per target. */
  private long nextSeq(String target) throws SQLException {
    Long n = state.nextSeq.get(target);
    if (n == null) {
      PreparedStatement ps = statement("SELECT next_seq FROM seqs WHERE target_pubkey=?");
      ps.setString(1, target);
      try (ResultSet rs = ps.executeQuery()) {
        n = rs.next() ? rs.getLong(1) : 1L;
      }
      state.nextSeq.put(target, n);
    }
    return n;
  }

  /** Records that {@code seq} was used; {@code seqs} is written once per target before COMMIT. */
  private void useSeq(String target, long seq) {
    state.nextSeq.put(target, seq + 1);
    state.dirtySeqs.add(target);
  }

  /** docs/protocol.md §5 "Seq allocation": {@code cur = max(next_seq or 1, now_ms)}; {@code next_seq = cur + 1}. */
  private long allocateSeq(String target, long nowMs) throws SQLException {
    long cur = Math.max(nextSeq(target), nowMs);
    useSeq(target, cur);
    return cur;
  }

  private void writeDirtySeqs() throws SQLException {
    if (state.dirtySeqs.isEmpty()) {
      return;
    }
    PreparedStatement ps = statement("INSERT INTO seqs(target_pubkey, next_seq) VALUES(?, ?)"
        + " ON CONFLICT(target_pubkey) DO UPDATE SET next_seq = excluded.next_seq");
    for (String target : state.dirtySeqs) {
      ps.setString(1, target);
      ps.setLong(2, state.nextSeq.get(target));
      ps.executeUpdate();
    }
    state.dirtySeqs.clear();
  }

  private void insertItem(String target, long seq, String kind, String itemId, String sender, String senderHost,
      byte[] wire, String wireHash, String nowIso, String expiresAt) throws SQLException {
    newItemTargets.add(target);
    PreparedStatement ps = statement("INSERT INTO items(target_pubkey, seq, kind, item_id,"
        + " sender_pubkey, sender_host, wire, wire_hash, bytes, accepted_at, expires_at)"
        + " VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
    ps.setString(1, target);
    ps.setLong(2, seq);
    ps.setString(3, kind);
    ps.setString(4, itemId);
    ps.setString(5, sender);
    ps.setString(6, senderHost);
    ps.setBytes(7, wire);
    ps.setString(8, wireHash);
    ps.setLong(9, wire.length);
    ps.setString(10, nowIso);
    ps.setString(11, expiresAt);
    ps.executeUpdate();
  }

  /** Inserts a dedup row unless one exists; true when it was inserted. */
  private boolean insertDedup(String sender, String itemId, String target, String wireHash, long seq, String at)
      throws SQLException {
    PreparedStatement ps = statement("INSERT INTO dedup(sender_pubkey, item_id, target_pubkey, wire_hash, seq,"
        + " accepted_at) VALUES(?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING");
    ps.setString(1, sender);
    ps.setString(2, itemId);
    ps.setString(3, target);
    ps.setString(4, wireHash);
    ps.setLong(5, seq);
    ps.setString(6, at);
    return ps.executeUpdate() == 1;
  }

  /**
   * Deletes a target's items with {@code seq ≤ through}, counting what went.
   *
   * @return rows deleted
   */
  private int deleteThrough(String target, long through) throws SQLException {
    Enrolment e = enrolmentRow(target).orElse(new Enrolment(target, "", "", null, null, "", ""));
    PreparedStatement ps = statement("DELETE FROM items WHERE target_pubkey=? AND seq<=? RETURNING sender_pubkey,"
        + " bytes");
    ps.setString(1, target);
    ps.setLong(2, through);
    int n = 0;
    try (ResultSet rs = ps.executeQuery()) {
      while (rs.next()) {
        countRows(e, rs.getString(1), -1, -rs.getLong(2));
        n++;
      }
    }
    return n;
  }

  // ---- v1 compatibility (docs/protocol.md §3 "v1 endpoints") ----

  /** Empty when stored (or already stored), else the error text; any partial write is rolled back. */
  private Optional<String> pushV1(StoreCommand.PushV1 p) throws SQLException {
    List<Enrolment> enrolled = new ArrayList<>(p.targets().size());
    for (StoreCommand.V1Target t : p.targets()) {
      // The name was resolved on a read snapshot; a rotation, deny or revocation may have committed since.
      Optional<Enrolment> e = enrolmentRow(t.hostPubkey());
      if (e.isEmpty() || !e.get().live()) {
        return Optional.of("recipient host not enrolled: " + t.name());
      }
      if (!senderAccepted(t.hostPubkey(), p.senderPubkey())) {
        return Optional.of("sender not accepted by " + t.name());
      }
      enrolled.add(e.get());
    }
    if (p.precheckFailure() != null) {
      return Optional.of(p.precheckFailure());
    }
    List<Integer> missing = new ArrayList<>();
    for (int i = 0; i < p.targets().size(); i++) {
      if (dedupRow(p.senderPubkey(), p.envelopeId(), p.targets().get(i).hostPubkey()) == null) {
        missing.add(i);
      }
    }
    long now = clock.millis();
    String nowIso = iso(now);
    java.util.Map<String, Long> seqBefore = new java.util.HashMap<>(4);
    for (int i : missing) {
      StoreCommand.V1Target t = p.targets().get(i);
      String quota = quotaFailure(p.senderPubkey(), enrolled.get(i), p.wire().length);
      if (quota != null) {
        seqBefore.forEach(state.nextSeq::put); // all or nothing, seqs too: earlier targets' heads stay where they were
        throw new V1Rejected(quota);
      }
      seqBefore.putIfAbsent(t.hostPubkey(), nextSeq(t.hostPubkey()));
      long seq = allocateSeq(t.hostPubkey(), now);
      insertItem(t.hostPubkey(), seq, "envelope", p.envelopeId(), p.senderPubkey(), p.senderHost(), p.wire(),
          p.wireHash(), nowIso, null);
      insertDedup(p.senderPubkey(), p.envelopeId(), t.hostPubkey(), p.wireHash(), seq, nowIso);
      countRows(enrolled.get(i), p.senderPubkey(), 1, p.wire().length);
    }
    return Optional.empty();
  }

  /** A v1 rejection after some targets were written: unwinds to the command's savepoint. */
  private static final class V1Rejected extends RuntimeException {
    private static final long serialVersionUID = 1L;

    V1Rejected(String text) {
      super(text, null, false, false);
    }
  }

  private long ackV1(StoreCommand.AckV1 a) throws SQLException {
    long head = head(a.targetPubkey());
    long cursor = Math.max(0, Math.min(head, a.cursor().orElse(0)));
    deleteThrough(a.targetPubkey(), cursor);
    PreparedStatement ps = statement("INSERT INTO acked(target_pubkey, acked_through) VALUES(?, ?)"
        + " ON CONFLICT(target_pubkey) DO UPDATE SET acked_through = max(acked_through, excluded.acked_through)");
    ps.setString(1, a.targetPubkey());
    ps.setLong(2, cursor);
    ps.executeUpdate();
    return cursor;
  }

  // ---- expiry sweep (docs/protocol.md §7.6, §4.10, §5 "Sweep") ----

  private record Expiring(String target, long seq, String kind, String itemId, String sender, long bytes,
      String acceptedAt) {}

  private SweepCounts sweepBatch(StoreCommand.SweepBatch sb) throws SQLException {
    String at = IsoTime.format(sb.nowMs());
    List<Expiring> rows = new ArrayList<>();
    PreparedStatement select = statement("SELECT target_pubkey, seq, kind, item_id, sender_pubkey, bytes,"
        + " accepted_at FROM items WHERE expires_at IS NOT NULL AND expires_at <= ?"
        + " ORDER BY expires_at, target_pubkey, seq LIMIT ?");
    select.setString(1, at);
    select.setInt(2, sb.maxRows());
    try (ResultSet rs = select.executeQuery()) {
      while (rs.next()) {
        rows.add(new Expiring(rs.getString(1), rs.getLong(2), rs.getString(3), rs.getString(4), rs.getString(5),
            rs.getLong(6), rs.getString(7)));
      }
    }
    int envelopes = 0;
    int receipts = 0;
    int expired = 0;
    int notices = 0;
    int notEnrolled = 0;
    int overCap = 0;
    long freed = 0;
    String expiresAt = IsoTime.format(sb.nowMs() + limits.retentionMs());
    PreparedStatement delete = statement("DELETE FROM items WHERE target_pubkey=? AND seq=?");
    for (Expiring r : rows) {
      delete.setString(1, r.target);
      delete.setLong(2, r.seq);
      delete.executeUpdate();
      countRows(enrolmentRow(r.target).orElse(new Enrolment(r.target, "", "", null, null, "", "")), r.sender, -1,
          -r.bytes);
      freed += r.bytes;
      switch (r.kind) {
        case "envelope" -> envelopes++;
        case "receipt" -> receipts++;
        default -> expired++;
      }
      if (!r.kind.equals("envelope")) {
        continue; // receipts are advisory and notices never beget notices (docs/protocol.md §7.6)
      }
      Optional<Enrolment> sender = enrolmentRow(r.sender);
      if (sender.isEmpty() || !sender.get().live()) {
        notEnrolled++;
        continue;
      }
      String noticeId = "expired:" + r.itemId + ":" + r.target;
      if (dedupRow(relayPubkey, noticeId, r.sender) != null) {
        continue; // already told
      }
      com.fasterxml.jackson.databind.node.ObjectNode notice = io.mbxrelay.wire.Json.MAPPER.createObjectNode();
      notice.put("v", 1);
      notice.put("type", "relay-expired");
      notice.put("item_id", r.itemId);
      notice.put("target_pubkey", r.target);
      notice.put("accepted_at", r.acceptedAt);
      notice.put("expired_at", at);
      com.fasterxml.jackson.databind.node.ObjectNode wireNode = io.mbxrelay.wire.Json.MAPPER.createObjectNode();
      wireNode.set("notice", notice);
      wireNode.put("sig", sb.signer().apply(io.mbxrelay.wire.CanonicalJson.canonicalBytes(notice)));
      byte[] wire = io.mbxrelay.wire.CanonicalJson.canonicalBytes(wireNode);
      WriterState.TargetUsage q = usage(r.sender);
      if (q.items + 1 > limits.maxQueueItems() || q.bytes + wire.length > limits.maxQueueBytes()) {
        overCap++;
        continue;
      }
      String hash = io.mbxrelay.wire.Hashes.sha256Hex(wire);
      long seq = allocateSeq(r.sender, sb.nowMs());
      insertItem(r.sender, seq, "expired", noticeId, relayPubkey, "relay", wire, hash, at, expiresAt);
      insertDedup(relayPubkey, noticeId, r.sender, hash, seq, at);
      countRows(sender.get(), relayPubkey, 1, wire.length);
      notices++;
    }
    return new SweepCounts(rows.size(), envelopes, receipts, expired, notices, notEnrolled, overCap, freed);
  }

  private int pruneDedup(StoreCommand.PruneDedup pd) throws SQLException {
    PreparedStatement ps = statement("DELETE FROM dedup WHERE rowid IN (SELECT d.rowid FROM dedup d"
        + " WHERE d.accepted_at < ? AND NOT EXISTS (SELECT 1 FROM items i WHERE i.target_pubkey = d.target_pubkey"
        + " AND i.seq = d.seq) LIMIT ?)");
    ps.setString(1, pd.beforeIso());
    ps.setInt(2, pd.maxRows());
    return ps.executeUpdate();
  }

  // ---- damaged items (issue 10 item 1) ----

  private int setAsideDamaged(StoreCommand.SetAsideDamaged d) throws SQLException {
    Enrolment target = enrolmentRow(d.targetPubkey())
        .orElse(new Enrolment(d.targetPubkey(), "", "", null, null, "", ""));
    PreparedStatement read = statement("SELECT wire, wire_hash FROM items WHERE target_pubkey=? AND seq=?");
    PreparedStatement keep = statement("INSERT INTO damaged_items(target_pubkey, seq, kind, item_id, sender_pubkey,"
        + " sender_host, wire_hash, bytes, accepted_at, expires_at, wire, found_at) SELECT target_pubkey, seq, kind,"
        + " item_id, sender_pubkey, sender_host, wire_hash, bytes, accepted_at, expires_at, wire, ? FROM items"
        + " WHERE target_pubkey=? AND seq=?");
    PreparedStatement delete = statement("DELETE FROM items WHERE target_pubkey=? AND seq=? RETURNING sender_pubkey,"
        + " bytes");
    String now = IsoTime.format(clock.millis());
    int moved = 0;
    for (long seq : d.seqs()) {
      read.setString(1, d.targetPubkey());
      read.setLong(2, seq);
      boolean damagedNow;
      try (ResultSet rs = read.executeQuery()) {
        damagedNow = rs.next() && !io.mbxrelay.wire.Hashes.sha256Hex(rs.getBytes(1)).equals(rs.getString(2));
      }
      if (!damagedNow) {
        continue; // gone already (acked, expired) or the reader was wrong: nothing to do
      }
      keep.setString(1, now);
      keep.setString(2, d.targetPubkey());
      keep.setLong(3, seq);
      keep.executeUpdate();
      delete.setString(1, d.targetPubkey());
      delete.setLong(2, seq);
      try (ResultSet rs = delete.executeQuery()) {
        while (rs.next()) {
          countRows(target, rs.getString(1), -1, -rs.getLong(2));
        }
      }
      moved++;
    }
    if (moved > 0) {
      LOG.error("damaged items set aside [count: {}]: their wire no longer matches the hash accepted; see damaged_items",
          moved);
    }
    return moved;
  }

  // ---- ack (docs/protocol.md §3 ack v2) ----

  private AckOutcome ack(StoreCommand.Ack a) throws SQLException {
    long head = head(a.targetPubkey());
    if (!epoch.equals(a.epoch())) {
      return new AckOutcome.EpochChanged(epoch, head);
    }
    if (a.through().isEmpty() || a.through().getAsLong() < 0 || a.through().getAsLong() > head) {
      return new AckOutcome.BadAck(epoch, head);
    }
    long through = a.through().getAsLong();
    int deleted = deleteThrough(a.targetPubkey(), through);
    long acked;
    PreparedStatement ps = statement("INSERT INTO acked(target_pubkey, acked_through) VALUES(?, ?)"
        + " ON CONFLICT(target_pubkey) DO UPDATE SET acked_through = max(acked_through, excluded.acked_through)"
        + " RETURNING acked_through");
    ps.setString(1, a.targetPubkey());
    ps.setLong(2, through);
    try (ResultSet rs = ps.executeQuery()) {
      rs.next();
      acked = rs.getLong(1);
    }
    return new AckOutcome.Done(acked, deleted, head);
  }

  private long head(String target) throws SQLException {
    return nextSeq(target) - 1;
  }

  // ---- enrol (docs/protocol.md §4.1, the stored part) ----

  private EnrolOutcome enrol(StoreCommand.Enrol e) throws SQLException {
    Optional<Enrolment> existing = enrolmentRow(e.hostPubkey());
    if (existing.isPresent() && !existing.get().live()) {
      return EnrolOutcome.REVOKED;
    }
    if (trust.denied(e.hostPubkey(), e.clientId())) {
      return EnrolOutcome.DENIED;
    }
    if (existing.isEmpty()) {
      long live;
      try (ResultSet rs = statement("SELECT count(*) FROM enrolments WHERE revoked_at IS NULL").executeQuery()) {
        rs.next();
        live = rs.getLong(1);
      }
      if (live >= limits.maxEnrolments()) {
        return EnrolOutcome.FULL;
      }
    }
    String account = e.account();
    String authorizedBy = e.authorizedBy();
    if (account == null && existing.isPresent() && existing.get().account() != null) {
      account = existing.get().account();
      authorizedBy = existing.get().authorizedBy();
    }
    if (account != null) {
      PreparedStatement ps = statement("SELECT 1 FROM enrolments WHERE account=?"
          + " AND lower(host_name)=lower(?) AND revoked_at IS NULL AND host_pubkey<>?");
      ps.setString(1, account);
      ps.setString(2, e.hostName());
      ps.setString(3, e.hostPubkey());
      try (ResultSet rs = ps.executeQuery()) {
        if (rs.next()) {
          return EnrolOutcome.NAME_TAKEN;
        }
      }
    }
    PreparedStatement ps = statement("INSERT INTO enrolments(host_pubkey, host_name, owner_fp,"
        + " account, authorized_by, enrolled_at, revoked_at) VALUES(?, ?, ?, ?, ?, ?, NULL)"
        + " ON CONFLICT(host_pubkey) DO UPDATE SET host_name=excluded.host_name, owner_fp=excluded.owner_fp,"
        + " account=excluded.account, authorized_by=excluded.authorized_by, enrolled_at=excluded.enrolled_at");
    ps.setString(1, e.hostPubkey());
    ps.setString(2, e.hostName());
    ps.setString(3, e.ownerFp());
    ps.setString(4, account);
    ps.setString(5, authorizedBy);
    ps.setString(6, IsoTime.format(clock.millis()));
    ps.executeUpdate();
    trust.recordClient(e.hostPubkey(), e.clientId(), e.org());
    return EnrolOutcome.OK;
  }

  // ---- reads on the writer connection ----

  @Override
  public Optional<Enrolment> enrolment(String hostPubkey) throws StoreException {
    try {
      return enrolmentFromDb(hostPubkey);
    } catch (SQLException e) {
      throw classify("read failed", e);
    }
  }

  @Override
  public long headSeq(String targetPubkey) throws StoreException {
    try {
      return head(targetPubkey);
    } catch (SQLException e) {
      throw classify("read failed", e);
    }
  }

  @Override
  public boolean probeWriter() throws StoreException {
    try (Statement st = conn.createStatement()) {
      st.execute("BEGIN IMMEDIATE");
      try (ResultSet rs = st.executeQuery("SELECT count(*) FROM meta WHERE k = 'schema_version'")) {
        return rs.next() && rs.getInt(1) == 1;
      } finally {
        st.execute("ROLLBACK");
      }
    } catch (SQLException e) {
      rollbackQuietly();
      throw classify("probe failed", e);
    }
  }

  /**
   * The enrolment as the open transaction sees it: a live row from the committed cache, unless this transaction
   * changed (or may have changed) the row; a revoked or unknown key (the cache holds live rows only) from the database.
   */
  private Optional<Enrolment> enrolmentRow(String key) throws SQLException {
    if (reloadEnrolments || dirtyEnrolments.contains(key)) {
      return enrolmentFromDb(key);
    }
    Optional<Enrolment> live = enrolments.get(key);
    return live.isPresent() ? live : enrolmentFromDb(key);
  }

  private static final String ENROLMENT_COLUMNS =
      "SELECT host_pubkey, host_name, owner_fp, account, authorized_by, enrolled_at, revoked_at FROM enrolments";

  private Optional<Enrolment> enrolmentFromDb(String key) throws SQLException {
    PreparedStatement ps = statement(ENROLMENT_COLUMNS + " WHERE host_pubkey=?");
    ps.setString(1, key);
    try (ResultSet rs = ps.executeQuery()) {
      return rs.next() ? Optional.of(enrolment(rs)) : Optional.empty();
    }
  }

  private List<Enrolment> allEnrolmentRows() throws SQLException {
    List<Enrolment> all = new ArrayList<>();
    try (ResultSet rs = statement(ENROLMENT_COLUMNS).executeQuery()) {
      while (rs.next()) {
        all.add(enrolment(rs));
      }
    }
    return all;
  }

  private static Enrolment enrolment(ResultSet rs) throws SQLException {
    return new Enrolment(rs.getString(1), rs.getString(2), rs.getString(3), rs.getString(4), rs.getString(5),
        rs.getString(6), rs.getString(7));
  }

  /**
   * Maps a driver exception to a failure class: disk full, I/O and busy are {@code UNAVAILABLE}; corruption and
   * "not a database" are {@code CORRUPT}; the rest {@code INTERNAL}.
   *
   * @param what short context
   * @param e the driver exception
   * @return the classified exception
   */
  public static StoreException classify(String what, SQLException e) {
    StoreException.Kind kind = StoreException.Kind.INTERNAL;
    boolean full = false;
    if (e instanceof SQLiteException se) {
      SQLiteErrorCode code = se.getResultCode();
      String name = code == null ? "" : code.name();
      if (name.startsWith("SQLITE_CORRUPT") || name.startsWith("SQLITE_NOTADB")) {
        kind = StoreException.Kind.CORRUPT;
      } else if (name.startsWith("SQLITE_FULL") || name.startsWith("SQLITE_IOERR") || name.startsWith("SQLITE_BUSY")
          || name.startsWith("SQLITE_READONLY") || name.startsWith("SQLITE_CANTOPEN")
          || name.startsWith("SQLITE_LOCKED") || name.startsWith("SQLITE_PROTOCOL")) {
        kind = StoreException.Kind.UNAVAILABLE;
        full = name.startsWith("SQLITE_FULL");
      }
    }
    return new StoreException(kind, what + ": " + (e.getMessage() == null ? "" : e.getMessage()), e, full);
  }

  @Override
  public void close() {
    for (PreparedStatement ps : statements.values()) {
      try {
        ps.close();
      } catch (SQLException ignored) {
        // closing
      }
    }
    statements.clear();
    boolean truncated = false;
    try {
      try (Statement st = conn.createStatement(); ResultSet rs = st.executeQuery("PRAGMA wal_checkpoint(TRUNCATE)")) {
        truncated = rs.next() && rs.getInt(1) == 0; // busy = 0: every frame is in the database, the WAL emptied
      }
    } catch (SQLException e) {
      LOG.debug("checkpoint at close failed", e);
    }
    closeQuietly(conn);
    // The marker vouches for the file as it is now, so the file is checked now, on a fresh connection that reads it
    // from disk rather than from this connection's page cache: damage done while the relay ran (by another process,
    // or on a page only readers touched) must not ride a clean close past the next start's check. This moves the
    // quick_check's cost (about 1 s a million items) from the next start to this stop.
    boolean checked = false;
    if (truncated && !damaged) {
      org.sqlite.SQLiteConfig ro = new org.sqlite.SQLiteConfig();
      ro.setReadOnly(true);
      try (Connection c = DriverManager.getConnection(SqliteSettings.url(file), ro.toProperties())) {
        List<String> problems = StoreIntegrity.quickCheck(c);
        checked = problems.isEmpty();
        if (!checked) {
          LOG.error("store {} fails its integrity check at close (quick_check: {}); the next start refuses it",
              file, String.join("; ", problems));
        }
      } catch (SQLException e) {
        LOG.error("store {}: integrity check at close failed; the next start checks it", file, e);
      }
    }
    if (checked) {
      CleanClose.record(file); // the next open may skip the start-up integrity check
    }
  }

  private static void closeQuietly(Connection c) {
    try {
      c.close();
    } catch (SQLException ignored) {
      // closing
    }
  }

  /** {@link TrustCommands}' view of an enrolment row (writer thread only). */
  Optional<Enrolment> enrolmentRowForTrust(String key) throws SQLException {
    return enrolmentRow(key);
  }

  /** {@link TrustCommands}' seq allocation: the same rule as a push (writer thread only). */
  long allocateSeqForTrust(String target, long nowMs) throws SQLException {
    return allocateSeq(target, nowMs);
  }

  /** Package-private access for migrations and tests of this package. */
  Connection connection() {
    return conn;
  }
}
