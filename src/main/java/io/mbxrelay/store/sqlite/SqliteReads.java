package io.mbxrelay.store.sqlite;

import io.agroal.api.AgroalDataSource;
import io.agroal.api.configuration.supplier.AgroalDataSourceConfigurationSupplier;
import io.mbxrelay.budget.PageBudget;
import io.mbxrelay.store.jdbc.Dialect;
import io.mbxrelay.store.jdbc.SqlCatalogue;
import io.mbxrelay.store.model.DenyEntry;
import io.mbxrelay.store.model.EncAds;
import io.mbxrelay.store.model.Enrolment;
import io.mbxrelay.store.model.HostState;
import io.mbxrelay.store.model.Page;
import io.mbxrelay.store.model.PulledItem;
import io.mbxrelay.store.model.QueueStats;
import io.mbxrelay.store.spi.RelayReads;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.WorkerExecutor;
import io.vertx.core.buffer.Buffer;
import io.vertx.jdbcclient.JDBCPool;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.PoolOptions;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.RowSet;
import io.vertx.sqlclient.SqlConnection;
import io.vertx.sqlclient.Tuple;
import java.nio.file.Path;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The SQLite {@link RelayReads}: a Vert.x JDBC pool over an Agroal data source of read-only SQLite connections (WAL),
 * plus page reader threads with connections of their own. Readers never block the writer and see only committed data.
 *
 * <p>Failures: a database that cannot be read (busy, I/O, a pool closed or timed out) fails the future with an
 * {@code UNAVAILABLE} {@link io.mbxrelay.store.StoreException}, as the writer's would (503 at the HTTP edge).
 *
 * <p>Safe on any event loop; every method returns a future completed on the caller's context.
 */
public final class SqliteReads implements RelayReads {
  /** A target's next seq in this snapshot, one row (1 when none was given out): {@code (target_pubkey)}. */
  static final String NEXT_SEQ = "SELECT " + nextSeq("?1");

  /** Next seq, acked position and both ads of a host: {@code (host_pubkey × 4)}. */
  static final String HOST_STATE = "SELECT " + nextSeq("?1") + ","
      + " (SELECT acked_through FROM acked WHERE target_pubkey = ?2),"
      + " (SELECT enc_pub FROM enc_ads WHERE host_pubkey = ?3),"
      + " (SELECT record FROM enc_ad_records WHERE host_pubkey = ?4)";

  /**
   * The next seq of the target named by {@code param}: the floor in {@code seqs}, one past {@code acked_through} or one
   * past the highest queued seq, whichever is largest (schema v5, {@link Schema#SEQ_FLOOR_TRIGGER}); three
   * primary-key probes.
   */
  private static String nextSeq(String param) {
    return "max(coalesce((SELECT next_seq FROM seqs WHERE target_pubkey = " + param + "), 1),"
        + " coalesce((SELECT acked_through FROM acked WHERE target_pubkey = " + param + "), 0) + 1,"
        + " coalesce((SELECT max(seq) FROM items WHERE target_pubkey = " + param + "), 0) + 1)";
  }

  private final AgroalDataSource dataSource;
  private final Pool pool;
  private final WorkerExecutor pageReaders;
  /** The page readers' connections, one per reader thread for its life (closed with the store). */
  private final ThreadLocal<PageConnection> pageConnection = new ThreadLocal<>();
  private final List<PageConnection> pageConnections = new java.util.concurrent.CopyOnWriteArrayList<>();

  private final Path dbFile;
  /** Set by {@link #close()}: every read from now on fails as unavailable. */
  private volatile boolean closed;

  private SqliteReads(AgroalDataSource dataSource, Pool pool, WorkerExecutor pageReaders, Path dbFile) {
    this.dbFile = dbFile;
    this.dataSource = dataSource;
    this.pool = pool;
    this.pageReaders = pageReaders;
  }

