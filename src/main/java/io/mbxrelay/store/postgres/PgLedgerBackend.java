package io.mbxrelay.store.postgres;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import io.mbxrelay.store.model.Enrolment;
import io.mbxrelay.store.EnrolmentCache;
import io.mbxrelay.store.model.ItemRow;
import io.mbxrelay.store.jdbc.Dialect;
import io.mbxrelay.store.jdbc.JdbcLedgerBackend;
import io.mbxrelay.store.jdbc.SqlCatalogue;
import io.mbxrelay.store.spi.LedgerBackend;
import io.mbxrelay.store.StoreException;
import io.mbxrelay.wire.Json;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Savepoint;
import java.sql.Statement;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ThreadLocalRandom;

/**
 * One writer session on the PostgreSQL store ({@link LedgerBackend}; docs/scale-out.md "Write discipline"). Several
 * sessions, in one process or in many, write the same database at once; what keeps the ledger's rules true is:
 *
 * <ul>
 *   <li><b>Seqs</b>: the first touch of a target in a transaction ({@link #nextSeq}, {@link #targetUsage},
 *       {@link #senderShare}) locks the target's {@code seqs} row ({@code SELECT … FOR UPDATE}) until COMMIT, so two
 *       transactions never allocate from the same counter at once: seqs are never reused and commit in order per
 *       target. The new counter is written once at COMMIT. A batch locks all its live targets first, in ascending key
 *       order ({@link #lockTargets}), so two sessions' batches never wait for each other in a cycle (issue 20 item
 *       3).</li>
 *   <li><b>Dedup</b>: the primary key (sender, item id, target); {@code INSERT … ON CONFLICT DO NOTHING} waits for a
 *       concurrent insert of the same key and then reports it taken.</li>
 *   <li><b>Quotas</b>: the per-target and per-target-sender counters are read under the target's lock (exact); the
 *       per-sender, per-account and store-wide counters are read as committed plus this transaction's changes, so
 *       concurrent transactions of other sessions can each pass the check once (the bound in docs/scale-out.md). The
 *       per-sender and store-wide counters are written at COMMIT, in key order, so they add no lock cycle.</li>
 *   <li><b>Conflicts</b>: a deadlock (40P01), a serialization failure (40001) or a unique violation (23505, a
 *       concurrent insert of the same key) is a {@linkplain StoreException#conflict conflict}: the ledger runs the
 *       batch again.</li>
 *   <li><b>Sweep and heartbeat</b>: transaction-scoped advisory locks; an instance that does not get the sweep lock
 *       finds nothing to sweep this round.</li>
 * </ul>
 *
 * <p>The statements it shares with SQLite, and the table operations run alike, are in {@link JdbcLedgerBackend}.
 *
 * <p>One thread at a time. A connection is taken from the pool at {@link #begin()} and returned at the end of the
 * transaction; its prepared statements live as long as the transaction.
 */
public final class PgLedgerBackend extends JdbcLedgerBackend {
  private final PgStore store;
  private final int shard = ThreadLocalRandom.current().nextInt(PgSchema.TOTAL_SHARDS);
  private Connection conn;
  private Tx tx;
  private final Deque<Mark> savepoints = new ArrayDeque<>();
  /** The open transaction's prepared statements, closed when its connection goes back to the pool. */
  private final Map<String, PreparedStatement> statements = new HashMap<>();

