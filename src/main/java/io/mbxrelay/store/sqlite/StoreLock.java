package io.mbxrelay.store.sqlite;

import io.mbxrelay.store.StoreOpenException;
import io.mbxrelay.wire.IsoTime;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Properties;

/**
 * The store directory's process lock (docs/protocol.md §5 "Ops": {@code relay.lock}, an SQLite file with {@code holder(pid,
 * at)} held in EXCLUSIVE locking mode for the life of {@code serve}). {@code restore} refuses while it is held.
 */
public final class StoreLock implements AutoCloseable {
  /** Lock file name inside the store directory. */
  public static final String FILE = "relay.lock";

  private final Connection conn;

  private StoreLock(Connection conn) {
    this.conn = conn;
  }

  /**
   * Takes the lock, waiting up to {@code waitMs} for another holder to go.
   *
   * @param storeDir the store directory (must exist)
   * @param waitMs how long to wait
   * @return the held lock; release with {@link #close()}
   * @throws StoreOpenException when another process holds it past the wait
   */
  public static StoreLock acquire(Path storeDir, long waitMs) throws StoreOpenException {
    return acquire(storeDir, waitMs, holder -> {});
  }

  /**
   * Takes the lock; when another process holds it, says so at once through {@code onWait} (issue 12 item 6: a second
   * relay on a held store used to wait 60 s in silence), then waits up to {@code waitMs} for it to go.
   *
   * @param storeDir the store directory (must exist)
   * @param waitMs how long to wait, ms
   * @param onWait called once, before waiting, with the holder as text ("pid 1234", from {@code /proc/locks} on
   *     Linux; "another process" where that cannot be read)
   * @return the held lock; release with {@link #close()}
   * @throws StoreOpenException when another process holds it past the wait (the message names the holder)
   */
  public static StoreLock acquire(Path storeDir, long waitMs, java.util.function.Consumer<String> onWait)
      throws StoreOpenException {
    try {
      return acquire0(storeDir, 0);
    } catch (Held busy) {
      if (waitMs <= 0) {
        throw busy;
      }
    }
    String holder = holder(storeDir.resolve(FILE));
    onWait.accept(holder);
    try {
      return acquire0(storeDir, waitMs);
    } catch (Held e) {
      throw new StoreOpenException("the store " + storeDir + " is in use by another relay process (" + holder(
          storeDir.resolve(FILE)) + " holds " + FILE + "; waited " + waitMs / 1000 + " s)", e.getCause());
    }
  }

  /**
   * Who holds the store's lock now, without waiting (issue 22 item 5: {@code serve} says so at once). Takes the lock
   * and gives it back when it is free; never creates {@code relay.lock} (a dir without one is held by nobody).
   *
   * @param storeDir the store directory
   * @return the holder as text ({@link #holder}) when another process holds it, else empty (free, or the lock could
   *     not be tried: the relay's own start then reports that)
   */
  public static java.util.Optional<String> heldBy(Path storeDir) {
    if (!java.nio.file.Files.exists(storeDir.resolve(FILE))) {
      return java.util.Optional.empty();
    }
    try {
      acquire0(storeDir, 0).close();
      return java.util.Optional.empty();
    } catch (Held busy) {
      return java.util.Optional.of(holder(storeDir.resolve(FILE)));
    } catch (StoreOpenException e) {
      return java.util.Optional.empty();
    }
  }

  /** Another connection holds the lock (SQLite BUSY or LOCKED), as opposed to any other failure to take it. */
  private static final class Held extends StoreOpenException {
    private static final long serialVersionUID = 1L;

    Held(String message, Throwable cause) {
      super(message, cause);
    }
  }

  private static boolean busy(SQLException e) {
    if (e instanceof org.sqlite.SQLiteException se) {
      int primary = se.getResultCode().code & 0xff;
      return primary == org.sqlite.SQLiteErrorCode.SQLITE_BUSY.code
          || primary == org.sqlite.SQLiteErrorCode.SQLITE_LOCKED.code;
    }
    return e.getMessage() != null && e.getMessage().contains("database is locked");
  }