  /**
   * Opens the read pool over an existing store file.
   *
   * @param vertx Vert.x
   * @param dbFile {@code relay.db}
   * @param size pool size (connections)
   * @param busyTimeoutMs SQLite busy timeout
   * @return the read store
   * @throws SQLException when the data source cannot be built
   */
  public static SqliteReads open(Vertx vertx, Path dbFile, int size, long busyTimeoutMs) throws SQLException {
    AgroalDataSourceConfigurationSupplier cfg = new AgroalDataSourceConfigurationSupplier()
        .connectionPoolConfiguration(cp -> cp
            .initialSize(0)
            .minSize(0)
            .maxSize(2 * size) // size for the Vert.x JDBC pool, size for the page readers
            .acquisitionTimeout(Duration.ofSeconds(10))
            .connectionFactoryConfiguration(cf -> {
              cf.jdbcUrl(SqliteSettings.url(dbFile)).connectionProviderClass(org.sqlite.JDBC.class).autoCommit(true);
              for (Map.Entry<Object, Object> e : SqliteSettings.reader(busyTimeoutMs).entrySet()) {
                cf.jdbcProperty(e.getKey().toString(), e.getValue().toString());
              }
              return cf;
            }));
    AgroalDataSource ds = AgroalDataSource.from(cfg);
    Pool pool = JDBCPool.pool(vertx, ds, new PoolOptions().setMaxSize(size).setName("mbx-read"));
    return new SqliteReads(ds, pool, vertx.createSharedWorkerExecutor("mbx-pages", size), dbFile);
  }

  /** The store file read ({@code relay.db}). */
  public Path file() {
    return dbFile;
  }

  /**
   * The enrolment of a key, live or revoked.
   *
   * @param hostPubkey key string as sent
   * @return the row or empty
   */
  @Override
  public Future<Optional<Enrolment>> enrolment(String hostPubkey) {
    return read(c -> c.preparedQuery(SqlCatalogue.ENROLMENT)
        .execute(Tuple.of(hostPubkey)))
        .map(rows -> rows.size() == 0 ? Optional.empty() : Optional.of(enrolment(rows.iterator().next())));
  }

  /**
   * Live enrolments carrying a name, case-insensitively, newest enrolled first (docs/protocol.md §2 v1 hop, §4.6).
   *
   * @param name the name as sent
   * @param limit most rows returned (callers ask for one more than they accept, to detect a crowded name)
   * @return the rows
   */
  @Override
  public Future<List<Enrolment>> liveByName(String name, int limit) {
    return read(c -> c.preparedQuery(Dialect.SQLITE.liveByName)
        .execute(Tuple.of(name, limit)))
        .map(rows -> {
          List<Enrolment> out = new ArrayList<>(rows.size());
          rows.forEach(r -> out.add(enrolment(r)));
          return out;
        });
  }

  /**
   * Runs a read in an explicit transaction. The SQLite JDBC driver keeps a read transaction (and with it an old WAL
   * snapshot) open on a pooled connection that is not in auto-commit mode; an explicit BEGIN … COMMIT per read makes
   * every read see everything committed before it started.
   */
  private <T> Future<T> read(java.util.function.Function<SqlConnection, Future<T>> fn) {
    return pool.withTransaction(fn::apply).recover(this::classified);
  }

  /**
   * A read's failure as the writer's is classified ({@link SqliteBackend#classify}; issue 20 item 1): busy, I/O, a
   * file that cannot be opened are {@code UNAVAILABLE} (503), and so is every failure of the pool itself (acquisition
   * timeout, a pool closed under the read); corruption is {@code CORRUPT}; anything else stays as it is (500: a bug).
   */
  private <T> Future<T> classified(Throwable e) {
    if (e instanceof org.sqlite.SQLiteException se) {
      return Future.failedFuture(SqliteBackend.classify("read", se));
    }
    if (closed || e instanceof SQLException || e instanceof java.util.concurrent.RejectedExecutionException) {
      return Future.failedFuture(new io.mbxrelay.store.StoreException(io.mbxrelay.store.StoreException.Kind.UNAVAILABLE,
          "read pool unavailable", e));
    }
    return Future.failedFuture(e);
  }

  private static Enrolment enrolment(Row r) {
    return new Enrolment(r.getString(0), r.getString(1), r.getString(2), r.getString(3), r.getString(4),
        r.getString(5), r.getString(6));
  }

