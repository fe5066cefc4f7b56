package io.mbxrelay.store.sqlite;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.mbxrelay.crypto.Fingerprint;
import io.mbxrelay.store.RelayStore;
import io.mbxrelay.store.StoreOpenException;
import io.mbxrelay.store.StoreRefusedException;
import io.mbxrelay.wire.IsoTime;
import io.mbxrelay.wire.Json;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Clock;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Properties;
import java.util.UUID;

/**
 * Offline and online operator commands on a store directory (docs/protocol.md §5 "Ops", §7.5 "Backup", "Restore from
 * backup"): {@code rotate-epoch}, {@code backup}, {@code restore}, {@code log}. Each returns its receipt as JSON.
 *
 * <p>Threading: plain blocking JDBC; call from the CLI thread (or the serve thread before the writer starts).
 * Backup uses SQLite's online backup API (through the driver's {@code backup to} statement), so it is safe while the
 * relay runs; the others take the store's process lock and refuse while a relay holds it.
 */
public final class SqliteOps {
  /** A lock-less store whose heartbeat is younger than this is assumed live: restore needs --force (docs/protocol.md §5). */
  public static final long LIVE_HEARTBEAT_MS = 90_000;

  private SqliteOps() {}

  private static Connection connect(Path db, long busyMs) throws SQLException {
    Properties p = new Properties();
    p.setProperty("busy_timeout", Long.toString(busyMs));
    return DriverManager.getConnection(SqliteSettings.url(db), p);
  }