  /** What one transaction has done that is written at COMMIT or applied after it. */
  private static final class Tx {
    /** Targets whose seqs row this transaction holds locked → the next seq as this transaction sees it. */
    Map<String, Long> nextSeq = new HashMap<>();
    /** Targets whose counter this transaction moved (written at COMMIT). */
    Set<String> seqDirty = new HashSet<>();
    /** Per-sender total changes {items, bytes} (written at COMMIT in key order). */
    TreeMap<String, long[]> senderDelta = new TreeMap<>();
    long storeItems;
    long storeBytes;
    /** Keys whose enrolment rows changed (cache refresh and NOTIFY at COMMIT). */
    Set<String> enrolmentsChanged = new LinkedHashSet<>();
    /** Enrolment rows read (and share-locked) in this transaction and not changed by it since. */
    Map<String, Optional<Enrolment>> enrolments = new HashMap<>();
    /** Queue counters {items, bytes} of locked targets, as this transaction sees them. */
    Map<String, long[]> targetUsage = new HashMap<>();
    /** Counters of (target, sender) in a locked target, as this transaction sees them. */
    Map<String, long[]> senderShare = new HashMap<>();
    /** Committed per-sender totals as first read in this transaction (the changes are in senderDelta). */
    Map<String, long[]> senderCommitted = new HashMap<>();
    /** Per-account counters as this transaction sees them (dropped on any delete or enrolment change). */
    Map<String, long[]> accountUsage = new HashMap<>();
    /** Committed store totals as first read in this transaction, or null. */
    long[] storeCommitted;
    /** Allowlists read in this transaction and not changed by it since. */
    Map<String, Optional<Set<String>>> allowlists = new HashMap<>();

    Tx copy() {
      Tx t = new Tx();
      t.nextSeq = new HashMap<>(nextSeq);
      t.seqDirty = new HashSet<>(seqDirty);
      t.senderDelta = new TreeMap<>();
      senderDelta.forEach((k, v) -> t.senderDelta.put(k, v.clone()));
      t.storeItems = storeItems;
      t.storeBytes = storeBytes;
      t.enrolmentsChanged = new LinkedHashSet<>(enrolmentsChanged);
      t.enrolments = new HashMap<>(enrolments);
      t.targetUsage = deepCopy(targetUsage);
      t.senderShare = deepCopy(senderShare);
      t.senderCommitted = deepCopy(senderCommitted);
      t.accountUsage = deepCopy(accountUsage);
      t.storeCommitted = storeCommitted == null ? null : storeCommitted.clone();
      t.allowlists = new HashMap<>(allowlists);
      return t;
    }

    private static Map<String, long[]> deepCopy(Map<String, long[]> m) {
      Map<String, long[]> out = new HashMap<>();
      m.forEach((k, v) -> out.put(k, v.clone()));
      return out;
    }
  }

  private record Mark(Savepoint savepoint, Tx state) {}

  PgLedgerBackend(PgStore store) {
    this.store = store;
  }

  // ---- identity ----

  @Override
  public String relayPubkey() {
    return store.relayKey().publicKeyB64();
  }

  @Override
  public String epoch() {
    return store.epoch();
  }

  @Override
  public EnrolmentCache enrolmentCache() {
    return store.enrolmentCache();
  }

  // ---- transaction control ----

  @Override
  public void begin() throws StoreException {
    if (conn != null) {
      throw new StoreException(StoreException.Kind.INTERNAL, "transaction already open", null);
    }
    try {
      conn = store.dataSource().getConnection();
      conn.setAutoCommit(false);
    } catch (SQLException e) {
      release(conn);
      conn = null;
      throw mapped("begin", e);
    }
    tx = new Tx();
    savepoints.clear();
  }

  @Override
  public void savepoint() throws StoreException {
    try {
      savepoints.push(new Mark(c().setSavepoint(), tx.copy()));
    } catch (SQLException e) {
      throw mapped("savepoint", e);
    }
  }

  @Override
  public void release() throws StoreException {
    Mark m = savepoints.pop();
    try {
      c().releaseSavepoint(m.savepoint());
    } catch (SQLException e) {
      throw mapped("release savepoint", e);
    }
  }

  @Override
  public void rollbackToSavepoint() throws StoreException {
    Mark m = savepoints.pop();
    try {
      c().rollback(m.savepoint());
      c().releaseSavepoint(m.savepoint());
    } catch (SQLException e) {
      throw mapped("rollback to savepoint", e);
    }
    // Row locks taken before the savepoint stay; those taken after it may be gone: keep only the older ones.
    tx = m.state();
  }