  /**
   * Head, acked position and ads of a host.
   *
   * @param hostPubkey the host key
   * @return its state
   */
  @Override
  public Future<HostState> hostState(String hostPubkey) {
    return read(c -> c.preparedQuery(HOST_STATE)
        .execute(Tuple.of(hostPubkey, hostPubkey, hostPubkey, hostPubkey)))
        .map(rows -> {
          Row r = rows.iterator().next();
          Long next = r.getLong(0);
          Long acked = r.getLong(1);
          return new HostState(next == null ? 0 : next - 1, acked == null ? 0 : acked, r.getString(2), r.getString(3));
        });
  }

  /**
   * A page within a {@link PageBudget}: the page is planned within what the budget has
   * left and its wire bytes are held in it (the caller releases them when the answer is done); an empty page holds
   * nothing.
   *
   * @param budget the budget, or null for none
   * @param client the client's rate key the page is held for (its share of the budget)
   * @return the page; fails with {@link PageBudget.Exhausted} when items are due but nothing is left for the client
   */
  @Override
  public Future<Page> pull(String target, long after, int limit, long maxBytes, PageBudget budget, String client) {
    try {
      return pagePull(target, after, limit, maxBytes, budget, client).recover(this::classified);
    } catch (java.util.concurrent.RejectedExecutionException e) {
      return classified(e); // the page readers were closed (a stop under way)
    }
  }

  private Future<Page> pagePull(String target, long after, int limit, long maxBytes, PageBudget budget,
      String client) {
    return pageReaders.executeBlocking(() -> {
      try {
        if (budget == null) {
          return readPage(target, after, limit, maxBytes);
        }
        long free = budget.free(client);
        Page page = readPage(target, after, limit, Math.max(1, Math.min(maxBytes, free)));
        if (page.items().isEmpty()) {
          return page; // holds nothing (a page of only damaged rows still moves the host past them)
        }
        if (free <= 0) {
          throw new PageBudget.Exhausted();
        }
        budget.hold(client, page.wireBytes());
        return page;
      } catch (SQLException e) {
        dropPageConnection(); // a failed connection is not reused; the next page opens a fresh one
        throw e;
      }
    }, false);
  }

  /** Each live host's next seq and highest queued seq (0 when none): {@link #scanQueueHeads}. */
  static final String QUEUE_HEADS = "SELECT e.host_pubkey, " + nextSeq("e.host_pubkey")
      + ", coalesce((SELECT max(seq) FROM items WHERE target_pubkey = e.host_pubkey), 0)"
      + " FROM enrolments e WHERE e.revoked_at IS NULL";

  /** One read transaction on a page reader's connection: four primary-key probes per live host. */
  @Override
  public Future<Long> scanQueueHeads(QueueHeadSink sink) {
    try {
      return pageReaders.executeBlocking(() -> {
        PageConnection c = pageConnection();
        long n = 0;
        c.begin.execute();
        try (java.sql.PreparedStatement ps = c.raw().prepareStatement(QUEUE_HEADS);
            java.sql.ResultSet rs = ps.executeQuery()) {
          while (rs.next()) {
            sink.head(rs.getString(1), rs.getLong(2) - 1, rs.getLong(3));
            n++;
          }
        } catch (SQLException e) {
          dropPageConnection();
          throw e;
        } finally {
          if (pageConnection.get() == c) {
            c.commit.execute();
          }
        }
        return n;
      }, false).recover(this::classified);
    } catch (java.util.concurrent.RejectedExecutionException e) {
      return classified(e);
    }
  }

  private void dropPageConnection() {
    PageConnection c = pageConnection.get();
    if (c != null) {
      pageConnection.remove();
      pageConnections.remove(c);
      try {
        c.connection().close();
      } catch (SQLException ignored) {
        // already failing
      }
    }
  }

  private Page readPage(String target, long after, int limit, long maxBytes) throws SQLException {
    PageConnection c = pageConnection();
    c.begin.execute();
    try {
      return io.mbxrelay.store.jdbc.JdbcPage.read(c.plan, c.fetch, c.head, target, after, limit, maxBytes);
    } finally {
      c.commit.execute();
    }
  }

