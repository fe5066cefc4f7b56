package io.mbxrelay.store.sqlite;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * The clean-close marker {@code relay.closed} (issue 9 goal 5: restart to ready in 2 s with a million items). The
 * start-up integrity check (issue 10 item 2, {@link StoreIntegrity#requireQuickCheck}) reads every page: about 1.1 s
 * for a 1.8 GB store. A relay that closed its store cleanly — WAL checkpointed and truncated, {@code quick_check}
 * passed at close (so damage done while it ran is caught then, not vouched for), connection closed — writes the database file's identity (size, modification time in ns, file key); the next open deletes the marker
 * (durably, before anything is written) and skips the check only when the file is still exactly that file and no WAL
 * waits. After a crash, a kill, a restore, or any change to {@code relay.db} made while the relay was stopped (a
 * flipped byte changes the modification time), the marker is absent or does not match and the check runs.
 *
 * <p>What this gives up: damage that changes a file's bytes without its modification time (a failing disk) is found
 * when SQLite reads the damaged page (the writer then fail-stops) or by {@code mbxrelay check}, not at that start.
 *
 * <p>Threading: called by the store's owner while opening or closing; not thread-safe.
 */
final class CleanClose {
  /** File name of the marker in the store directory. */
  static final String FILE = "relay.closed";

  private CleanClose() {}

  /**
   * Records a clean close of {@code db}, when its WAL is gone or empty. Never throws: without a marker the next start
   * simply checks.
   *
   * @param db the database file, closed
   */
  static void record(Path db) {
    try {
      Path wal = db.resolveSibling(db.getFileName() + "-wal");
      if (Files.exists(wal) && Files.size(wal) > 0) {
        return;
      }
      Path marker = db.resolveSibling(FILE);
      Path tmp = db.resolveSibling(FILE + ".tmp");
      Files.deleteIfExists(tmp);
      StoreFiles.createOwnerOnly(tmp);
      Files.write(tmp, identity(db).getBytes(StandardCharsets.UTF_8), StandardOpenOption.TRUNCATE_EXISTING);
      try (FileChannel ch = FileChannel.open(tmp, StandardOpenOption.WRITE)) {
        ch.force(true);
      }
      Files.move(tmp, marker, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
      syncDir(db.getParent());
    } catch (IOException | RuntimeException e) {
      // the next start checks the store
    }
  }

  /**
   * Takes the marker away (durably) and says whether it vouches for {@code db} as it is now.
   *
   * @param db the database file, not yet opened
   * @return true when the store was closed cleanly and not changed since
   * @throws IOException when a marker exists but cannot be removed (then nothing may be skipped)
   */
  static boolean consume(Path db) throws IOException {
    Path marker = db.resolveSibling(FILE);
    Optional<String> recorded;
    try {
      recorded = Optional.of(Files.readString(marker, StandardCharsets.UTF_8));
    } catch (java.nio.file.NoSuchFileException e) {
      return false;
    }
    Files.delete(marker);
    syncDir(db.getParent()); // a crash from here on must not find the marker again
    Path wal = db.resolveSibling(db.getFileName() + "-wal");
    if (Files.exists(wal) && Files.size(wal) > 0) {
      return false;
    }
    return Files.isRegularFile(db) && recorded.get().equals(identity(db));
  }

  private static String identity(Path db) throws IOException {
    BasicFileAttributes a = Files.readAttributes(db, BasicFileAttributes.class);
    return "size=" + a.size() + " mtime_ns=" + a.lastModifiedTime().to(TimeUnit.NANOSECONDS) + " key=" + a.fileKey()
        + "\n";
  }

  private static void syncDir(Path dir) throws IOException {
    try (FileChannel ch = FileChannel.open(dir, StandardOpenOption.READ)) {
      ch.force(true);
    }
  }
}
