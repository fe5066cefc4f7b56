package io.mbxrelay.store.sqlite;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.mbxrelay.config.ConfigLoader;
import io.mbxrelay.config.RelayConfig;
import io.mbxrelay.crypto.Ed25519KeyPair;
import io.mbxrelay.store.model.PushOutcome;
import io.mbxrelay.store.RelayStore;
import io.mbxrelay.store.StoreCommand;
import io.mbxrelay.store.StoreException;
import io.mbxrelay.testing.Envelopes;
import io.mbxrelay.testing.Tmpfs;
import io.mbxrelay.wire.Hashes;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Clock;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A store on a file system that really fills up (issue 10 item 9; a small tmpfs, so root only):
 *
 * <ul>
 *   <li>sqlite-jdbc does not surface a failed auto-checkpoint: SQLite runs it inside the COMMIT step through its default
 *       WAL hook, which ignores the checkpoint's result, so COMMIT returns success and the store answers the commit's
 *       outcome only. This test pins that: commits keep succeeding (into WAL space the file already has) while every
 *       checkpoint fails with {@code SQLITE_FULL};
 *   <li>a COMMIT that fails with {@code SQLITE_FULL} is classified as disk full, and once space returns the next
 *       transaction commits again (the driver had finalized the cached COMMIT statement: every later transaction used
 *       to fail "statement is not executing" and answer 500 until a restart);
 *   <li>what a failed COMMIT reported is true: after a reopen, every item whose push returned is there, none of the
 *       failed ones.
 * </ul>
 */
class DiskFullStoreTest {
  private final String sender = Ed25519KeyPair.generate().publicKeyB64();
  private final String target = Ed25519KeyPair.generate().publicKeyB64();

  private static RelayConfig.Limits limits() throws Exception {
    return ConfigLoader.load(null, Map.of("MBX_RELAY_LIMITS_MAX_QUEUE_ITEMS", "1000000",
        "MBX_RELAY_LIMITS_MAX_SENDER_ITEMS", "1000000", "MBX_RELAY_LIMITS_MAX_QUEUE_BYTES", "1000000000",
        "MBX_RELAY_LIMITS_MAX_SENDER_BYTES", "1000000000")).limits();
  }

  private StoreCommand.Push push(String id) {
    byte[] wire = Envelopes.sealed(id, 2000);
    return new StoreCommand.Push(sender, "s", "envelope", id,
        List.of(new StoreCommand.Target(target, wire, Hashes.sha256Hex(wire), null)));
  }

  private static void pragma(SqliteRelayStore s, String sql) throws SQLException {
    try (Statement st = s.connection().createStatement()) {
      st.execute(sql);
    }
  }

  private static boolean stored(RelayStore.CommandResult r) {
    return r.error() == null && r.value() instanceof PushOutcome.Stored st && st.fresh();
  }

  @Test
  void a_failed_checkpoint_never_fails_a_commit_and_the_writer_commits_again_once_space_returns(@TempDir Path tmp)
      throws Exception {
    try (Tmpfs fs = Tmpfs.mount(tmp, "64m")) {
      Path dir = fs.dir.resolve("store");
      List<String> committed = new ArrayList<>();
      List<String> failed = new ArrayList<>();
      int n = 0;
      try (SqliteRelayStore s = SqliteRelayStore.open(dir, Ed25519KeyPair.generate().publicKeyB64(),
          Clock.systemUTC(), limits(), 5000, 0)) {
        s.execute(List.of(new StoreCommand.Enrol("s", sender, "", null, null)));
        s.execute(List.of(new StoreCommand.Enrol("t", target, "", null, null)));
        // A WAL of several thousand frames, then one checkpoint: the WAL file keeps its size and is reused from its
        // start, so commits need no new room while every checkpoint has to grow relay.db.
        pragma(s, "PRAGMA wal_autocheckpoint=0");
        for (int i = 0; i < 400; i++) { // about 6 frames of 8 KiB each: a WAL of some 20 MB
          String id = "warm" + n++;
          assertThat(stored(s.execute(List.of(push(id))).get(0))).isTrue();
          committed.add(id);
        }
        pragma(s, "PRAGMA wal_checkpoint(PASSIVE)");
        pragma(s, "PRAGMA wal_autocheckpoint=1000");
        long walBytes = Files.size(dir.resolve("relay.db-wal"));
        Path filler = fs.fill("filler", Long.MAX_VALUE);
        assertThat(fs.free()).isLessThan(8192);

        // Commits go on into the WAL's existing room; from its 1000th frame on, SQLite tries (and fails) to
        // checkpoint after every one of them.
        int ok = 0;
        StoreException full = null;
        while (full == null && ok < 100_000) {
          String id = "full" + n++;
          try {
            RelayStore.CommandResult r = s.execute(List.of(push(id))).get(0);
            assertThat(stored(r)).isTrue();
            committed.add(id);
            ok++;
          } catch (StoreException e) {
            full = e;
            failed.add(id);
          }
        }
        assertThat(ok).as("commits into the WAL's room (%d bytes) while checkpoints fail", walBytes)
            .isGreaterThan(200); // some 80 of them before the WAL reaches the 1000 frames of the first attempt
        assertThat(full).isNotNull();
        assertThat(full.diskFull()).isTrue();
        assertThat(full.kind()).isEqualTo(StoreException.Kind.UNAVAILABLE);
        // the checkpoints had been failing all along: an explicit one says so
        assertThatThrownBy(() -> pragma(s, "PRAGMA wal_checkpoint(PASSIVE)")).isInstanceOf(SQLException.class)
            .hasMessageContaining("SQLITE_FULL");
        // still full: another attempt fails the same way (not "statement is not executing")
        String again = "full" + n++;
        assertThatThrownBy(() -> s.execute(List.of(push(again)))).isInstanceOfSatisfying(StoreException.class,
            e -> assertThat(e.diskFull()).isTrue());
        failed.add(again);

        Files.delete(filler); // space returns
        for (int i = 0; i < 20; i++) {
          String id = "after" + n++;
          assertThat(stored(s.execute(List.of(push(id))).get(0))).isTrue();
          committed.add(id);
        }
      }
      try (SqliteRelayStore s = SqliteRelayStore.open(dir, readPub(dir), Clock.systemUTC(), limits(), 5000, 0);
          Statement st = s.connection().createStatement();
          ResultSet rs = st.executeQuery("SELECT item_id FROM items ORDER BY seq")) {
        List<String> ids = new ArrayList<>();
        while (rs.next()) {
          ids.add(rs.getString(1));
        }
        assertThat(ids).containsExactlyElementsOf(committed);
        assertThat(ids).doesNotContainAnyElementsOf(failed);
      }
    }
  }

  private static String readPub(Path dir) throws Exception {
    try (java.sql.Connection c = java.sql.DriverManager.getConnection("jdbc:sqlite:" + dir.resolve("relay.db"));
        Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT v FROM meta WHERE k='relay_pubkey'")) {
      rs.next();
      return rs.getString(1);
    }
  }
}
