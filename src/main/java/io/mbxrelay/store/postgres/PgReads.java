package io.mbxrelay.store.postgres;

import io.agroal.api.AgroalDataSource;
import io.mbxrelay.budget.PageBudget;
import io.mbxrelay.store.model.DenyEntry;
import io.mbxrelay.store.model.EncAds;
import io.mbxrelay.store.model.Enrolment;
import io.mbxrelay.store.model.HostState;
import io.mbxrelay.store.jdbc.Dialect;
import io.mbxrelay.store.jdbc.JdbcPage;
import io.mbxrelay.store.jdbc.SqlCatalogue;
import io.mbxrelay.store.model.Page;
import io.mbxrelay.store.model.QueueStats;
import io.mbxrelay.store.spi.RelayReads;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.WorkerExecutor;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * The PostgreSQL {@link RelayReads}: blocking JDBC on worker threads of their own over the store's pool. Every read
 * is one read-only transaction ({@code REPEATABLE READ}, so a pull page — plan, rows, head — is one snapshot); it sees
 * what every instance committed before it started.
 *
 * <p>Failures: a driver or pool failure fails the future with the {@link io.mbxrelay.store.StoreException} of
 * {@code PgLedgerBackend.mapped} (database unavailable: {@code UNAVAILABLE}), as the writer's would.
 *
 * <p>Safe on any event loop; futures complete on the caller's context.
 */
public final class PgReads implements RelayReads {
  private final AgroalDataSource pool;
  private final WorkerExecutor readers;

  /**
   * @param vertx Vert.x (its context completes the futures)
   * @param store the open store (its pool is shared)
   * @param threads reader threads (store.readPoolSize)
   */
  public PgReads(Vertx vertx, PgStore store, int threads) {
    this.pool = store.dataSource();
    this.readers = vertx.createSharedWorkerExecutor("mbx-pg-reads", threads);
  }

  @FunctionalInterface
  private interface Read<T> {
    T run(Connection c) throws SQLException;
  }

  private <T> Future<T> read(Read<T> fn) {
    try {
      return readOn(fn);
    } catch (java.util.concurrent.RejectedExecutionException e) { // the readers were closed (a stop under way)
      return Future.failedFuture(new io.mbxrelay.store.StoreException(
          io.mbxrelay.store.StoreException.Kind.UNAVAILABLE, "read pool closed", e));
    }
  }

  private <T> Future<T> readOn(Read<T> fn) {
    return readers.executeBlocking(() -> {
      try (Connection c = pool.getConnection()) {
        c.setAutoCommit(false);
        c.setTransactionIsolation(Connection.TRANSACTION_REPEATABLE_READ);
        c.setReadOnly(true);
        try {
          return fn.run(c);
        } finally {
          c.rollback();
          c.setReadOnly(false);
          c.setTransactionIsolation(Connection.TRANSACTION_READ_COMMITTED);
          c.setAutoCommit(true);
        }
      } catch (SQLException e) {
        // the writer's classification (issue 20 item 1): a database that cannot be reached is 503, not a bug
        throw PgLedgerBackend.mapped("read", e);
      }
    }, false);
  }

  private static PreparedStatement prepared(Connection c, String sql, Object... args) throws SQLException {
    PreparedStatement ps = c.prepareStatement(sql);
    for (int i = 0; i < args.length; i++) {
      if (args[i] instanceof Long l) {
        ps.setLong(i + 1, l);
      } else if (args[i] instanceof Integer n) {
        ps.setInt(i + 1, n);
      } else {
        ps.setString(i + 1, (String) args[i]);
      }
    }
    return ps;
  }

  @Override
  public Future<Optional<Enrolment>> enrolment(String hostPubkey) {
    return read(c -> {
      try (PreparedStatement ps = prepared(c, SqlCatalogue.ENROLMENT, hostPubkey); ResultSet rs = ps.executeQuery()) {
        return rs.next() ? Optional.of(PgLedgerBackend.enrolment(rs)) : Optional.<Enrolment>empty();
      }
    });
  }

