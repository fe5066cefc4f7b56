package io.mbxrelay.store.sqlite;

import io.mbxrelay.store.jdbc.SqlCatalogue;
import io.mbxrelay.store.model.Enrolment;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The writer's counters and seqs over its cached state ({@link WriterState}): loads an entry from the tables on first
 * use (as the writer's own connection sees them, the open transaction included), counts every row the writer adds or
 * deletes, takes changes back to a savepoint through the journals, and writes each touched key's {@code queue_usage}
 * and {@code sender_totals} value once right before COMMIT, into the tables or the usage log ({@link UsageLog}); no seq
 * is written (schema v5; docs/architecture.md "The writer's state"). SQLite only: one writer, so what it counted is what the tables will hold.
 *
 * <p>Threading: writer thread only.
 */
final class WriterCounters {
  /** The writer connection's cached prepared statement for a text (the caller does not close it). */
  @FunctionalInterface
  interface Statements {
    PreparedStatement get(String sql) throws SQLException;
  }

  /** The enrolment of a key as the open transaction sees it. */
  @FunctionalInterface
  interface Enrolments {
    Optional<Enrolment> get(String key) throws SQLException;
  }

  private final WriterState state;
  private final Statements statements;
  private final Enrolments enrolments;

  WriterCounters(WriterState state, Statements statements, Enrolments enrolments) {
    this.state = state;
    this.statements = statements;
    this.enrolments = enrolments;
  }

  /** Takes back the seq advances after {@code mark} in the seq journal (newest first). */
  void undoSeqs(int mark) {
    for (int i = state.seqJournal.size() - 1; i >= mark; i--) {
      WriterState.SeqUndo u = state.seqJournal.remove(i);
      if (u.before() == null) {
        state.nextSeq.remove(u.target());
      } else {
        state.nextSeq.put(u.target(), u.before());
      }
    }
  }

  /** Takes back the counted changes after {@code mark} in the journal (newest first). */
  void undoCounts(int mark) {
    for (int i = state.journal.size() - 1; i >= mark; i--) {
      WriterState.Delta d = state.journal.remove(i);
      count(d.target(), d.sender(), -d.items(), -d.bytes());
    }
  }

  /** A sender's queued items and bytes over all targets: its {@code sender_totals} row plus this transaction's. */
  long[] senderTotalRow(String sender) throws SQLException {
    long[] u = state.senderTotals.get(sender);
    if (u == null) {
      u = committedRow(UsageLog.SENDER, sender);
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
  long[] storeTotalsRow() throws SQLException {
    if (state.storeTotals == null) {
      long[] u = new long[2];
      loadUnfolded();
      try (ResultSet rs = statements.get(state.logRows ? UsageLog.STORE_TOTALS_NOW
          : "SELECT coalesce(sum(items), 0), coalesce(sum(bytes), 0) FROM queue_usage").executeQuery()) {
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
  WriterState.TargetUsage usage(String target) throws SQLException {
    WriterState.TargetUsage u = state.usage.get(target);
    if (u == null) {
      u = new WriterState.TargetUsage();
      long[] committed = committedRow(UsageLog.QUEUE, target);
      u.items = committed[0];
      u.bytes = committed[1];
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
  java.util.Map<String, long[]> senders(String target, WriterState.TargetUsage u) throws SQLException {
    if (u.bySender == null) {
      java.util.Map<String, long[]> m = new java.util.HashMap<>();
      PreparedStatement ps = statements.get("SELECT sender_pubkey, count(*), coalesce(sum(bytes), 0) FROM items"
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
  long[] accountUsageRow(String account) throws SQLException {
    long[] u = state.accountUsage.get(account);
    if (u == null) {
      loadUnfolded();
      PreparedStatement ps = statements.get(state.logRows ? UsageLog.ACCOUNT_USAGE_NOW : SqlCatalogue.ACCOUNT_USAGE);
      ps.setString(1, account);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        u = new long[] {rs.getLong(1), rs.getLong(2)};
      }
      for (var e : state.pending.entrySet()) { // this transaction's changes are not in queue_usage yet
        Optional<Enrolment> t = enrolments.get(e.getKey());
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
  void countRows(Enrolment target, String sender, long n, long bytes) {
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

  /** A multi-row upsert {@code head VALUES (...),(...) tail}, its text for each of {@link #UPSERT_CHUNKS} built once. */
  private static final class Upsert {
    final String[] sql = new String[UPSERT_CHUNKS.length];

    /** @param tuple one row's placeholder tuple, e.g. {@code (?, ?)} */
    Upsert(String head, String tuple, String tail) {
      for (int c = 0; c < UPSERT_CHUNKS.length; c++) {
        sql[c] = head + " VALUES " + String.join(",", java.util.Collections.nCopies(UPSERT_CHUNKS[c], tuple)) + " "
            + tail;
      }
    }

    /** Sets {@code {items, bytes}} values in {@code table} (key column {@code key}). */
    static Upsert values(String table, String key) {
      return new Upsert("INSERT INTO " + table + "(" + key + ", items, bytes)", "(?, ?, ?)", "ON CONFLICT(" + key
          + ") DO UPDATE SET items = excluded.items, bytes = excluded.bytes");
    }
  }

  private static final Upsert QUEUE_USAGE_VALUES = Upsert.values("queue_usage", "target_pubkey");
  private static final Upsert SENDER_TOTAL_VALUES = Upsert.values("sender_totals", "sender_pubkey");
  private static final Upsert LOG_APPEND = new Upsert("INSERT INTO usage_log(kind, key, items, bytes)", "(?, ?, ?, ?)",
      "");

  /**
   * Writes {@code n} rows with {@code upsert}'s statements, in chunks of {@link #UPSERT_CHUNKS} rows (issue 18: one
   * statement per row was most of the per-transaction statements of a small push). Keys must be distinct within the
   * rows.
   */
  private void upsertRows(Upsert upsert, int n, RowBinder binder) throws SQLException {
    int row = 0;
    for (int c = 0; c < UPSERT_CHUNKS.length; c++) {
      int chunk = UPSERT_CHUNKS[c];
      while (n - row >= chunk) {
        PreparedStatement ps = statements.get(upsert.sql[c]);
        int index = 1;
        for (int i = 0; i < chunk; i++) {
          index = binder.bind(ps, index, row + i);
        }
        ps.executeUpdate();
        row += chunk;
      }
    }
  }

  /**
   * Transactions a sweep of the unfolded usage values takes: each folds about this fraction of them, in key order, so it
   * rewrites a slice of the two tables' pages instead of one page per touched key. Longer sweeps coalesce more changes
   * per page and keep more log rows (two sweeps' worth).
   */
  static final int SWEEP_TRANSACTIONS = 64;
  /**
   * At most this many keys (changed and unfolded together) are written straight into their tables, as before the log.
   * Above it the log costs a page or two per transaction more than direct writes when the tables are small (a few
   * hundred targets fit two pages), and saves one page per key when they are large (100,000 targets: ~830 pages of
   * {@code queue_usage}, so a transaction of 150 commands dirtied ~140 of them).
   */
  static final int DIRECT_KEYS = 32;

  /** The committed {items, bytes} of a key: its unfolded value, else its table row ({0, 0} without one). */
  private long[] committedRow(int kind, String key) throws SQLException {
    loadUnfolded();
    long[] v = state.unfolded.get(UsageLog.mapKey(kind, key));
    if (v != null) {
      return new long[] {v[0], v[1]};
    }
    PreparedStatement ps = statements.get(kind == UsageLog.QUEUE ? SqlCatalogue.QUEUE_USAGE : SqlCatalogue.SENDER_TOTAL);
    ps.setString(1, key);
    long[] u = new long[2];
    try (ResultSet rs = ps.executeQuery()) {
      if (rs.next()) {
        u[0] = rs.getLong(1);
        u[1] = rs.getLong(2);
      }
    }
    return u;
  }

  /** Replays the usage log into {@link WriterState#unfolded} when it does not follow the log (start, rollback). */
  private void loadUnfolded() throws SQLException {
    if (!state.unfoldedLoaded) {
      state.unfolded.clear();
      long last = UsageLog.replay(statements.get(UsageLog.REPLAY), state.unfolded);
      state.logRows = last > 0;
      state.startSweep(last);
      state.unfoldedLoaded = true;
    }
  }

  /** Deletes every log row: whatever was unfolded is in the tables now. */
  private void emptyLog() throws SQLException {
    statements.get(UsageLog.DELETE_ALL).executeUpdate();
    state.unfolded.clear();
    state.logRows = false;
    state.startSweep(0);
  }

  /** Sets each {@link UsageLog#mapKey}'s value in its table, in key order. */
  private void writeValues(java.util.Collection<Map.Entry<String, long[]>> values) throws SQLException {
    List<Map.Entry<String, long[]>> queues = new ArrayList<>();
    List<Map.Entry<String, long[]>> senders = new ArrayList<>();
    for (Map.Entry<String, long[]> e : values) {
      (UsageLog.kindOf(e.getKey()) == UsageLog.QUEUE ? queues : senders).add(e);
    }
    upsertValues(QUEUE_USAGE_VALUES, queues);
    upsertValues(SENDER_TOTAL_VALUES, senders);
  }

  private void upsertValues(Upsert upsert, List<Map.Entry<String, long[]>> rows) throws SQLException {
    upsertRows(upsert, rows.size(), (ps, i, r) -> {
      ps.setString(i, rows.get(r).getKey().substring(1));
      ps.setLong(i + 1, rows.get(r).getValue()[0]);
      ps.setLong(i + 2, rows.get(r).getValue()[1]);
      return i + 3;
    });
  }

  /**
   * Right before COMMIT: the transaction's usage changes become new values, written straight into
   * {@code queue_usage}/{@code sender_totals} when few keys are involved, else appended to the usage log; then the
   * running sweep folds its next slice ({@link UsageLog}).
   */
  void writePendingUsage() throws SQLException {
    if (state.pending.isEmpty() && state.pendingSenders.isEmpty()) {
      if (state.unfoldedLoaded && !state.unfolded.isEmpty()) {
        sweepStep();
      }
      return;
    }
    loadUnfolded();
    java.util.TreeMap<String, long[]> changed = new java.util.TreeMap<>();
    for (var e : state.pending.entrySet()) {
      long[] d = e.getValue();
      if (d[0] != 0 || d[1] != 0) {
        WriterState.TargetUsage u = state.usage.get(e.getKey()); // kept with this transaction's changes in it
        long[] v = u != null ? new long[] {u.items, u.bytes} : plus(committedRow(UsageLog.QUEUE, e.getKey()), d);
        changed.put(UsageLog.mapKey(UsageLog.QUEUE, e.getKey()), v);
      }
    }
    for (var e : state.pendingSenders.entrySet()) {
      long[] d = e.getValue();
      if (d[0] != 0 || d[1] != 0) {
        long[] t = state.senderTotals.get(e.getKey());
        long[] v = t != null ? new long[] {t[0], t[1]} : plus(committedRow(UsageLog.SENDER, e.getKey()), d);
        changed.put(UsageLog.mapKey(UsageLog.SENDER, e.getKey()), v);
      }
    }
    state.pending.clear();
    state.pendingSenders.clear();
    state.journal.clear();
    if (!state.logRows && changed.size() <= state.directKeys) {
      writeValues(changed.entrySet());
      return;
    }
    if (state.logRows && state.unfolded.size() + changed.size() <= state.directKeys) {
      state.unfolded.putAll(changed); // everything unfolded is written now and the log is superseded
      writeValues(state.unfolded.entrySet());
      emptyLog();
      return;
    }
    List<Map.Entry<String, long[]>> rows = new ArrayList<>(changed.entrySet());
    upsertRows(LOG_APPEND, rows.size(), (ps, i, r) -> {
      ps.setInt(i, UsageLog.kindOf(rows.get(r).getKey()));
      ps.setString(i + 1, rows.get(r).getKey().substring(1));
      ps.setLong(i + 2, rows.get(r).getValue()[0]);
      ps.setLong(i + 3, rows.get(r).getValue()[1]);
      return i + 4;
    });
    state.unfolded.putAll(changed);
    state.logRows = true;
    sweepStep();
  }

  private static long[] plus(long[] a, long[] b) {
    return new long[] {a[0] + b[0], a[1] + b[1]};
  }

  /**
   * Folds the running sweep's next slice of {@link WriterState#unfolded} (about {@code 1/SWEEP_TRANSACTIONS} of it, in
   * key order). When the sweep reaches the last key, the log rows it superseded are deleted (all of them when nothing
   * is left unfolded) and the next sweep starts.
   */
  private void sweepStep() throws SQLException {
    int stepsLeft = Math.max(1, state.sweepTransactions - state.sweepStep);
    int n = (state.unfolded.size() + stepsLeft - 1) / stepsLeft;
    List<Map.Entry<String, long[]>> slice = new ArrayList<>(n);
    var it = state.unfolded.tailMap(state.sweepCursor, false).entrySet().iterator();
    while (slice.size() < n && it.hasNext()) {
      var e = it.next();
      slice.add(Map.entry(e.getKey(), e.getValue()));
      it.remove();
    }
    writeValues(slice);
    if (it.hasNext()) {
      state.sweepCursor = slice.get(slice.size() - 1).getKey();
      state.sweepStep++;
      return;
    }
    // the sweep is over: every key logged up to its start has been folded since
    if (state.unfolded.isEmpty()) {
      emptyLog();
      return;
    }
    PreparedStatement delete = statements.get(UsageLog.DELETE_THROUGH);
    delete.setLong(1, state.sweepStartLogId);
    delete.executeUpdate();
    try (ResultSet rs = statements.get(UsageLog.LAST_ID).executeQuery()) {
      rs.next();
      state.startSweep(rs.getLong(1));
    }
  }

  /**
   * The next seq a target would get (floor, ack or highest queued seq, the largest; {@link SqliteReads#NEXT_SEQ}), read
   * once per target and then kept by {@link #useSeqRow}.
   */
  long nextSeqRow(String target) throws SQLException {
    Long n = state.nextSeq.get(target);
    if (n == null) {
      PreparedStatement ps = statements.get(SqliteReads.NEXT_SEQ);
      ps.setString(1, target);
      try (ResultSet rs = ps.executeQuery()) {
        n = rs.next() ? rs.getLong(1) : 1L;
      }
      state.nextSeq.put(target, n);
    }
    return n;
  }

  /**
   * Records that {@code seq} was used. Nothing is written for it: the item's own row carries the seq, and deleting it
   * raises the floor in {@code seqs} (schema v5).
   */
  void useSeqRow(String target, long seq, boolean inSavepoint) {
    Long before = state.nextSeq.get(target);
    if (before != null && seq + 1 <= before) {
      return; // never back
    }
    if (inSavepoint) {
      state.seqJournal.add(new WriterState.SeqUndo(target, before));
    }
    state.nextSeq.put(target, seq + 1);
  }
}
