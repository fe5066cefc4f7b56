package io.mbxrelay.writer;

import static org.assertj.core.api.Assertions.assertThat;

import io.mbxrelay.config.ConfigLoader;
import io.mbxrelay.crypto.Ed25519KeyPair;
import io.mbxrelay.store.RelayLedger;
import io.mbxrelay.store.StoreCommand;
import io.mbxrelay.store.guard.DiskSpace;
import io.mbxrelay.store.model.PushOutcome;
import io.mbxrelay.store.postgres.PgStore;
import io.mbxrelay.store.postgres.PgTestServer;
import io.mbxrelay.testing.Envelopes;
import io.mbxrelay.wire.Hashes;
import io.vertx.core.DeploymentOptions;
import io.vertx.core.Future;
import io.vertx.core.ThreadingModel;
import io.vertx.core.Vertx;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Clock;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Issue 20 item 4: the writer says where a failed write failed. A COMMIT whose connection breaks under it is
 * {@link WriteFailure#OUTCOME_UNKNOWN} (the relay cannot know whether the database committed); a transaction that
 * cannot even begin is {@link WriteFailure#NOT_STORED}. The writer runs on a real PostgreSQL, whose connections the
 * test terminates with {@code pg_terminate_backend}.
 */
class WriteOutcomeTest {
  private final String sender = Ed25519KeyPair.generate().publicKeyB64();
  private final String target = Ed25519KeyPair.generate().publicKeyB64();
  private final PgTestServer pg = PgTestServer.shared();
  private Vertx vertx;
  private String db;
  private PgStore store;
  private RelayLedger ledger;
  private StoreClient writes;
  private volatile boolean breakBeforeCommit;

  @BeforeEach
  void setUp() throws Exception {
    String url = pg.createDatabase();
    db = url.substring(url.lastIndexOf('/') + 1);
    store = PgStore.open(new PgStore.Settings(url, PgTestServer.SUPERUSER, "", 4), null, System::currentTimeMillis,
        600_000);
    ledger = store.newLedger(Clock.systemUTC(), ConfigLoader.load(null, Map.of()).limits());
    ledger.execute(List.of(new StoreCommand.Enrol("s", sender, "", null, null)));
    ledger.execute(List.of(new StoreCommand.Enrol("t", target, "", null, null)));
    ledger.commitHook((commands, committed) -> {
      if (!committed && breakBeforeCommit && commands.stream().anyMatch(c -> c instanceof StoreCommand.Enrol)) {
        breakBeforeCommit = false;
        terminateConnections(); // every statement ran; the COMMIT goes to a connection the server has closed
      }
    });
    vertx = Vertx.vertx();
    vertx.eventBus().registerCodec(new LocalCodec());
    StoreWriterVerticle writer = new StoreWriterVerticle(ledger, 64, 1000, 10_000_000, 0,
        new DiskSpace(() -> Long.MAX_VALUE, System::nanoTime, 0), Runnable::run, ItemsCommitted.NONE,
        (commands, nanos, failure) -> {});
    await(vertx.deployVerticle(writer, new DeploymentOptions().setThreadingModel(ThreadingModel.WORKER)
        .setWorkerPoolName("mbx-writer").setWorkerPoolSize(1)));
    writes = new StoreClient(vertx, 20_000);
  }

  @AfterEach
  void tearDown() throws Exception {
    vertx.close().toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS); // closes the ledger
    store.close();
  }

  /**
   * An enrolment, whose COMMIT is preceded by no batched counter write: the PostgreSQL driver's own assertion on a
   * batch over a closed connection would otherwise fire first under {@code -ea} (tests only).
   */
  @Test
  void a_commit_whose_connection_breaks_under_it_is_outcome_unknown_and_its_retry_is_safe() throws Exception {
    String third = Ed25519KeyPair.generate().publicKeyB64();
    breakBeforeCommit = true;
    assertThat(failureOf(writes.send(new StoreCommand.Enrol("u", third, "", null, null))))
        .isEqualTo(WriteFailure.OUTCOME_UNKNOWN);
    // the writer takes a fresh connection (a transaction that meets the dead one first fails before COMMIT); the
    // retry is then answered as any enrolment
    assertThat(retried(() -> writes.send(new StoreCommand.Enrol("u", third, "", null, null))))
        .isEqualTo(io.mbxrelay.store.model.EnrolOutcome.OK);
    // and pushes go on
    assertThat(await(writes.send(push("m-after")))).isInstanceOf(PushOutcome.Stored.class);
  }

  @Test
  void a_transaction_that_cannot_begin_is_not_stored() throws Exception {
    try (Connection admin = DriverManager.getConnection(pg.jdbcUrl("postgres"), PgTestServer.SUPERUSER, "");
        Statement st = admin.createStatement()) {
      st.execute("ALTER DATABASE " + db + " ALLOW_CONNECTIONS false");
      try {
        terminateConnections();
        assertThat(failureOf(writes.send(push("m-down")))).isEqualTo(WriteFailure.NOT_STORED);
      } finally {
        st.execute("ALTER DATABASE " + db + " ALLOW_CONNECTIONS true");
      }
    }
    PushOutcome retry = retried(() -> writes.send(push("m-down")));
    assertThat(retry).isInstanceOfSatisfying(PushOutcome.Stored.class, s -> assertThat(s.fresh()).isTrue());
  }

  private void terminateConnections() {
    try (Connection admin = DriverManager.getConnection(pg.jdbcUrl("postgres"), PgTestServer.SUPERUSER, "");
        Statement st = admin.createStatement()) {
      st.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '" + db + "'");
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  private StoreCommand.Push push(String id) {
    byte[] wire = Envelopes.sealed(id, 200);
    return new StoreCommand.Push(sender, "s", "envelope", id,
        List.of(new StoreCommand.Target(target, wire, Hashes.sha256Hex(wire), null)));
  }

  private static WriteFailure failureOf(Future<?> f) throws Exception {
    try {
      f.toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
    } catch (ExecutionException e) {
      return WriteFailure.of(e.getCause()).orElseThrow(() -> new AssertionError("not a write failure", e.getCause()));
    }
    throw new AssertionError("the write succeeded");
  }

  /** Sends until the writer answers (at most 5 times); every failure on the way must be "not stored". */
  private static <T> T retried(java.util.function.Supplier<Future<T>> send) throws Exception {
    for (int i = 1; ; i++) {
      try {
        return send.get().toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
      } catch (ExecutionException e) {
        assertThat(WriteFailure.of(e.getCause())).contains(WriteFailure.NOT_STORED);
        if (i == 5) {
          throw e;
        }
      }
    }
  }

  private static <T> T await(Future<T> f) throws Exception {
    return f.toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
  }
}
