package io.mbxrelay.store.sqlite;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.mbxrelay.crypto.Ed25519KeyPair;
import io.mbxrelay.store.StoreRefusedException;
import io.mbxrelay.testing.Envelopes;
import io.mbxrelay.testing.RelayHarness;
import io.mbxrelay.testing.TestHost;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Clock;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Owner-only store files and no writes through links (issue 11 items 11 and 12). Tests run as root, so modes are
 * checked as bits, not by trying to read as another user.
 */
class StoreFilesTest {

  private static String mode(Path p) throws Exception {
    return PosixFilePermissions.toString(Files.getPosixFilePermissions(p, java.nio.file.LinkOption.NOFOLLOW_LINKS));
  }

  private static long items(Path db) throws Exception {
    try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + db); Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT count(*) FROM items")) {
      rs.next();
      return rs.getLong(1);
    }
  }

  @SuppressWarnings("try") // a resource held for the block, not used in it
  @Test
  void every_store_file_is_0600_in_a_0700_dir_a_backup_path_with_spaces_works_and_restore_ignores_the_backups_mode(
      @TempDir Path tmp) throws Exception {
    Path dir = tmp.resolve("store");
    Path backup = tmp.resolve("nightly backups").resolve("relay 'one'.db");
    Ed25519KeyPair key = Ed25519KeyPair.generate();
    try (RelayHarness r = RelayHarness.start(dir, Map.of(), Clock.systemUTC(), key)) {
      TestHost a = new TestHost(r.url(), "alpha").enrol();
      TestHost b = new TestHost(r.url(), "beta").enrol();
      String id = Envelopes.newId();
      a.pushEnvelope(b, id, Envelopes.sealed(id));
      assertThat(mode(dir)).isEqualTo("rwx------");
      for (String f : new String[] {"relay.db", "relay.db-wal", "relay.db-shm", "relay.lock"}) {
        assertThat(mode(dir.resolve(f))).as(f).isEqualTo("rw-------");
      }
      // issue 11 item 12: the path was pasted unquoted into "backup to" (SQL syntax error)
      ObjectNode receipt = SqliteOps.backup(dir, backup, Clock.systemUTC());
      assertThat(receipt.get("file").asText()).isEqualTo(backup.toString());
      assertThat(mode(backup)).isEqualTo("rw-------");
      assertThat(mode(backup.getParent())).isEqualTo("rwx------");
      assertThat(items(backup)).isEqualTo(1);
    }
    Files.setPosixFilePermissions(backup, PosixFilePermissions.fromString("rw-r--r--"));
    ObjectNode restored = SqliteOps.restore(dir, backup, false, Clock.systemUTC(), false);
    assertThat(mode(dir.resolve("relay.db"))).as("restored store, backup was 0644").isEqualTo("rw-------");
    assertThat(mode(dir.resolve("rollback"))).isEqualTo("rwx------");
    assertThat(mode(Path.of(restored.get("rollback").asText()))).isEqualTo("rw-------");
    try (RelayHarness r = RelayHarness.start(dir, Map.of(), Clock.systemUTC(), key)) {
      assertThat(mode(dir.resolve("relay.db-wal"))).isEqualTo("rw-------");
      assertThat(mode(dir.resolve("relay.db-shm"))).isEqualTo("rw-------");
    }
  }

  @Test
  void a_store_dir_others_can_read_is_tightened_with_its_files_and_one_others_can_write_is_refused(@TempDir Path tmp)
      throws Exception {
    Path dir = tmp.resolve("store");
    Ed25519KeyPair key = Ed25519KeyPair.generate();
    RelayHarness.start(dir, Map.of(), Clock.systemUTC(), key).close();
    Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxr-xr-x"));
    Files.setPosixFilePermissions(dir.resolve("relay.db"), PosixFilePermissions.fromString("rw-r--r--"));
    assertThat(StoreFiles.secure(dir)).containsExactly(
        "tightened the store dir " + dir + " from 0755 to 0700 (others could read it)",
        "tightened " + dir.resolve("relay.db") + " from 0644 to 0600 (others could read it)");
    assertThat(mode(dir)).isEqualTo("rwx------");
    assertThat(mode(dir.resolve("relay.db"))).isEqualTo("rw-------");
    assertThat(StoreFiles.secure(dir)).isEmpty();

    Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxrwxrwx"));
    assertThatThrownBy(() -> RelayHarness.start(dir, Map.of(), Clock.systemUTC(), key))
        .isInstanceOf(StoreRefusedException.class)
        .hasMessageContaining("the store dir " + dir + " is writable by group or others (mode 0777)")
        .hasMessageContaining("chmod 700 " + dir);
  }

  @Test
  void restore_refuses_a_planted_rollback_symlink_and_changes_nothing(@TempDir Path tmp) throws Exception {
    Path dir = tmp.resolve("store");
    Path backup = tmp.resolve("b.db");
    Path elsewhere = Files.createDirectory(tmp.resolve("elsewhere"));
    Ed25519KeyPair key = Ed25519KeyPair.generate();
    try (RelayHarness r = RelayHarness.start(dir, Map.of(), Clock.systemUTC(), key)) {
      new TestHost(r.url(), "alpha").enrol();
      SqliteOps.backup(dir, backup, Clock.systemUTC());
    }
    Files.createSymbolicLink(dir.resolve("rollback"), elsewhere);
    byte[] before = Files.readAllBytes(dir.resolve("relay.db"));
    assertThatThrownBy(() -> SqliteOps.restore(dir, backup, false, Clock.systemUTC(), false))
        .isInstanceOfSatisfying(OpsException.class, e -> {
          assertThat(e.code()).isEqualTo("UNSAFE");
          assertThat(e.getMessage()).contains(dir.resolve("rollback") + " is a symbolic link");
        });
    try (var listing = Files.list(elsewhere)) {
      assertThat(listing).isEmpty();
    }
    assertThat(Files.readAllBytes(dir.resolve("relay.db"))).isEqualTo(before);
    // serve refuses the same dir rather than writing through the link later
    assertThatThrownBy(() -> RelayHarness.start(dir, Map.of(), Clock.systemUTC(), key))
        .isInstanceOf(StoreRefusedException.class).hasMessageContaining("is a symbolic link");
  }

  @Test
  void a_relay_db_or_lock_that_is_a_symbolic_link_is_refused(@TempDir Path tmp) throws Exception {
    Path dir = Files.createDirectory(tmp.resolve("store"), PosixFilePermissions.asFileAttribute(StoreFiles.OWNER_DIR));
    Path target = tmp.resolve("elsewhere.db");
    Files.createSymbolicLink(dir.resolve("relay.db"), target);
    assertThatThrownBy(() -> RelayHarness.start(dir, Map.of(), Clock.systemUTC(), Ed25519KeyPair.generate()))
        .isInstanceOf(StoreRefusedException.class).hasMessageContaining(dir.resolve("relay.db") + " is a symbolic link");
    assertThat(target).doesNotExist();
    Files.delete(dir.resolve("relay.db"));
    Files.createSymbolicLink(dir.resolve("relay.lock"), target);
    assertThatThrownBy(() -> StoreLock.acquire(dir, 0)).hasMessageContaining("is a symbolic link");
    assertThat(target).doesNotExist();
  }

  @SuppressWarnings("try") // a resource held for the block, not used in it
  @Test
  void an_empty_lock_file_from_a_failed_first_start_is_no_trace_of_a_store_but_a_held_lock_is(@TempDir Path tmp)
      throws Exception {
    Path dir = Files.createDirectory(tmp.resolve("store"), PosixFilePermissions.asFileAttribute(StoreFiles.OWNER_DIR));
    Files.createFile(dir.resolve("relay.lock")); // what a first start that failed before taking the lock leaves
    assertThat(StoreFiles.refuseLostStore(dir, false, 0L)).isEmpty();
    try (StoreLock held = StoreLock.acquire(dir, 0)) {
      assertThat(Files.size(dir.resolve("relay.lock"))).isPositive();
    }
    assertThatThrownBy(() -> StoreFiles.refuseLostStore(dir, false, 0L))
        .isInstanceOf(StoreRefusedException.class).hasMessageContaining("found relay.lock");
  }
}
