package io.mbxrelay.bench;

import io.mbxrelay.store.postgres.PgTestServer;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Per-target seq allocation on PostgreSQL under concurrency, two ways (docs/scale-out.md "Seq allocation"):
 * {@code rowlock} — READ COMMITTED, {@code SELECT next_seq … FOR UPDATE} then {@code UPDATE}; {@code serializable} —
 * SERIALIZABLE, plain {@code SELECT} then {@code UPDATE}, the whole transaction retried on 40001 (or 23505, the same race seen at the item's key). Each transaction
 * allocates one seq for a random target of {@code targets}, inserts a 1 KiB item row with it and commits (fsync on,
 * synchronous_commit on). Prints transactions/s, retries, and checks that no (target, seq) was allocated twice and
 * that seqs are contiguous per target.
 *
 * <p>Run: {@code mvn -B -o -q -DskipTests install} once (the relay module resolves mbxrelay-host from the local
 * repository when it is built alone), then {@code flock -x /tmp/cpu.lock mvn -B -o -q -pl mbxrelay-server test-compile
 * exec:java ...}, or from the IDE; arguments {@code threads seconds}.
 */
public final class SeqAllocationBench {
  private SeqAllocationBench() {}

  public static void main(String[] args) throws Exception {
    int threads = args.length > 0 ? Integer.parseInt(args[0]) : 16;
    int seconds = args.length > 1 ? Integer.parseInt(args[1]) : 8;
    try (PgTestServer pg = PgTestServer.start(true)) {
      for (int targets : new int[] {1, 100}) {
        for (String mode : new String[] {"rowlock", "serializable"}) {
          String url = pg.createDatabase();
          run(url, mode, targets, threads, seconds);
        }
      }
    }
  }

  private static void run(String url, String mode, int targets, int threads, int seconds) throws Exception {
    try (Connection c = DriverManager.getConnection(url, PgTestServer.SUPERUSER, "");
        Statement st = c.createStatement()) {
      st.execute("CREATE TABLE seqs(target_pubkey TEXT PRIMARY KEY, next_seq BIGINT NOT NULL)");
      st.execute("CREATE TABLE items(target_pubkey TEXT NOT NULL, seq BIGINT NOT NULL, wire BYTEA NOT NULL,"
          + " PRIMARY KEY(target_pubkey, seq))");
      st.execute("INSERT INTO seqs SELECT 't' || g, 1 FROM generate_series(0, " + (targets - 1) + ") g");
    }
    AtomicLong commits = new AtomicLong();
    AtomicLong retries = new AtomicLong();
    long end = System.nanoTime() + seconds * 1_000_000_000L;
    List<Thread> ts = new ArrayList<>();
    List<Throwable> failures = new java.util.concurrent.CopyOnWriteArrayList<>();
    byte[] wire = new byte[1024];
    for (int i = 0; i < threads; i++) {
      Thread t = new Thread(() -> {
        try (Connection c = DriverManager.getConnection(url, PgTestServer.SUPERUSER, "")) {
          c.setAutoCommit(false);
          c.setTransactionIsolation(mode.equals("serializable") ? Connection.TRANSACTION_SERIALIZABLE
              : Connection.TRANSACTION_READ_COMMITTED);
          String select = "SELECT next_seq FROM seqs WHERE target_pubkey = ?"
              + (mode.equals("rowlock") ? " FOR UPDATE" : "");
          while (System.nanoTime() < end) {
            String target = "t" + ThreadLocalRandom.current().nextInt(targets);
            while (true) {
              try (PreparedStatement sel = c.prepareStatement(select);
                  PreparedStatement ins = c.prepareStatement("INSERT INTO items VALUES(?, ?, ?)");
                  PreparedStatement upd = c.prepareStatement(
                      "UPDATE seqs SET next_seq = ? WHERE target_pubkey = ?")) {
                sel.setString(1, target);
                long seq;
                try (ResultSet rs = sel.executeQuery()) {
                  rs.next();
                  seq = rs.getLong(1);
                }
                ins.setString(1, target);
                ins.setLong(2, seq);
                ins.setBytes(3, wire);
                ins.executeUpdate();
                upd.setLong(1, seq + 1);
                upd.setString(2, target);
                upd.executeUpdate();
                c.commit();
                commits.incrementAndGet();
                break;
              } catch (SQLException e) {
                c.rollback();
                if ("40001".equals(e.getSQLState()) || "40P01".equals(e.getSQLState()) || "23505".equals(e.getSQLState())) {
                  retries.incrementAndGet();
                  continue;
                }
                throw e;
              }
            }
          }
        } catch (Throwable e) {
          failures.add(e);
        }
      });
      ts.add(t);
      t.start();
    }
    for (Thread t : ts) {
      t.join();
    }
    if (!failures.isEmpty()) {
      throw new AssertionError(failures.get(0));
    }
    // every allocated seq is used once and the seqs of a target are 1..n without a gap
    try (Connection c = DriverManager.getConnection(url, PgTestServer.SUPERUSER, "");
        Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT target_pubkey, count(*), max(seq), count(DISTINCT seq) FROM items"
            + " GROUP BY target_pubkey")) {
      Set<String> bad = new HashSet<>();
      while (rs.next()) {
        if (rs.getLong(2) != rs.getLong(3) || rs.getLong(2) != rs.getLong(4)) {
          bad.add(rs.getString(1));
        }
      }
      if (!bad.isEmpty()) {
        throw new AssertionError("seqs reused or skipped for " + bad);
      }
    }
    System.out.printf("%-12s targets=%-3d threads=%d: %,8.0f tx/s, %,d retries (%.1f%% of commits)%n", mode, targets,
        threads, commits.get() / (double) seconds, retries.get(), 100.0 * retries.get() / Math.max(1, commits.get()));
  }
}
