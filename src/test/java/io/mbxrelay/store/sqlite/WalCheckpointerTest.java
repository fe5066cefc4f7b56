package io.mbxrelay.store.sqlite;

import static org.assertj.core.api.Assertions.assertThat;

import io.mbxrelay.config.ConfigLoader;
import io.mbxrelay.config.RelayConfig;
import io.mbxrelay.crypto.Ed25519KeyPair;
import io.mbxrelay.store.StoreCommand;
import io.mbxrelay.store.model.EnrolOutcome;
import io.mbxrelay.wire.Hashes;
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
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Background WAL checkpoints ({@code store.checkpointIntervalMs}, {@link WalCheckpointer}): committed frames reach
 * {@code relay.db} without the writer checkpointing, the writer does not take them for another process's changes, and
 * the store still closes cleanly.
 */
class WalCheckpointerTest {
  private final String relayKey = Ed25519KeyPair.generate().publicKeyB64();
  private final String sender = Ed25519KeyPair.generate().publicKeyB64();
  private final String target = Ed25519KeyPair.generate().publicKeyB64();

  /** A store whose writer never checkpoints on its own (its threshold far above what the test writes). */
  private SqliteRelayStore open(Path dir) throws Exception {
    RelayConfig.Limits limits = ConfigLoader.load(null, Map.of()).limits();
    SqliteRelayStore s = SqliteRelayStore.open(dir, relayKey, Clock.systemUTC(), limits, 5000, 0);
    s.walAutocheckpoint(1_000_000);
    return s;
  }

  private void enrol(SqliteRelayStore s) throws Exception {
    assertThat(s.execute(new StoreCommand.Enrol("alpha", sender, "", null, null))).isEqualTo(EnrolOutcome.OK);
    assertThat(s.execute(new StoreCommand.Enrol("beta", target, "", null, null))).isEqualTo(EnrolOutcome.OK);
  }

  private void push(SqliteRelayStore s, int from, int count) throws Exception {
    List<StoreCommand.Push> items = new ArrayList<>();
    for (int i = from; i < from + count; i++) {
      byte[] w = ("wire " + i + " " + "x".repeat(900)).getBytes(StandardCharsets.UTF_8);
      items.add(new StoreCommand.Push(sender, "alpha", "envelope", "id" + i,
          List.of(new StoreCommand.Target(target, w, Hashes.sha256Hex(w), null))));
    }
    s.execute(new StoreCommand.PushBatch(items));
  }

  /** Items in a copy of {@code relay.db} alone, without its WAL: what has been checkpointed into the file. */
  private static long itemsInTheDatabaseFile(Path dir, Path scratch) throws Exception {
    Path copy = scratch.resolve("alone-" + System.nanoTime() + ".db");
    Files.copy(dir.resolve(SqliteSettings.DB_FILE), copy);
    try (Connection c = DriverManager.getConnection(SqliteSettings.url(copy));
        Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT count(*) FROM items")) {
      rs.next();
      return rs.getLong(1);
    } catch (java.sql.SQLException e) {
      return -1; // the tables themselves are still only in the WAL
    }
  }

