package io.mbxrelay.store.sqlite;

import io.mbxrelay.store.model.DedupRow;
import io.mbxrelay.store.model.Enrolment;
import io.mbxrelay.store.EnrolmentCache;
import io.mbxrelay.store.model.ItemRow;
import io.mbxrelay.store.spi.LedgerBackend;
import io.mbxrelay.store.StoreException;
import io.mbxrelay.wire.IsoTime;
import io.mbxrelay.wire.Json;
import io.mbxrelay.wire.KeySpelling;
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
 * per-target {@code seqs}, {@code queue_usage} and {@code sender_totals} rows are written once per touched key right
 * before COMMIT from the writer's in-memory state ({@link WriterState}), which savepoint rollbacks undo through a
 * journal.
 *
 * <p>Threading: not thread-safe; owned by one thread (the writer).
 */
public final class SqliteBackend implements LedgerBackend {
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
    for (PreparedStatement ps : statements.values()) {
      try {
        ps.close();
      } catch (SQLException ignored) {
        // already finalized
      }
    }
    statements.clear();
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

  /** Takes back the seq advances after {@code mark} in the seq journal (newest first). */
  private void undoSeqs(int mark) {
    for (int i = state.seqJournal.size() - 1; i >= mark; i--) {
      WriterState.SeqUndo u = state.seqJournal.remove(i);
      if (u.before() == null) {
        state.nextSeq.remove(u.target());
      } else {
        state.nextSeq.put(u.target(), u.before());
      }
      if (!u.dirty()) {
        state.dirtySeqs.remove(u.target());
      }
    }
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

  /** A sender's queued items and bytes over all targets: its {@code sender_totals} row plus this transaction's. */
  private long[] senderTotalRow(String sender) throws SQLException {
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
  private long[] storeTotalsRow() throws SQLException {
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
  private long[] accountUsageRow(String account) throws SQLException {
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

  /** Rows per multi-row upsert statement, largest first: a transaction's counters take a few statements, not one each. */
  private static final int[] UPSERT_CHUNKS = {32, 8, 1};

  /** Binds row {@code i} of a multi-row upsert at parameter {@code index} (1-based); returns the next index. */
  private interface RowBinder {
    int bind(PreparedStatement ps, int index, int row) throws SQLException;
  }

  /**
   * Writes {@code n} rows with multi-row statements {@code head VALUES (...),(...) tail}, in chunks of
   * {@link #UPSERT_CHUNKS} rows (issue 18: one statement per row was most of the per-transaction statements of a small
   * push). Keys must be distinct within the rows.
   *
   * @param tuple one row's placeholder tuple, e.g. {@code (?, ?)}
   */
  private void upsertRows(String head, String tuple, String tail, int n, RowBinder binder) throws SQLException {
    int row = 0;
    for (int chunk : UPSERT_CHUNKS) {
      while (n - row >= chunk) {
        StringBuilder sql = new StringBuilder(head.length() + tail.length() + chunk * (tuple.length() + 1) + 8);
        sql.append(head).append(" VALUES ");
        for (int i = 0; i < chunk; i++) {
          sql.append(i == 0 ? "" : ",").append(tuple);
        }
        PreparedStatement ps = statement(sql.append(' ').append(tail).toString());
        int index = 1;
        for (int i = 0; i < chunk; i++) {
          index = binder.bind(ps, index, row + i);
        }
        ps.executeUpdate();
        row += chunk;
      }
    }
  }

  /** Adds each key's {@code {items, bytes}} delta to {@code table} (key column {@code key}); zero deltas are skipped. */
  private void upsertDeltas(String table, String key, Map<String, long[]> deltas) throws SQLException {
    List<Map.Entry<String, long[]>> rows = new ArrayList<>(deltas.size());
    for (var e : deltas.entrySet()) {
      if (e.getValue()[0] != 0 || e.getValue()[1] != 0) {
        rows.add(e);
      }
    }
    upsertRows("INSERT INTO " + table + "(" + key + ", items, bytes)", "(?, ?, ?)", "ON CONFLICT(" + key
        + ") DO UPDATE SET items = items + excluded.items, bytes = bytes + excluded.bytes", rows.size(),
        (ps, i, r) -> {
          ps.setString(i, rows.get(r).getKey());
          ps.setLong(i + 1, rows.get(r).getValue()[0]);
          ps.setLong(i + 2, rows.get(r).getValue()[1]);
          return i + 3;
        });
  }

  /**
   * Writes each touched target's change to {@code queue_usage} and each sender's to {@code sender_totals}: one
   * statement per target (per sender) per transaction.
   */
  private void writePendingUsage() throws SQLException {
    if (state.pending.isEmpty() && state.pendingSenders.isEmpty()) {
      return;
    }
    upsertDeltas("queue_usage", "target_pubkey", state.pending);
    state.pending.clear();
    upsertDeltas("sender_totals", "sender_pubkey", state.pendingSenders);
    state.pendingSenders.clear();
    state.journal.clear();
  }

  /** The next seq a target would get ({@code seqs.next_seq}, 1 when none), read once per target. */
  private long nextSeqRow(String target) throws SQLException {
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
  private void useSeqRow(String target, long seq) {
    Long before = state.nextSeq.get(target);
    if (before != null && seq + 1 <= before) {
      return; // never back
    }
    if (!savepoints.isEmpty()) {
      state.seqJournal.add(new WriterState.SeqUndo(target, before, state.dirtySeqs.contains(target)));
    }
    state.nextSeq.put(target, seq + 1);
    state.dirtySeqs.add(target);
  }

  private void writeDirtySeqs() throws SQLException {
    if (state.dirtySeqs.isEmpty()) {
      return;
    }
    List<String> targets = new ArrayList<>(state.dirtySeqs);
    upsertRows("INSERT INTO seqs(target_pubkey, next_seq)", "(?, ?)",
        "ON CONFLICT(target_pubkey) DO UPDATE SET next_seq = excluded.next_seq", targets.size(), (ps, i, r) -> {
          ps.setString(i, targets.get(r));
          ps.setLong(i + 1, state.nextSeq.get(targets.get(r)));
          return i + 2;
        });
    state.dirtySeqs.clear();
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

  /** Inserts a dedup row unless one exists; true when it was inserted. */
  private boolean insertDedupRow(String sender, String itemId, String target, String wireHash, long seq, String at)
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
  private int deleteThroughRows(String target, long through) throws SQLException {
    Enrolment e = enrolmentOrKey(target);
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
  private StoreException fail(String what, SQLException e) {
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
    undoCounts(mark[0]);
    undoSeqs(mark[1]);
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
      writeDirtySeqs();
      writePendingUsage();
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

  @Override
  public void logOp(String op, String receiptJson, String atIso) throws StoreException {
    run("ops log failed", () -> addOpAt(op, receiptJson, atIso));
  }

  // ---- enrolments ----

  @Override
  public Optional<Enrolment> enrolment(String hostPubkey) throws StoreException {
    return sql("read failed", () -> enrolmentRow(hostPubkey));
  }

  /** The row is about to change: read it from the database until COMMIT; account usage counts live hosts only. */
  private void enrolmentChanges(String key) {
    dirtyEnrolments.add(key);
    state.accountUsage.clear();
  }

  @Override
  public long liveEnrolmentCount() throws StoreException {
    try (ResultSet rs = statement("SELECT count(*) FROM enrolments WHERE revoked_at IS NULL").executeQuery()) {
      rs.next();
      return rs.getLong(1);
    } catch (SQLException e) {
      throw fail("read failed", e);
    }
  }

  @Override
  public boolean nameTaken(String account, String hostName, String exceptKey) throws StoreException {
    try {
      PreparedStatement ps = statement("SELECT 1 FROM enrolments WHERE account=?"
          + " AND lower(host_name)=lower(?) AND revoked_at IS NULL AND host_pubkey<>?");
      ps.setString(1, account);
      ps.setString(2, hostName);
      ps.setString(3, exceptKey);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next();
      }
    } catch (SQLException e) {
      throw fail("read failed", e);
    }
  }

  @Override
  public void upsertEnrolment(Enrolment row) throws StoreException {
    enrolmentChanges(row.hostPubkey());
    update("INSERT INTO enrolments(host_pubkey, host_name, owner_fp,"
        + " account, authorized_by, enrolled_at, revoked_at) VALUES(?, ?, ?, ?, ?, ?, NULL)"
        + " ON CONFLICT(host_pubkey) DO UPDATE SET host_name=excluded.host_name, owner_fp=excluded.owner_fp,"
        + " account=excluded.account, authorized_by=excluded.authorized_by, enrolled_at=excluded.enrolled_at",
        row.hostPubkey(), row.hostName(), row.ownerFp(), row.account(), row.authorizedBy(), row.enrolledAt());
  }

  @Override
  public boolean revoke(String hostPubkey, String atIso) throws StoreException {
    enrolmentChanges(hostPubkey);
    return update("UPDATE enrolments SET revoked_at=? WHERE host_pubkey=? AND revoked_at IS NULL", atIso,
        hostPubkey) > 0;
  }

  @Override
  public boolean anyRevoked(List<String> keys) throws StoreException {
    return exists("SELECT 1 FROM enrolments WHERE revoked_at IS NOT NULL AND host_pubkey IN " + inList(keys.size()),
        keys.toArray());
  }

  @Override
  public List<String> liveKeys() throws StoreException {
    List<String> out = new ArrayList<>();
    try (ResultSet rs = statement("SELECT host_pubkey FROM enrolments WHERE revoked_at IS NULL").executeQuery()) {
      while (rs.next()) {
        out.add(rs.getString(1));
      }
      return out;
    } catch (SQLException e) {
      throw fail("read failed", e);
    }
  }

  @Override
  public Optional<String> clientIdOf(String hostPubkey) throws StoreException {
    return text("SELECT client_id FROM enrolment_clients WHERE host_pubkey=?", hostPubkey);
  }

  @Override
  public void recordClient(String hostPubkey, String clientId, String org, String atIso) throws StoreException {
    update("INSERT INTO enrolment_clients(host_pubkey, client_id, org, at) VALUES(?, ?, ?, ?)"
        + " ON CONFLICT(host_pubkey) DO UPDATE SET client_id=excluded.client_id, org=excluded.org, at=excluded.at",
        hostPubkey, clientId, org, atIso);
  }

  @Override
  public void copyClient(String from, String to, String atIso) throws StoreException {
    update("INSERT INTO enrolment_clients(host_pubkey, client_id, org, at) SELECT ?, client_id, org, ?"
        + " FROM enrolment_clients WHERE host_pubkey=? ON CONFLICT(host_pubkey) DO UPDATE SET"
        + " client_id=excluded.client_id, org=excluded.org, at=excluded.at", to, atIso, from);
  }

  @Override
  public int revokeByClient(String clientId, String atIso) throws StoreException {
    reloadEnrolments = true;
    state.accountUsage.clear();
    return update("UPDATE enrolments SET revoked_at=? WHERE revoked_at IS NULL AND host_pubkey IN"
        + " (SELECT host_pubkey FROM enrolment_clients WHERE client_id=?)", atIso, clientId);
  }

  // ---- deny list ----

  @Override
  public boolean denied(String kind, String value) throws StoreException {
    return exists("SELECT 1 FROM deny_list WHERE kind=? AND value=?", kind, value);
  }

  @Override
  public boolean addDeny(String kind, String value, String note, String atIso) throws StoreException {
    return update("INSERT INTO deny_list(kind, value, note, added_at) VALUES(?, ?, ?, ?)"
        + " ON CONFLICT(kind, value) DO NOTHING", kind, value, note, atIso) > 0;
  }

  @Override
  public boolean removeDeny(String kind, String value) throws StoreException {
    return update("DELETE FROM deny_list WHERE kind=? AND value=?", kind, value) > 0;
  }

  // ---- allowlists and ads ----

  @Override
  public Optional<Set<String>> allowlist(String target) throws StoreException {
    Set<String> list = state.allowlist(target);
    if (list == null) {
      Optional<String> json = text("SELECT senders FROM sender_lists WHERE target_pubkey=?", target);
      if (json.isEmpty()) {
        list = WriterState.NO_LIST;
      } else {
        list = new HashSet<>();
        for (com.fasterxml.jackson.databind.JsonNode n : Json.parse(json.get())) {
          if (n.isTextual()) { // canonical spelling: lists stored before keys were canonicalised still match
            list.add(KeySpelling.canonicalOrSelf(n.textValue()));
          }
        }
      }
      state.putAllowlist(target, list);
    }
    return list == WriterState.NO_LIST ? Optional.empty() : Optional.of(list);
  }

  @Override
  public Optional<String> allowlistIat(String target) throws StoreException {
    return text("SELECT iat FROM sender_lists WHERE target_pubkey=?", target);
  }

  @Override
  public void putAllowlist(String target, List<String> senders, String iat, String record, String sig)
      throws StoreException {
    state.removeAllowlist(target);
    update("INSERT INTO sender_lists(target_pubkey, senders, iat, record, sig) VALUES(?, ?, ?, ?, ?)"
        + " ON CONFLICT(target_pubkey) DO UPDATE SET senders=excluded.senders, iat=excluded.iat,"
        + " record=excluded.record, sig=excluded.sig", target, Json.stringify(senders), iat, record, sig);
  }

  @Override
  public void moveAllowlists(String oldKey, List<String> oldSpellings, String newKey) throws StoreException {
    state.dropUsageAndLists();
    if (exists("SELECT 1 FROM sender_lists WHERE target_pubkey=?", oldKey)) {
      update("DELETE FROM sender_lists WHERE target_pubkey=?", newKey);
      update("UPDATE sender_lists SET target_pubkey=? WHERE target_pubkey=?", newKey, oldKey);
    }
    String in = inList(oldSpellings.size());
    List<Object> args = new ArrayList<>(oldSpellings);
    args.add(newKey);
    args.addAll(oldSpellings);
    update("UPDATE sender_lists SET senders=(SELECT json_group_array(DISTINCT CASE WHEN value IN " + in + " THEN ?"
        + " ELSE value END) FROM json_each(sender_lists.senders)) WHERE EXISTS(SELECT 1 FROM"
        + " json_each(sender_lists.senders) WHERE value IN " + in + ")", args.toArray());
  }

  @Override
  public void putEncAdV1(String hostPubkey, String hostName, String encPub, String sig, String atIso)
      throws StoreException {
    update("INSERT INTO enc_ads(host_pubkey, host_name, enc_pub, sig, at) VALUES(?, ?, ?, ?, ?)"
        + " ON CONFLICT(host_pubkey) DO UPDATE SET host_name=excluded.host_name, enc_pub=excluded.enc_pub,"
        + " sig=excluded.sig, at=excluded.at", hostPubkey, hostName, encPub, sig, atIso);
  }

  @Override
  public Optional<String> encAdV2(String hostPubkey) throws StoreException {
    return text("SELECT record FROM enc_ad_records WHERE host_pubkey=?", hostPubkey);
  }

  @Override
  public void putEncAdV2(String hostPubkey, String record, String sig, String atIso) throws StoreException {
    update("INSERT INTO enc_ad_records(host_pubkey, record, sig, at) VALUES(?, ?, ?, ?)"
        + " ON CONFLICT(host_pubkey) DO UPDATE SET record=excluded.record, sig=excluded.sig, at=excluded.at",
        hostPubkey, record, sig, atIso);
  }

  @Override
  public void dropEncAds(String hostPubkey) throws StoreException {
    update("DELETE FROM enc_ads WHERE host_pubkey=?", hostPubkey);
    update("DELETE FROM enc_ad_records WHERE host_pubkey=?", hostPubkey);
  }

  // ---- seqs ----

  @Override
  public long nextSeq(String target) throws StoreException {
    return sql("read failed", () -> nextSeqRow(target));
  }

  @Override
  public void useSeq(String target, long seq) {
    useSeqRow(target, seq);
  }

  // ---- dedup ----

  @Override
  public boolean insertDedup(DedupRow row) throws StoreException {
    return sql("dedup insert failed", () -> insertDedupRow(row.sender(), row.itemId(), row.target(), row.wireHash(),
        row.seq(), row.acceptedAt()));
  }

  @Override
  public Optional<DedupRow> dedup(String sender, String itemId, String target) throws StoreException {
    try {
      PreparedStatement ps = statement(
          "SELECT wire_hash, seq, accepted_at FROM dedup WHERE sender_pubkey=? AND item_id=? AND target_pubkey=?");
      ps.setString(1, sender);
      ps.setString(2, itemId);
      ps.setString(3, target);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next()
            ? Optional.of(new DedupRow(sender, itemId, target, rs.getString(1), rs.getLong(2), rs.getString(3)))
            : Optional.empty();
      }
    } catch (SQLException e) {
      throw fail("read failed", e);
    }
  }

  @Override
  public void moveDedup(String sender, String itemId, String from, String to, long newSeq) throws StoreException {
    update("UPDATE OR IGNORE dedup SET target_pubkey=?, seq=? WHERE sender_pubkey=? AND item_id=? AND target_pubkey=?",
        to, newSeq, sender, itemId, from);
  }

  @Override
  public void moveRemainingDedup(String from, String to) throws StoreException {
    update("UPDATE OR IGNORE dedup SET target_pubkey=? WHERE target_pubkey=?", to, from);
    update("DELETE FROM dedup WHERE target_pubkey=?", from);
  }

  @Override
  public int pruneDedup(String beforeIso, int maxRows) throws StoreException {
    return update("DELETE FROM dedup WHERE rowid IN (SELECT d.rowid FROM dedup d"
        + " WHERE d.accepted_at < ? AND NOT EXISTS (SELECT 1 FROM items i WHERE i.target_pubkey = d.target_pubkey"
        + " AND i.seq = d.seq) LIMIT ?)", beforeIso, maxRows);
  }

  // ---- items ----

  @Override
  public void insertItem(Enrolment target, ItemRow it) throws StoreException {
    run("item insert failed", () -> insertItemRow(it.target(), it.seq(), it.kind(), it.itemId(), it.sender(),
        it.senderHost(), it.wire(), it.wireHash(), it.acceptedAt(), it.expiresAt()));
    countRows(target, it.sender(), 1, it.wire().length);
  }

  @Override
  public int deleteThrough(String target, long through) throws StoreException {
    return sql("delete failed", () -> deleteThroughRows(target, through));
  }

  @Override
  public boolean deleteItem(String target, long seq) throws StoreException {
    return deleteCounted(target, "DELETE FROM items WHERE target_pubkey=? AND seq=? RETURNING sender_pubkey, bytes",
        seq) > 0;
  }

  @Override
  public int deleteQueue(String target) throws StoreException {
    return deleteCounted(target, "DELETE FROM items WHERE target_pubkey=? RETURNING sender_pubkey, bytes", null);
  }

  private int deleteCounted(String target, String sql, Long seq) throws StoreException {
    try {
      Enrolment e = enrolmentOrKey(target);
      PreparedStatement ps = statement(sql);
      ps.setString(1, target);
      if (seq != null) {
        ps.setLong(2, seq);
      }
      int n = 0;
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          countRows(e, rs.getString(1), -1, -rs.getLong(2));
          n++;
        }
      }
      return n;
    } catch (SQLException e) {
      throw fail("delete failed", e);
    }
  }

  private static final String ITEM_COLUMNS = "SELECT target_pubkey, seq, kind, item_id, sender_pubkey, sender_host,"
      + " wire, wire_hash, bytes, accepted_at, expires_at FROM items";

  private List<ItemRow> items(String sql, Object... args) throws StoreException {
    try {
      PreparedStatement ps = statement(sql);
      bind(ps, args);
      List<ItemRow> out = new ArrayList<>();
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          out.add(new ItemRow(rs.getString(1), rs.getLong(2), rs.getString(3), rs.getString(4), rs.getString(5),
              rs.getString(6), rs.getBytes(7), rs.getString(8), rs.getLong(9), rs.getString(10), rs.getString(11)));
        }
      }
      return out;
    } catch (SQLException e) {
      throw fail("read failed", e);
    }
  }

  @Override
  public List<ItemRow> queue(String target) throws StoreException {
    return items(ITEM_COLUMNS + " WHERE target_pubkey=? ORDER BY seq", target);
  }

  @Override
  public Optional<ItemRow> item(String target, long seq) throws StoreException {
    List<ItemRow> rows = items(ITEM_COLUMNS + " WHERE target_pubkey=? AND seq=?", target, seq);
    return rows.isEmpty() ? Optional.empty() : Optional.of(rows.get(0));
  }

  @Override
  public void setAside(String target, long seq, String foundAtIso) throws StoreException {
    update("INSERT INTO damaged_items(target_pubkey, seq, kind, item_id, sender_pubkey,"
        + " sender_host, wire_hash, bytes, accepted_at, expires_at, wire, found_at) SELECT target_pubkey, seq, kind,"
        + " item_id, sender_pubkey, sender_host, wire_hash, bytes, accepted_at, expires_at, wire, ? FROM items"
        + " WHERE target_pubkey=? AND seq=?", foundAtIso, target, seq);
    deleteItem(target, seq);
  }

  @Override
  public List<ItemRow> expiring(String atIso, int maxRows) throws StoreException {
    return items("SELECT target_pubkey, seq, kind, item_id, sender_pubkey, sender_host, NULL, wire_hash, bytes,"
        + " accepted_at, expires_at FROM items WHERE expires_at IS NOT NULL AND expires_at <= ?"
        + " ORDER BY expires_at, target_pubkey, seq LIMIT ?", atIso, maxRows);
  }

  @Override
  public long raiseAcked(String target, long through) throws StoreException {
    try {
      PreparedStatement ps = statement("INSERT INTO acked(target_pubkey, acked_through) VALUES(?, ?)"
          + " ON CONFLICT(target_pubkey) DO UPDATE SET acked_through = max(acked_through, excluded.acked_through)"
          + " RETURNING acked_through");
      ps.setString(1, target);
      ps.setLong(2, through);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    } catch (SQLException e) {
      throw fail("ack failed", e);
    }
  }

  // ---- usage ----

  @Override
  public Usage targetUsage(String target) throws StoreException {
    return sql("read failed", () -> {
      WriterState.TargetUsage u = usage(target);
      return new Usage(u.items, u.bytes);
    });
  }

  @Override
  public Usage senderShare(String target, String sender) throws StoreException {
    return sql("read failed", () -> usage(senders(target, usage(target)).get(sender)));
  }

  @Override
  public Usage accountUsage(String account) throws StoreException {
    return sql("read failed", () -> usage(accountUsageRow(account)));
  }

  @Override
  public Usage senderTotal(String sender) throws StoreException {
    return sql("read failed", () -> usage(senderTotalRow(sender)));
  }

  @Override
  public Usage storeTotals() throws StoreException {
    return sql("read failed", () -> usage(storeTotalsRow()));
  }

  // ---- helpers ----

  private static void bind(PreparedStatement ps, Object... args) throws SQLException {
    for (int i = 0; i < args.length; i++) {
      ps.setObject(i + 1, args[i]);
    }
  }

  private boolean exists(String sql, Object... args) throws StoreException {
    try {
      PreparedStatement ps = statement(sql);
      bind(ps, args);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next();
      }
    } catch (SQLException e) {
      throw fail("read failed", e);
    }
  }

  private Optional<String> text(String sql, Object... args) throws StoreException {
    try {
      PreparedStatement ps = statement(sql);
      bind(ps, args);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() ? Optional.ofNullable(rs.getString(1)) : Optional.empty();
      }
    } catch (SQLException e) {
      throw fail("read failed", e);
    }
  }

  private int update(String sql, Object... args) throws StoreException {
    try {
      PreparedStatement ps = statement(sql);
      bind(ps, args);
      return ps.executeUpdate();
    } catch (SQLException e) {
      throw fail("write failed", e);
    }
  }

  private static String inList(int n) {
    return "(" + String.join(", ", java.util.Collections.nCopies(n, "?")) + ")";
  }
}
