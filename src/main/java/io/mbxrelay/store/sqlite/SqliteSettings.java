package io.mbxrelay.store.sqlite;

import java.nio.file.Path;
import java.util.Properties;
import org.sqlite.SQLiteConfig;

/**
 * Connection settings shared by the writer connection and the read-only pool (docs/protocol.md §5: WAL,
 * {@code synchronous=FULL}, {@code foreign_keys=ON}, {@code busy_timeout}).
 */
public final class SqliteSettings {
  /** File name of the store database inside the store directory. */
  public static final String DB_FILE = "relay.db";

  /**
   * Page size of a store this relay creates, bytes: 8 KiB. An item row (about 2.7 KB for a 1 KiB message sealed as an
   * AgentMBX envelope) took a 4 KiB page of its own, so every item cost one WAL frame and one checkpoint write; at 8 KiB
   * three rows share a page (issue 18: the writer's CPU per item 56 → 41 µs in a JDBC microbenchmark of the relay's
   * tables, docs/performance.md). A store created earlier keeps its page size (SQLite cannot change it in WAL mode
   * without rewriting the file).
   */
  public static final int NEW_STORE_PAGE_BYTES = 8192;

  /** The writer connection's page cache, KiB (negative for {@code PRAGMA cache_size}): 32 MiB. */
  static final int WRITER_CACHE_KIB = -32_768;

  private SqliteSettings() {}

  /**
   * JDBC URL of a database file.
   *
   * @param dbFile the file
   * @return {@code jdbc:sqlite:<absolute path>}
   */
  public static String url(Path dbFile) {
    return "jdbc:sqlite:" + dbFile.toAbsolutePath();
  }

  /**
   * Properties of the single writer connection.
   *
   * @param busyTimeoutMs SQLite busy timeout
   * @return JDBC properties
   */
  public static Properties writer(long busyTimeoutMs) {
    SQLiteConfig c = new SQLiteConfig();
    c.setJournalMode(SQLiteConfig.JournalMode.WAL);
    c.setSynchronous(SQLiteConfig.SynchronousMode.FULL);
    c.enforceForeignKeys(true);
    c.setBusyTimeout((int) busyTimeoutMs);
    c.setTransactionMode(SQLiteConfig.TransactionMode.IMMEDIATE);
    // The driver otherwise prepares and runs "SELECT last_insert_rowid()" after every INSERT for getGeneratedKeys(),
    // which the relay never calls: about a tenth of the writer's time per item (measured, issue 9).
    c.setGetGeneratedKeys(false);
    return c.toProperties();
  }

  /**
   * Properties of the background checkpointer's connection ({@link WalCheckpointer}): read-write, because a checkpoint
   * writes the database file, but it never begins a transaction. {@code synchronous=FULL} makes a checkpoint that
   * reached the log's end fsync the database; SQLite reuses the log only after such an fsync.
   *
   * @param busyTimeoutMs SQLite busy timeout
   * @return JDBC properties
   */
  public static Properties checkpointer(long busyTimeoutMs) {
    SQLiteConfig c = new SQLiteConfig();
    c.setSynchronous(SQLiteConfig.SynchronousMode.FULL);
    c.setBusyTimeout((int) busyTimeoutMs);
    return c.toProperties();
  }

  /**
   * Properties of a read-only pool connection: opened with {@code SQLITE_OPEN_READONLY}, so a bug on the read path
   * cannot write.
   *
   * @param busyTimeoutMs SQLite busy timeout
   * @return JDBC properties
   */
  public static Properties reader(long busyTimeoutMs) {
    SQLiteConfig c = new SQLiteConfig();
    c.setReadOnly(true);
    c.setBusyTimeout((int) busyTimeoutMs);
    c.enforceForeignKeys(true);
    return c.toProperties();
  }
}
