package io.mbxrelay.store.sqlite;

import io.mbxrelay.store.EpochRule;
import io.mbxrelay.store.RelayStore;
import io.mbxrelay.store.StoreException;
import io.mbxrelay.store.StoreOpenException;
import io.mbxrelay.store.StoreRefusedException;
import io.mbxrelay.store.model.OpenReport;
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
import java.util.Objects;
import java.util.Optional;
import java.util.UUID;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.sqlite.SQLiteErrorCode;
import org.sqlite.SQLiteException;

/**
 * Opens the embedded store's {@code relay.db} for the writer (docs/architecture.md "Durability"): the file's checks
 * (links, modes, an empty file), the commit watermark gate ({@link CommitWatermark}), the clean-close marker
 * ({@link CleanClose}) that spares the integrity check, the integrity check ({@link StoreIntegrity}), the automatic
 * backup before a migration, then one {@code BEGIN IMMEDIATE} transaction that creates or migrates the schema, pins the
 * relay key, applies the epoch rule ({@link EpochRule}), writes the heartbeat and counts itself. What it hands over is
 * a {@link SqliteBackend} with the writer's connection and what the open did.
 *
 * <p>Threading: one open on one plain thread; the backend it returns is then owned by the writer.
 */
public final class SqliteOpener {
  private static final Logger LOG = LoggerFactory.getLogger(SqliteOpener.class);

  private final Path file;
  private final Connection conn;
  private final Clock clock;
  private final String relayPubkey;
  private final SqliteBackend backend;

  private SqliteOpener(Path file, Connection conn, Clock clock, String relayPubkey, SqliteBackend backend) {
    this.file = file;
    this.conn = conn;
    this.clock = clock;
    this.relayPubkey = relayPubkey;
    this.backend = backend;
  }

