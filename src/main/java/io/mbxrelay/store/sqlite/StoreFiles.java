package io.mbxrelay.store.sqlite;

import io.mbxrelay.store.StoreRefusedException;
import io.mbxrelay.wire.IsoTime;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.channels.FileChannel;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFileAttributeView;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * The files the relay writes in a store directory, and the rules for them (issue 11 items 11 and 12: owner-only
 * state files): every file is created 0600 and every directory 0700 (SQLite gives {@code -wal},
 * {@code -shm} and journals the mode of their database file, so creating {@code relay.db} and {@code relay.lock} 0600
 * first is enough); no entry the relay writes may be a symbolic link; a store directory that group or others can
 * write is refused, one they can only read is tightened to 0700 and the caller says so. Also the lost-store check of
 * issue 10 item 4: a directory that held a store never silently becomes a new one.
 *
 * <p>The store directory itself may be a symbolic link (systemd's {@code DynamicUser} state directories are); the
 * entries inside it may not. Threading: plain file-system calls, any thread.
 */
public final class StoreFiles {
  /** Mode of every file the relay creates. */
  public static final Set<PosixFilePermission> OWNER_FILE = PosixFilePermissions.fromString("rw-------");
  /** Mode of every directory the relay creates. */
  public static final Set<PosixFilePermission> OWNER_DIR = PosixFilePermissions.fromString("rwx------");
  /** The rollback directory of {@code restore} inside the store directory. */
  public static final String ROLLBACK_DIR = "rollback";

  /** Entries the relay writes inside a store directory. */
  static final List<String> ENTRIES = List.of(SqliteSettings.DB_FILE, SqliteSettings.DB_FILE + "-wal",
      SqliteSettings.DB_FILE + "-shm", SqliteSettings.DB_FILE + "-journal", StoreLock.FILE, StoreLock.FILE + "-journal",
      "relay.key", ROLLBACK_DIR, CommitWatermark.FILE, CleanClose.FILE);

  /** Left only by a store that existed: their presence without a {@code relay.db} means the store was lost. */
  private static final List<String> TRACES = List.of(StoreLock.FILE, SqliteSettings.DB_FILE + "-wal",
      SqliteSettings.DB_FILE + "-shm", ROLLBACK_DIR, CleanClose.FILE);

  private static final Set<PosixFilePermission> OTHERS_WRITE =
      EnumSet.of(PosixFilePermission.GROUP_WRITE, PosixFilePermission.OTHERS_WRITE);

  private StoreFiles() {}

  /**
   * Makes a store directory safe before anything in it is opened: creates it 0700 when missing; refuses it when it is
   * not a directory, when group or others can write it, or when an entry the relay writes ({@code relay.db} and its
   * side files, {@code relay.lock}, {@code relay.key}, {@code rollback/}) is a symbolic link; tightens a directory
   * others can read to 0700 and existing store files to 0600.
   *
   * @param dir the store directory
   * @return one operator line per mode tightened (empty when nothing was)
   * @throws StoreRefusedException when the directory or an entry is unsafe (message names it and the remedy)
   */
  public static List<String> secure(Path dir) throws StoreRefusedException {
    List<String> notes = new ArrayList<>();
    try {
      if (!Files.exists(dir)) {
        Files.createDirectories(dir, PosixFilePermissions.asFileAttribute(OWNER_DIR));
      }
      if (!Files.isDirectory(dir)) {
        throw new StoreRefusedException("the store dir " + dir + " is not a directory");
      }
      Set<PosixFilePermission> mode = mode(dir);
      if (mode != null) {
        if (mode.stream().anyMatch(OTHERS_WRITE::contains)) {
          throw new StoreRefusedException("the store dir " + dir + " is writable by group or others (mode "
              + octal(mode) + "): they could plant or swap the store's files; run chmod 700 " + dir
              + " and check its contents, then start again");
        }
        if (!mode.equals(OWNER_DIR) && mode.containsAll(OWNER_DIR)) {
          Files.setPosixFilePermissions(dir, OWNER_DIR);
          notes.add("tightened the store dir " + dir + " from " + octal(mode) + " to 0700 (others could read it)");
        }
      }
      for (String name : ENTRIES) {
        Path p = dir.resolve(name);
        refuseLink(p);
        if (Files.exists(p, LinkOption.NOFOLLOW_LINKS)) {
          Set<PosixFilePermission> want = Files.isDirectory(p, LinkOption.NOFOLLOW_LINKS) ? OWNER_DIR : OWNER_FILE;
          Set<PosixFilePermission> m = mode(p);
          if (m != null && !want.containsAll(m)) {
            Set<PosixFilePermission> tightened = EnumSet.copyOf(want);
            tightened.retainAll(m);
            tightened.addAll(EnumSet.of(PosixFilePermission.OWNER_READ, PosixFilePermission.OWNER_WRITE));
            Files.setPosixFilePermissions(p, tightened);
            notes.add("tightened " + p + " from " + octal(m) + " to " + octal(tightened) + " (others could read it)");
          }
        }
      }
    } catch (IOException e) {
      throw new StoreRefusedException("cannot check the store dir " + dir + ": " + reason(e), e);
    }
    return notes;
  }

  /**
   * What a file operation's failure means, in words and without any path (issue 12 item 6): Java's file exceptions
   * carry the file name as their message (a temporary file's, too) and the reason only in their class or reason field,
   * so "cannot create X: " + {@code e.getMessage()} printed the name twice and no reason.
   *
   * @param e the failure
   * @return e.g. {@code permission denied}, {@code read-only file system}, {@code no space left on device}
   */
  public static String reason(IOException e) {
    String r = e instanceof java.nio.file.FileSystemException fs ? fs.getReason() : e.getMessage();
    if (r == null || r.isBlank()) {
      if (e instanceof java.nio.file.AccessDeniedException) {
        return "permission denied";
      } else if (e instanceof FileAlreadyExistsException) {
        return "a file of that name exists";
      } else if (e instanceof java.nio.file.NoSuchFileException) {
        return "no such file or directory (a parent directory is missing or not writable)";
      } else if (e instanceof java.nio.file.NotDirectoryException) {
        return "not a directory";
      } else if (e instanceof java.nio.file.DirectoryNotEmptyException) {
        return "directory not empty";
      }
      return e.getClass().getSimpleName().replaceAll("([a-z])([A-Z])", "$1 $2").toLowerCase(java.util.Locale.ROOT);
    }
    r = r.strip();
    return r.isEmpty() ? r : Character.toLowerCase(r.charAt(0)) + r.substring(1);
  }

  /**
   * Refuses a symbolic link where the relay is about to write (issue 11 item 12).
   *
   * @param p the path the relay writes
   * @throws StoreRefusedException when {@code p} is a symbolic link
   */
  public static void refuseLink(Path p) throws StoreRefusedException {
    if (Files.isSymbolicLink(p)) {
      throw new StoreRefusedException(p + " is a symbolic link; the relay never writes through links: replace it with"
          + " a real " + (p.getFileName().toString().equals(ROLLBACK_DIR) ? "directory" : "file") + " (or remove it)");
    }
  }

  /**
   * The lost-store check (issue 10 item 4), run by {@code serve} before anything creates files: {@code relay.db} is
   * missing or empty (0 bytes) although the directory shows a store lived there ({@code relay.lock}, a WAL or shared
   * memory file, {@code rollback/}, {@code relay.watermark}). Without {@code newStore} that is refused; with it, the
   * remains (an empty {@code relay.db}, its {@code -wal} and {@code -shm}, the watermark) are moved into
   * {@code lost-<time>/} so a new store starts
   * clean, and nothing is deleted. A directory with no store and no traces (a first start, or only a provisioned
   * {@code relay.key}) is a new store either way; an existing non-empty {@code relay.db} is never touched here.
   *
   * @param dir the store directory (already {@link #secure secured})
   * @param newStore the operator asked for a new store ({@code serve --new-store})
   * @param nowMs time for the {@code lost-<time>} name
   * @return an operator line when remains were moved aside
   * @throws StoreRefusedException a store was lost and {@code newStore} is false (message names the remedies)
   */
  public static Optional<String> refuseLostStore(Path dir, boolean newStore, long nowMs) throws StoreRefusedException {
    Path db = dir.resolve(SqliteSettings.DB_FILE);
    try {
      boolean exists = Files.exists(db, LinkOption.NOFOLLOW_LINKS);
      if (exists && Files.size(db) > 0) {
        return Optional.empty();
      }
      List<String> found = new ArrayList<>();
      if (exists) {
        found.add(SqliteSettings.DB_FILE + " (0 bytes)");
      }
      for (String t : TRACES) {
        Path p = dir.resolve(t);
        // an empty relay.lock never held a relay: a first start that failed (e.g. a full disk) left it
        if (Files.exists(p, LinkOption.NOFOLLOW_LINKS)
            && !(t.equals(StoreLock.FILE) && Files.isRegularFile(p, LinkOption.NOFOLLOW_LINKS) && Files.size(p) == 0)) {
          found.add(t);
        }
      }
      if (found.isEmpty() && Files.exists(dir.resolve(CommitWatermark.FILE), LinkOption.NOFOLLOW_LINKS)) {
        found.add(CommitWatermark.FILE); // only the watermark is left (relay.lock goes with it otherwise)
      }
      if (found.isEmpty()) {
        return Optional.empty();
      }
      if (!newStore) {
        throw new StoreRefusedException("no store in " + dir + ": " + SqliteSettings.DB_FILE + " is "
            + (exists ? "empty (0 bytes)" : "missing") + " although a store lived there (found " + String.join(", ", found)
            + "). Refusing to create a new, empty store in its place (new epoch; every enrolment and queued item gone)."
            + " Restore the latest backup: mbxrelay restore FILE --store-dir " + dir + "; or, to start a new empty"
            + " store on purpose: mbxrelay serve --new-store --store-dir " + dir);
      }
      Path lost = dir.resolve("lost-" + IsoTime.format(nowMs).replace(":", "").replace(".", ""));
      List<String> moved = new ArrayList<>();
      // the watermark goes too: it describes the lost store, and the new one would be behind it
      for (String name : new String[] {SqliteSettings.DB_FILE, SqliteSettings.DB_FILE + "-wal",
          SqliteSettings.DB_FILE + "-shm", SqliteSettings.DB_FILE + "-journal", CommitWatermark.FILE}) {
        Path p = dir.resolve(name);
        if (Files.exists(p, LinkOption.NOFOLLOW_LINKS)) {
          if (moved.isEmpty()) {
            Files.createDirectory(lost, PosixFilePermissions.asFileAttribute(OWNER_DIR));
          }
          Files.move(p, lost.resolve(name));
          moved.add(name);
        }
      }
      return Optional.of("--new-store: starting a new, empty store in " + dir
          + (moved.isEmpty() ? "" : "; the previous store's remains (" + String.join(", ", moved) + ") are in " + lost));
    } catch (IOException e) {
      throw new StoreRefusedException("cannot check the store files in " + dir + ": " + reason(e), e);
    }
  }

  /**
   * Prepares {@code relay.db} for the writer's open (issue 10 item 4, issue 11 items 11 and 12): refuses links and an
   * empty (0-byte) file, refuses a missing file whose WAL survived (it would be replayed onto a new database), and
   * creates a missing one 0600 so its side files get 0600 too.
   *
   * @param db the database file
   * @return true when the file was created now (a new store)
   * @throws StoreRefusedException see above
   */
  public static boolean prepareDatabase(Path db) throws StoreRefusedException {
    Path wal = db.resolveSibling(db.getFileName() + "-wal");
    refuseLink(db);
    refuseLink(wal);
    refuseLink(db.resolveSibling(db.getFileName() + "-shm"));
    try {
      if (Files.exists(db, LinkOption.NOFOLLOW_LINKS)) {
        if (Files.size(db) == 0) {
          throw new StoreRefusedException(db + " is empty (0 bytes): the store was truncated or never finished its"
              + " first start. Restore the latest backup: mbxrelay restore FILE --store-dir " + db.getParent()
              + "; or, to start a new empty store on purpose: mbxrelay serve --new-store --store-dir " + db.getParent());
        }
        return false;
      }
      if (Files.exists(wal, LinkOption.NOFOLLOW_LINKS) && Files.size(wal) > 0) {
        throw new StoreRefusedException(db + " is missing but its write-ahead log " + wal + " remains: the store was"
            + " deleted or moved. Put it back, restore the latest backup (mbxrelay restore FILE --store-dir "
            + db.getParent() + "), or start a new empty store on purpose: mbxrelay serve --new-store --store-dir "
            + db.getParent());
      }
      createOwnerOnly(db);
      return true;
    } catch (IOException e) {
      throw new StoreRefusedException("cannot prepare " + db + ": " + reason(e), e);
    }
  }

  /**
   * Creates an empty file 0600 when it does not exist (never through a link).
   *
   * @param file the file
   * @throws IOException when it cannot be created, or {@code file} is a link
   */
  public static void createOwnerOnly(Path file) throws IOException {
    if (Files.isSymbolicLink(file)) {
      throw new IOException(file + " is a symbolic link");
    }
    try {
      Files.createFile(file, PosixFilePermissions.asFileAttribute(OWNER_FILE));
    } catch (FileAlreadyExistsException e) {
      // created meanwhile or existing: its mode is checked by secure()
    } catch (UnsupportedOperationException e) {
      Files.createFile(file);
    }
  }

  /**
   * A directory the relay writes into: created 0700 when missing; refused when it is a symbolic link or not a
   * directory (issue 11 item 12: a planted {@code rollback/} link).
   *
   * @param dir the directory
   * @return {@code dir}
   * @throws IOException when it is a link, not a directory, or cannot be created
   */
  public static Path ownerOnlyDir(Path dir) throws IOException {
    if (Files.isSymbolicLink(dir)) {
      throw new IOException(dir + " is a symbolic link; the relay never writes through links");
    }
    if (!Files.exists(dir, LinkOption.NOFOLLOW_LINKS)) {
      try {
        Files.createDirectories(dir, PosixFilePermissions.asFileAttribute(OWNER_DIR));
      } catch (UnsupportedOperationException e) {
        Files.createDirectories(dir);
      }
    } else if (!Files.isDirectory(dir, LinkOption.NOFOLLOW_LINKS)) {
      throw new IOException(dir + " is not a directory");
    }
    return dir;
  }

  /**
   * Copies {@code from} into a new 0600 file {@code to} and forces it to disk: unlike {@code Files.copy}, the copy
   * never takes the source's mode (issue 11 item 11: {@code restore} copied the backup's mode).
   *
   * @param from source file
   * @param to new file (must not exist)
   * @throws IOException on I/O failure, or when {@code to} exists
   */
  public static void copyOwnerOnly(Path from, Path to) throws IOException {
    try (InputStream in = Files.newInputStream(from);
        FileChannel out = FileChannel.open(to, EnumSet.of(StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE),
            PosixFilePermissions.asFileAttribute(OWNER_FILE))) {
      OutputStream os = java.nio.channels.Channels.newOutputStream(out);
      in.transferTo(os);
      os.flush();
      out.force(true);
    }
  }

  private static Set<PosixFilePermission> mode(Path p) throws IOException {
    PosixFileAttributeView v = Files.getFileAttributeView(p, PosixFileAttributeView.class, LinkOption.NOFOLLOW_LINKS);
    return v == null ? null : v.readAttributes().permissions();
  }

  private static String octal(Set<PosixFilePermission> mode) {
    int bits = 0;
    for (PosixFilePermission p : mode) {
      bits |= 1 << (8 - p.ordinal());
    }
    return String.format("0%o", bits);
  }
}