  /** A page reader thread's own connection and statements. */
  private record PageConnection(java.sql.Connection connection, java.sql.Connection raw,
      java.sql.PreparedStatement begin,
      java.sql.PreparedStatement commit, java.sql.PreparedStatement plan, java.sql.PreparedStatement fetch,
      java.sql.PreparedStatement head) {}

  private PageConnection pageConnection() throws SQLException {
    PageConnection c = pageConnection.get();
    if (c == null) {
      java.sql.Connection pooled = dataSource.getConnection();
      // The statements live as long as the thread: prepared on the driver's own connection, because Agroal's wrappers
      // keep every result set they hand out until their statement closes (measured: 139,000 of them after a minute
      // of pulls, a heap leak).
      java.sql.Connection conn = pooled.unwrap(org.sqlite.SQLiteConnection.class);
      c = new PageConnection(pooled, conn, conn.prepareStatement("BEGIN"), conn.prepareStatement("COMMIT"),
          conn.prepareStatement(SqlCatalogue.PAGE_PLAN), conn.prepareStatement(SqlCatalogue.PAGE_FETCH),
          conn.prepareStatement(NEXT_SEQ));
      pageConnection.set(c);
      pageConnections.add(c);
    }
    return c;
  }

  private static Future<Long> head(SqlConnection conn, String target) {
    return conn.preparedQuery(NEXT_SEQ)
        .execute(Tuple.of(target))
        .map(rows -> rows.size() == 0 ? 0L : rows.iterator().next().getLong(0) - 1);
  }

  /**
   * Head seq of a target.
   *
   * @param target key
   * @return last allocated seq, 0 if none
   */
  @Override
  public Future<Long> headSeq(String target) {
    return read(conn -> head(conn, target));
  }

  /**
   * Reads the queue totals in one read transaction.
   *
   * @return the totals
   */
  @Override
  public Future<QueueStats> queueStats() {
    return read(c -> c.query(SqlCatalogue.QUEUE_STATS)
        .execute()
        .map(rows -> {
          Row r = rows.iterator().next();
          return new QueueStats(r.getLong(0), r.getLong(1), r.getLong(2), r.getLong(3));
        }));
  }

  /** A trivial query through the pool (readiness). */
  @Override
  public Future<Void> probe() {
    return pool.query(SqlCatalogue.PROBE).execute().<Void>mapEmpty().recover(this::classified);
  }

  // ---- trust reads (issue 3): enc-key ads and the deny list ----

  /**
   * The ads of a key, only while its enrolment is live.
   *
   * @param hostPubkey the key as sent
   * @return the ads (both parts may be null), or empty when the key is not a live enrolment
   */
  @Override
  public Future<Optional<EncAds>> encAds(String hostPubkey) {
    return read(c -> c.preparedQuery(SqlCatalogue.ENC_ADS)
        .execute(Tuple.of(hostPubkey)))
        .map(rows -> {
          if (rows.size() == 0) {
            return Optional.empty();
          }
          Row r = rows.iterator().next();
          return Optional.of(new EncAds(r.getString(0), r.getString(1), r.getString(2), r.getString(3),
              r.getString(4), r.getString(5)));
        });
  }

  /**
   * The deny list, ordered by time added.
   *
   * @return every entry
   */
  @Override
  public Future<List<DenyEntry>> denyList() {
    return read(c -> c.preparedQuery(SqlCatalogue.DENY_LIST)
        .execute(Tuple.tuple()))
        .map(rows -> {
          List<DenyEntry> out = new ArrayList<>(rows.size());
          rows.forEach(r -> out.add(new DenyEntry(r.getString(0), r.getString(1), r.getString(2), r.getString(3))));
          return out;
        });
  }

  @Override
  public void close() {
    closed = true;
    pool.close();
    pageReaders.close();
    for (PageConnection c : pageConnections) {
      try {
        c.connection().close();
      } catch (SQLException ignored) {
        // closing
      }
    }
    dataSource.close();
  }
}