  private static String meta(Connection c, String k) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement("SELECT v FROM meta WHERE k=?")) {
      ps.setString(1, k);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() ? rs.getString(1) : null;
      }
    }
  }

  private static void putMeta(Connection c, String k, String v) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(
        "INSERT INTO meta(k, v) VALUES(?, ?) ON CONFLICT(k) DO UPDATE SET v = excluded.v")) {
      ps.setString(1, k);
      ps.setString(2, v);
      ps.executeUpdate();
    }
  }

  private static void addOp(Connection c, String at, String op, ObjectNode receipt) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement("INSERT INTO ops(at, op, receipt) VALUES(?, ?, ?)")) {
      ps.setString(1, at);
      ps.setString(2, op);
      ps.setString(3, Json.stringify(receipt));
      ps.executeUpdate();
    }
    try (Statement st = c.createStatement()) {
      st.executeUpdate("DELETE FROM ops WHERE id <= (SELECT max(id) FROM ops) - 1000");
    }
  }

  private static long scalar(Connection c, String sql) throws SQLException {
    try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery(sql)) {
      return rs.next() ? rs.getLong(1) : 0;
    }
  }

  private static Path db(Path dir) {
    return dir.resolve(SqliteSettings.DB_FILE);
  }

  private static StoreLock lockOrRefuse(Path dir) throws OpsException {
    try {
      return StoreLock.acquire(dir, 0);
    } catch (StoreOpenException e) {
      throw new OpsException("RELAY_RUNNING", "a relay is running on " + dir + " (relay.lock is held); stop it first");
    }
  }

  /** Schema version of an open database, or -1 when it has no meta table / version. */
  /**
   * The stored {@code meta.schema_version}, read on any connection.
   *
   * @param c a connection to a store
   * @return the version, or -1 when there is no {@code meta} table or no valid version
   * @throws SQLException on read errors
   */
  static int schemaVersionOf(Connection c) throws SQLException {
    return schemaVersion(c);
  }

  private static int schemaVersion(Connection c) throws SQLException {
    try (Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT 1 FROM sqlite_master WHERE type='table' AND name='meta'")) {
      if (!rs.next()) {
        return -1;
      }
    }
    String v = meta(c, "schema_version");
    try {
      return v == null ? -1 : Integer.parseInt(v);
    } catch (NumberFormatException e) {
      return -1;
    }
  }

  // ---- rotate-epoch ----

  /**
   * Writes a new epoch (docs/protocol.md §5: receipt {@code relay-epoch-rotated}, op {@code epoch-rotated}). Run it after any
   * restore that did not go through {@link #restore} (a volume snapshot, a file copy) before the relay serves again.
   *
   * @param dir store directory
   * @param clock time source
   * @return the receipt
   * @throws OpsException RELAY_RUNNING, NO_STORE, NOT_A_STORE, SCHEMA or IO
   */
  @SuppressWarnings("try") // a resource held for the block, not used in it
  public static ObjectNode rotateEpoch(Path dir, Clock clock) throws OpsException {
    if (!Files.isRegularFile(db(dir))) {
      throw new OpsException("NO_STORE", "no store at " + db(dir));
    }
    try {
      StoreFiles.secure(dir);
    } catch (StoreRefusedException e) {
      throw new OpsException("UNSAFE", e.getMessage(), e);
    }
    try (StoreLock lock = lockOrRefuse(dir); Connection c = connect(db(dir), 5000)) {
      checkSchema(c, db(dir));
      String at = IsoTime.format(clock.millis());
      try (Statement st = c.createStatement()) {
        st.execute("BEGIN IMMEDIATE");
      }
      String from = meta(c, "epoch");
      String to = UUID.randomUUID().toString();
      putMeta(c, "epoch", to);
      ObjectNode rotated = Json.MAPPER.createObjectNode().put("from", from).put("to", to).put("at", at)
          .put("heartbeat", meta(c, "heartbeat")).put("reason", "operator");
      putMeta(c, "epoch_rotated", Json.stringify(rotated));
      // The operator's word that this store is a new generation (hosts re-push and pull again): a store behind its
      // commit watermark (a copied-back relay.db) is accepted, and the watermark follows (issue 10 item 3).
      long commits = commitFloor(c, dir) + 1;
      putMeta(c, CommitWatermark.META_KEY, Long.toString(commits));
      ObjectNode receipt = Json.MAPPER.createObjectNode().put("v", 1).put("type", "relay-epoch-rotated").put("at", at)
          .put("store", dir.toAbsolutePath().toString()).put("from", from).put("to", to).put("by", "operator");
      addOp(c, at, "epoch-rotated", receipt);
      try (Statement st = c.createStatement()) {
        st.execute("COMMIT");
      }
      replaceWatermark(dir, to, commits, clock);
      return receipt;
    } catch (SQLException e) {
      throw new OpsException("IO", "rotate-epoch failed: " + e.getMessage(), e);
    }
  }

  /**
   * The count a store taking over this dir must start above: the larger of the store's {@code meta.commits} and the
   * watermark's (a damaged or unreadable watermark counts 0: the caller rotates the epoch anyway).
   */
  private static long commitFloor(Connection c, Path dir) throws SQLException {
    long floor = CommitWatermark.storeCommits(c);
    try {
      floor = Math.max(floor, CommitWatermark.read(dir).map(CommitWatermark.Mark::commits).orElse(0L));
    } catch (IOException | StoreRefusedException e) {
      // damaged or a link: replaceWatermark reports a link; a damaged one is replaced
    }
    return floor;
  }

  /** Writes the watermark for a store the operator just rewrote; failure leaves it lower, which is safe. */
  private static void replaceWatermark(Path dir, String epoch, long commits, Clock clock) throws OpsException {
    try {
      CommitWatermark.replace(dir, new CommitWatermark.Mark(epoch, commits, clock.millis()));
    } catch (StoreRefusedException e) {
      throw new OpsException("UNSAFE", e.getMessage(), e);
    } catch (IOException e) {
      // The store is done and its count is above the old watermark: the next start rewrites the file.
    }
  }

  private static void checkSchema(Connection c, Path file) throws SQLException, OpsException {
    int v = schemaVersion(c);
    if (v < 1) {
      throw new OpsException("NOT_A_STORE", file + " is not a relay store");
    }
    if (v > RelayStore.SCHEMA_VERSION) {
      throw new OpsException("SCHEMA", file + " has schema version " + v + ", newer than this binary supports ("
          + RelayStore.SCHEMA_VERSION + ")");
    }
  }

  // ---- backup ----

  /**
   * Online backup (docs/protocol.md §5 "Ops"): SQLite backup API into {@code <file>.partial-<pid>} (created 0600, its
   * directory 0700 when created), journal mode DELETE, integrity check, then linked into place (never overwrites),
   * op {@code backup} logged in the live store. Safe while the relay runs.
   *
   * @param dir store directory
   * @param file backup file to create
   * @param clock time source
   * @return the {@code relay-backup} receipt
   * @throws OpsException EXISTS, NO_STORE, NOT_A_STORE, SCHEMA or IO (integrity check failure included)
   */
  public static ObjectNode backup(Path dir, Path file, Clock clock) throws OpsException {
    Path source = db(dir);
    if (!Files.isRegularFile(source)) {
      throw new OpsException("NO_STORE", "no store at " + source);
    }
    Path target = file.toAbsolutePath();
    if (Files.exists(target, LinkOption.NOFOLLOW_LINKS)) {
      throw new OpsException("EXISTS", target + " already exists; backups never overwrite");
    }
    Path partial = target.resolveSibling(target.getFileName() + ".partial-" + ProcessHandle.current().pid());
    try {
      Path parent = target.getParent();
      if (!Files.isDirectory(parent)) {
        StoreFiles.ownerOnlyDir(parent);
      }
      Files.deleteIfExists(partial); // a link there is removed, never followed
      Files.createFile(partial, PosixFilePermissions.asFileAttribute(StoreFiles.OWNER_FILE));
    } catch (IOException e) {
      throw new OpsException("IO", "cannot create " + partial + ": " + e.getMessage(), e);
    }
    String at = IsoTime.format(clock.millis());
    ObjectNode receipt;
    try {
      try (Connection src = connect(source, 10_000)) {
        checkSchema(src, source);
        onlineBackup(src, partial);
      }
      // key order of docs/protocol.md §5: v,type,at,store,file,bytes,sha256,epoch,relay_fingerprint,schema_version,heartbeat,
      // counts,restore (bytes and sha256 are filled in once the file is in place)
      receipt = Json.MAPPER.createObjectNode().put("v", 1).put("type", "relay-backup").put("at", at)
          .put("store", dir.toAbsolutePath().toString()).put("file", target.toString());
      receipt.putNull("bytes");
      receipt.putNull("sha256");
      try (Connection copy = connect(partial, 5000); Statement st = copy.createStatement()) {
        journalDelete(st.getConnection());
        List<String> problems;
        try {
          problems = StoreIntegrity.integrityCheck(copy);
        } catch (SQLException e) {
          if (!StoreIntegrity.isCorruption(e)) {
            throw e;
          }
          problems = List.of(e.getMessage());
        }
        if (!problems.isEmpty()) {
          throw new OpsException("CORRUPT", "integrity check of the backup failed (" + String.join("; ", problems)
              + "); the backup was not written. " + StoreIntegrity.remedy(dir));
        }
        problems = StoreIntegrity.metadataProblems(copy);
        if (!problems.isEmpty()) {
          throw new OpsException("CORRUPT", "the store has invalid metadata (" + String.join("; ", problems)
              + "); the backup was not written. " + StoreIntegrity.remedy(dir));
        }
        StoreIntegrity.HashReport hashes = StoreIntegrity.verifyHashes(copy, 10);
        if (!hashes.ok()) {
          throw new OpsException("CORRUPT", mismatch(hashes, "the store") + "; the backup was not written. "
              + "Those items are damaged in the live store too. " + StoreIntegrity.remedy(dir));
        }
        String relayPub = meta(copy, "relay_pubkey");
        receipt.put("epoch", meta(copy, "epoch"));
        receipt.put("relay_fingerprint", relayPub == null ? null : Fingerprint.ofB64(relayPub));
        receipt.put("schema_version", schemaVersion(copy));
        receipt.put("heartbeat", meta(copy, "heartbeat"));
        receipt.set("counts", counts(copy));
      }
      try {
        Files.createLink(target, partial); // atomic, and fails rather than overwrite
      } catch (FileAlreadyExistsException e) {
        throw new OpsException("EXISTS", target + " appeared meanwhile; backups never overwrite");
      } finally {
        Files.deleteIfExists(partial);
      }
      receipt.put("bytes", Files.size(target));
      receipt.put("sha256", sha256(target));
      receipt.put("restore", "mbxrelay restore " + target + " --store-dir " + dir.toAbsolutePath());
      try (Connection live = connect(source, 10_000)) {
        addOp(live, at, "backup", receipt);
      }
      return receipt;
    } catch (SQLException | IOException e) {
      try {
        Files.deleteIfExists(partial);
      } catch (IOException ignored) {
        // best effort
      }
      throw new OpsException("IO", "backup failed: " + e.getMessage(), e);
    } catch (OpsException e) {
      try {
        Files.deleteIfExists(partial);
      } catch (IOException ignored) {
        // best effort
      }
      throw e;
    }
  }

  /**
   * The automatic backup before a schema migration (issue 12 item 13): the reference relay and older binaries refuse
   * a store of a newer schema, so a migration is a one-way step; this copy of the store as it was lets an operator go
   * back (docs/wire-compatibility.md "Rolling back to the reference relay"). Made with SQLite's online backup API,
   * like {@code mbxrelay backup}, into {@code relay-v<from>-before-migration-<UTC time>.db} in the store directory
   * (0600, rollback-journal mode so it is one self-contained file), checked with {@code quick_check}, written to a
   * partial file first and linked into place, so a file under that name is always complete.
   *
   * @param src the writer connection, no transaction open
   * @param dir the store directory
   * @param fromVersion the schema version of the store as found
   * @param nowMs time for the name
   * @return the backup file
   * @throws SQLException when the backup or its check fails (the store is untouched; nothing was migrated)
   * @throws IOException when the file cannot be created or synced
   */
  static Path backupBeforeMigration(Connection src, Path dir, int fromVersion, long nowMs)
      throws SQLException, IOException {
    String stamp = java.time.format.DateTimeFormatter.ofPattern("yyyyMMdd'T'HHmmss'Z'")
        .withZone(java.time.ZoneOffset.UTC).format(java.time.Instant.ofEpochMilli(nowMs));
    Path target = dir.resolve("relay-v" + fromVersion + "-before-migration-" + stamp + ".db");
    Path partial = dir.resolve(target.getFileName() + ".partial");
    Files.deleteIfExists(partial); // a link there is removed, never followed
    Files.createFile(partial, PosixFilePermissions.asFileAttribute(StoreFiles.OWNER_FILE));
    try {
      onlineBackup(src, partial);
      try (Connection copy = connect(partial, 5000)) {
        journalDelete(copy);
        List<String> problems = StoreIntegrity.quickCheck(copy);
        if (!problems.isEmpty()) {
          throw new SQLException("the copy failed quick_check: " + String.join("; ", problems));
        }
        if (schemaVersion(copy) != fromVersion) {
          throw new SQLException("the copy has schema version " + schemaVersion(copy) + ", not " + fromVersion);
        }
      }
      try (java.nio.channels.FileChannel ch = java.nio.channels.FileChannel.open(partial,
          java.nio.file.StandardOpenOption.WRITE)) {
        ch.force(true);
      }
      Files.createLink(target, partial); // fails rather than overwrite
      try (java.nio.channels.FileChannel ch = java.nio.channels.FileChannel.open(dir,
          java.nio.file.StandardOpenOption.READ)) {
        ch.force(true);
      } catch (IOException | RuntimeException e) {
        // directory sync is not supported everywhere; the file itself is synced
      }
      return target;
    } finally {
      Files.deleteIfExists(partial);
    }
  }

  /**
   * SQLite's online backup API through the driver (issue 11 item 12: the path is passed as a value, never pasted into
   * SQL, so any file name works, spaces and quotes included).
   */
  private static void onlineBackup(Connection src, Path dest) throws SQLException {
    int rc = src.unwrap(org.sqlite.SQLiteConnection.class).getDatabase().backup("main", dest.toString(), null);
    if (rc != org.sqlite.core.Codes.SQLITE_OK) {
      throw new SQLException("SQLite backup to " + dest + " failed (result code " + rc + ")");
    }
  }

  private static String mismatch(StoreIntegrity.HashReport r, String where) {
    return where + " has " + r.mismatched() + " item" + (r.mismatched() == 1 ? "" : "s") + " whose wire bytes do not"
        + " match their wire_hash (" + String.join(", ", r.rows()) + (r.mismatched() > r.rows().size() ? ", …" : "")
        + ")";
  }

  private static ObjectNode counts(Connection c) throws SQLException {
    ObjectNode n = Json.MAPPER.createObjectNode();
    n.put("enrolments", scalar(c, "SELECT count(*) FROM enrolments WHERE revoked_at IS NULL"));
    n.put("revoked", scalar(c, "SELECT count(*) FROM enrolments WHERE revoked_at IS NOT NULL"));
    n.put("items", scalar(c, "SELECT count(*) FROM items"));
    n.put("bytes", scalar(c, "SELECT coalesce(sum(bytes), 0) FROM items"));
    n.put("dedup", scalar(c, "SELECT count(*) FROM dedup"));
    n.put("targets", scalar(c, "SELECT count(DISTINCT target_pubkey) FROM items"));
    return n;
  }

  private static String sha256(Path f) throws IOException {
    try (InputStream in = Files.newInputStream(f)) {
      MessageDigest md = MessageDigest.getInstance("SHA-256");
      byte[] buf = new byte[1 << 16];
      int n;
      while ((n = in.read(buf)) > 0) {
        md.update(buf, 0, n);
      }
      return HexFormat.of().formatHex(md.digest());
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  // ---- restore ----

  /**
   * Restores a backup (docs/protocol.md §5 "Ops", §7.5): refused while a relay holds the lock; keeps the live store as
   * {@code rollback/relay-<ts>.db}; carries into the restored copy every revocation and deny-list entry, newer sender lists, newer v1
   * ads and v2 ad records, higher seq floors and the ops log; rotates the epoch; heartbeat = now; records
   * {@code restored}/{@code restored_paths}; logs op {@code restore}; renames it over {@code relay.db}.
   *
   * @param dir store directory
   * @param file backup file
   * @param force proceed over a recent heartbeat in a lock-less dir or an unreadable current store
   * @param clock time source
   * @param lockHeld true when the caller already holds the store lock (restore at serve start)
   * @return the {@code relay-restore} receipt
   * @throws OpsException RELAY_RUNNING, RECENT_HEARTBEAT, NOT_A_STORE, SCHEMA, OTHER_RELAY, CURRENT_UNREADABLE, IO
   */
  public static ObjectNode restore(Path dir, Path file, boolean force, Clock clock, boolean lockHeld)
      throws OpsException {
    Path backup = file.toAbsolutePath();
    if (!Files.isRegularFile(backup)) {
      throw new OpsException("NOT_A_STORE", backup + " does not exist or is not a file");
    }
    boolean hadLockFile = Files.exists(dir.resolve(StoreLock.FILE));
    StoreLock lock = null;
    try {
      if (!lockHeld) {
        SqliteRelayStore.createStoreDir(dir);
        StoreFiles.secure(dir);
        lock = lockOrRefuse(dir);
      }
      return restoreLocked(dir, backup, force, clock, hadLockFile || lockHeld);
    } catch (StoreRefusedException e) {
      throw new OpsException("UNSAFE", e.getMessage(), e);
    } catch (StoreOpenException e) {
      throw new OpsException("IO", e.getMessage(), e);
    } finally {
      if (lock != null) {
        lock.close();
      }
    }
  }

  private static ObjectNode restoreLocked(Path dir, Path backup, boolean force, Clock clock, boolean lockAware)
      throws OpsException {
    long now = clock.millis();
    String at = IsoTime.format(now);
    Path live = db(dir);
    ObjectNode backupInfo = Json.MAPPER.createObjectNode();
    String backupRelay;
    try (Connection b = connect(backup, 5000)) {
      int v;
      try {
        v = schemaVersion(b);
      } catch (SQLException e) {
        throw new OpsException("NOT_A_STORE", backup + " is not a relay store backup");
      }
      if (v < 1) {
        throw new OpsException("NOT_A_STORE", backup + " is not a relay store backup");
      }
      if (v > RelayStore.SCHEMA_VERSION) {
        throw new OpsException("SCHEMA", backup + " has schema version " + v + ", newer than this binary supports ("
            + RelayStore.SCHEMA_VERSION + ")");
      }
      backupRelay = meta(b, "relay_pubkey");
      backupInfo.put("file", backup.toString()).put("sha256", sha256(backup)).put("bytes", Files.size(backup))
          .put("epoch", meta(b, "epoch")).put("schema_version", v).put("heartbeat", meta(b, "heartbeat"));
    } catch (SQLException | IOException e) {
      throw new OpsException("NOT_A_STORE", backup + " cannot be read as a relay store: " + e.getMessage(), e);
    }

    boolean currentExists = Files.isRegularFile(live);
    boolean currentReadable = false;
    String currentEpoch = null;
    String restoredPaths = null;
    long currentCommits = 0;
    if (currentExists) {
      try (Connection c = connect(live, 5000)) {
        checkSchema(c, live);
        List<String> damage = StoreIntegrity.quickCheck(c);
        if (!damage.isEmpty()) {
          throw new OpsException("NOT_A_STORE", live + " fails its integrity check (" + String.join("; ", damage) + ")");
        }
        String currentRelay = meta(c, "relay_pubkey");
        if (currentRelay != null && backupRelay != null && !currentRelay.equals(backupRelay)) {
          throw new OpsException("OTHER_RELAY", "the backup belongs to another relay key ("
              + Fingerprint.ofB64(backupRelay) + ") than this store (" + Fingerprint.ofB64(currentRelay) + ")");
        }
        currentEpoch = meta(c, "epoch");
        restoredPaths = meta(c, "restored_paths");
        currentCommits = CommitWatermark.storeCommits(c);
        String hb = meta(c, "heartbeat");
        if (!lockAware && !force && hb != null) {
          try {
            if (Math.abs(now - Long.parseLong(hb)) < LIVE_HEARTBEAT_MS) {
              throw new OpsException("RECENT_HEARTBEAT", "the store's heartbeat is under 90 s old and the dir has no"
                  + " relay.lock: a relay may be running; stop it or pass --force");
            }
          } catch (NumberFormatException ignored) {
            // unparsable heartbeat: treat as old
          }
        }
        try (Statement st = c.createStatement()) {
          st.execute("PRAGMA wal_checkpoint(TRUNCATE)");
        }
        currentReadable = true;
      } catch (OpsException e) {
        boolean unreadable = e.code().equals("NOT_A_STORE") || e.code().equals("SCHEMA");
        if (!unreadable) {
          throw e; // OTHER_RELAY, RECENT_HEARTBEAT
        }
        if (!force) {
          throw new OpsException("CURRENT_UNREADABLE", "the current store cannot be read (" + e.getMessage()
              + "); pass --force to replace it without carrying its state");
        }
      } catch (SQLException e) {
        if (!force) {
          throw new OpsException("CURRENT_UNREADABLE", "the current store cannot be read (" + e.getMessage()
              + "); pass --force to replace it without carrying its state", e);
        }
      }
    }

    Path restoring = dir.resolve("relay.db.restoring-" + ProcessHandle.current().pid());
    ObjectNode carried = Json.MAPPER.createObjectNode();
    long restoredCommits;
    String to = UUID.randomUUID().toString();
    String from = currentEpoch != null ? currentEpoch : backupInfo.path("epoch").asText(null);
    ObjectNode counts;
    try {
      Files.deleteIfExists(restoring);
      StoreFiles.copyOwnerOnly(backup, restoring); // 0600 whatever the backup's mode (issue 11 item 11)
      try (Connection r = connect(restoring, 5000); Statement st = r.createStatement()) {
        journalDelete(st.getConnection());
        verifyBackup(r, backup); // before anything is migrated, carried or swapped in (issue 10 items 1 and 6)
        int v = schemaVersion(r);
        st.execute("BEGIN IMMEDIATE");
        if (v < RelayStore.SCHEMA_VERSION) {
          Migrations.migrate(r, v);
          putMeta(r, "schema_version", Integer.toString(RelayStore.SCHEMA_VERSION));
        }
        if (currentReadable) {
          try (PreparedStatement attach = r.prepareStatement("ATTACH DATABASE ? AS cur")) {
            attach.setString(1, live.toAbsolutePath().toString());
            attach.execute();
          }
          carry(r, carried);
        }
        putMeta(r, "epoch", to);
        putMeta(r, "heartbeat", Long.toString(now));
        // above everything this dir ever committed: the replaced store, its watermark, the backup (issue 10 item 3)
        restoredCommits = Math.max(currentCommits, commitFloor(r, dir)) + 1;
        putMeta(r, CommitWatermark.META_KEY, Long.toString(restoredCommits));
        putMeta(r, "epoch_rotated", Json.stringify(Json.MAPPER.createObjectNode().put("from", from).put("to", to)
            .put("at", at).put("heartbeat", backupInfo.path("heartbeat").asText(null)).put("reason", "restore")));
        putMeta(r, "restored", Json.stringify(Json.MAPPER.createObjectNode().put("at", at)
            .put("file", backup.toString()).put("sha256", backupInfo.get("sha256").asText()).put("from", from)
            .put("to", to)));
        ObjectNode paths = restoredPaths == null ? Json.MAPPER.createObjectNode() : (ObjectNode) Json.parse(restoredPaths);
        paths.put(backup.toString(), at);
        putMeta(r, "restored_paths", Json.stringify(paths));
        counts = counts(r);
        ObjectNode receipt = receipt(dir, at, backupInfo, null, from, to, carried, counts, null);
        addOp(r, at, "restore", receipt);
        st.execute("COMMIT");
        if (currentReadable) {
          st.execute("DETACH DATABASE cur");
        }
      }
    } catch (SQLException | IOException | RuntimeException | OpsException e) {
      try {
        Files.deleteIfExists(restoring);
      } catch (IOException ignored) {
        // best effort
      }
      throw e instanceof OpsException oe ? oe : new OpsException("IO", "restore failed: " + e.getMessage(), e);
    }

    ObjectNode replaced = null;
    Path rollback = null;
    try {
      if (currentExists) {
        Path rollbackDir = StoreFiles.ownerOnlyDir(dir.resolve(StoreFiles.ROLLBACK_DIR)); // never a planted link
        rollback = rollbackDir.resolve("relay-" + at.replace(":", "").replace(".", "") + ".db");
        replaced = Json.MAPPER.createObjectNode().put("epoch", currentEpoch).put("rollback", rollback.toString())
            .put("sha256", sha256(live)).put("bytes", Files.size(live)).put("readable", currentReadable);
        // Crash-safe order: the rollback copy is a hard link first (relay.db stays in place), the side files of the
        // old store go with it (the checkpoint emptied the WAL; it must never sit beside another database), and only
        // then does one atomic rename replace relay.db. A crash at any point leaves a relay.db to serve.
        Files.createLink(rollback, live);
        for (String side : new String[] {"-wal", "-shm"}) {
          Path s = dir.resolve(SqliteSettings.DB_FILE + side);
          if (Files.exists(s)) {
            Files.move(s, rollbackDir.resolve(rollback.getFileName() + side));
          }
        }
      }
      Files.move(restoring, live, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    } catch (IOException e) {
      throw new OpsException("IO", "restore could not swap the store files: " + e.getMessage()
          + (rollback != null ? " (the previous store is at " + rollback + ")" : ""), e);
    }
    replaceWatermark(dir, to, restoredCommits, clock);
    ObjectNode done = receipt(dir, at, backupInfo, replaced, from, to, carried, counts, rollback);
    // The ops entry was written inside the restored copy before the swap; now that the rollback copy has its place,
    // record the final receipt so `mbxrelay log` shows where the replaced store went.
    try (Connection c = connect(live, 5000);
        PreparedStatement ps = c.prepareStatement(
            "UPDATE ops SET receipt=? WHERE id=(SELECT max(id) FROM ops WHERE op='restore')")) {
      ps.setString(1, Json.stringify(done));
      ps.executeUpdate();
    } catch (SQLException e) {
      // the restore itself is complete; the printed receipt still has the rollback path
    }
    return done;
  }

  /** {@code journal_mode=DELETE} in its own statement: the pragma answers a row, which would keep a reused statement busy. */
  private static void journalDelete(Connection c) throws SQLException {
    try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery("PRAGMA journal_mode=DELETE")) {
      rs.next();
    }
  }

  /** The backup copy passes integrity_check, its metadata validates and every item matches its wire_hash. */
  private static void verifyBackup(Connection r, Path backup) throws SQLException, OpsException {
    List<String> problems = new ArrayList<>();
    try {
      problems.addAll(StoreIntegrity.integrityCheck(r));
      if (problems.isEmpty()) {
        problems.addAll(StoreIntegrity.metadataProblems(r));
      }
      if (problems.isEmpty()) {
        StoreIntegrity.HashReport hashes = StoreIntegrity.verifyHashes(r, 10);
        if (!hashes.ok()) {
          problems.add(mismatch(hashes, "it"));
        }
      }
    } catch (SQLException e) {
      if (!StoreIntegrity.isCorruption(e)) {
        throw e;
      }
      problems.add(e.getMessage());
    }
    if (!problems.isEmpty()) {
      throw new OpsException("CORRUPT", "the backup " + backup + " fails its check (" + String.join("; ", problems)
          + "); nothing was changed. Restore an older backup (check it first: mbxrelay check --full --file FILE).");
    }
  }

  // ---- check ----

  /**
   * {@code mbxrelay check} (issue 10 item 2): checks a store or backup file without writing to it (read-only
   * connection, safe while the relay runs). Quick mode: {@code quick_check} and metadata; full mode:
   * {@code integrity_check}, metadata and every item's wire hash.
   *
   * @param db the database file ({@code <store-dir>/relay.db} or a backup file)
   * @param full run the full checks
   * @param clock time source
   * @return the {@code relay-check} receipt; {@code ok} tells the outcome
   * @throws OpsException NO_STORE when there is no file; IO when it cannot be read at all
   */
  public static ObjectNode check(Path db, boolean full, Clock clock) throws OpsException {
    if (!Files.isRegularFile(db)) {
      throw new OpsException("NO_STORE", "no store at " + db);
    }
    long start = System.nanoTime();
    ObjectNode receipt = Json.MAPPER.createObjectNode().put("v", 1).put("type", "relay-check")
        .put("at", IsoTime.format(clock.millis())).put("file", db.toAbsolutePath().toString())
        .put("mode", full ? "full" : "quick");
    List<String> integrity;
    List<String> metadata = List.of();
    StoreIntegrity.HashReport hashes = null;
    long storeCommits = -1;
    // the watermark first: read before the store's count, it can only be lower than that count on a live relay
    WatermarkRead mark = readWatermarkBeside(db);
    StoreIntegrity.prefetch(db);
    org.sqlite.SQLiteConfig ro = new org.sqlite.SQLiteConfig();
    ro.setReadOnly(true);
    ro.setBusyTimeout(10_000);
    try (Connection c = DriverManager.getConnection(SqliteSettings.url(db), ro.toProperties())) {
      integrity = full ? StoreIntegrity.integrityCheck(c) : StoreIntegrity.quickCheck(c);
      if (integrity.isEmpty()) {
        boolean hasMeta;
        try (Statement st = c.createStatement();
            ResultSet rs = st.executeQuery("SELECT 1 FROM sqlite_master WHERE type='table' AND name='meta'")) {
          hasMeta = rs.next();
        }
        metadata = hasMeta ? StoreIntegrity.metadataProblems(c) : List.of("not a relay store (no meta table)");
        if (full && metadata.isEmpty()) {
          hashes = StoreIntegrity.verifyHashes(c, 100);
        }
        storeCommits = CommitWatermark.storeCommits(c);
      }
    } catch (SQLException e) {
      if (!StoreIntegrity.isCorruption(e)) {
        throw new OpsException("IO", "cannot check " + db + ": " + e.getMessage(), e);
      }
      integrity = List.of(e.getMessage());
    }
    ObjectNode watermark = watermarkReport(mark, storeCommits);
    boolean behind = watermark != null && watermark.get("behind").asBoolean();
    boolean ok = integrity.isEmpty() && metadata.isEmpty() && (hashes == null || hashes.ok()) && !behind;
    receipt.put("ok", ok);
    ArrayNode ip = receipt.putObject("integrity").put("check", full ? "integrity_check" : "quick_check")
        .putArray("problems");
    integrity.forEach(ip::add);
    ArrayNode mp = receipt.putObject("metadata").putArray("problems");
    metadata.forEach(mp::add);
    if (hashes == null) {
      receipt.putNull("items");
    } else {
      ObjectNode items = receipt.putObject("items").put("checked", hashes.items()).put("bytes", hashes.bytes())
          .put("mismatched", hashes.mismatched());
      ArrayNode rows = items.putArray("rows");
      hashes.rows().forEach(rows::add);
    }
    receipt.set("watermark", watermark == null ? Json.MAPPER.nullNode() : watermark);
    receipt.put("took_ms", (System.nanoTime() - start) / 1_000_000);
    return receipt;
  }

  /**
   * The commit watermark beside a store's {@code relay.db} compared with its {@code meta.commits} (issue 10 item 3):
   * {@code {file, commits, epoch, at, store_commits, behind}}, with {@code damaged: true} for a file whose records do
   * not verify; null for a backup file, a store without a watermark, or a store that could not be read.
   */
  private static ObjectNode watermarkReport(WatermarkRead read, long storeCommits) {
    if (read == null || storeCommits < 0) {
      return null;
    }
    ObjectNode w = Json.MAPPER.createObjectNode().put("file", read.file().toString());
    if (read.mark() == null) {
      return w.put("damaged", true).put("store_commits", storeCommits).put("behind", true);
    }
    CommitWatermark.Mark m = read.mark();
    return w.put("commits", m.commits()).put("epoch", m.epoch()).put("at", IsoTime.format(m.atMs()))
        .put("store_commits", storeCommits).put("behind", m.commits() > storeCommits);
  }

  /** The watermark beside a store's relay.db: its newest record, or a null mark when the file is damaged. */
  private record WatermarkRead(Path file, CommitWatermark.Mark mark) {}

  private static WatermarkRead readWatermarkBeside(Path db) {
    Path dir = db.toAbsolutePath().getParent();
    if (dir == null || !db.getFileName().toString().equals(SqliteSettings.DB_FILE)
        || !Files.exists(dir.resolve(CommitWatermark.FILE), LinkOption.NOFOLLOW_LINKS)) {
      return null; // a backup file, or a store without a watermark
    }
    try {
      return new WatermarkRead(dir.resolve(CommitWatermark.FILE), CommitWatermark.read(dir).orElse(null));
    } catch (IOException | StoreRefusedException e) {
      return new WatermarkRead(dir.resolve(CommitWatermark.FILE), null);
    }
  }

  private static ObjectNode receipt(Path dir, String at, ObjectNode backupInfo, ObjectNode replaced, String from,
      String to, ObjectNode carried, ObjectNode counts, Path rollback) {
    ObjectNode r = Json.MAPPER.createObjectNode().put("v", 1).put("type", "relay-restore").put("at", at)
        .put("store", dir.toAbsolutePath().toString());
    r.set("backup", backupInfo);
    r.set("replaced", replaced == null ? Json.MAPPER.nullNode() : replaced);
    r.set("epoch", Json.MAPPER.createObjectNode().put("from", from).put("to", to));
    r.set("carried", carried);
    r.set("counts", counts);
    r.put("rollback", rollback == null ? null : rollback.toString());
    r.put("next", "start the relay: mbxrelay serve --store-dir " + dir.toAbsolutePath()
        + "; hosts re-enrol if they enrolled after the backup");
    return r;
  }

  /** Carries state that must never go back in time from the attached current store ({@code cur}). */
  private static void carry(Connection r, ObjectNode carried) throws SQLException {
    try (Statement st = r.createStatement()) {
      int revoked = st.executeUpdate("UPDATE enrolments SET revoked_at = (SELECT c.revoked_at FROM cur.enrolments c"
          + " WHERE c.host_pubkey = enrolments.host_pubkey) WHERE revoked_at IS NULL AND EXISTS (SELECT 1 FROM"
          + " cur.enrolments c WHERE c.host_pubkey = enrolments.host_pubkey AND c.revoked_at IS NOT NULL)");
      revoked += st.executeUpdate("INSERT OR IGNORE INTO enrolments(host_pubkey, host_name, owner_fp, account,"
          + " authorized_by, enrolled_at, revoked_at) SELECT host_pubkey, host_name, owner_fp, account,"
          + " authorized_by, enrolled_at, revoked_at FROM cur.enrolments WHERE revoked_at IS NOT NULL");
      carried.put("revocations", revoked);
      carried.put("sender_lists", st.executeUpdate("INSERT INTO sender_lists(target_pubkey, senders, iat, record, sig)"
          + " SELECT target_pubkey, senders, iat, record, sig FROM cur.sender_lists WHERE true"
          + " ON CONFLICT(target_pubkey) DO UPDATE SET senders = excluded.senders, iat = excluded.iat,"
          + " record = excluded.record, sig = excluded.sig"
          + " WHERE julianday(excluded.iat) > julianday(sender_lists.iat)")); // as times: fraction digits vary
      carried.put("enc_ads", st.executeUpdate("INSERT INTO enc_ads(host_pubkey, host_name, enc_pub, sig, at)"
          + " SELECT host_pubkey, host_name, enc_pub, sig, at FROM cur.enc_ads WHERE true"
          + " ON CONFLICT(host_pubkey) DO UPDATE SET host_name = excluded.host_name, enc_pub = excluded.enc_pub,"
          + " sig = excluded.sig, at = excluded.at WHERE excluded.at > enc_ads.at"));
      carried.put("enc_ad_records", st.executeUpdate("INSERT INTO enc_ad_records(host_pubkey, record, sig, at)"
          + " SELECT host_pubkey, record, sig, at FROM cur.enc_ad_records WHERE true"
          + " ON CONFLICT(host_pubkey) DO UPDATE SET record = excluded.record, sig = excluded.sig, at = excluded.at"
          + " WHERE excluded.at > enc_ad_records.at"));
      // a target's next seq: its floor, one past its ack or one past its highest queued seq, the largest (schema v5)
      carried.put("seq_floors", st.executeUpdate("INSERT INTO seqs(target_pubkey, next_seq)"
          + " SELECT target_pubkey, max(n) FROM (SELECT target_pubkey, next_seq AS n FROM cur.seqs UNION ALL"
          + " SELECT target_pubkey, acked_through + 1 FROM cur.acked UNION ALL"
          + " SELECT target_pubkey, max(seq) + 1 FROM cur.items GROUP BY target_pubkey) GROUP BY target_pubkey"
          + " ON CONFLICT(target_pubkey) DO UPDATE SET next_seq = excluded.next_seq"
          + " WHERE excluded.next_seq > seqs.next_seq"));
      // The deny list is the operator's latest word in both directions (entries removed since the backup stay removed).
      st.executeUpdate("DELETE FROM deny_list");
      carried.put("deny_entries", st.executeUpdate("INSERT INTO deny_list SELECT * FROM cur.deny_list"));
      st.executeUpdate("DELETE FROM ops");
      st.executeUpdate("INSERT INTO ops(id, at, op, receipt) SELECT id, at, op, receipt FROM cur.ops");
    }
  }

  /**
   * The restore paths already applied to the store (docs/protocol.md §5 {@code restored_paths}), for
   * {@code MBX_RELAY_RESTORE_FROM} "once per path".
   *
   * @param dir store directory
   * @param backup backup path
   * @return true when that path was restored into this store before
   */
  public static boolean alreadyRestored(Path dir, Path backup) {
    if (!Files.isRegularFile(db(dir))) {
      return false;
    }
    try (Connection c = connect(db(dir), 5000)) {
      String paths = meta(c, "restored_paths");
      return paths != null && Json.parse(paths).has(backup.toAbsolutePath().toString());
    } catch (SQLException | RuntimeException e) {
      return false;
    }
  }

  /**
   * The store's clock watermark: its last heartbeat (docs/protocol.md §5 {@code meta.heartbeat}, written with the guarded
   * store clock), read without writing anything (read-only connection, no file created), for the
   * {@link io.mbxrelay.store.guard.ClockGuard} built before the store opens.
   *
   * @param dir store directory
   * @return ms since the epoch; empty when there is no store yet or the value cannot be read (the open then decides)
   */
  public static java.util.OptionalLong watermark(Path dir) {
    Path db = db(dir);
    try {
      if (!Files.isRegularFile(db, LinkOption.NOFOLLOW_LINKS) || Files.size(db) == 0) {
        return java.util.OptionalLong.empty();
      }
    } catch (IOException e) {
      return java.util.OptionalLong.empty();
    }
    org.sqlite.SQLiteConfig ro = new org.sqlite.SQLiteConfig();
    ro.setReadOnly(true);
    ro.setBusyTimeout(5000);
    try (Connection c = DriverManager.getConnection(SqliteSettings.url(db), ro.toProperties())) {
      String hb = schemaVersion(c) < 1 ? null : meta(c, "heartbeat");
      return hb == null || !hb.matches("[0-9]{1,15}") ? java.util.OptionalLong.empty()
          : java.util.OptionalLong.of(Long.parseLong(hb));
    } catch (SQLException | RuntimeException e) {
      return java.util.OptionalLong.empty();
    }
  }

  // ---- log ----

  /**
   * The last ops entries, oldest first (docs/protocol.md §5 "ops", last 1,000 kept).
   *
   * @param dir store directory
   * @param limit 1..1000
   * @return entries {@code {id, at, op, receipt}}
   * @throws OpsException NO_STORE or IO
   */
  public static List<ObjectNode> log(Path dir, int limit) throws OpsException {
    if (!Files.isRegularFile(db(dir))) {
      throw new OpsException("NO_STORE", "no store at " + db(dir));
    }
    List<ObjectNode> out = new ArrayList<>();
    try (Connection c = connect(db(dir), 5000);
        PreparedStatement ps = c.prepareStatement("SELECT id, at, op, receipt FROM ops ORDER BY id DESC LIMIT ?")) {
      ps.setInt(1, limit);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          ObjectNode n = Json.MAPPER.createObjectNode().put("id", rs.getLong(1)).put("at", rs.getString(2))
              .put("op", rs.getString(3));
          JsonNode receipt;
          try {
            receipt = Json.parse(rs.getString(4));
          } catch (IllegalArgumentException e) {
            receipt = Json.MAPPER.getNodeFactory().textNode(rs.getString(4));
          }
          n.set("receipt", receipt);
          out.add(0, n);
        }
      }
    } catch (SQLException e) {
      throw new OpsException("IO", "cannot read the ops log: " + e.getMessage(), e);
    }
    return out;
  }

  /** JSON array helper for CLI output. */
  public static ArrayNode array(List<ObjectNode> entries) {
    ArrayNode a = Json.MAPPER.createArrayNode();
    entries.forEach(a::add);
    return a;
  }
}
