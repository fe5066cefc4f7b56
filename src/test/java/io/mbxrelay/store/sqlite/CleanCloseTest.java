package io.mbxrelay.store.sqlite;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.mbxrelay.config.ConfigLoader;
import io.mbxrelay.config.RelayConfig;
import io.mbxrelay.crypto.Ed25519KeyPair;
import io.mbxrelay.store.model.EnrolOutcome;
import io.mbxrelay.store.StoreCommand;
import io.mbxrelay.store.StoreRefusedException;
import io.mbxrelay.wire.Hashes;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Clock;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The clean-close marker (issue 9 goal 5): a store closed cleanly and untouched since opens without the start-up
 * integrity check; anything else — a changed file, a missing marker after a crash — is checked (issue 10 item 2).
 */
class CleanCloseTest {
  private final String relayKey = Ed25519KeyPair.generate().publicKeyB64();

  private SqliteRelayStore open(Path dir) throws Exception {
    RelayConfig.Limits limits = ConfigLoader.load(null, Map.of()).limits();
    return SqliteRelayStore.open(dir, relayKey, Clock.systemUTC(), limits, 5000, 0);
  }

  private void fill(SqliteRelayStore s) throws Exception {
    String a = Ed25519KeyPair.generate().publicKeyB64();
    String b = Ed25519KeyPair.generate().publicKeyB64();
    assertThat(s.execute(new StoreCommand.Enrol("alpha", a, "", null, null))).isEqualTo(EnrolOutcome.OK);
    assertThat(s.execute(new StoreCommand.Enrol("beta", b, "", null, null))).isEqualTo(EnrolOutcome.OK);
    List<StoreCommand.Push> items = new ArrayList<>();
    for (int i = 0; i < 200; i++) {
      byte[] w = ("wire " + i + " " + "x".repeat(900)).getBytes(StandardCharsets.UTF_8);
      items.add(new StoreCommand.Push(a, "alpha", "envelope", "id" + i,
          List.of(new StoreCommand.Target(b, w, Hashes.sha256Hex(w), null))));
    }
    s.execute(new StoreCommand.PushBatch(items));
  }

  private static long sizeOf(Path p) throws Exception {
    return Files.size(p);
  }

  /** The byte offset of the first leaf page of the items table (the store's own page size, 8 KiB for new ones). */
  private static long itemsLeafPage(Path db) throws Exception {
    try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + db + "?open_mode=1");
        Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT (pageno - 1) * (SELECT page_size FROM pragma_page_size) FROM dbstat"
            + " WHERE name='items' AND pagetype='leaf' LIMIT 1")) {
      assertThat(rs.next()).isTrue();
      return rs.getLong(1);
    }
  }

  @Test
  void a_cleanly_closed_store_leaves_a_marker_that_the_next_open_takes(@TempDir Path dir) throws Exception {
    try (SqliteRelayStore s = open(dir)) {
      fill(s);
    }
    Path marker = dir.resolve(CleanClose.FILE);
    assertThat(marker).exists();
    assertThat(!Files.exists(dir.resolve("relay.db-wal")) || sizeOf(dir.resolve("relay.db-wal")) == 0).isTrue();
    SqliteRelayStore reopened = open(dir);
    assertThat(marker).as("taken at open, so a crash from now on is checked at the next start").doesNotExist();
    reopened.close();
    assertThat(marker).exists();
  }

  @Test
  void a_store_changed_after_its_clean_close_is_checked_and_refused(@TempDir Path dir) throws Exception {
    try (SqliteRelayStore s = open(dir)) {
      fill(s);
    }
    Path db = dir.resolve("relay.db");
    long page = itemsLeafPage(db);
    assertThat(dir.resolve(CleanClose.FILE)).exists();
    try (RandomAccessFile f = new RandomAccessFile(db.toFile(), "rw")) {
      f.seek(page + 3); // the leaf's cell count
      f.write(0x7f);
      f.write(0xff);
    }
    assertThatThrownBy(() -> open(dir)).isInstanceOf(StoreRefusedException.class)
        .hasMessageContaining("integrity check");
  }

  @SuppressWarnings("try") // a resource held for the block, not used in it
  @Test
  void damage_done_while_the_store_was_open_is_not_vouched_for_by_its_clean_close(@TempDir Path dir)
      throws Exception {
    try (io.mbxrelay.testing.ExpectedLog log = io.mbxrelay.testing.ExpectedLog.of(io.mbxrelay.store.sqlite.SqliteBackend.class,
        ch.qos.logback.classic.Level.ERROR, "integrity check at close failed")) {
      try (SqliteRelayStore s = open(dir)) {
        fill(s);
      }
      Path db = dir.resolve("relay.db");
      long page = itemsLeafPage(db);
      try (SqliteRelayStore s = open(dir)) { // the start-up check passes; then another process flips the page
        try (RandomAccessFile f = new RandomAccessFile(db.toFile(), "rw")) {
          f.seek(page + 3);
          f.write(0x7f);
          f.write(0xff);
        }
      }
      assertThat(dir.resolve(CleanClose.FILE)).as("no marker for a store that fails quick_check at close")
          .doesNotExist();
      assertThatThrownBy(() -> open(dir)).isInstanceOf(StoreRefusedException.class)
          .hasMessageContaining("integrity check");
      log.assertSeen("integrity check at close failed");
    }
  }

  @Test
  void without_a_marker_the_start_up_check_runs(@TempDir Path dir) throws Exception {
    try (SqliteRelayStore s = open(dir)) {
      fill(s);
    }
    Path db = dir.resolve("relay.db");
    long page = itemsLeafPage(db);
    long mtime = Files.getLastModifiedTime(db).toMillis();
    Files.delete(dir.resolve(CleanClose.FILE)); // as after a crash: the open took the marker and never closed
    try (RandomAccessFile f = new RandomAccessFile(db.toFile(), "rw")) {
      f.seek(page + 3);
      f.write(0x7f);
      f.write(0xff);
    }
    Files.setLastModifiedTime(db, java.nio.file.attribute.FileTime.fromMillis(mtime));
    assertThatThrownBy(() -> open(dir)).isInstanceOf(StoreRefusedException.class)
        .hasMessageContaining("integrity check");
  }
}