  /**
   * An open store.
   *
   * @param backend the writer's backend over the store (the caller closes it)
   * @param report what the open did (created, migrated, epoch rotated and why)
   */
  public record Opened(SqliteBackend backend, OpenReport report) {}

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
   * @return the open store and what the open did
   * @throws StoreOpenException newer schema, another relay key, not a store, unreadable; {@link StoreRefusedException}
   *     for a store behind its watermark
   */
  public static Opened open(Path storeDir, String relayPubkey, Clock clock,
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
      OpenReport report = new SqliteOpener(file, conn, clock, relayPubkey, store)
          .initialise(heartbeatStaleMs, verdict, migrationBackup);
      store.refresh(); // loads the enrolment cache
      return new Opened(store, report);
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
        backend.putMeta("schema_version", Integer.toString(RelayStore.SCHEMA_VERSION));
        backend.putMeta("epoch", UUID.randomUUID().toString());
        backend.putMeta("relay_pubkey", relayPubkey);
        backend.putMeta("expiry_from", nowIso);
        created = true;
      } else {
        String version = backend.meta("schema_version").orElse(null);
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
          backend.putMeta("schema_version", Integer.toString(RelayStore.SCHEMA_VERSION));
          migratedFrom = v;
          backend.addOp("schema-migrated", "{\"v\":1,\"type\":\"relay-schema-migrated\",\"at\":\"" + nowIso + "\",\"from\":" + v
              + ",\"to\":" + RelayStore.SCHEMA_VERSION + ",\"backup\":" + (migrationBackup == null ? "null"
              : "\"" + jsonEsc(migrationBackup.toAbsolutePath().toString()) + "\"") + "}");
        }
        String pinned = backend.meta("relay_pubkey").orElse(null);
        if (pinned == null) {
          backend.putMeta("relay_pubkey", relayPubkey);
        } else if (!pinned.equals(relayPubkey)) {
          throw new StoreRefusedException("this store belongs to another relay key (store pins "
              + io.mbxrelay.crypto.Fingerprint.ofB64(pinned) + "); refusing to open it with relay key "
              + io.mbxrelay.crypto.Fingerprint.ofB64(relayPubkey));
        }
        if (backend.meta("epoch").isEmpty()) {
          backend.putMeta("epoch", UUID.randomUUID().toString());
        }
        if (backend.meta("expiry_from").isEmpty()) {
          // docs/protocol.md §5 expiry_from: history of unknown origin never expires; only items pushed from now on do.
          try (Statement st = conn.createStatement()) {
            st.executeUpdate("UPDATE items SET expires_at = NULL WHERE kind <> 'expired'");
          }
          backend.putMeta("expiry_from", nowIso);
        }
        Optional<EpochRule.Rotation> rotation = EpochRule.atOpen(verdict.behind(),
            backend.meta("heartbeat"), io.mbxrelay.store.guard.ClockGuard.wallMillis(clock), heartbeatStaleMs);
        if (rotation.isPresent()) {
          // a store that lost commits the operator accepted (serve --accept-lost-commits), or a heartbeat too far from
          // the wall clock (the outside world's time, not guarded): a new epoch makes senders re-push what they hold
          // and receivers pull again from 0 (docs/protocol.md §7.5), exactly as after a restore
          EpochRule.Rotation r = rotation.get();
          rotatedReason = r.reason();
          previous = backend.meta("epoch").orElseThrow();
          String next = UUID.randomUUID().toString();
          backend.putMeta("epoch", next);
          String hbIso = r.heartbeat();
          backend.putMeta("epoch_rotated", "{\"from\":\"" + previous + "\",\"to\":\"" + next + "\",\"at\":\"" + nowIso
              + "\",\"heartbeat\":\"" + jsonEsc(hbIso) + "\",\"reason\":\"" + rotatedReason + "\"}");
          backend.addOp("epoch-rotated", "{\"v\":1,\"type\":\"relay-epoch-rotated\",\"at\":\"" + nowIso + "\",\"from\":\""
              + previous + "\",\"to\":\"" + next + "\",\"heartbeat\":\"" + jsonEsc(hbIso) + "\",\"reason\":\""
              + rotatedReason + "\"" + (r.byOperator() ? ",\"store_commits\":" + verdict.storeCommits()
              + ",\"watermark_commits\":" + (verdict.damaged() ? "null"
              : Long.toString(verdict.mark().orElseThrow().commits())) + ",\"by\":\"operator\"}" : ",\"by\":\"startup\"}"));
        }
      }
      ensureIndexes();
      KeySpellingMigration.run(conn); // keys in their canonical spelling; a scan of enrolments on a clean store
      backend.putMeta("heartbeat", Long.toString(now));
      // every writer transaction counts itself, this one too; a store accepted behind its watermark starts above it
      long next = Math.max(CommitWatermark.storeCommits(conn), verdict.floor()) + 1;
      backend.putMeta(CommitWatermark.META_KEY, Long.toString(next));
      String epoch = backend.meta("epoch").orElseThrow();
      try (Statement st = conn.createStatement()) {
        st.execute("COMMIT");
      }
      ok = true;
      backend.opened(epoch, next);
      return new OpenReport(created, false, rotatedReason, previous, migratedFrom,
          migratedFrom == 0 ? null : migrationBackup);
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
    try (PreparedStatement ps = conn.prepareStatement("SELECT 1 FROM sqlite_master WHERE type='trigger' AND name=?")) {
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
      st.execute(UsageLog.TABLE);
      int folded = UsageLog.foldAll(conn); // values the last run logged and did not fold (it stopped uncleanly)
      if (folded > 0) {
        LOG.info("usage log folded at open [rows: {}]", folded);
      }
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
    try (PreparedStatement ps = conn.prepareStatement("SELECT 1 FROM sqlite_master WHERE type='table' AND name=?")) {
      ps.setString(1, name);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next();
      }
    }
  }

  private static void closeQuietly(Connection c) {
    try {
      c.close();
    } catch (SQLException ignored) {
      // already failing
    }
  }
}
