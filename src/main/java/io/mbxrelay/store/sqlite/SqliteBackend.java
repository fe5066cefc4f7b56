package io.mbxrelay.store.sqlite;

import io.mbxrelay.store.model.DedupRow;
import io.mbxrelay.store.model.Enrolment;
import io.mbxrelay.store.EnrolmentCache;
import io.mbxrelay.store.model.ItemRow;
import io.mbxrelay.store.jdbc.Dialect;
import io.mbxrelay.store.jdbc.JdbcLedgerBackend;
import io.mbxrelay.store.spi.LedgerBackend;
import io.mbxrelay.store.RelayStore;
import io.mbxrelay.store.StoreException;
import io.mbxrelay.store.StoreOpenException;
import io.mbxrelay.store.StoreRefusedException;
import io.mbxrelay.wire.IsoTime;
import io.mbxrelay.wire.Json;
import io.mbxrelay.wire.KeySpelling;
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
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.sqlite.SQLiteErrorCode;
import org.sqlite.SQLiteException;

/**
 * The SQLite {@link LedgerBackend}: the relay's tables in one {@code relay.db} over exactly one write connection
 * (docs/architecture.md "Durability", "The writer's state"). It knows no protocol rule; {@link io.mbxrelay.store.RelayLedger}
 * runs the commands over it.
 *
 * <p>Group commit: a transaction is {@code BEGIN IMMEDIATE} … {@code COMMIT} under {@code synchronous=FULL}; the
 * per-target {@code seqs}, {@code queue_usage} and {@code sender_totals} rows are written once per touched key right
 * before COMMIT from the writer's in-memory state ({@link WriterState}, kept by {@link WriterCounters}), which
 * savepoint rollbacks undo through a journal. The table operations it runs as PostgreSQL does are in
 * {@link JdbcLedgerBackend}.
 *
 * <p>Threading: not thread-safe; owned by one thread (the writer).
 */
public final class SqliteBackend extends JdbcLedgerBackend {
  private static final Logger LOG = LoggerFactory.getLogger(SqliteBackend.class);
  private static final String HOST_FP = io.mbxrelay.store.model.DenyKey.HOST_FP;

  private final Path file;
  private final Connection conn;
  private final Clock clock;
  private final String relayPubkey;
  private volatile String epoch;
  private java.util.function.LongConsumer commitTimer = nanos -> {};
  private final EnrolmentCache enrolments = new EnrolmentCache();
  private final WriterState state = new WriterState();
  /** Counts, seqs and their journals over {@link #state}. */
  private final WriterCounters counters = new WriterCounters(state, this::statement, this::enrolmentRow);
  /** Keys whose enrolment row the open transaction changed: read from the database until COMMIT. */
  private final Set<String> dirtyEnrolments = new HashSet<>();
  /** The open transaction may have changed many enrolment rows (deny): read them all from the database. */
  private boolean reloadEnrolments;
  /** SQLite {@code data_version} as last seen: another connection committed when it moves. */
  private long dataVersion = -1;
  /** The store reported corruption while open: no clean-close marker is written for it. */
  private boolean damaged;
  /** {@code meta.commits}: writer transactions committed in this store's life (issue 10 item 3, the watermark's count). */
  private long commits;
  private java.util.function.LongConsumer onCommit = n -> {};
  /** An operator's session on a connection its caller owns: close leaves the file as it is (no checkpoint, no marker). */
  private boolean operatorSession;
  /** Open savepoints, innermost last: each the journal sizes at its start. */
  private final java.util.ArrayDeque<int[]> savepoints = new java.util.ArrayDeque<>();

  private SqliteBackend(Path file, Connection conn, Clock clock, String relayPubkey) {
    this.file = file;
    this.conn = conn;
    this.clock = clock;
    this.relayPubkey = relayPubkey;
  }

