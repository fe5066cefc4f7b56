package io.mbxrelay.store.sqlite;

import io.mbxrelay.config.RelayConfig;
import io.mbxrelay.store.AckOutcome;
import io.mbxrelay.store.EnrolOutcome;
import io.mbxrelay.store.Enrolment;
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
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.UUID;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.sqlite.SQLiteErrorCode;
import org.sqlite.SQLiteException;

/**
 * SQLite implementation of {@link RelayStore} over exactly one write connection (seed 000 §2, wire.md §5).
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

  /** What {@link #open} did to the epoch, for the startup log line. */
  public record OpenReport(boolean created, String epochRotatedReason, String previousEpoch) {}

  private OpenReport openReport;
  private final java.util.Map<String, PreparedStatement> statements = new java.util.HashMap<>();

  /**
   * A cached prepared statement for {@code sql}. The driver does not cache statements and the writer runs the same
   * dozen statements for every item, so preparing once per connection saves a parse per statement. The returned
   * object is a view whose {@code close()} only clears parameters, so callers keep using try-with-resources.
   */
  private PreparedStatement prepared(String sql) throws SQLException {
    PreparedStatement real = statements.get(sql);
    if (real == null || real.isClosed()) {
      real = conn.prepareStatement(sql);
      statements.put(sql, real);
    }
    PreparedStatement target = real;
    return (PreparedStatement) java.lang.reflect.Proxy.newProxyInstance(PreparedStatement.class.getClassLoader(),
        new Class<?>[] {PreparedStatement.class}, (proxy, method, args) -> {
          if (method.getName().equals("close") && method.getParameterCount() == 0) {
            target.clearParameters();
            return null;
          }
          try {
            return method.invoke(target, args);
          } catch (java.lang.reflect.InvocationTargetException e) {
            throw e.getCause();
          }
        });
  }

  /**
   * Opens (creating or migrating when needed) the store in {@code storeDir}.
   *
   * @param storeDir the store directory (created 0700 when missing)
   * @param relayPubkey the relay's public key; a new store pins it, an existing one must match
   * @param clock time source (tests inject one)
   * @param limits protocol limits (quotas, retention, caps)
   * @param busyTimeoutMs SQLite busy timeout
   * @param heartbeatStaleMs a stored heartbeat further than this from now rotates the epoch (wire.md §5); 0 = never
   * @return the open store
   * @throws StoreOpenException newer schema, another relay key, not a store, or unreadable
   */
  public static SqliteRelayStore open(Path storeDir, String relayPubkey, Clock clock, RelayConfig.Limits limits,
      long busyTimeoutMs, long heartbeatStaleMs) throws StoreOpenException {
    Objects.requireNonNull(relayPubkey);
    createStoreDir(storeDir);
    Path file = storeDir.resolve(SqliteSettings.DB_FILE);
    StoreFiles.prepareDatabase(file); // no links, no empty relay.db, a new one 0600 (issue 10 item 4, 11 items 11-12)
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
      }
      StoreIntegrity.requireQuickCheck(conn, file); // a damaged store is refused, never served (issue 10 item 2)
      SqliteRelayStore store = new SqliteRelayStore(file, conn, clock, limits, relayPubkey, null);
      store.openReport = store.initialise(heartbeatStaleMs);
      return store;
    } catch (SQLException e) {
      closeQuietly(conn);
      if (e instanceof SQLiteException se && se.getResultCode() == SQLiteErrorCode.SQLITE_NOTADB) {
        throw new StoreRefusedException(file + " is not a relay store (not an SQLite database): "
            + StoreIntegrity.remedy(file.getParent()), e);
      }
      throw new StoreOpenException("cannot open the store " + file + ": " + e.getMessage(), e);
    } catch (StoreOpenException | RuntimeException e) {
      closeQuietly(conn);
      throw e;
    }
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
      throw new StoreOpenException("cannot create the store directory " + dir + ": " + e.getMessage(), e);
    }
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
   * Installs the COMMIT timer: called on the writer thread with the duration in ns of every COMMIT statement that
   * returned (the WAL fsync under {@code synchronous=FULL}), so metrics can tell fsync time from statement time.
   *
   * @param timer receives the COMMIT duration, ns
   */
  public void commitTimer(java.util.function.LongConsumer timer) {
    this.commitTimer = Objects.requireNonNull(timer);
  }

  private OpenReport initialise(long heartbeatStaleMs) throws SQLException, StoreOpenException {
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
          // wire.md §5 expiry_from: history of unknown origin never expires; only items pushed from now on do.
          try (Statement st = conn.createStatement()) {
            st.executeUpdate("UPDATE items SET expires_at = NULL WHERE kind <> 'expired'");
          }
          putMeta("expiry_from", nowIso);
        }
        Optional<String> hb = meta("heartbeat");
        if (hb.isPresent() && heartbeatStaleMs > 0) {
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
      ensureUsage();
      putMeta("heartbeat", Long.toString(now));
      this.epoch = meta("epoch").orElseThrow();
      try (Statement st = conn.createStatement()) {
        st.execute("COMMIT");
      }
      ok = true;
      return new OpenReport(created, rotatedReason, previous);
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

  private void ensureUsage() throws SQLException {
    boolean existed = tableExists("queue_usage");
    try (Statement st = conn.createStatement()) {
      for (String ddl : Schema.USAGE) {
        st.execute(ddl);
      }
      if (!existed) {
        for (String sql : Schema.USAGE_BACKFILL) {
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

  @Override
  public List<CommandResult> execute(List<? extends StoreCommand<?>> commands) throws StoreException {
    if (commands.isEmpty()) {
      return List.of();
    }
    try (Statement st = conn.createStatement()) {
      st.execute("BEGIN IMMEDIATE");
    } catch (SQLException e) {
      throw classify("begin failed", e);
    }
    List<CommandResult> results = new ArrayList<>(commands.size());
    try {
      for (StoreCommand<?> command : commands) {
        results.add(runInSavepoint(command));
      }
      hook.at(commands, false);
      try (Statement st = conn.createStatement()) {
        long start = System.nanoTime();
        st.execute("COMMIT");
        commitTimer.accept(System.nanoTime() - start);
      }
    } catch (SQLException | RuntimeException e) {
      rollbackQuietly();
      throw e instanceof SQLException se ? classify("commit failed", se)
          : new StoreException(StoreException.Kind.INTERNAL, "transaction failed", e);
    } catch (Error e) {
      // An Error (OutOfMemoryError, StackOverflowError, ...) must not leave the only write connection inside an open
      // transaction: roll back, then let it propagate (the writer fails the batch and stops).
      rollbackQuietly();
      throw e;
    }
    hook.at(commands, true);
    return results;
  }

  private CommandResult runInSavepoint(StoreCommand<?> command) throws SQLException {
    try (Statement st = conn.createStatement()) {
      st.execute("SAVEPOINT cmd");
    }
    try {
      Object value;
      try {
        value = run(command);
      } catch (V1Rejected r) {
        rollbackTo();
        return new CommandResult(Optional.of(r.getMessage()), null);
      }
      if (value instanceof PushOutcome.Rejected
          || (command instanceof StoreCommand.PushV1 && ((Optional<?>) value).isPresent())) {
        rollbackTo();
      } else {
        release();
      }
      return new CommandResult(value, null);
    } catch (SQLException e) {
      StoreException se = classify("command failed", e);
      if (se.kind() != StoreException.Kind.INTERNAL) {
        throw e; // I/O or corruption: the whole transaction is suspect
      }
      rollbackTo();
      return new CommandResult(null, se);
    } catch (RuntimeException e) {
      rollbackTo();
      LOG.error("store command failed [command: {}]", command.getClass().getSimpleName(), e);
      return new CommandResult(null, new StoreException(StoreException.Kind.INTERNAL, "command failed", e));
    }
  }

  private void rollbackTo() throws SQLException {
    try (Statement st = conn.createStatement()) {
      st.execute("ROLLBACK TO cmd");
      st.execute("RELEASE cmd");
    }
  }

  private void release() throws SQLException {
    try (Statement st = conn.createStatement()) {
      st.execute("RELEASE cmd");
    }
  }

  private void rollbackQuietly() {
    try (Statement st = conn.createStatement()) {
      st.execute("ROLLBACK");
    } catch (SQLException ignored) {
      // no transaction open any more
    }
  }

  private Object run(StoreCommand<?> command) throws SQLException {
    if (command instanceof StoreCommand.Push p) {
      return push(p);
    } else if (command instanceof StoreCommand.Ack a) {
      return ack(a);
    } else if (command instanceof StoreCommand.Enrol e) {
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
    } else if (command instanceof StoreCommand.Probe) {
      // A real page write (same value) so a read-only or full store fails the probe, not just a read.
      try (Statement st = conn.createStatement()) {
        return st.executeUpdate("UPDATE meta SET v = v WHERE k = 'schema_version'") == 1;
      }
    }
    Object trustResult = trust.run(command); // allowlist, enc-key ads, rotation, deny list (TrustCommands)
    if (trustResult != null) {
      return trustResult;
    }
    throw new IllegalArgumentException("unknown command " + command.getClass().getName());
  }

  // ---- push (wire.md §3 push v2 steps 5-6) ----

  private PushOutcome push(StoreCommand.Push p) throws SQLException {
    for (StoreCommand.Target t : p.targets()) {
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
    }
    long now = clock.millis();
    String nowIso = IsoTime.format(now);
    String expiresAt = IsoTime.format(now + limits.retentionMs());
    boolean fresh = false;
    String earliest = null;
    List<PushOutcome.TargetSeq> out = new ArrayList<>(p.targets().size());
    for (StoreCommand.Target t : p.targets()) {
      DedupRow row = dedupRow(p.senderPubkey(), p.itemId(), t.hostPubkey());
      if (row != null) {
        if (!row.wireHash.equals(t.wireHash())) {
          return new PushOutcome.Rejected("conflict");
        }
        out.add(new PushOutcome.TargetSeq(t.hostPubkey(), row.seq, row.wireHash));
        if (earliest == null || row.acceptedAt.compareTo(earliest) < 0) {
          earliest = row.acceptedAt;
        }
        continue;
      }
      String quota = quotaFailure(p.senderPubkey(), t.hostPubkey(), t.wire().length);
      if (quota != null) {
        return new PushOutcome.Rejected("quota:" + quota);
      }
      long seq = allocateSeq(t.hostPubkey(), now);
      insertItem(t.hostPubkey(), seq, p.kind(), p.itemId(), p.senderPubkey(), p.senderHost(), t.wire(), t.wireHash(),
          nowIso, expiresAt);
      insertDedup(p.senderPubkey(), p.itemId(), t.hostPubkey(), t.wireHash(), seq, nowIso);
      fresh = true;
      out.add(new PushOutcome.TargetSeq(t.hostPubkey(), seq, t.wireHash()));
    }
    return new PushOutcome.Stored(fresh, out, fresh ? nowIso : earliest, epoch);
  }

  private record DedupRow(String wireHash, long seq, String acceptedAt) {}

  private DedupRow dedupRow(String sender, String itemId, String target) throws SQLException {
    try (PreparedStatement ps = prepared(
        "SELECT wire_hash, seq, accepted_at FROM dedup WHERE sender_pubkey=? AND item_id=? AND target_pubkey=?")) {
      ps.setString(1, sender);
      ps.setString(2, itemId);
      ps.setString(3, target);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() ? new DedupRow(rs.getString(1), rs.getLong(2), rs.getString(3)) : null;
      }
    }
  }

  private boolean senderAccepted(String target, String sender) throws SQLException {
    try (PreparedStatement ps = prepared(
        "SELECT EXISTS(SELECT 1 FROM json_each(senders) WHERE value = ?) FROM sender_lists WHERE target_pubkey=?")) {
      ps.setString(1, sender);
      ps.setString(2, target);
      try (ResultSet rs = ps.executeQuery()) {
        return !rs.next() || rs.getInt(1) == 1;
      }
    }
  }

  /** Quota checks in the order and with the texts of wire.md §3 "Quota messages"; null when within quota. */
  private String quotaFailure(String sender, String target, long bytes) throws SQLException {
    Enrolment t = enrolmentRow(target).orElseThrow();
    String name = t.hostName();
    long[] q = sums("SELECT coalesce(sum(items), 0), coalesce(sum(bytes), 0) FROM queue_usage WHERE target_pubkey=?",
        target);
    if (q[0] + 1 > limits.maxQueueItems()) {
      return "queue depth exceeded for " + name;
    }
    if (q[1] + bytes > limits.maxQueueBytes()) {
      return "queue bytes exceeded for " + name;
    }
    long[] s = sums("SELECT coalesce(sum(items), 0), coalesce(sum(bytes), 0) FROM sender_usage"
        + " WHERE sender_pubkey=? AND target_pubkey=?", sender, target);
    if (s[0] + 1 > limits.maxSenderItems() || s[1] + bytes > limits.maxSenderBytes()) {
      return "sender share exceeded for " + name;
    }
    if (t.account() != null) {
      long[] o = sums("SELECT coalesce(sum(q.items), 0), coalesce(sum(q.bytes), 0) FROM enrolments e JOIN queue_usage q"
          + " ON q.target_pubkey = e.host_pubkey WHERE e.account=? AND e.revoked_at IS NULL", t.account());
      if (o[0] + 1 > limits.maxOwnerItems()) {
        return "owner queue depth exceeded for " + name;
      }
      if (o[1] + bytes > limits.maxOwnerBytes()) {
        return "owner queue bytes exceeded for " + name;
      }
    }
    return null;
  }

  private long[] sums(String sql, String... args) throws SQLException {
    try (PreparedStatement ps = prepared(sql)) {
      for (int i = 0; i < args.length; i++) {
        ps.setString(i + 1, args[i]);
      }
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return new long[] {rs.getLong(1), rs.getLong(2)};
      }
    }
  }

  /** wire.md §5 "Seq allocation": {@code cur = max(next_seq or 1, now_ms)}; {@code next_seq = cur + 1}. */
  private long allocateSeq(String target, long nowMs) throws SQLException {
    long next = 1;
    try (PreparedStatement ps = prepared("SELECT next_seq FROM seqs WHERE target_pubkey=?")) {
      ps.setString(1, target);
      try (ResultSet rs = ps.executeQuery()) {
        if (rs.next()) {
          next = rs.getLong(1);
        }
      }
    }
    long cur = Math.max(next, nowMs);
    try (PreparedStatement ps = prepared("INSERT INTO seqs(target_pubkey, next_seq) VALUES(?, ?)"
        + " ON CONFLICT(target_pubkey) DO UPDATE SET next_seq = excluded.next_seq")) {
      ps.setString(1, target);
      ps.setLong(2, cur + 1);
      ps.executeUpdate();
    }
    return cur;
  }

  private void insertItem(String target, long seq, String kind, String itemId, String sender, String senderHost,
      byte[] wire, String wireHash, String nowIso, String expiresAt) throws SQLException {
    try (PreparedStatement ps = prepared("INSERT INTO items(target_pubkey, seq, kind, item_id,"
        + " sender_pubkey, sender_host, wire, wire_hash, bytes, accepted_at, expires_at)"
        + " VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")) {
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
  }

  private void insertDedup(String sender, String itemId, String target, String wireHash, long seq, String at)
      throws SQLException {
    try (PreparedStatement ps = prepared("INSERT INTO dedup(sender_pubkey, item_id, target_pubkey, wire_hash, seq,"
        + " accepted_at) VALUES(?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING")) {
      ps.setString(1, sender);
      ps.setString(2, itemId);
      ps.setString(3, target);
      ps.setString(4, wireHash);
      ps.setLong(5, seq);
      ps.setString(6, at);
      ps.executeUpdate();
    }
  }

  // ---- v1 compatibility (wire.md §3 "v1 endpoints") ----

  /** Empty when stored (or already stored), else the error text; any partial write is rolled back. */
  private Optional<String> pushV1(StoreCommand.PushV1 p) throws SQLException {
    for (StoreCommand.V1Target t : p.targets()) {
      // The name was resolved on a read snapshot; a rotation, deny or revocation may have committed since.
      Optional<Enrolment> e = enrolmentRow(t.hostPubkey());
      if (e.isEmpty() || !e.get().live()) {
        return Optional.of("recipient host not enrolled: " + t.name());
      }
      if (!senderAccepted(t.hostPubkey(), p.senderPubkey())) {
        return Optional.of("sender not accepted by " + t.name());
      }
    }
    if (p.precheckFailure() != null) {
      return Optional.of(p.precheckFailure());
    }
    List<StoreCommand.V1Target> missing = new ArrayList<>();
    for (StoreCommand.V1Target t : p.targets()) {
      if (dedupRow(p.senderPubkey(), p.envelopeId(), t.hostPubkey()) == null) {
        missing.add(t);
      }
    }
    long now = clock.millis();
    String nowIso = IsoTime.format(now);
    for (StoreCommand.V1Target t : missing) {
      String quota = quotaFailure(p.senderPubkey(), t.hostPubkey(), p.wire().length);
      if (quota != null) {
        throw new V1Rejected(quota);
      }
      long seq = allocateSeq(t.hostPubkey(), now);
      insertItem(t.hostPubkey(), seq, "envelope", p.envelopeId(), p.senderPubkey(), p.senderHost(), p.wire(),
          p.wireHash(), nowIso, null);
      insertDedup(p.senderPubkey(), p.envelopeId(), t.hostPubkey(), p.wireHash(), seq, nowIso);
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
    try (PreparedStatement ps = prepared("DELETE FROM items WHERE target_pubkey=? AND seq<=?")) {
      ps.setString(1, a.targetPubkey());
      ps.setLong(2, cursor);
      ps.executeUpdate();
    }
    try (PreparedStatement ps = prepared("INSERT INTO acked(target_pubkey, acked_through) VALUES(?, ?)"
        + " ON CONFLICT(target_pubkey) DO UPDATE SET acked_through = max(acked_through, excluded.acked_through)")) {
      ps.setString(1, a.targetPubkey());
      ps.setLong(2, cursor);
      ps.executeUpdate();
    }
    return cursor;
  }

  // ---- expiry sweep (seed 000 §6, wire.md §4.10, §5 "Sweep") ----

  private record Expiring(String target, long seq, String kind, String itemId, String sender, long bytes,
      String acceptedAt) {}

  private SweepCounts sweepBatch(StoreCommand.SweepBatch sb) throws SQLException {
    String at = IsoTime.format(sb.nowMs());
    List<Expiring> rows = new ArrayList<>();
    try (PreparedStatement ps = prepared("SELECT target_pubkey, seq, kind, item_id, sender_pubkey, bytes,"
        + " accepted_at FROM items WHERE expires_at IS NOT NULL AND expires_at <= ?"
        + " ORDER BY expires_at, target_pubkey, seq LIMIT ?")) {
      ps.setString(1, at);
      ps.setInt(2, sb.maxRows());
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          rows.add(new Expiring(rs.getString(1), rs.getLong(2), rs.getString(3), rs.getString(4), rs.getString(5),
              rs.getLong(6), rs.getString(7)));
        }
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
    for (Expiring r : rows) {
      try (PreparedStatement ps = prepared("DELETE FROM items WHERE target_pubkey=? AND seq=?")) {
        ps.setString(1, r.target);
        ps.setLong(2, r.seq);
        ps.executeUpdate();
      }
      freed += r.bytes;
      switch (r.kind) {
        case "envelope" -> envelopes++;
        case "receipt" -> receipts++;
        default -> expired++;
      }
      if (!r.kind.equals("envelope")) {
        continue; // receipts are advisory and notices never beget notices (seed 000 §6)
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
      long[] q = sums("SELECT coalesce(sum(items), 0), coalesce(sum(bytes), 0) FROM queue_usage WHERE target_pubkey=?",
          r.sender);
      if (q[0] + 1 > limits.maxQueueItems() || q[1] + wire.length > limits.maxQueueBytes()) {
        overCap++;
        continue;
      }
      String hash = io.mbxrelay.wire.Hashes.sha256Hex(wire);
      long seq = allocateSeq(r.sender, sb.nowMs());
      insertItem(r.sender, seq, "expired", noticeId, relayPubkey, "relay", wire, hash, at, expiresAt);
      insertDedup(relayPubkey, noticeId, r.sender, hash, seq, at);
      notices++;
    }
    return new SweepCounts(rows.size(), envelopes, receipts, expired, notices, notEnrolled, overCap, freed);
  }

  private int pruneDedup(StoreCommand.PruneDedup pd) throws SQLException {
    try (PreparedStatement ps = prepared("DELETE FROM dedup WHERE rowid IN (SELECT d.rowid FROM dedup d"
        + " WHERE d.accepted_at < ? AND NOT EXISTS (SELECT 1 FROM items i WHERE i.target_pubkey = d.target_pubkey"
        + " AND i.seq = d.seq) LIMIT ?)")) {
      ps.setString(1, pd.beforeIso());
      ps.setInt(2, pd.maxRows());
      return ps.executeUpdate();
    }
  }

  // ---- ack (wire.md §3 ack v2) ----

  private AckOutcome ack(StoreCommand.Ack a) throws SQLException {
    long head = head(a.targetPubkey());
    if (!epoch.equals(a.epoch())) {
      return new AckOutcome.EpochChanged(epoch, head);
    }
    if (a.through().isEmpty() || a.through().getAsLong() < 0 || a.through().getAsLong() > head) {
      return new AckOutcome.BadAck(epoch, head);
    }
    long through = a.through().getAsLong();
    int deleted;
    try (PreparedStatement ps = prepared("DELETE FROM items WHERE target_pubkey=? AND seq<=?")) {
      ps.setString(1, a.targetPubkey());
      ps.setLong(2, through);
      deleted = ps.executeUpdate();
    }
    long acked;
    try (PreparedStatement ps = prepared("INSERT INTO acked(target_pubkey, acked_through) VALUES(?, ?)"
        + " ON CONFLICT(target_pubkey) DO UPDATE SET acked_through = max(acked_through, excluded.acked_through)"
        + " RETURNING acked_through")) {
      ps.setString(1, a.targetPubkey());
      ps.setLong(2, through);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        acked = rs.getLong(1);
      }
    }
    return new AckOutcome.Done(acked, deleted, head);
  }

  private long head(String target) throws SQLException {
    try (PreparedStatement ps = prepared("SELECT next_seq FROM seqs WHERE target_pubkey=?")) {
      ps.setString(1, target);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() ? rs.getLong(1) - 1 : 0;
      }
    }
  }

  // ---- enrol (wire.md §4.1, the stored part) ----

  private EnrolOutcome enrol(StoreCommand.Enrol e) throws SQLException {
    Optional<Enrolment> existing = enrolmentRow(e.hostPubkey());
    if (existing.isPresent() && !existing.get().live()) {
      return EnrolOutcome.REVOKED;
    }
    if (trust.denied(e.hostPubkey(), e.clientId())) {
      return EnrolOutcome.DENIED;
    }
    if (existing.isEmpty()) {
      long live = sums("SELECT count(*), 0 FROM enrolments WHERE revoked_at IS NULL")[0];
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
      try (PreparedStatement ps = prepared("SELECT 1 FROM enrolments WHERE account=?"
          + " AND lower(host_name)=lower(?) AND revoked_at IS NULL AND host_pubkey<>?")) {
        ps.setString(1, account);
        ps.setString(2, e.hostName());
        ps.setString(3, e.hostPubkey());
        try (ResultSet rs = ps.executeQuery()) {
          if (rs.next()) {
            return EnrolOutcome.NAME_TAKEN;
          }
        }
      }
    }
    try (PreparedStatement ps = prepared("INSERT INTO enrolments(host_pubkey, host_name, owner_fp,"
        + " account, authorized_by, enrolled_at, revoked_at) VALUES(?, ?, ?, ?, ?, ?, NULL)"
        + " ON CONFLICT(host_pubkey) DO UPDATE SET host_name=excluded.host_name, owner_fp=excluded.owner_fp,"
        + " account=excluded.account, authorized_by=excluded.authorized_by, enrolled_at=excluded.enrolled_at")) {
      ps.setString(1, e.hostPubkey());
      ps.setString(2, e.hostName());
      ps.setString(3, e.ownerFp());
      ps.setString(4, account);
      ps.setString(5, authorizedBy);
      ps.setString(6, IsoTime.format(clock.millis()));
      ps.executeUpdate();
    }
    trust.recordClient(e.hostPubkey(), e.clientId(), e.org());
    return EnrolOutcome.OK;
  }

  // ---- reads on the writer connection ----

  @Override
  public Optional<Enrolment> enrolment(String hostPubkey) throws StoreException {
    try {
      return enrolmentRow(hostPubkey);
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

  private Optional<Enrolment> enrolmentRow(String key) throws SQLException {
    try (PreparedStatement ps = prepared("SELECT host_pubkey, host_name, owner_fp, account,"
        + " authorized_by, enrolled_at, revoked_at FROM enrolments WHERE host_pubkey=?")) {
      ps.setString(1, key);
      try (ResultSet rs = ps.executeQuery()) {
        if (!rs.next()) {
          return Optional.empty();
        }
        return Optional.of(new Enrolment(rs.getString(1), rs.getString(2), rs.getString(3), rs.getString(4),
            rs.getString(5), rs.getString(6), rs.getString(7)));
      }
    }
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
    if (e instanceof SQLiteException se) {
      SQLiteErrorCode code = se.getResultCode();
      String name = code == null ? "" : code.name();
      if (name.startsWith("SQLITE_CORRUPT") || name.startsWith("SQLITE_NOTADB")) {
        kind = StoreException.Kind.CORRUPT;
      } else if (name.startsWith("SQLITE_FULL") || name.startsWith("SQLITE_IOERR") || name.startsWith("SQLITE_BUSY")
          || name.startsWith("SQLITE_READONLY") || name.startsWith("SQLITE_CANTOPEN")
          || name.startsWith("SQLITE_LOCKED") || name.startsWith("SQLITE_PROTOCOL")) {
        kind = StoreException.Kind.UNAVAILABLE;
      }
    }
    return new StoreException(kind, what + ": " + (e.getMessage() == null ? "" : e.getMessage()), e);
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
    try {
      try (Statement st = conn.createStatement()) {
        st.execute("PRAGMA wal_checkpoint(TRUNCATE)");
      }
    } catch (SQLException e) {
      LOG.debug("checkpoint at close failed", e);
    }
    closeQuietly(conn);
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
