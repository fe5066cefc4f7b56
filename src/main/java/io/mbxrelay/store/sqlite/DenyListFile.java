package io.mbxrelay.store.sqlite;

import io.mbxrelay.store.model.DenyOutcome;
import io.mbxrelay.store.RelayLedger;
import io.mbxrelay.store.RelayStore;
import io.mbxrelay.store.StoreCommand;
import io.mbxrelay.store.StoreException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Clock;
import java.util.ArrayList;
import java.util.List;

/**
 * Operator access to a store's deny list without the relay key (the {@code mbxrelay deny} CLI; docs/protocol.md §7.8
 * "Revocation"). Each call opens its own connection and runs the writer's {@link StoreCommand.Deny} or
 * {@link StoreCommand.Undeny} through a {@link RelayLedger} over a {@link SqliteBackend} session on it (one
 * {@code BEGIN IMMEDIATE} transaction, the same rules and ops-log entries), then closes it. Safe beside a running
 * relay: SQLite serializes the two writers (busy timeout 5 s); the admin endpoint is the preferred path while the
 * relay runs.
 *
 * <p>Threading: blocking; call from a plain thread (the CLI main thread).
 */
public final class DenyListFile {
  private DenyListFile() {}

  /** Deny and undeny read no limit; the ledger still wants a set: the built-in defaults. */
  private static io.mbxrelay.config.RelayConfig.Limits defaultLimits() {
    try {
      return io.mbxrelay.config.ConfigLoader.load(null, java.util.Map.of()).limits();
    } catch (io.mbxrelay.config.ConfigException e) {
      throw new IllegalStateException("the built-in defaults do not load", e);
    }
  }

  /**
   * One entry as listed.
   *
   * @param kind {@code host_fp} or {@code client_id}
   * @param value fingerprint or client id
   * @param note operator note
   * @param addedAt ISO time
   */
  public record Entry(String kind, String value, String note, String addedAt) {}

  /**
   * Adds an entry and revokes what it matches.
   *
   * @param storeDir store directory
   * @param kind {@code host_fp} or {@code client_id} (already normalized)
   * @param value the canonical value
   * @param note operator note
   * @param clock time source
   * @return what happened
   * @throws StoreException when the store is missing, not version {@link RelayStore#SCHEMA_VERSION}, or I/O fails
   */
  public static DenyOutcome add(Path storeDir, String kind, String value, String note, Clock clock)
      throws StoreException {
    return (DenyOutcome) write(storeDir, clock, new StoreCommand.Deny(kind, value, note));
  }

  /**
   * Removes an entry (revocations stay).
   *
   * @param storeDir store directory
   * @param kind kind
   * @param value value
   * @param clock time source
   * @return whether it existed
   * @throws StoreException as {@link #add}
   */
  public static boolean remove(Path storeDir, String kind, String value, Clock clock) throws StoreException {
    return (Boolean) write(storeDir, clock, new StoreCommand.Undeny(kind, value));
  }

  /**
   * Lists the entries by time added.
   *
   * @param storeDir store directory
   * @return the entries
   * @throws StoreException as {@link #add}
   */
  public static List<Entry> list(Path storeDir) throws StoreException {
    try (Connection c = open(storeDir); Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT kind, value, note, added_at FROM deny_list ORDER BY added_at, kind,"
            + " value")) {
      List<Entry> out = new ArrayList<>();
      while (rs.next()) {
        out.add(new Entry(rs.getString(1), rs.getString(2), rs.getString(3), rs.getString(4)));
      }
      return out;
    } catch (SQLException e) {
      throw SqliteRelayStore.classify("deny list read failed", e);
    }
  }

  private static Object write(Path storeDir, Clock clock, StoreCommand<?> command) throws StoreException {
    try (Connection c = open(storeDir)) {
      // the writer's own rules over a session on this connection (one transaction, like a relay's command)
      RelayLedger ledger = new RelayLedger(SqliteBackend.session(c, clock), clock, defaultLimits())
          .denyVia("mbxrelay deny");
      try {
        return ledger.execute(command);
      } finally {
        ledger.close();
      }
    } catch (SQLException e) {
      throw SqliteRelayStore.classify("deny list write failed", e);
    }
  }

  private static Connection open(Path storeDir) throws StoreException, SQLException {
    Path db = storeDir.resolve(SqliteSettings.DB_FILE);
    if (!Files.isRegularFile(db)) {
      throw new StoreException(StoreException.Kind.INTERNAL, "no relay store at " + storeDir, null);
    }
    Connection c = DriverManager.getConnection(SqliteSettings.url(db), SqliteSettings.writer(5000));
    try (PreparedStatement ps = c.prepareStatement("SELECT v FROM meta WHERE k='schema_version'");
        ResultSet rs = ps.executeQuery()) {
      String v = rs.next() ? rs.getString(1) : null;
      if (!Integer.toString(RelayStore.SCHEMA_VERSION).equals(v)) {
        c.close();
        throw new StoreException(StoreException.Kind.INTERNAL, "the store at " + storeDir + " has schema version "
            + v + "; this command needs " + RelayStore.SCHEMA_VERSION + " (start the relay once to migrate it)", null);
      }
    } catch (SQLException e) {
      c.close();
      throw e;
    }
    return c;
  }
}
