package io.mbxrelay.store.migrate;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.mbxrelay.crypto.Ed25519KeyPair;
import io.mbxrelay.crypto.RelayKeyException;
import io.mbxrelay.crypto.RelayKeys;
import io.mbxrelay.store.StoreOpenException;
import io.mbxrelay.store.postgres.PgSchema;
import io.mbxrelay.store.postgres.PgStore;
import io.mbxrelay.store.sqlite.SqliteSettings;
import io.mbxrelay.store.sqlite.StoreLock;
import io.mbxrelay.wire.IsoTime;
import io.mbxrelay.wire.Json;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * {@code mbxrelay migrate-store --from sqlite:DIR --to postgresql:URL} (docs/scale-out.md "Moving from SQLite"): copies
 * a stopped relay's embedded store into an empty PostgreSQL database, in one PostgreSQL transaction, keeping the relay
 * key (from {@code DIR/relay.key} or {@code MBX_RELAY_KEY}), the epoch and heartbeat (so hosts see the same relay, and
 * a start within {@code timers.heartbeatStaleMs} keeps the epoch), enrolments, queues with their seqs, acked
 * positions, dedup rows, allowlists, ads, deny list and the ops log. The usage counters are computed from the copied
 * rows. The SQLite store is only read (its lock is held meanwhile, so no relay can start on it).
 */
public final class SqliteToPostgres {
  private SqliteToPostgres() {}

  /** Tables copied as they are, in this order (the counters are rebuilt, not copied). */
  static final List<String> TABLES = List.of("enrolments", "enrolment_clients", "enc_ads", "enc_ad_records", "items",
      "dedup", "seqs", "acked", "sender_lists", "deny_list", "damaged_items", "ops");

  /** Meta keys copied (the relay key is added from the key file). */
  static final List<String> META = List.of("epoch", "heartbeat", "expiry_from", "epoch_rotated", "clock_watermark");

  /** A refusal with the operator's next step in its message. */
  public static final class Refused extends Exception {
    private static final long serialVersionUID = 1L;

    Refused(String message, Throwable cause) {
      super(message, cause);
    }
  }

  /**
   * Runs the migration.
   *
   * @param storeDir the SQLite store directory (its relay must be stopped)
   * @param target PostgreSQL settings of an empty (or schema-only, never served) database
   * @param envKey {@code MBX_RELAY_KEY} when the relay ran with it, else null (the key file is read)
   * @param nowMs now, for the receipt
   * @return the receipt: rows copied per table, relay key, epoch
   * @throws Refused when the relay runs, the store or key is missing, or the database already holds a relay store
   */
  @SuppressWarnings("try") // a resource held for the block, not used in it
  public static ObjectNode migrate(Path storeDir, PgStore.Settings target, String envKey, long nowMs)
      throws Refused {
    Path db = storeDir.resolve(SqliteSettings.DB_FILE);
    if (!Files.isRegularFile(db)) {
      throw new Refused("no relay store at " + db, null);
    }
    Ed25519KeyPair key = relayKey(storeDir, envKey);
    try (StoreLock lock = StoreLock.acquire(storeDir, 0);
        Connection src = DriverManager.getConnection(SqliteSettings.url(db), SqliteSettings.reader(5000));
        Connection dst = pgConnection(target)) {
      String pinned = sqliteMeta(src, "relay_pubkey");
      if (pinned != null && !pinned.equals(key.publicKeyB64())) {
        throw new Refused("the store is pinned to relay key " + pinned + " but the key given is "
            + key.publicKeyB64(), null);
      }
      PgSchema.migrate(dst);
      dst.setAutoCommit(false);
      ObjectNode receipt = Json.MAPPER.createObjectNode().put("v", 1).put("type", "relay-store-migrated")
          .put("at", IsoTime.format(nowMs)).put("from", storeDir.toAbsolutePath().toString())
          .put("to", target.url().replaceAll("\\?.*$", "")).put("relay_pubkey", key.publicKeyB64());
      try (Statement st = dst.createStatement()) {
        st.execute("SELECT pg_advisory_xact_lock(" + PgSchema.LOCK_NAMESPACE + ", " + PgSchema.LOCK_OPEN + ")");
        try (ResultSet rs = st.executeQuery("SELECT (SELECT count(*) FROM meta WHERE k IN ('relay_key', 'epoch'))"
            + " + (SELECT count(*) FROM enrolments) + (SELECT count(*) FROM items)")) {
          rs.next();
          if (rs.getLong(1) > 0) {
            throw new Refused("the PostgreSQL database already holds a relay store (a key, an epoch, enrolments or"
                + " items): migrate into an empty database", null);
          }
        }
        PgStore.putMeta(dst, "relay_key", RelayKeys.toFileJson(key).strip());
        PgStore.putMeta(dst, "relay_pubkey", key.publicKeyB64());
        for (String k : META) {
          String v = sqliteMeta(src, k);
          if (v != null) {
            PgStore.putMeta(dst, k, v);
          }
        }
        receipt.put("epoch", sqliteMeta(src, "epoch"));
        ObjectNode rows = receipt.putObject("rows");
        for (String table : TABLES) {
          rows.put(table, copy(src, dst, table));
        }
        // a v5 SQLite store keeps a seq floor; PostgreSQL keeps the next seq itself: the floor, one past the ack or one
        // past the highest queued seq, the largest
        st.execute("INSERT INTO seqs(target_pubkey, next_seq) SELECT target_pubkey, max(n) FROM ("
            + "SELECT target_pubkey, acked_through + 1 AS n FROM acked UNION ALL"
            + " SELECT target_pubkey, max(seq) + 1 FROM items GROUP BY target_pubkey) s GROUP BY target_pubkey"
            + " ON CONFLICT(target_pubkey) DO UPDATE SET next_seq = GREATEST(seqs.next_seq, excluded.next_seq)");
        st.execute("SELECT setval(pg_get_serial_sequence('ops', 'id'), coalesce((SELECT max(id) FROM ops), 0) + 1,"
            + " false)");
        // the counters, from the copied rows
        st.execute("INSERT INTO queue_usage(target_pubkey, items, bytes) SELECT target_pubkey, count(*), sum(bytes)"
            + " FROM items GROUP BY target_pubkey");
        st.execute("INSERT INTO sender_usage(target_pubkey, sender_pubkey, items, bytes) SELECT target_pubkey,"
            + " sender_pubkey, count(*), sum(bytes) FROM items GROUP BY target_pubkey, sender_pubkey");
        st.execute("INSERT INTO sender_totals(sender_pubkey, items, bytes) SELECT sender_pubkey, count(*), sum(bytes)"
            + " FROM items GROUP BY sender_pubkey");
        st.execute("UPDATE store_totals SET items = (SELECT count(*) FROM items),"
            + " bytes = (SELECT coalesce(sum(bytes), 0) FROM items) WHERE shard = 0");
        st.execute("INSERT INTO ops(at, op, receipt) VALUES('" + IsoTime.format(nowMs) + "', 'store-migrated', '"
            + Json.stringify(receipt).replace("'", "''") + "')");
      }
      dst.commit();
      return receipt;
    } catch (StoreOpenException e) {
      throw new Refused("the store " + storeDir + " is in use (" + e.getMessage() + "): stop its relay first", e);
    } catch (SQLException e) {
      throw new Refused("migration failed, nothing was written to PostgreSQL: " + e.getMessage(), e);
    }
  }

