package io.mbxrelay.store.sqlite;

import io.mbxrelay.store.model.Enrolment;
import io.mbxrelay.store.EnrolmentCache;
import io.mbxrelay.store.model.ItemRow;
import io.mbxrelay.store.jdbc.Dialect;
import io.mbxrelay.store.jdbc.JdbcLedgerBackend;
import io.mbxrelay.store.spi.LedgerBackend;
import io.mbxrelay.store.StoreException;
import io.mbxrelay.wire.IsoTime;
import java.nio.file.Path;
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
 * per-target {@code queue_usage} and {@code sender_totals} values are written once per touched key right before
 * COMMIT (into the tables or the usage log; a push writes no {@code seqs} row: schema v5,
 * {@link Schema#SEQ_FLOOR_TRIGGER}) from the writer's in-memory state ({@link WriterState}, kept by
 * {@link WriterCounters}), which
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
  /** Copies the WAL into the database off the writer's COMMIT, when configured; null = the writer checkpoints. */
  private WalCheckpointer checkpointer;
  /** An operator's session on a connection its caller owns: close leaves the file as it is (no checkpoint, no marker). */
  private boolean operatorSession;
  /** Open savepoints, innermost last: each the journal sizes at its start. */
  private final java.util.ArrayDeque<int[]> savepoints = new java.util.ArrayDeque<>();

  /** A backend on a connection {@link SqliteOpener} opened and checked; {@link #opened} completes it. */
  SqliteBackend(Path file, Connection conn, Clock clock, String relayPubkey) {
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
   * What {@link SqliteOpener} settled as it opened the store: the epoch served and {@code meta.commits} after its own
   * transaction.
   */
  void opened(String epoch, long commits) {
    this.epoch = epoch;
    this.commits = commits;
  }

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
   * Installs the COMMIT timer: called on the writer thread with the duration in ns of every COMMIT statement that
   * returned (the WAL fsync under {@code synchronous=FULL}), so metrics can tell fsync time from statement time.
   *
   * @param timer receives the COMMIT duration, ns
   */
  public void commitTimer(java.util.function.LongConsumer timer) {
    this.commitTimer = Objects.requireNonNull(timer);
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

  /**
   * Moves WAL checkpoints off the writer's COMMIT onto a {@link WalCheckpointer} (config
   * {@code store.checkpointIntervalMs}); the writer's {@link #walAutocheckpoint} stays as the bound for when it falls
   * behind. {@link #close} stops it. Before the writer starts.
   *
   * @param intervalMs least time between two background checkpoints, ms (≥ 1)
   * @param busyTimeoutMs SQLite busy timeout of its connection
   * @param listener observer of each checkpoint (metrics)
   * @throws StoreException when its connection cannot be opened
   */
  void backgroundCheckpoints(long intervalMs, long busyTimeoutMs, WalCheckpointer.Listener listener)
      throws StoreException {
    if (checkpointer != null) {
      throw new IllegalStateException("background checkpoints already started");
    }
    checkpointer = WalCheckpointer.start(file, intervalMs, busyTimeoutMs, listener);
  }

  /** Installs the post-commit observer: called on the writer thread with {@code meta.commits} after every COMMIT. */
  public void onCommit(java.util.function.LongConsumer observer) {
    this.onCommit = Objects.requireNonNull(observer);
  }

  /**
   * Sets when the usage log is used and how long its sweeps are (tests: the defaults are
   * {@link WriterCounters#DIRECT_KEYS} and {@link WriterCounters#SWEEP_TRANSACTIONS}).
   */
  void usageLog(int directKeys, int sweepTransactions) {
    state.directKeys = directKeys;
    state.sweepTransactions = sweepTransactions;
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
    boolean checkpointerStopped = stopCheckpointer(); // a checkpoint of its own running now would fail the TRUNCATE
    for (PreparedStatement ps : statements.values()) {
      try {
        ps.close();
      } catch (SQLException ignored) {
        // closing
      }
    }
    statements.clear();
    // the usage log folded into its tables, so the closed store's tables are exact for every reader and tool (no
    // transaction when the writer knows the log is empty)
    if (!state.unfoldedLoaded || state.logRows) {
      try (Statement st = conn.createStatement()) {
        st.execute("BEGIN IMMEDIATE");
        try {
          UsageLog.foldAll(conn);
          st.execute("COMMIT");
        } catch (SQLException e) {
          rollbackQuietly();
          throw e;
        }
      } catch (SQLException e) {
        LOG.warn("usage log fold at close failed; the next open folds it [error: {}]", e.getMessage());
      }
    }
    boolean truncated = false;
    try {
      if (checkpointerStopped) { // else left as after a crash: no truncation, no clean-close marker
        try (Statement st = conn.createStatement();
            ResultSet rs = st.executeQuery("PRAGMA wal_checkpoint(TRUNCATE)")) {
          truncated = rs.next() && rs.getInt(1) == 0; // busy = 0: every frame is in the database, the WAL emptied
        }
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

  /** Stops the background checkpointer, if any; false when its thread did not end ({@link WalCheckpointer#stop}). */
  private boolean stopCheckpointer() {
    WalCheckpointer c = checkpointer;
    checkpointer = null;
    return c == null || c.stop();
  }

  static void closeQuietly(Connection c) {
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
      stopCheckpointer(); // nor copy more into it in the background: the writer fail-stops on this
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
    // the usage log and its in-memory copy change only at COMMIT (WriterCounters.writePendingUsage): nothing to undo
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
    if (checkpointer != null) {
      checkpointer.committed();
    }
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