  /**
   * Who holds the lock file, as text: {@code pid N} when Linux's {@code /proc/locks} lists a POSIX lock on the file's
   * inode (SQLite locks with {@code fcntl}), else {@code another process}.
   *
   * @param file the lock file
   * @return the holder
   */
  static String holder(Path file) {
    try {
      long inode = ((Number) java.nio.file.Files.getAttribute(file, "unix:ino")).longValue();
      for (String line : java.nio.file.Files.readAllLines(Path.of("/proc/locks"))) {
        // "5: POSIX  ADVISORY  WRITE 23291 fe:00:2482283 1073741824 1073742335" (id, class, mode, type, pid, dev:inode)
        String[] f = line.trim().split("\\s+");
        if (f.length >= 6 && f[1].equals("POSIX")) { // a waiter's line reads "N: -> POSIX …" and is skipped
          String[] dev = f[5].split(":");
          if (dev.length == 3 && dev[2].equals(Long.toString(inode))) {
            return "pid " + f[4];
          }
        }
      }
    } catch (java.io.IOException | RuntimeException e) {
      // not Linux, or no /proc: say less
    }
    return "another process";
  }

  private static StoreLock acquire0(Path storeDir, long waitMs) throws StoreOpenException {
    Path file = storeDir.resolve(FILE);
    Properties p = new Properties();
    p.setProperty("busy_timeout", Long.toString(waitMs));
    Connection c = null;
    try {
      StoreFiles.refuseLink(file);
      StoreFiles.createOwnerOnly(file); // 0600, and its journal with it (issue 11 item 11)
    } catch (java.io.IOException e) {
      throw new StoreOpenException("cannot create the store lock " + file + ": " + StoreFiles.reason(e), e);
    }
    try {
      c = DriverManager.getConnection(SqliteSettings.url(file), p);
      try (Statement st = c.createStatement()) {
        st.execute("PRAGMA locking_mode=EXCLUSIVE");
        st.execute("BEGIN EXCLUSIVE");
        st.execute("CREATE TABLE IF NOT EXISTS holder(pid INTEGER, at TEXT)");
        st.execute("DELETE FROM holder");
        try (PreparedStatement ps = c.prepareStatement("INSERT INTO holder(pid, at) VALUES(?, ?)")) {
          ps.setLong(1, ProcessHandle.current().pid());
          ps.setString(2, IsoTime.format(System.currentTimeMillis()));
          ps.executeUpdate();
        }
        st.execute("COMMIT"); // EXCLUSIVE locking mode keeps the lock after COMMIT until the connection closes
      }
      return new StoreLock(c);
    } catch (SQLException e) {
      if (c != null) {
        try {
          c.close();
        } catch (SQLException ignored) {
          // already failing
        }
      }
      if (busy(e)) {
        throw new Held("the store " + storeDir + " is in use by another relay process (" + FILE + " is locked)", e);
      }
      // not held by anyone: the lock file cannot be written (a full disk, a read-only file system, a damaged file)
      throw new StoreOpenException("cannot take the store lock " + file + ": " + e.getMessage(), e);
    }
  }

  /**
   * Whether another process holds the lock right now (without waiting).
   *
   * @param storeDir the store directory
   * @return true when held elsewhere
   */
  @SuppressWarnings("try") // the lock is taken and given back, not used
  public static boolean isHeld(Path storeDir) {
    if (!storeDir.resolve(FILE).toFile().exists()) {
      return false;
    }
    try (StoreLock l = acquire(storeDir, 0)) {
      return false;
    } catch (StoreOpenException e) {
      return true;
    }
  }

  @Override
  public void close() {
    try {
      conn.close();
    } catch (SQLException ignored) {
      // releasing
    }
  }
}