  private static long dataVersion(Connection c) throws Exception {
    try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery("PRAGMA data_version")) {
      rs.next();
      return rs.getLong(1);
    }
  }

  /** One checkpoint's report. */
  private record Report(long nanos, long backlog, boolean ok) {}

  /** Starts background checkpoints on {@code s}; every report lands in the returned queue. */
  private static LinkedBlockingQueue<Report> checkpoints(SqliteRelayStore s, long intervalMs) throws Exception {
    LinkedBlockingQueue<Report> reports = new LinkedBlockingQueue<>();
    s.backend().backgroundCheckpoints(intervalMs, 5000,
        (nanos, backlog, ok) -> reports.add(new Report(nanos, backlog, ok)));
    return reports;
  }

  @Test
  void committed_items_reach_the_database_file_without_the_writer_checkpointing(@TempDir Path dir,
      @TempDir Path scratch) throws Exception {
    try (SqliteRelayStore s = open(dir)) {
      enrol(s);
      push(s, 0, 50);
      assertThat(itemsInTheDatabaseFile(dir, scratch)).as("without background checkpoints the items stay in the WAL")
          .isLessThan(50);

      LinkedBlockingQueue<Report> reports = checkpoints(s, 5);
      Report first = reports.poll(10, TimeUnit.SECONDS);
      assertThat(first).as("a log already there at start is copied without waiting for a commit").isNotNull();
      assertThat(itemsInTheDatabaseFile(dir, scratch)).isEqualTo(50);
      long before = dataVersion(s.backend().connection());
      push(s, 50, 50);
      Report r = reports.poll(10, TimeUnit.SECONDS);
      assertThat(r).as("a checkpoint follows the commit").isNotNull();
      assertThat(r.ok()).isTrue();
      assertThat(r.backlog()).as("no reader held any frame").isZero();
      assertThat(itemsInTheDatabaseFile(dir, scratch)).isEqualTo(100);
      assertThat(dataVersion(s.backend().connection()))
          .as("a checkpoint is not another process's commit: the writer keeps its in-memory state").isEqualTo(before);
      assertThat(reports.poll(200, TimeUnit.MILLISECONDS)).as("no checkpoint without a new commit").isNull();
    }
  }

  @Test
  void a_store_with_background_checkpoints_still_closes_cleanly_and_stops_the_thread(@TempDir Path dir)
      throws Exception {
    try (SqliteRelayStore s = open(dir)) {
      LinkedBlockingQueue<Report> reports = checkpoints(s, 1);
      enrol(s);
      for (int i = 0; i < 20; i++) {
        push(s, i * 10, 10); // commits while checkpoints run
      }
      assertThat(reports.poll(10, TimeUnit.SECONDS)).as("checkpoints ran while the store was open").isNotNull();
    }
    assertThat(Thread.getAllStackTraces().keySet()).as("the checkpointer's thread ended at close")
        .noneMatch(t -> t.getName().equals("mbx-checkpoint") && t.isAlive());
    assertThat(dir.resolve(CleanClose.FILE)).as("the closing TRUNCATE checkpoint was not blocked").exists();
    Path wal = dir.resolve(SqliteSettings.DB_FILE + "-wal");
    assertThat(!Files.exists(wal) || Files.size(wal) == 0).isTrue();
    try (Connection c = DriverManager.getConnection(SqliteSettings.url(dir.resolve(SqliteSettings.DB_FILE)));
        Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT count(*) FROM items")) {
      rs.next();
      assertThat(rs.getLong(1)).isEqualTo(200);
    }
  }

  @Test
  void frames_a_reader_still_needs_are_copied_once_it_is_done_without_another_commit(@TempDir Path dir,
      @TempDir Path scratch) throws Exception {
    try (SqliteRelayStore s = open(dir)) {
      enrol(s);
      push(s, 0, 10);
      LinkedBlockingQueue<Report> reports = checkpoints(s, 20);
      assertThat(reports.poll(10, TimeUnit.SECONDS).backlog()).isZero();
      try (Connection reader = DriverManager.getConnection(SqliteSettings.url(dir.resolve(SqliteSettings.DB_FILE)),
          SqliteSettings.reader(5000))) {
        reader.setAutoCommit(false);
        try (Statement st = reader.createStatement(); ResultSet rs = st.executeQuery("SELECT count(*) FROM items")) {
          rs.next();
          assertThat(rs.getLong(1)).isEqualTo(10); // the reader's snapshot: before the next push
        }
        reports.clear();
        push(s, 10, 40);
        Report held = reports.poll(10, TimeUnit.SECONDS);
        assertThat(held).isNotNull();
        assertThat(held.backlog()).as("the frames after the reader's snapshot stay in the WAL").isPositive();
        reader.commit(); // the read transaction ends
      }
      Report done = null;
      for (Report r = reports.poll(10, TimeUnit.SECONDS); r != null; r = reports.poll(10, TimeUnit.SECONDS)) {
        if (r.backlog() == 0) {
          done = r;
          break;
        }
      }
      assertThat(done).as("a later checkpoint, with no new commit, copies the rest").isNotNull();
      assertThat(itemsInTheDatabaseFile(dir, scratch)).isEqualTo(50);
    }
  }

  @Test
  void a_failing_meter_does_not_stop_the_checkpoints(@TempDir Path dir) throws Exception {
    try (io.mbxrelay.testing.ExpectedLog log = io.mbxrelay.testing.ExpectedLog.of(WalCheckpointer.class,
        ch.qos.logback.classic.Level.WARN, "background WAL checkpoint failed");
        SqliteRelayStore s = open(dir)) {
      enrol(s);
      LinkedBlockingQueue<Report> reports = new LinkedBlockingQueue<>();
      java.util.concurrent.atomic.AtomicInteger calls = new java.util.concurrent.atomic.AtomicInteger();
      s.backend().backgroundCheckpoints(5, 5000, (nanos, backlog, ok) -> {
        if (calls.getAndIncrement() == 0) {
          throw new IllegalStateException("meter broke");
        }
        reports.add(new Report(nanos, backlog, ok));
      });
      push(s, 0, 10);
      assertThat(reports.poll(10, TimeUnit.SECONDS)).as("the thread went on after the meter threw").isNotNull();
      assertThat(calls.get()).isGreaterThanOrEqualTo(2);
    }
  }
}