  @Override
  public void commit() throws StoreException {
    Connection c = c();
    Tx done = tx;
    try {
      if (!done.seqDirty.isEmpty()) {
        try (PreparedStatement ps = c.prepareStatement("UPDATE seqs SET next_seq = ? WHERE target_pubkey = ?")) {
          for (String t : done.seqDirty) {
            ps.setLong(1, done.nextSeq.get(t));
            ps.setString(2, t);
            ps.addBatch();
          }
          ps.executeBatch();
        }
      }
      if (!done.senderDelta.isEmpty()) {
        try (PreparedStatement ps = c.prepareStatement("INSERT INTO sender_totals(sender_pubkey, items, bytes)"
            + " VALUES(?, ?, ?) ON CONFLICT(sender_pubkey) DO UPDATE SET items = sender_totals.items + excluded.items,"
            + " bytes = sender_totals.bytes + excluded.bytes")) {
          for (Map.Entry<String, long[]> e : done.senderDelta.entrySet()) {
            if (e.getValue()[0] == 0 && e.getValue()[1] == 0) {
              continue;
            }
            ps.setString(1, e.getKey());
            ps.setLong(2, e.getValue()[0]);
            ps.setLong(3, e.getValue()[1]);
            ps.addBatch();
          }
          ps.executeBatch();
        }
      }
      if (done.storeItems != 0 || done.storeBytes != 0) {
        try (PreparedStatement ps = c.prepareStatement(
            "UPDATE store_totals SET items = items + ?, bytes = bytes + ? WHERE shard = ?")) {
          ps.setLong(1, done.storeItems);
          ps.setLong(2, done.storeBytes);
          ps.setInt(3, shard);
          ps.executeUpdate();
        }
      }
      if (!done.enrolmentsChanged.isEmpty()) {
        try (PreparedStatement ps = c.prepareStatement("SELECT pg_notify('" + PgStore.ENROLMENT_CHANNEL + "', ?)")) {
          for (String k : done.enrolmentsChanged) {
            ps.setString(1, k);
            ps.executeQuery().close();
          }
        }
      }
      if (!done.seqDirty.isEmpty()) {
        // delivered at COMMIT: wakes long-poll pulls of these targets held on other instances (issue 20 item 8)
        try (PreparedStatement ps = c.prepareStatement("SELECT pg_notify('" + PgItemsChannel.CHANNEL + "', ?)")) {
          for (String payload : PgItemsChannel.payloads(store.instanceId(), done.seqDirty)) {
            ps.setString(1, payload);
            ps.executeQuery().close();
          }
        }
      }
      c.commit();
    } catch (SQLException e) {
      rollback();
      throw mapped("commit", e);
    }
    // Committed: this instance's cache sees the change before any reply of the transaction goes out.
    try {
      for (String k : done.enrolmentsChanged) {
        store.refreshEnrolment(c, k);
      }
      c.commit();
    } catch (SQLException e) {
      // the listener reloads from the notification; nothing of the commit is lost
    } finally {
      end();
    }
  }

  @Override
  public void rollback() {
    if (conn != null) {
      try {
        conn.rollback();
      } catch (SQLException ignored) {
        // the connection is broken: the pool drops it, the server rolled back
      }
    }
    end();
  }

  private void end() {
    closeAll(statements);
    release(conn);
    conn = null;
    tx = null;
    savepoints.clear();
  }

  private static void release(Connection c) {
    if (c != null) {
      try {
        c.setAutoCommit(true);
      } catch (SQLException ignored) {
        // broken connection
      }
      try {
        c.close();
      } catch (SQLException ignored) {
        // returned to the pool or dropped
      }
    }
  }

  /**
   * Nothing to do: the store's listener applies every other instance's enrolment change as its notification arrives
   * (milliseconds after that COMMIT), and reloads the whole table after a lost connection.
   */
  @Override
  public void refresh() {
    // see the listener in PgStore
  }