  /**
   * A session on a connection the caller opened and closes (the operator's {@code deny} command beside a running
   * relay): no open-time work (no heartbeat, no epoch change, no integrity check), and {@link #close()} only drops its
   * statements. The enrolment cache is loaded by the first transaction.
   *
   * @param conn a write connection to a current-version store
   * @param clock time source
   * @return the session
   * @throws SQLException when the store's meta cannot be read
   */
  static SqliteBackend session(Connection conn, Clock clock) throws SQLException {
    SqliteBackend b = new SqliteBackend(null, conn, clock, null);
    b.operatorSession = true;
    b.epoch = b.meta("epoch").orElse("");
    b.sessionPubkey = b.meta("relay_pubkey").orElse("");
    return b;
  }

  private String sessionPubkey;

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
   * Opens the store as a plain open does, after comparing it with
   * its commit watermark ({@link CommitWatermark}, issue 10 item 3) on a read-only connection: a store whose
   * {@code meta.commits} is below {@code relay.watermark} (or whose watermark is damaged) lost commits that hosts hold
   * receipts for and is refused before anything writes to it, so its WAL stays as evidence; unless
   * {@code acceptLostCommits}, which opens it with a new epoch (hosts re-push and pull again from 0) and raises its
   * count to the watermark.
   *
   * @param storeDir the store directory (created 0700 when missing)
   * @param relayPubkey the relay's public key; a new store pins it, an existing one must match
   * @param clock time source (tests inject one)
   * @param busyTimeoutMs SQLite busy timeout
   * @param heartbeatStaleMs a stored heartbeat further than this from now rotates the epoch (docs/protocol.md §5); 0 = never
   * @param acceptLostCommits the operator accepts a store behind its watermark ({@code serve --accept-lost-commits})
   * @return the open store
   * @throws StoreOpenException newer schema, another relay key, not a store, unreadable; {@link StoreRefusedException}
   *     for a store behind its watermark
   */
  public static SqliteBackend open(Path storeDir, String relayPubkey, Clock clock,
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
      if (created) {
        formatNewDatabase(file);
      }
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
        // savepoint (statement) journals in memory: every command runs in a savepoint, and a journal that spills to
        // a temporary file costs a write per page the command touches (issue 18)
        st.execute("PRAGMA temp_store=MEMORY");
      }
      if (closedCleanly) {
        LOG.info("store closed cleanly and unchanged since: start-up integrity check skipped [file: {}]", file);
      } else {
        StoreIntegrity.requireQuickCheck(conn, file); // a damaged store is refused, never served (issue 10 item 2)
      }
      Path migrationBackup = backupBeforeMigration(conn, file, clock);
      SqliteBackend store = new SqliteBackend(file, conn, clock, relayPubkey);
      store.openReport = store.initialise(heartbeatStaleMs, verdict, migrationBackup);
      store.refresh(); // loads the enrolment cache
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
   * Gives a database file that was just created (empty) its page size ({@link SqliteSettings#NEW_STORE_PAGE_BYTES})
   * and WAL mode, before anything else writes its header: the driver switches to WAL as it connects, and the page size
   * of a WAL database is fixed from then on.
   */
  private static void formatNewDatabase(Path file) throws SQLException {
    try (Connection c = DriverManager.getConnection(SqliteSettings.url(file)); Statement st = c.createStatement()) {
      st.execute("PRAGMA page_size=" + SqliteSettings.NEW_STORE_PAGE_BYTES);
      st.execute("PRAGMA journal_mode=WAL");
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
    if (v < 1 || v >= RelayStore.SCHEMA_VERSION) {
      return null;
    }
    StoreIntegrity.requireValidMetadata(conn, file); // a store that will be refused is not copied first
    try {
      Path backup = SqliteOps.backupBeforeMigration(conn, file.getParent(), v, io.mbxrelay.store.guard.ClockGuard.wallMillis(clock));
      LOG.warn("store schema version {} will be migrated to {}: a one-way step (the reference relay and older"
          + " binaries refuse version {}); the store as it was is backed up first [backup: {}] (docs/wire-compatibility.md"
          + " \"Rolling back to the reference relay\")", v, RelayStore.SCHEMA_VERSION, RelayStore.SCHEMA_VERSION, backup);
      return backup;
    } catch (IOException | SQLException e) {
      String why = e instanceof IOException io ? StoreFiles.reason(io) : e.getMessage();
      throw new StoreOpenException("cannot back up " + file + " before migrating it from schema version " + v + " to "
          + RelayStore.SCHEMA_VERSION + " (" + why + "); nothing was changed. Make room in " + file.getParent()
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
        putMeta("schema_version", Integer.toString(RelayStore.SCHEMA_VERSION));
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
        if (v > RelayStore.SCHEMA_VERSION) {
          throw new StoreRefusedException("the store schema version " + v + " is newer than this binary supports ("
              + RelayStore.SCHEMA_VERSION + "); run a newer mbxrelay or restore a backup made by this version");
        }
        StoreIntegrity.requireValidMetadata(conn, file); // refuse, never rewrite, bad meta (issue 10 item 5)
        if (v < RelayStore.SCHEMA_VERSION) {
          Migrations.migrate(conn, v);
          putMeta("schema_version", Integer.toString(RelayStore.SCHEMA_VERSION));
          migratedFrom = v;
          addOp("schema-migrated", "{\"v\":1,\"type\":\"relay-schema-migrated\",\"at\":\"" + nowIso + "\",\"from\":" + v
              + ",\"to\":" + RelayStore.SCHEMA_VERSION + ",\"backup\":" + (migrationBackup == null ? "null"
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
          long wallNow = io.mbxrelay.store.guard.ClockGuard.wallMillis(clock); // the outside world's time, not guarded
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
    addOpAt(op, receiptJson, IsoTime.format(clock.millis()));
  }

  private void addOpAt(String op, String receiptJson, String at) throws SQLException {
    try (PreparedStatement ps = prepared("INSERT INTO ops(at, op, receipt) VALUES(?, ?, ?)")) {
      ps.setString(1, at);
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
    return relayPubkey != null ? relayPubkey : sessionPubkey;
  }

  /** The database file ({@code relay.db}). */
  public Path file() {
    return file;
  }

  /**
   * The committed enrolments, kept current by this store after every COMMIT (the hop check and the push path read
   * them without a database round trip).
   *
   * @return the shared cache (reads safe on any thread)
   */
  @Override
  public EnrolmentCache enrolmentCache() {
    return enrolments;
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
    closeAll(statements);
  }

  /**
   * Sets SQLite's {@code wal_autocheckpoint} on the writer connection (config {@code store.walAutocheckpointPages}). A
   * checkpoint copies every page of the log into the database once; pages that several transactions changed (the
   * tail of each target's seq index, the counters) are copied once per checkpoint, so a longer log copies fewer pages
   * per item (issue 18: 4,000 pages instead of SQLite's 1,000 cut the writer's bytes per W1 item by a tenth and its
   * time by about as much), at the price of a longer COMMIT when one comes due. Writer thread only.
   *
   * @param pages log pages (of {@code page_size} bytes) that trigger a checkpoint, ≥ 1
   * @throws StoreException when the pragma fails
   */
  public void walAutocheckpoint(int pages) throws StoreException {
    run("wal_autocheckpoint failed", () -> {
      try (Statement st = conn.createStatement()) {
        st.execute("PRAGMA wal_autocheckpoint=" + pages);
      }
    });
  }

  /** Installs the post-commit observer: called on the writer thread with {@code meta.commits} after every COMMIT. */
  public void onCommit(java.util.function.LongConsumer observer) {
    this.onCommit = Objects.requireNonNull(observer);
  }

  /** {@code meta.commits} as last committed by this writer (issue 10 item 3). Writer thread only. */
  public long commits() {
    return commits;
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
    dirtyEnrolments.clear();
    savepoints.clear();
    reloadEnrolments = false;
    state.dropAll();
  }

  private void rollbackQuietly() {
    try {
      statement("ROLLBACK").execute();
    } catch (SQLException ignored) {
      // no transaction open any more
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
    if (operatorSession) {
      dropStatements();
      return;
    }
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

  /** Package-private access for migrations and tests of this package. */
  Connection connection() {
    return conn;
  }

  // ==== LedgerBackend ====

  /** A statement sequence against the connection. */
  @FunctionalInterface
  private interface Sql<T> {
    T call() throws SQLException;
  }

  /** A statement sequence without a result. */
  @FunctionalInterface
  private interface SqlRun {
    void run() throws SQLException;
  }

  /** Runs {@code call}, mapping a driver failure to the ledger's terms ({@link #fail}). */
  private <T> T sql(String what, Sql<T> call) throws StoreException {
    try {
      return call.call();
    } catch (SQLException e) {
      throw fail(what, e);
    }
  }

  private void run(String what, SqlRun call) throws StoreException {
    try {
      call.run();
    } catch (SQLException e) {
      throw fail(what, e);
    }
  }

  private static Usage usage(long[] u) {
    return u == null ? Usage.NONE : new Usage(u[0], u[1]);
  }


  private static Enrolment keyOnly(String key) {
    return new Enrolment(key, "", "", null, null, "", "");
  }

  private Enrolment enrolmentOrKey(String key) throws SQLException {
    return enrolmentRow(key).orElseGet(() -> keyOnly(key));
  }

  /** A driver failure as the ledger sees it; the cached statements are prepared again, corruption is remembered. */
  @Override
  protected StoreException fail(String what, SQLException e) {
    dropStatements(); // the driver may have finalized the failing statement (see dropStatements)
    StoreException f = classify(what, e);
    if (f.kind() == StoreException.Kind.CORRUPT) {
      damaged = true; // never vouch for this file at close
    }
    return f;
  }

  // ---- transaction control ----

  @Override
  public void begin() throws StoreException {
    savepoints.clear();
    try {
      followExternalChanges();
      statement("BEGIN IMMEDIATE").execute();
    } catch (SQLException e) {
      throw fail("begin failed", e);
    }
  }

  @Override
  public void savepoint() throws StoreException {
    run("savepoint failed", () -> statement("SAVEPOINT s").execute());
    savepoints.push(new int[] {state.journal.size(), state.seqJournal.size()});
  }

  @Override
  public void release() throws StoreException {
    run("release failed", () -> statement("RELEASE s").execute());
    savepoints.pop();
    if (savepoints.isEmpty()) {
      state.journal.clear(); // nothing left to roll back to
      state.seqJournal.clear();
    }
  }

  @Override
  public void rollbackToSavepoint() throws StoreException {
    int[] mark = savepoints.pop();
    counters.undoCounts(mark[0]);
    counters.undoSeqs(mark[1]);
    try {
      statement("ROLLBACK TO s").execute();
      statement("RELEASE s").execute();
    } catch (SQLException e) {
      throw fail("rollback to savepoint failed", e);
    }
  }

  @Override
  public void commit() throws StoreException {
    try {
      counters.writeDirtySeqs();
      counters.writePendingUsage();
      PreparedStatement count = statement(COUNT_COMMIT);
      count.setString(1, Long.toString(commits + 1));
      count.executeUpdate();
      long start = System.nanoTime();
      statement("COMMIT").execute();
      commitTimer.accept(System.nanoTime() - start);
    } catch (SQLException e) {
      StoreException f = fail("commit failed", e);
      rollback();
      throw f;
    }
    savepoints.clear();
    commits++;
    afterCommit();
    onCommit.accept(commits);
  }

  @Override
  public void rollback() {
    rollbackQuietly();
    afterRollback();
  }

  @Override
  public void refresh() throws StoreException {
    run("refresh failed", this::followExternalChanges);
  }

  // ---- meta and ops log ----

  @Override
  public void putHeartbeat(long nowMs) throws StoreException {
    run("heartbeat failed", () -> putMeta("heartbeat", Long.toString(nowMs)));
  }

  // ---- enrolments ----

  @Override
  public Optional<Enrolment> enrolment(String hostPubkey) throws StoreException {
    return sql("read failed", () -> enrolmentRow(hostPubkey));
  }

  /** The row is about to change: read it from the database until COMMIT; account usage counts live hosts only. */
  @Override
  protected void enrolmentChanged(String key) {
    dirtyEnrolments.add(key);
    state.accountUsage.clear();
  }

  @Override
  public boolean anyRevoked(List<String> keys) throws StoreException {
    return exists("SELECT 1 FROM enrolments WHERE revoked_at IS NOT NULL AND host_pubkey IN " + inList(keys.size()),
        keys.toArray());
  }

  // ---- allowlists ----

  @Override
  public Optional<Set<String>> allowlist(String target) throws StoreException {
    Set<String> list = state.allowlist(target);
    if (list == null) {
      list = allowlistFromDb(target).orElse(WriterState.NO_LIST);
      state.putAllowlist(target, list);
    }
    return list == WriterState.NO_LIST ? Optional.empty() : Optional.of(list);
  }

  @Override
  public void moveAllowlists(String oldKey, List<String> oldSpellings, String newKey) throws StoreException {
    state.dropUsageAndLists();
    moveOwnAllowlist(oldKey, newKey);
    String in = inList(oldSpellings.size());
    List<Object> args = new ArrayList<>(oldSpellings);
    args.add(newKey);
    args.addAll(oldSpellings);
    update("UPDATE sender_lists SET senders=(SELECT json_group_array(DISTINCT CASE WHEN value IN " + in + " THEN ?"
        + " ELSE value END) FROM json_each(sender_lists.senders)) WHERE EXISTS(SELECT 1 FROM"
        + " json_each(sender_lists.senders) WHERE value IN " + in + ")", args.toArray());
  }

  // ---- seqs ----

  @Override
  public long nextSeq(String target) throws StoreException {
    return sql("read failed", () -> counters.nextSeqRow(target));
  }

  @Override
  public void useSeq(String target, long seq) {
    counters.useSeqRow(target, seq, !savepoints.isEmpty());
  }

  // ---- items ----

  @Override
  public void insertItem(Enrolment target, ItemRow it) throws StoreException {
    run("item insert failed", () -> insertItemRow(it.target(), it.seq(), it.kind(), it.itemId(), it.sender(),
        it.senderHost(), it.wire(), it.wireHash(), it.acceptedAt(), it.expiresAt()));
    counters.countRows(target, it.sender(), 1, it.wire().length);
  }

  /** Runs one of the catalogue's item deletes, counting each deleted row out of the writer's state; rows deleted. */
  @Override
  protected int deleteCounted(String sql, String target, long seq) throws StoreException {
    try {
      Enrolment e = enrolmentOrKey(target);
      return deleteReturning(sql, target, seq, (sender, bytes) -> counters.countRows(e, sender, -1, -bytes));
    } catch (SQLException e) {
      throw fail("delete failed", e);
    }
  }

  private void insertItemRow(String target, long seq, String kind, String itemId, String sender, String senderHost,
      byte[] wire, String wireHash, String nowIso, String expiresAt) throws SQLException {
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

  // ---- usage ----

  @Override
  public Usage targetUsage(String target) throws StoreException {
    return sql("read failed", () -> {
      WriterState.TargetUsage u = counters.usage(target);
      return new Usage(u.items, u.bytes);
    });
  }

  @Override
  public Usage senderShare(String target, String sender) throws StoreException {
    return sql("read failed", () -> usage(counters.senders(target, counters.usage(target)).get(sender)));
  }

  @Override
  public Usage accountUsage(String account) throws StoreException {
    return sql("read failed", () -> usage(counters.accountUsageRow(account)));
  }

  @Override
  public Usage senderTotal(String sender) throws StoreException {
    return sql("read failed", () -> usage(counters.senderTotalRow(sender)));
  }

  @Override
  public Usage storeTotals() throws StoreException {
    return sql("read failed", () -> usage(counters.storeTotalsRow()));
  }

  // ---- JdbcLedgerBackend ----

  @Override
  protected Dialect dialect() {
    return Dialect.SQLITE;
  }

  @Override
  protected PreparedStatement cached(String sql) throws SQLException {
    return statement(sql);
  }

  @Override
  protected void allowlistChanged(String target) {
    state.removeAllowlist(target);
  }

  // ---- helpers ----

  private static String inList(int n) {
    return "(" + String.join(", ", java.util.Collections.nCopies(n, "?")) + ")";
  }
}