  private static Ed25519KeyPair relayKey(Path storeDir, String envKey) throws Refused {
    try {
      if (envKey != null && !envKey.isBlank()) {
        return RelayKeys.parse(envKey.strip());
      }
      return RelayKeys.parse(Files.readString(storeDir.resolve(RelayKeys.FILE_NAME), StandardCharsets.UTF_8));
    } catch (NoSuchFileException e) {
      throw new Refused("no relay key at " + storeDir.resolve(RelayKeys.FILE_NAME) + " and " + RelayKeys.ENV
          + " is not set: give the relay's key", e);
    } catch (IOException | RelayKeyException e) {
      throw new Refused("the relay key cannot be read: " + e.getMessage(), e);
    }
  }

  private static Connection pgConnection(PgStore.Settings s) throws SQLException {
    return DriverManager.getConnection(s.url(), s.properties("mbxrelay-migrate-store"));
  }

  private static String sqliteMeta(Connection src, String k) throws SQLException {
    try (PreparedStatement ps = src.prepareStatement("SELECT v FROM meta WHERE k = ?")) {
      ps.setString(1, k);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() ? rs.getString(1) : null;
      }
    }
  }

  /** Copies the columns both sides have, in batches; returns the rows copied (0 when SQLite lacks the table). */
  private static long copy(Connection src, Connection dst, String table) throws SQLException {
    Set<String> srcCols = new LinkedHashSet<>();
    try (Statement st = src.createStatement(); ResultSet rs = st.executeQuery("PRAGMA table_info(" + table + ")")) {
      while (rs.next()) {
        srcCols.add(rs.getString("name"));
      }
    }
    if (srcCols.isEmpty()) {
      return 0;
    }
    List<String> cols = new ArrayList<>();
    try (PreparedStatement ps = dst.prepareStatement("SELECT column_name FROM information_schema.columns"
        + " WHERE table_schema = current_schema() AND table_name = ? ORDER BY ordinal_position")) {
      ps.setString(1, table);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          if (srcCols.contains(rs.getString(1))) {
            cols.add(rs.getString(1));
          }
        }
      }
    }
    String list = String.join(", ", cols);
    String marks = String.join(", ", java.util.Collections.nCopies(cols.size(), "?"));
    long n = 0;
    try (Statement st = src.createStatement();
        ResultSet rs = st.executeQuery("SELECT " + list + " FROM " + table);
        PreparedStatement ins = dst.prepareStatement("INSERT INTO " + table + "(" + list + ") VALUES(" + marks + ")")) {
      while (rs.next()) {
        for (int i = 1; i <= cols.size(); i++) {
          Object v = rs.getObject(i);
          if (v instanceof Integer x) {
            v = x.longValue();
          }
          ins.setObject(i, v);
        }
        ins.addBatch();
        if (++n % 500 == 0) {
          ins.executeBatch();
        }
      }
      ins.executeBatch();
    }
    return n;
  }
}