  /**
   * A probe that writes (issue 20 item 2): overwrites the {@code ready_probe} row of {@code meta} and commits, so a
   * database that cannot commit a write (set read-only: {@code 25006}; its disk full: {@code 53100}; in recovery) fails
   * it, while a probe that only reads would pass. One short transaction on a pool connection; instances overwrite the
   * same row (a row lock held for the statement and its COMMIT).
   */
  @Override
  public boolean probeWriter() throws StoreException {
    try (Connection c = store.dataSource().getConnection()) {
      c.setAutoCommit(false);
      try (PreparedStatement ps = c.prepareStatement("INSERT INTO meta(k, v) VALUES('ready_probe', ?)"
          + " ON CONFLICT (k) DO UPDATE SET v = excluded.v")) {
        ps.setString(1, store.instanceId() + " " + System.currentTimeMillis());
        boolean wrote = ps.executeUpdate() == 1;
        c.commit();
        return wrote;
      } catch (SQLException e) {
        try {
          c.rollback();
        } catch (SQLException ignored) {
          // the connection is broken: the pool drops it
        }
        throw e;
      } finally {
        try {
          c.setAutoCommit(true);
        } catch (SQLException ignored) {
          // broken connection
        }
      }
    } catch (SQLException e) {
      throw mapped("probe", e);
    }
  }

  private Connection c() throws StoreException {
    if (conn == null) {
      throw new StoreException(StoreException.Kind.INTERNAL, "no open transaction", null);
    }
    return conn;
  }

  // ---- meta and ops log ----

  /**
   * Writes the heartbeat when no other instance is writing it right now ({@code pg_try_advisory_xact_lock}), and
   * checks that the stored epoch is still this process's: an instance that finds another epoch (it was cut off from
   * the database longer than the stale limit and another instance rotated it) stops, so no two instances ever serve
   * two epochs.
   */
  @Override
  public void putHeartbeat(long nowMs) throws StoreException {
    String stored = text("SELECT v FROM meta WHERE k = 'epoch'").orElse(null);
    if (!store.epoch().equals(stored)) {
      throw new StoreException(StoreException.Kind.CORRUPT, "the store's epoch changed to " + stored
          + " while this instance served " + store.epoch() + " (another instance rotated it): restart this instance",
          null);
    }
    if (tryXactLock(PgSchema.LOCK_HEARTBEAT)) {
      update("INSERT INTO meta(k, v) VALUES('heartbeat', ?) ON CONFLICT(k) DO UPDATE SET v = excluded.v",
          Long.toString(nowMs));
    }
  }

  // ---- enrolments ----

  @Override
  public Optional<Enrolment> enrolment(String hostPubkey) throws StoreException {
    if (conn == null) {
      return outside(() -> enrolment(hostPubkey));
    }
    Optional<Enrolment> known = tx.enrolments.get(hostPubkey);
    if (known != null) {
      return known;
    }
    // FOR SHARE: a rotation or revocation of this key on another instance waits for this transaction (and one that
    // came first is seen here), so no item is queued for a key whose queue a rotation already moved.
    try {
      Optional<Enrolment> row = enrolmentFromDb(hostPubkey);
      tx.enrolments.put(hostPubkey, row);
      return row;
    } catch (SQLException e) {
      throw mapped("enrolment", e);
    }
  }