  @Override
  public Future<List<Enrolment>> liveByName(String name, int limit) {
    return read(c -> {
      try (PreparedStatement ps = prepared(c, Dialect.POSTGRES.liveByName, name, limit); ResultSet rs = ps.executeQuery()) {
        List<Enrolment> out = new ArrayList<>();
        while (rs.next()) {
          out.add(PgLedgerBackend.enrolment(rs));
        }
        return out;
      }
    });
  }

  @Override
  public Future<HostState> hostState(String hostPubkey) {
    return read(c -> {
      try (PreparedStatement ps = prepared(c, SqlCatalogue.HOST_STATE, hostPubkey, hostPubkey, hostPubkey,
          hostPubkey); ResultSet rs = ps.executeQuery()) {
        rs.next();
        long next = rs.getLong(1);
        long acked = rs.getLong(2);
        return new HostState(next == 0 ? 0 : next - 1, acked, rs.getString(3), rs.getString(4));
      }
    });
  }

  @Override
  public Future<Page> pull(String target, long after, int limit, long maxBytes, PageBudget budget, String client) {
    return read(c -> {
      if (budget == null) {
        return readPage(c, target, after, limit, maxBytes);
      }
      long free = budget.free(client);
      Page page = readPage(c, target, after, limit, Math.max(1, Math.min(maxBytes, free)));
      if (page.items().isEmpty()) {
        return page;
      }
      if (free <= 0) {
        throw new PageBudget.Exhausted();
      }
      budget.hold(client, page.wireBytes());
      return page;
    });
  }

  /** {@link JdbcPage} in this read's snapshot. */
  private static Page readPage(Connection c, String target, long after, int limit, long maxBytes)
      throws SQLException {
    try (PreparedStatement plan = c.prepareStatement(SqlCatalogue.PAGE_PLAN);
        PreparedStatement fetch = c.prepareStatement(SqlCatalogue.PAGE_FETCH);
        PreparedStatement head = c.prepareStatement(SqlCatalogue.NEXT_SEQ)) {
      return JdbcPage.read(plan, fetch, head, target, after, limit, maxBytes);
    }
  }

  private static long head(Connection c, String target) throws SQLException {
    try (PreparedStatement ps = prepared(c, SqlCatalogue.NEXT_SEQ, target);
        ResultSet rs = ps.executeQuery()) {
      return rs.next() ? rs.getLong(1) - 1 : 0;
    }
  }

  @Override
  public Future<Long> headSeq(String target) {
    return read(c -> head(c, target));
  }

  @Override
  public Future<QueueStats> queueStats() {
    return read(c -> {
      try (PreparedStatement ps = prepared(c, SqlCatalogue.QUEUE_STATS); ResultSet rs = ps.executeQuery()) {
        rs.next();
        return new QueueStats(rs.getLong(1), rs.getLong(2), rs.getLong(3), rs.getLong(4));
      }
    });
  }

  @Override
  public Future<Void> probe() {
    return read(c -> {
      try (PreparedStatement ps = prepared(c, SqlCatalogue.PROBE); ResultSet rs = ps.executeQuery()) {
        rs.next();
        return null;
      }
    });
  }

  @Override
  public Future<Optional<EncAds>> encAds(String hostPubkey) {
    return read(c -> {
      try (PreparedStatement ps = prepared(c, SqlCatalogue.ENC_ADS, hostPubkey); ResultSet rs = ps.executeQuery()) {
        if (!rs.next()) {
          return Optional.<EncAds>empty();
        }
        return Optional.of(new EncAds(rs.getString(1), rs.getString(2), rs.getString(3), rs.getString(4),
            rs.getString(5), rs.getString(6)));
      }
    });
  }

  @Override
  public Future<List<DenyEntry>> denyList() {
    return read(c -> {
      try (PreparedStatement ps = prepared(c, SqlCatalogue.DENY_LIST); ResultSet rs = ps.executeQuery()) {
        List<DenyEntry> out = new ArrayList<>();
        while (rs.next()) {
          out.add(new DenyEntry(rs.getString(1), rs.getString(2), rs.getString(3), rs.getString(4)));
        }
        return out;
      }
    });
  }

  @Override
  public void close() {
    readers.close();
  }
}
