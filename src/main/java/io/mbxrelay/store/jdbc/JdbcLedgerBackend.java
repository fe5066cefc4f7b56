package io.mbxrelay.store.jdbc;

import com.fasterxml.jackson.databind.JsonNode;
import io.mbxrelay.store.StoreException;
import io.mbxrelay.store.model.DedupRow;
import io.mbxrelay.store.model.Enrolment;
import io.mbxrelay.store.model.ItemRow;
import io.mbxrelay.store.spi.LedgerBackend;
import io.mbxrelay.wire.Json;
import io.mbxrelay.wire.KeySpelling;
import java.sql.Array;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Types;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * The table operations a JDBC backend runs the same way on SQLite and PostgreSQL ({@link SqlCatalogue},
 * {@link Dialect}); a backend adds what is honestly its own: transactions, seqs, usage counters and the state it
 * keeps for them, locks, and error classification. What a backend caches about the rows these operations change, it
 * learns through {@link #enrolmentChanged} and {@link #allowlistChanged}.
 *
 * <p>Threading: as {@link LedgerBackend}, one thread at a time (the writer).
 */
public abstract class JdbcLedgerBackend implements LedgerBackend {

  /** The dialect of this backend's database. */
  protected abstract Dialect dialect();

  /**
   * The prepared statement for {@code sql} on the open transaction's connection, prepared once per connection; the
   * caller binds every parameter and does not close it.
   *
   * @throws SQLException when it cannot be prepared, or no transaction is open and the backend needs one
   */
  protected abstract PreparedStatement cached(String sql) throws SQLException;

  /**
   * A driver failure in the ledger's terms ({@link StoreException.Kind}, {@link StoreException#conflict}).
   *
   * @param what short context, for the log
   */
  protected abstract StoreException fail(String what, SQLException e);

  /** The enrolment row of {@code key} is about to change (or did) in the open transaction. */
  protected abstract void enrolmentChanged(String key);

  /** The allowlist of {@code target} is about to change in the open transaction. */
  protected abstract void allowlistChanged(String target);

  // ---- meta and ops log ----

  @Override
  public void logOp(String op, String receiptJson, String atIso) throws StoreException {
    update(SqlCatalogue.INSERT_OP, atIso, op, receiptJson);
    update(SqlCatalogue.TRIM_OPS);
  }

  // ---- enrolments ----

  /** The enrolment row as the open transaction reads it (PostgreSQL share-locks it), from the database. */
  protected Optional<Enrolment> enrolmentFromDb(String key) throws SQLException {
    PreparedStatement ps = cached(dialect().writerEnrolment);
    ps.setString(1, key);
    try (ResultSet rs = ps.executeQuery()) {
      return rs.next() ? Optional.of(enrolment(rs)) : Optional.empty();
    }
  }

  /** Every enrolment row, live or revoked. */
  protected List<Enrolment> allEnrolmentRows() throws SQLException {
    List<Enrolment> all = new ArrayList<>();
    try (ResultSet rs = cached(SqlCatalogue.ALL_ENROLMENTS).executeQuery()) {
      while (rs.next()) {
        all.add(enrolment(rs));
      }
    }
    return all;
  }

  /**
   * An enrolment from a row of {@link SqlCatalogue#ENROLMENT_COLUMNS}.
   *
   * @param rs positioned on the row
   * @return the enrolment
   * @throws SQLException when a column cannot be read
   */
  public static Enrolment enrolment(ResultSet rs) throws SQLException {
    return new Enrolment(rs.getString(1), rs.getString(2), rs.getString(3), rs.getString(4), rs.getString(5),
        rs.getString(6), rs.getString(7));
  }

  @Override
  public long liveEnrolmentCount() throws StoreException {
    return queryLong(SqlCatalogue.LIVE_ENROLMENT_COUNT);
  }

  @Override
  public boolean nameTaken(String account, String hostName, String exceptKey) throws StoreException {
    return exists(dialect().nameTaken, account, hostName, exceptKey == null ? "" : exceptKey);
  }

  @Override
  public void upsertEnrolment(Enrolment row) throws StoreException {
    enrolmentChanged(row.hostPubkey());
    update(SqlCatalogue.UPSERT_ENROLMENT, row.hostPubkey(), row.hostName(), row.ownerFp(), row.account(),
        row.authorizedBy(), row.enrolledAt());
  }

  @Override
  public boolean revoke(String hostPubkey, String atIso) throws StoreException {
    if (update(SqlCatalogue.REVOKE, atIso, hostPubkey) > 0) {
      enrolmentChanged(hostPubkey);
      return true;
    }
    return false;
  }

  @Override
  public List<String> liveKeys() throws StoreException {
    return strings(SqlCatalogue.LIVE_KEYS);
  }

  @Override
  public Optional<String> clientIdOf(String hostPubkey) throws StoreException {
    return text(SqlCatalogue.CLIENT_ID, hostPubkey);
  }

  @Override
  public void recordClient(String hostPubkey, String clientId, String org, String atIso) throws StoreException {
    update(SqlCatalogue.RECORD_CLIENT, hostPubkey, clientId, org, atIso);
  }

  @Override
  public void copyClient(String from, String to, String atIso) throws StoreException {
    update(SqlCatalogue.COPY_CLIENT, to, atIso, from);
  }

  @Override
  public int revokeByClient(String clientId, String atIso) throws StoreException {
    List<String> keys = strings(SqlCatalogue.REVOKE_BY_CLIENT, atIso, clientId);
    keys.forEach(this::enrolmentChanged);
    return keys.size();
  }

  // ---- deny list ----

  @Override
  public boolean denied(String kind, String value) throws StoreException {
    return exists(SqlCatalogue.DENIED, kind, value);
  }

  @Override
  public boolean addDeny(String kind, String value, String note, String atIso) throws StoreException {
    return update(SqlCatalogue.ADD_DENY, kind, value, note, atIso) > 0;
  }

  @Override
  public boolean removeDeny(String kind, String value) throws StoreException {
    return update(SqlCatalogue.REMOVE_DENY, kind, value) > 0;
  }

  // ---- sender allowlists and enc-key ads ----

  /**
   * The stored allowlist of a target, keys in their canonical spelling (lists stored before keys were canonicalised
   * still match), or empty when it has none. Read from the database every time: the backend caches.
   */
  protected Optional<Set<String>> allowlistFromDb(String target) throws StoreException {
    Optional<String> json = text(SqlCatalogue.ALLOWLIST, target);
    if (json.isEmpty()) {
      return Optional.empty();
    }
    Set<String> out = new LinkedHashSet<>();
    for (JsonNode n : Json.parse(json.get())) {
      if (n.isTextual()) {
        out.add(KeySpelling.canonicalOrSelf(n.textValue()));
      }
    }
    return Optional.of(Collections.unmodifiableSet(out));
  }

  @Override
  public Optional<String> allowlistIat(String target) throws StoreException {
    return text(SqlCatalogue.ALLOWLIST_IAT, target);
  }

  @Override
  public void putAllowlist(String target, List<String> senders, String iat, String record, String sig)
      throws StoreException {
    allowlistChanged(target);
    update(SqlCatalogue.PUT_ALLOWLIST, target, Json.stringify(senders), iat, record, sig);
  }

  /** Rotation: the old key's own list becomes the new key's (replacing one the new key had). */
  protected void moveOwnAllowlist(String oldKey, String newKey) throws StoreException {
    if (exists(SqlCatalogue.ALLOWLIST_EXISTS, oldKey)) {
      update(SqlCatalogue.DELETE_ALLOWLIST, newKey);
      update(SqlCatalogue.MOVE_ALLOWLIST, newKey, oldKey);
    }
  }

  @Override
  public void putEncAdV1(String hostPubkey, String hostName, String encPub, String sig, String atIso)
      throws StoreException {
    update(SqlCatalogue.PUT_ENC_AD_V1, hostPubkey, hostName, encPub, sig, atIso);
  }

  @Override
  public Optional<String> encAdV2(String hostPubkey) throws StoreException {
    return text(SqlCatalogue.ENC_AD_V2, hostPubkey);
  }

  @Override
  public void putEncAdV2(String hostPubkey, String record, String sig, String atIso) throws StoreException {
    update(SqlCatalogue.PUT_ENC_AD_V2, hostPubkey, record, sig, atIso);
  }

  @Override
  public void dropEncAds(String hostPubkey) throws StoreException {
    update(SqlCatalogue.DELETE_ENC_AD_V1, hostPubkey);
    update(SqlCatalogue.DELETE_ENC_AD_V2, hostPubkey);
  }

  // ---- dedup ----

  @Override
  public boolean insertDedup(DedupRow row) throws StoreException {
    try {
      PreparedStatement ps = cached(SqlCatalogue.INSERT_DEDUP);
      ps.setString(1, row.sender());
      ps.setString(2, row.itemId());
      ps.setString(3, row.target());
      ps.setString(4, row.wireHash());
      ps.setLong(5, row.seq());
      ps.setString(6, row.acceptedAt());
      return ps.executeUpdate() == 1;
    } catch (SQLException e) {
      throw fail("dedup insert failed", e);
    }
  }

  @Override
  public Optional<DedupRow> dedup(String sender, String itemId, String target) throws StoreException {
    try {
      PreparedStatement ps = cached(SqlCatalogue.DEDUP);
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
    if (dialect() == Dialect.SQLITE) {
      update(dialect().moveDedup, to, newSeq, sender, itemId, from);
    } else {
      update(dialect().moveDedup, to, newSeq, sender, itemId, from, sender, itemId, to);
    }
  }

  @Override
  public void moveRemainingDedup(String from, String to) throws StoreException {
    if (dialect() == Dialect.SQLITE) {
      update(dialect().moveRemainingDedup, to, from);
    } else {
      update(dialect().moveRemainingDedup, to, from, to);
    }
    update(SqlCatalogue.DELETE_DEDUP_OF_TARGET, from);
  }

  @Override
  public int pruneDedup(String beforeIso, int maxRows) throws StoreException {
    return update(dialect().pruneDedup, beforeIso, maxRows);
  }

  // ---- items ----

  /** Receives one deleted row. */
  @FunctionalInterface
  protected interface DeletedRow {
    void accept(String sender, long bytes) throws SQLException;
  }

  /**
   * Runs one of the {@code DELETE … RETURNING sender_pubkey, bytes} statements of {@link SqlCatalogue} and hands each
   * deleted row to {@code sink}.
   *
   * @param seq the second parameter ({@code seq} or {@code through}), or negative for none
   * @return rows deleted
   */
  protected int deleteReturning(String sql, String target, long seq, DeletedRow sink)
      throws SQLException {
    PreparedStatement ps = cached(sql);
    ps.setString(1, target);
    if (seq >= 0) {
      ps.setLong(2, seq);
    }
    int n = 0;
    try (ResultSet rs = ps.executeQuery()) {
      while (rs.next()) {
        sink.accept(rs.getString(1), rs.getLong(2));
        n++;
      }
    }
    return n;
  }

  /**
   * Runs one of the {@code DELETE … RETURNING sender_pubkey, bytes} statements and counts what it deleted out of the
   * backend's usage counters.
   *
   * @param seq the second parameter ({@code seq} or {@code through}), or negative for none
   * @return rows deleted
   */
  protected abstract int deleteCounted(String sql, String target, long seq) throws StoreException;

  @Override
  public int deleteThrough(String target, long through) throws StoreException {
    return deleteCounted(SqlCatalogue.DELETE_THROUGH, target, through);
  }

  @Override
  public boolean deleteItem(String target, long seq) throws StoreException {
    return deleteCounted(SqlCatalogue.DELETE_ITEM, target, seq) > 0;
  }

  @Override
  public int deleteQueue(String target) throws StoreException {
    return deleteCounted(SqlCatalogue.DELETE_QUEUE, target, -1);
  }

  @Override
  public List<ItemRow> queue(String target) throws StoreException {
    return items(SqlCatalogue.QUEUE, true, target);
  }

  @Override
  public Optional<ItemRow> item(String target, long seq) throws StoreException {
    List<ItemRow> rows = items(SqlCatalogue.ITEM, true, target, seq);
    return rows.isEmpty() ? Optional.empty() : Optional.of(rows.get(0));
  }

  @Override
  public void setAside(String target, long seq, String foundAtIso) throws StoreException {
    update(SqlCatalogue.COPY_TO_DAMAGED, foundAtIso, target, seq);
    deleteItem(target, seq);
  }

  @Override
  public List<ItemRow> expiring(String atIso, int maxRows) throws StoreException {
    return items(SqlCatalogue.EXPIRING, false, atIso, maxRows);
  }

  @Override
  public long raiseAcked(String target, long through) throws StoreException {
    return queryLong(dialect().raiseAcked, target, through);
  }

  // ---- helpers ----

  /** Closes every statement of a per-connection cache (a failed close is ignored: the statement is gone) and empties it. */
  protected static void closeAll(java.util.Map<String, PreparedStatement> statements) {
    for (PreparedStatement ps : statements.values()) {
      try {
        ps.close();
      } catch (SQLException ignored) {
        // already finalized, or the connection is broken
      }
    }
    statements.clear();
  }

  /**
   * Binds {@code args} in order: {@link Long}, {@link Integer}, {@code byte[]}, {@link Array}, null (as a text null),
   * anything else as its text.
   */
  protected static void bind(PreparedStatement ps, Object... args) throws SQLException {
    for (int i = 0; i < args.length; i++) {
      Object a = args[i];
      if (a == null) {
        ps.setNull(i + 1, Types.VARCHAR);
      } else if (a instanceof Long l) {
        ps.setLong(i + 1, l);
      } else if (a instanceof Integer n) {
        ps.setInt(i + 1, n);
      } else if (a instanceof byte[] b) {
        ps.setBytes(i + 1, b);
      } else if (a instanceof Array arr) {
        ps.setArray(i + 1, arr);
      } else {
        ps.setString(i + 1, a.toString());
      }
    }
  }

  /** Runs an insert, update or delete; rows changed. */
  protected int update(String sql, Object... args) throws StoreException {
    try {
      PreparedStatement ps = cached(sql);
      bind(ps, args);
      return ps.executeUpdate();
    } catch (SQLException e) {
      throw fail("write failed", e);
    }
  }

  /** Whether the query returns a row. */
  protected boolean exists(String sql, Object... args) throws StoreException {
    try {
      PreparedStatement ps = cached(sql);
      bind(ps, args);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next();
      }
    } catch (SQLException e) {
      throw fail("read failed", e);
    }
  }

  /** The first column of the first row, or empty (no row, or null). */
  protected Optional<String> text(String sql, Object... args) throws StoreException {
    try {
      PreparedStatement ps = cached(sql);
      bind(ps, args);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() ? Optional.ofNullable(rs.getString(1)) : Optional.empty();
      }
    } catch (SQLException e) {
      throw fail("read failed", e);
    }
  }

  /** The first column of every row. */
  protected List<String> strings(String sql, Object... args) throws StoreException {
    try {
      PreparedStatement ps = cached(sql);
      bind(ps, args);
      List<String> out = new ArrayList<>();
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          out.add(rs.getString(1));
        }
      }
      return out;
    } catch (SQLException e) {
      throw fail("read failed", e);
    }
  }

  /** The first column of the first row as a number (0 when null); the query must return a row. */
  protected long queryLong(String sql, Object... args) throws StoreException {
    try {
      PreparedStatement ps = cached(sql);
      bind(ps, args);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    } catch (SQLException e) {
      throw fail("read failed", e);
    }
  }

  /** {@code {items, bytes}} from the first two columns of the first row, {@code {0, 0}} when there is none. */
  protected long[] counters(String sql, Object... args) throws StoreException {
    try {
      PreparedStatement ps = cached(sql);
      bind(ps, args);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() ? new long[] {rs.getLong(1), rs.getLong(2)} : new long[2];
      }
    } catch (SQLException e) {
      throw fail("read failed", e);
    }
  }

  /** Item rows of a query over {@link SqlCatalogue#ITEM_COLUMNS} (column 7 read only {@code withWire}). */
  protected List<ItemRow> items(String sql, boolean withWire, Object... args) throws StoreException {
    try {
      PreparedStatement ps = cached(sql);
      bind(ps, args);
      List<ItemRow> out = new ArrayList<>();
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          out.add(new ItemRow(rs.getString(1), rs.getLong(2), rs.getString(3), rs.getString(4), rs.getString(5),
              rs.getString(6), withWire ? rs.getBytes(7) : null, rs.getString(8), rs.getLong(9), rs.getString(10),
              rs.getString(11)));
        }
      }
      return out;
    } catch (SQLException e) {
      throw fail("read failed", e);
    }
  }
}