  @Override
  public boolean anyRevoked(List<String> keys) throws StoreException {
    try (PreparedStatement ps = c().prepareStatement(
        "SELECT 1 FROM enrolments WHERE host_pubkey = ANY(?) AND revoked_at IS NOT NULL LIMIT 1")) {
      ps.setArray(1, c().createArrayOf("text", keys.toArray()));
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next();
      }
    } catch (SQLException e) {
      throw mapped("anyRevoked", e);
    }
  }

  // ---- deny list ----

  // ---- sender allowlists and enc-key ads ----

  @Override
  public Optional<Set<String>> allowlist(String target) throws StoreException {
    Optional<Set<String>> known = tx.allowlists.get(target);
    if (known != null) {
      return known;
    }
    Optional<Set<String>> list = allowlistFromDb(target);
    tx.allowlists.put(target, list);
    return list;
  }

  @Override
  public void moveAllowlists(String oldKey, List<String> oldSpellings, String newKey) throws StoreException {
    tx.allowlists.clear();
    moveOwnAllowlist(oldKey, newKey);
    // Rotation is rare: find the lists naming an old spelling by text, rewrite them here.
    Set<String> olds = new HashSet<>(oldSpellings);
    try (PreparedStatement ps = c().prepareStatement("SELECT target_pubkey, senders FROM sender_lists"
        + " WHERE senders LIKE ANY(?) FOR UPDATE")) {
      ps.setArray(1, c().createArrayOf("text", oldSpellings.stream().map(s -> "%" + s.replace("\\", "\\\\")
          .replace("%", "\\%").replace("_", "\\_") + "%").toArray()));
      Map<String, String> rewritten = new HashMap<>();
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          JsonNode list = Json.parse(rs.getString(2));
          LinkedHashSet<String> next = new LinkedHashSet<>();
          boolean hit = false;
          for (JsonNode n : list) {
            String k = n.asText();
            if (olds.contains(k)) {
              next.add(newKey);
              hit = true;
            } else {
              next.add(k);
            }
          }
          if (hit) {
            ArrayNode arr = Json.MAPPER.createArrayNode();
            next.forEach(arr::add);
            rewritten.put(rs.getString(1), Json.stringify(arr));
          }
        }
      }
      for (Map.Entry<String, String> e : rewritten.entrySet()) {
        update("UPDATE sender_lists SET senders = ? WHERE target_pubkey = ?", e.getValue(), e.getKey());
      }
    } catch (SQLException e) {
      throw mapped("moveAllowlists", e);
    }
  }

  // ---- seqs ----

  /**
   * Locks the target's counter row for the rest of the transaction (creating it at 1) and returns the next seq as
   * this transaction sees it.
   */
  private long lockTarget(String target) throws StoreException {
    Long known = tx.nextSeq.get(target);
    if (known != null) {
      return known;
    }
    try {
      Long next = lockedNext(target);
      if (next == null) {
        update("INSERT INTO seqs(target_pubkey, next_seq) VALUES(?, 1) ON CONFLICT DO NOTHING", target);
        next = lockedNext(target);
      }
      tx.nextSeq.put(target, next);
      return next;
    } catch (SQLException e) {
      throw mapped("lock target", e);
    }
  }

  @Override
  public boolean locksTargets() {
    return true;
  }

  /**
   * Locks the counter rows of {@code targets} in ascending key order (issue 20 item 3): one statement for the rows
   * that exist ({@code ORDER BY … COLLATE "C"}, the order of {@link String#compareTo} for the ASCII keys, under
   * {@code FOR UPDATE} locks rows in output order), then the missing rows of live enrolments (a host's first item) are
   * created and locked the same way; a key nobody enrolled gets no row.
   */
  @Override
  public void lockTargets(java.util.SortedSet<String> targets) throws StoreException {
    List<String> wanted = new ArrayList<>(targets.size());
    for (String t : targets) {
      if (!tx.nextSeq.containsKey(t)) {
        wanted.add(t);
      }
    }
    if (wanted.isEmpty()) {
      return;
    }
    try {
      lockExisting(wanted);
      List<String> missing = new ArrayList<>();
      for (String t : wanted) {
        if (!tx.nextSeq.containsKey(t) && store.enrolmentCache().get(t).isPresent()) {
          missing.add(t);
        }
      }
      if (!missing.isEmpty()) {
        try (PreparedStatement ps = c().prepareStatement("INSERT INTO seqs(target_pubkey, next_seq)"
            + " SELECT t, 1 FROM unnest(?::text[]) AS t ORDER BY t COLLATE \"C\" ON CONFLICT DO NOTHING")) {
          ps.setArray(1, c().createArrayOf("text", missing.toArray()));
          ps.executeUpdate();
        }
        lockExisting(missing);
      }
    } catch (SQLException e) {
      throw mapped("lock targets", e);
    }
  }

  private void lockExisting(List<String> targets) throws SQLException, StoreException {
    try (PreparedStatement ps = c().prepareStatement("SELECT target_pubkey, next_seq FROM seqs"
        + " WHERE target_pubkey = ANY(?) ORDER BY target_pubkey COLLATE \"C\" FOR UPDATE")) {
      ps.setArray(1, c().createArrayOf("text", targets.toArray()));
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          tx.nextSeq.put(rs.getString(1), rs.getLong(2));
        }
      }
    }
  }

  private Long lockedNext(String target) throws SQLException, StoreException {
    try (PreparedStatement ps = c().prepareStatement(
        "SELECT next_seq FROM seqs WHERE target_pubkey = ? FOR UPDATE")) {
      ps.setString(1, target);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() ? rs.getLong(1) : null;
      }
    }
  }

  @Override
  public long nextSeq(String target) throws StoreException {
    if (conn == null) {
      return outside(() -> {
        return text(SqlCatalogue.NEXT_SEQ, target).map(Long::parseLong).orElse(1L);
      });
    }
    return lockTarget(target);
  }

  @FunctionalInterface
  private interface InTx<T> {
    T run() throws StoreException;
  }

  /** A read outside the writer's transaction (headSeq, enrolment lookups of the ledger's callers): its own one. */
  private <T> T outside(InTx<T> read) throws StoreException {
    begin();
    try {
      return read.run();
    } finally {
      rollback();
    }
  }

  @Override
  public void useSeq(String target, long seq) throws StoreException {
    long next = lockTarget(target);
    if (seq + 1 > next) {
      tx.nextSeq.put(target, seq + 1);
      tx.seqDirty.add(target);
    }
  }

  // ---- dedup ----

  // ---- items ----

  /** Inserts the row and counts it per target and per target sender in one statement. */
  private static final String INSERT_ITEM = "WITH i AS (INSERT INTO items(" + SqlCatalogue.ITEM_COLUMNS + ")"
      + " VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING 1),"
      + " q AS (INSERT INTO queue_usage(target_pubkey, items, bytes) VALUES(?, 1, ?) ON CONFLICT(target_pubkey)"
      + " DO UPDATE SET items = queue_usage.items + 1, bytes = queue_usage.bytes + excluded.bytes RETURNING 1)"
      + " INSERT INTO sender_usage(target_pubkey, sender_pubkey, items, bytes) VALUES(?, ?, 1, ?)"
      + " ON CONFLICT(target_pubkey, sender_pubkey) DO UPDATE SET items = sender_usage.items + 1,"
      + " bytes = sender_usage.bytes + excluded.bytes";

  @Override
  public void insertItem(Enrolment target, ItemRow item) throws StoreException {
    lockTarget(item.target());
    try (PreparedStatement ps = c().prepareStatement(INSERT_ITEM)) {
      int i = 1;
      ps.setString(i++, item.target());
      ps.setLong(i++, item.seq());
      ps.setString(i++, item.kind());
      ps.setString(i++, item.itemId());
      ps.setString(i++, item.sender());
      ps.setString(i++, item.senderHost());
      ps.setBytes(i++, item.wire());
      ps.setString(i++, item.wireHash());
      ps.setLong(i++, item.bytes());
      ps.setString(i++, item.acceptedAt());
      ps.setString(i++, item.expiresAt());
      ps.setString(i++, item.target());
      ps.setLong(i++, item.bytes());
      ps.setString(i++, item.target());
      ps.setString(i++, item.sender());
      ps.setLong(i, item.bytes());
      ps.executeUpdate();
    } catch (SQLException e) {
      throw mapped("insert item", e);
    }
    count(item.sender(), 1, item.bytes());
    add(tx.targetUsage.get(item.target()), 1, item.bytes());
    add(tx.senderShare.get(item.target() + " " + item.sender()), 1, item.bytes());
    if (target != null && target.account() != null && target.live()) {
      add(tx.accountUsage.get(target.account()), 1, item.bytes());
    }
  }

  private static void add(long[] counter, long items, long bytes) {
    if (counter != null) {
      counter[0] += items;
      counter[1] += bytes;
    }
  }

  private void count(String sender, long items, long bytes) {
    long[] d = tx.senderDelta.computeIfAbsent(sender, k -> new long[2]);
    d[0] += items;
    d[1] += bytes;
    tx.storeItems += items;
    tx.storeBytes += bytes;
  }

  /** Runs one of the catalogue's item deletes and uncounts what it deleted; rows deleted. */
  @Override
  protected int deleteCounted(String sql, String target, long seq) throws StoreException {
    Map<String, long[]> bySender = new TreeMap<>();
    int n;
    try {
      n = deleteReturning(sql, target, seq, (sender, bytes) -> {
        long[] s = bySender.computeIfAbsent(sender, k -> new long[2]);
        s[0]++;
        s[1] += bytes;
      });
    } catch (SQLException e) {
      throw mapped("delete items", e);
    }
    uncount(target, bySender);
    return n;
  }

  /** Uncounts deleted rows of one target: sender → {items, bytes}, in key order. */
  private void uncount(String target, Map<String, long[]> bySender) throws StoreException {
    if (bySender.isEmpty()) {
      return;
    }
    long items = 0;
    long bytes = 0;
    for (long[] d : bySender.values()) {
      items += d[0];
      bytes += d[1];
    }
    update("UPDATE queue_usage SET items = items - ?, bytes = bytes - ? WHERE target_pubkey = ?", items, bytes,
        target);
    add(tx.targetUsage.get(target), -items, -bytes);
    tx.accountUsage.clear();
    try (PreparedStatement ps = c().prepareStatement("UPDATE sender_usage SET items = items - ?, bytes = bytes - ?"
        + " WHERE target_pubkey = ? AND sender_pubkey = ?")) {
      for (Map.Entry<String, long[]> e : bySender.entrySet()) {
        ps.setLong(1, e.getValue()[0]);
        ps.setLong(2, e.getValue()[1]);
        ps.setString(3, target);
        ps.setString(4, e.getKey());
        ps.addBatch();
        count(e.getKey(), -e.getValue()[0], -e.getValue()[1]);
        add(tx.senderShare.get(target + " " + e.getKey()), -e.getValue()[0], -e.getValue()[1]);
      }
      ps.executeBatch();
    } catch (SQLException e) {
      throw mapped("uncount", e);
    }
    update("DELETE FROM sender_usage WHERE target_pubkey = ? AND items <= 0", target);
  }

  /**
   * The sweep's batch, or nothing when another instance holds the sweep lock (it sweeps this round; two sweepers
   * would write two expiry notices for one item).
   */
  @Override
  public List<ItemRow> expiring(String atIso, int maxRows) throws StoreException {
    if (!tryXactLock(PgSchema.LOCK_SWEEP)) {
      return List.of();
    }
    return super.expiring(atIso, maxRows);
  }

  // ---- usage ----

  @Override
  public Usage targetUsage(String target) throws StoreException {
    lockTarget(target);
    long[] u = tx.targetUsage.get(target);
    if (u == null) {
      u = counters(SqlCatalogue.QUEUE_USAGE, target);
      tx.targetUsage.put(target, u);
    }
    return usage(u);
  }

  @Override
  public Usage senderShare(String target, String sender) throws StoreException {
    lockTarget(target);
    String k = target + " " + sender;
    long[] u = tx.senderShare.get(k);
    if (u == null) {
      u = counters("SELECT items, bytes FROM sender_usage WHERE target_pubkey = ? AND sender_pubkey = ?", target,
          sender);
      tx.senderShare.put(k, u);
    }
    return usage(u);
  }

  @Override
  public Usage accountUsage(String account) throws StoreException {
    long[] u = tx.accountUsage.get(account);
    if (u == null) {
      u = counters(SqlCatalogue.ACCOUNT_USAGE, account);
      tx.accountUsage.put(account, u);
    }
    return usage(u);
  }

  @Override
  public Usage senderTotal(String sender) throws StoreException {
    long[] committed = tx.senderCommitted.get(sender);
    if (committed == null) {
      committed = counters(SqlCatalogue.SENDER_TOTAL, sender);
      tx.senderCommitted.put(sender, committed);
    }
    long[] d = tx.senderDelta.getOrDefault(sender, new long[2]);
    return new Usage(committed[0] + d[0], committed[1] + d[1]);
  }

  @Override
  public Usage storeTotals() throws StoreException {
    if (tx.storeCommitted == null) {
      tx.storeCommitted = counters("SELECT coalesce(sum(items), 0), coalesce(sum(bytes), 0) FROM store_totals");
    }
    return new Usage(tx.storeCommitted[0] + tx.storeItems, tx.storeCommitted[1] + tx.storeBytes);
  }

  private static Usage usage(long[] u) {
    return new Usage(u[0], u[1]);
  }

  @Override
  public void close() {
    rollback();
  }

  // ---- JdbcLedgerBackend ----

  @Override
  protected Dialect dialect() {
    return Dialect.POSTGRES;
  }

  /** Prepared once per transaction (the connection goes back to the pool at its end); closed by {@link #end()}. */
  @Override
  protected PreparedStatement cached(String sql) throws SQLException {
    PreparedStatement ps = statements.get(sql);
    if (ps == null || ps.isClosed()) {
      if (conn == null) {
        throw new SQLException("no open transaction", "08003");
      }
      ps = conn.prepareStatement(sql);
      statements.put(sql, ps);
    }
    return ps;
  }

  @Override
  protected StoreException fail(String what, SQLException e) {
    return mapped(what, e);
  }

  @Override
  protected void enrolmentChanged(String key) {
    tx.enrolmentsChanged.add(key);
    tx.enrolments.remove(key);
    tx.accountUsage.clear(); // which targets count for an account may have changed
  }

  @Override
  protected void allowlistChanged(String target) {
    tx.allowlists.clear();
  }

  // ---- helpers ----

  /**
   * Maps a driver failure to the ledger's classes: conflicts (40001, 40P01, 23505) are retryable; integrity and data
   * errors (other class 23, class 22) and statements the server refuses as written (class 42 but 42501
   * insufficient_privilege, class 0A) are INTERNAL (the running command is rolled back; a read answers 500: bugs);
   * data corruption (XX001, XX002) is CORRUPT; everything else (connection loss 08, resources 53, shutdown 57P01-03,
   * pool timeout, read-only 25006) is UNAVAILABLE. Used by the writer's backend and by {@link PgReads}.
   */
  static StoreException mapped(String what, SQLException e) {
    String state = e.getSQLState() == null ? "" : e.getSQLState();
    String msg = what + ": " + e.getMessage();
    if (state.equals("40001") || state.equals("40P01") || state.equals("23505")) {
      return StoreException.conflict(msg, e);
    }
    if (state.startsWith("23") || state.startsWith("22") || state.startsWith("0A")
        || state.startsWith("42") && !state.equals("42501")) {
      return new StoreException(StoreException.Kind.INTERNAL, msg, e);
    }
    if (state.equals("XX001") || state.equals("XX002")) {
      return new StoreException(StoreException.Kind.CORRUPT, msg, e);
    }
    return new StoreException(StoreException.Kind.UNAVAILABLE, msg, e, state.equals("53100"));
  }

  private boolean tryXactLock(int key) throws StoreException {
    return exists("SELECT 1 WHERE pg_try_advisory_xact_lock(?, ?)", PgSchema.LOCK_NAMESPACE, key);
  }

}
