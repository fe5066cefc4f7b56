package io.mbxrelay.writer;

import static org.assertj.core.api.Assertions.assertThat;

import io.mbxrelay.config.ConfigLoader;
import io.mbxrelay.config.RelayConfig;
import io.mbxrelay.crypto.Ed25519KeyPair;
import io.mbxrelay.store.guard.DiskSpace;
import io.mbxrelay.store.model.PushOutcome;
import io.mbxrelay.store.StoreCommand;
import io.mbxrelay.store.sqlite.SqliteRelayStore;
import io.mbxrelay.testing.Envelopes;
import io.mbxrelay.wire.Hashes;
import io.vertx.core.DeploymentOptions;
import io.vertx.core.Future;
import io.vertx.core.ThreadingModel;
import io.vertx.core.Vertx;
import java.nio.file.Path;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Clock;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The writer verticle alone, on a real SQLite store and a real Vert.x worker context (no HTTP): batch bounds, the
 * free-space floor, answers only after COMMIT, the readiness probe, fail-stop on corruption, and a stop under load
 * that answers every command and leaves no task behind on its worker pool (issue 22 item 7).
 */
class StoreWriterVerticleTest {
  private final String relayKey = Ed25519KeyPair.generate().publicKeyB64();
  private final String sender = Ed25519KeyPair.generate().publicKeyB64();
  private final String target = Ed25519KeyPair.generate().publicKeyB64();
  private Vertx vertx;
  private final List<Throwable> uncaught = new CopyOnWriteArrayList<>();
  private Thread.UncaughtExceptionHandler previous;

  @TempDir
  Path dir;

  @BeforeEach
  void setUp() {
    previous = Thread.getDefaultUncaughtExceptionHandler();
    Thread.setDefaultUncaughtExceptionHandler((t, e) -> uncaught.add(e));
    vertx = Vertx.vertx();
    vertx.exceptionHandler(uncaught::add); // what a context could not hand to anyone
    vertx.eventBus().registerCodec(new LocalCodec());
  }

  @AfterEach
  void tearDown() throws Exception {
    vertx.close().toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
    Thread.setDefaultUncaughtExceptionHandler(previous);
  }

  private static RelayConfig.Limits limits() throws Exception {
    return ConfigLoader.load(null, Map.of("MBX_RELAY_LIMITS_MAX_QUEUE_ITEMS", "1000000",
        "MBX_RELAY_LIMITS_MAX_SENDER_ITEMS", "1000000", "MBX_RELAY_LIMITS_MAX_QUEUE_BYTES", "1000000000",
        "MBX_RELAY_LIMITS_MAX_SENDER_BYTES", "1000000000", "MBX_RELAY_LIMITS_MAX_SENDER_TOTAL_ITEMS", "1000000",
        "MBX_RELAY_LIMITS_MAX_SENDER_TOTAL_BYTES", "1000000000")).limits();
  }

  private SqliteRelayStore open() throws Exception {
    return SqliteRelayStore.open(dir, relayKey, Clock.systemUTC(), limits(), 5000, 0);
  }

  private StoreCommand.Push push(String id) {
    byte[] wire = Envelopes.sealed(id, 200);
    return new StoreCommand.Push(sender, "s", "envelope", id,
        List.of(new StoreCommand.Target(target, wire, Hashes.sha256Hex(wire), null)));
  }

  private String deploy(StoreWriterVerticle w) throws Exception {
    return vertx.deployVerticle(w, new DeploymentOptions().setThreadingModel(ThreadingModel.WORKER)
        .setWorkerPoolName("mbx-writer").setWorkerPoolSize(1)).toCompletionStage().toCompletableFuture()
        .get(30, TimeUnit.SECONDS);
  }

  private static <T> T await(Future<T> f) throws Exception {
    return f.toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
  }

  private static DiskSpace plenty() {
    return new DiskSpace(() -> Long.MAX_VALUE, System::nanoTime, 0);
  }

  private void enrolBoth(SqliteRelayStore s) throws Exception {
    s.execute(List.of(new StoreCommand.Enrol("s", sender, "", null, null)));
    s.execute(List.of(new StoreCommand.Enrol("t", target, "", null, null)));
  }

  private Set<String> storedIds() throws Exception {
    Set<String> ids = new HashSet<>();
    try (java.sql.Connection c = java.sql.DriverManager.getConnection("jdbc:sqlite:" + dir.resolve("relay.db"));
        Statement st = c.createStatement(); ResultSet rs = st.executeQuery("SELECT item_id FROM items")) {
      while (rs.next()) {
        ids.add(rs.getString(1));
      }
    }
    return ids;
  }

  @Test
  void a_transaction_takes_at_most_batch_max_commands_and_every_answer_is_for_a_committed_item() throws Exception {
    SqliteRelayStore store = open();
    enrolBoth(store);
    List<Integer> sizes = new CopyOnWriteArrayList<>();
    StoreWriterVerticle w = new StoreWriterVerticle(store, 3, 1_000_000, 1L << 30, 0, plenty(), Runnable::run, ItemsCommitted.NONE,
        (commands, nanos, failure) -> sizes.add(commands.size()));
    String id = deploy(w);
    StoreClient client = new StoreClient(vertx, 10_000);
    List<Future<PushOutcome>> answers = new ArrayList<>();
    for (int i = 0; i < 40; i++) {
      answers.add(client.send(push("item-" + i)));
    }
    for (Future<PushOutcome> f : answers) {
      assertThat(await(f)).isInstanceOf(PushOutcome.Stored.class);
    }
    await(vertx.undeploy(id));
    assertThat(sizes).allSatisfy(n -> assertThat(n).isBetween(1, 3));
    assertThat(sizes.stream().mapToInt(Integer::intValue).sum()).isEqualTo(40);
    assertThat(storedIds()).hasSize(40); // every answered item is in the store after a reopen
  }

  @Test
  void a_transaction_takes_commands_up_to_its_byte_bound_and_always_at_least_one() throws Exception {
    SqliteRelayStore store = open();
    enrolBoth(store);
    long oneItem = push("probe-size").weightBytes();
    List<Integer> sizes = new CopyOnWriteArrayList<>();
    // room for two items' wire bytes per transaction; a single command larger than the bound still runs alone
    StoreWriterVerticle w = new StoreWriterVerticle(store, 1024, 1_000_000, 2 * oneItem, 0, plenty(), Runnable::run,
        ItemsCommitted.NONE, (commands, nanos, failure) -> sizes.add(commands.size()));
    String id = deploy(w);
    StoreClient client = new StoreClient(vertx, 10_000);
    List<Future<PushOutcome>> answers = new ArrayList<>();
    for (int i = 0; i < 30; i++) {
      answers.add(client.send(push("bytes-" + i)));
    }
    for (Future<PushOutcome> f : answers) {
      assertThat(await(f)).isInstanceOf(PushOutcome.Stored.class);
    }
    await(vertx.undeploy(id));
    assertThat(sizes).allSatisfy(n -> assertThat(n).isBetween(1, 2));
    assertThat(sizes.stream().mapToInt(Integer::intValue).sum()).isEqualTo(30);
    assertThat(storedIds()).hasSize(30);
  }

  @Test
  void under_the_free_space_floor_pushes_are_refused_and_other_commands_still_commit() throws Exception {
    SqliteRelayStore store = open();
    enrolBoth(store);
    AtomicLong free = new AtomicLong(1L << 20); // 1 MiB free, floor 64 MiB
    DiskSpace disk = new DiskSpace(free::get, System::nanoTime, 64L << 20);
    StoreWriterVerticle w = new StoreWriterVerticle(store, 64, 1_000_000, 1L << 30, 0, disk, Runnable::run, ItemsCommitted.NONE,
        (commands, nanos, failure) -> {});
    String id = deploy(w);
    StoreClient client = new StoreClient(vertx, 10_000);
    Future<PushOutcome> refused = client.send(push("refused"));
    Throwable why = refused.toCompletionStage().toCompletableFuture().handle((v, e) -> e).get(30, TimeUnit.SECONDS);
    assertThat(StoreClient.isDiskFloorRefusal(why.getCause() == null ? why : why.getCause())).isTrue();
    assertThat(w.diskRefusals()).isEqualTo(1);
    String third = Ed25519KeyPair.generate().publicKeyB64();
    assertThat(await(client.send(new StoreCommand.Enrol("u", third, "", null, null)))).isNotNull();
    await(vertx.undeploy(id));
    assertThat(storedIds()).doesNotContain("refused");
  }

  @Test
  void answers_wait_for_what_the_answer_gate_decides_and_come_after_the_commit() throws Exception {
    SqliteRelayStore store = open();
    enrolBoth(store);
    List<Runnable> held = new CopyOnWriteArrayList<>();
    StoreWriterVerticle w = new StoreWriterVerticle(store, 64, 1_000_000, 1L << 30, 0, plenty(), held::add, ItemsCommitted.NONE,
        (commands, nanos, failure) -> {});
    String id = deploy(w);
    Future<PushOutcome> answer = new StoreClient(vertx, 10_000).send(push("held"));
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (held.isEmpty() && System.nanoTime() < deadline) {
      Thread.sleep(5); // the writer's transaction runs on its own thread
    }
    assertThat(held).hasSize(1);
    Thread.sleep(100);
    assertThat(answer.isComplete()).as("no answer before the gate lets it go").isFalse();
    // a second connection sees the row: the transaction had committed before its answer was handed to the gate
    try (java.sql.Connection c = java.sql.DriverManager.getConnection("jdbc:sqlite:" + dir.resolve("relay.db"));
        Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT count(*) FROM items WHERE item_id='held'")) {
      rs.next();
      assertThat(rs.getInt(1)).isEqualTo(1);
    }
    held.get(0).run();
    assertThat(await(answer)).isInstanceOf(PushOutcome.Stored.class);
    await(vertx.undeploy(id));
  }

  @Test
  void a_commit_that_stored_items_signals_their_targets_before_its_answers_leave() throws Exception {
    SqliteRelayStore store = open();
    enrolBoth(store);
    List<String> events = new CopyOnWriteArrayList<>();
    StoreWriterVerticle w = new StoreWriterVerticle(store, 64, 1_000_000, 1L << 30, 0, plenty(), answers -> {
      events.add("answers");
      answers.run();
    }, heads -> events.add("committed " + heads), (commands, nanos, failure) -> {});
    String id = deploy(w);
    StoreClient client = new StoreClient(vertx, 10_000);
    PushOutcome stored = await(client.send(push("signalled")));
    assertThat(stored).isInstanceOf(PushOutcome.Stored.class);
    long seq = ((PushOutcome.Stored) stored).targets().get(0).seq();
    String fourth = Ed25519KeyPair.generate().publicKeyB64();
    await(client.send(new StoreCommand.Enrol("v", fourth, "", null, null))); // stores no item: no signal
    await(vertx.undeploy(id));
    // the target with its new head, the item's seq
    assertThat(events).containsExactly("committed {" + target + "=" + seq + "}", "answers", "answers");
  }

  /** The failure code of a writer answer that failed (the event bus's {@code ReplyException}), or -1. */
  private static int failureCode(Future<?> answer) throws Exception {
    Throwable e = answer.toCompletionStage().toCompletableFuture().handle((v, t) -> t).get(30, TimeUnit.SECONDS);
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof io.vertx.core.eventbus.ReplyException rx) {
        return rx.failureCode();
      }
    }
    return -1;
  }

  @Test
  void the_probe_answers_true_and_fails_as_unavailable_while_another_connection_holds_the_write_lock()
      throws Exception {
    SqliteRelayStore store = SqliteRelayStore.open(dir, relayKey, Clock.systemUTC(), limits(), 200, 0);
    StoreWriterVerticle w = new StoreWriterVerticle(store, 64, 1_000_000, 1L << 30, 0, plenty(), Runnable::run,
        ItemsCommitted.NONE, (commands, nanos, failure) -> {});
    String id = deploy(w);
    StoreClient client = new StoreClient(vertx, 10_000);
    assertThat(await(client.send(new StoreCommand.Probe()))).isTrue();
    try (java.sql.Connection other = java.sql.DriverManager.getConnection("jdbc:sqlite:" + dir.resolve("relay.db"));
        Statement st = other.createStatement()) {
      st.execute("BEGIN IMMEDIATE"); // another process's write lock: the probe cannot take it within 200 ms
      assertThat(failureCode(client.send(new StoreCommand.Probe()))).isEqualTo(WriteFailure.NOT_STORED.code());
      st.execute("ROLLBACK");
    }
    assertThat(await(client.send(new StoreCommand.Probe()))).as("passes again once the lock is free").isTrue();
    assertThat(w.failStopped()).isFalse();
    await(vertx.undeploy(id));
  }

  @Test
  void corruption_stops_the_writer_and_every_later_command_is_refused_without_touching_the_store() throws Exception {
    SqliteRelayStore real = open();
    enrolBoth(real);
    java.util.concurrent.atomic.AtomicBoolean corrupt = new java.util.concurrent.atomic.AtomicBoolean();
    java.util.concurrent.atomic.AtomicInteger transactions = new java.util.concurrent.atomic.AtomicInteger();
    // the real store, except that its next transaction reports corruption, as SQLITE_CORRUPT would
    io.mbxrelay.store.RelayStore store = new io.mbxrelay.store.RelayStore() {
      @Override
      public String epoch() {
        return real.epoch();
      }

      @Override
      public String relayPubkey() {
        return real.relayPubkey();
      }

      @Override
      public List<CommandResult> execute(List<? extends StoreCommand<?>> commands)
          throws io.mbxrelay.store.StoreException {
        transactions.incrementAndGet();
        if (corrupt.get()) {
          throw new io.mbxrelay.store.StoreException(io.mbxrelay.store.StoreException.Kind.CORRUPT,
              "database disk image is malformed", null);
        }
        return real.execute(commands);
      }

      @Override
      public java.util.Optional<io.mbxrelay.store.model.Enrolment> enrolment(String hostPubkey)
          throws io.mbxrelay.store.StoreException {
        return real.enrolment(hostPubkey);
      }

      @Override
      public long headSeq(String targetPubkey) throws io.mbxrelay.store.StoreException {
        return real.headSeq(targetPubkey);
      }

      @Override
      public boolean probeWriter() throws io.mbxrelay.store.StoreException {
        return real.probeWriter();
      }

      @Override
      public void onNewItems(java.util.function.Consumer<java.util.Map<String, Long>> observer) {
        real.onNewItems(observer);
      }

      @Override
      public void close() {
        real.close();
      }
    };
    List<String> failures = new CopyOnWriteArrayList<>();
    StoreWriterVerticle w = new StoreWriterVerticle(store, 64, 1_000_000, 1L << 30, 0, plenty(), Runnable::run,
        ItemsCommitted.NONE, (commands, nanos, failure) -> failures.add(failure == null ? "ok" : failure.kind().name()));
    String id = deploy(w);
    StoreClient client = new StoreClient(vertx, 10_000);
    assertThat(await(client.send(push("before")))).isInstanceOf(PushOutcome.Stored.class);
    corrupt.set(true);
    assertThat(failureCode(client.send(push("during")))).isEqualTo(WriteFailure.NOT_STORED.code());
    assertThat(w.failStopped()).as("fail-stop: readiness reports it").isTrue();
    corrupt.set(false); // even a store that would answer again is not written to until a restart
    int before = transactions.get();
    assertThat(failureCode(client.send(push("after")))).isEqualTo(WriteFailure.NOT_STORED.code());
    assertThat(failureCode(client.send(new StoreCommand.Probe()))).isNotEqualTo(-1);
    assertThat(transactions.get()).as("no transaction after the fail-stop").isEqualTo(before);
    await(vertx.undeploy(id));
    assertThat(failures).containsExactly("ok", "CORRUPT");
    assertThat(storedIds()).contains("before").doesNotContain("during", "after");
  }

  /**
   * A writer with a commit delay of {@code delayMs} whose first transaction ({@link #first()}) is held in its listener,
   * on the writer thread, until {@link #release} opens: pushes sent meanwhile queue on its context. {@link #sizes} are
   * its transactions' command counts.
   */
  private final class HeldWriter {
    final List<Integer> sizes = new CopyOnWriteArrayList<>();
    final java.util.concurrent.CountDownLatch holding = new java.util.concurrent.CountDownLatch(1);
    final java.util.concurrent.CountDownLatch release = new java.util.concurrent.CountDownLatch(1);
    final StoreClient client;
    final String deployment;

    HeldWriter(long delayMs) throws Exception {
      this(delayMs, 1024);
    }

    HeldWriter(long delayMs, int batchMax) throws Exception {
      SqliteRelayStore store = open();
      enrolBoth(store);
      StoreWriterVerticle w = new StoreWriterVerticle(store, batchMax, 1_000_000, 1L << 30, delayMs, plenty(),
          Runnable::run, ItemsCommitted.NONE, (commands, nanos, failure) -> {
            sizes.add(commands.size());
            if (sizes.size() == 1) {
              holding.countDown();
              try {
                release.await(30, TimeUnit.SECONDS);
              } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
              }
            }
          });
      deployment = deploy(w);
      client = new StoreClient(vertx, 20_000);
    }

    /** Sends one push and waits until the writer holds its transaction. */
    Future<PushOutcome> first() throws Exception {
      Future<PushOutcome> f = client.send(push("first"));
      assertThat(holding.await(30, TimeUnit.SECONDS)).isTrue();
      return f;
    }

    /**
     * Holds the first transaction, queues two pushes behind it, releases it, and checks a second later that the two
     * are still waiting (two rows are not company enough).
     */
    List<Future<PushOutcome>> twoWaitingForCompany() throws Exception {
      first();
      List<Future<PushOutcome>> queued = send("q", 2);
      Thread.sleep(200); // the pushes reach the writer's context while its transaction is held
      release.countDown();
      Thread.sleep(1000);
      assertThat(queued).as("two rows are not company enough: still waiting").noneMatch(Future::isComplete);
      return queued;
    }

    List<Future<PushOutcome>> send(String prefix, int n) {
      List<Future<PushOutcome>> fs = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        fs.add(client.send(push(prefix + i)));
      }
      return fs;
    }
  }

  private static void awaitAll(List<Future<PushOutcome>> fs, long seconds) throws Exception {
    Future.all(fs).toCompletionStage().toCompletableFuture().get(seconds, TimeUnit.SECONDS);
  }

  @Test
  void a_writer_that_finds_company_queued_after_a_transaction_starts_at_once_despite_the_commit_delay()
      throws Exception {
    HeldWriter w = new HeldWriter(60_000); // a wait would outlast the test's deadline by far
    Future<PushOutcome> first = w.first();
    List<Future<PushOutcome>> queued = w.send("q", StoreWriterVerticle.COMPANY_ROWS);
    Thread.sleep(200); // the pushes reach the writer's context while its transaction is held
    w.release.countDown();
    awaitAll(queued, 20); // well inside the 60 s delay: it did not wait
    await(first);
    assertThat(w.sizes).containsExactly(1, StoreWriterVerticle.COMPANY_ROWS);
  }

  @Test
  void with_little_queued_after_a_transaction_the_writer_waits_for_company_and_goes_when_enough_has_come()
      throws Exception {
    HeldWriter w = new HeldWriter(60_000);
    List<Future<PushOutcome>> queued = w.twoWaitingForCompany();
    List<Future<PushOutcome>> more = w.send("m", StoreWriterVerticle.COMPANY_ROWS - 2);
    awaitAll(queued, 20); // enough company came: it went long before the 60 s delay ran out
    awaitAll(more, 20);
    assertThat(w.sizes).containsExactly(1, StoreWriterVerticle.COMPANY_ROWS);
  }

  @Test
  void a_stop_while_the_writer_waits_for_company_answers_the_waiting_commands_at_once() throws Exception {
    HeldWriter w = new HeldWriter(60_000);
    List<Future<PushOutcome>> queued = w.twoWaitingForCompany();
    await(vertx.undeploy(w.deployment)); // well inside the 60 s delay
    awaitAll(queued, 1); // answered by the stop's last drain, not by the timer
    assertThat(w.sizes).containsExactly(1, 2);
    Thread.sleep(200); // a task refused by the closed pool surfaces on its thread right after the stop
    assertThat(uncaught).as("nothing thrown on the writer's threads at stop").isEmpty();
  }

  @Test
  void a_writer_whose_transaction_bound_is_below_the_company_it_seeks_goes_once_a_whole_transaction_is_queued()
      throws Exception {
    HeldWriter w = new HeldWriter(60_000, 4);
    Future<PushOutcome> first = w.first();
    List<Future<PushOutcome>> queued = w.send("q", 4);
    Thread.sleep(200);
    w.release.countDown();
    awaitAll(queued, 20); // batchMax 4: four queued commands are a whole transaction, no wait for 32 rows
    await(first);
    assertThat(w.sizes).containsExactly(1, 4);
  }

  @Test
  void a_stop_under_load_answers_every_command_and_leaves_no_task_for_the_closed_pool() throws Exception {
    Set<String> answeredStored = new HashSet<>();
    int rounds = 25;
    for (int round = 0; round < rounds; round++) {
      SqliteRelayStore store = open();
      if (round == 0) {
        enrolBoth(store);
      }
      // a commit delay: a drain waits on a timer, the task most likely to be left queued at stop
      StoreWriterVerticle w = new StoreWriterVerticle(store, 8, 1_000_000, 1L << 30, 1, plenty(), Runnable::run, ItemsCommitted.NONE,
          (commands, nanos, failure) -> {});
      String id = deploy(w);
      StoreClient client = new StoreClient(vertx, 20_000);
      List<Future<PushOutcome>> answers = new ArrayList<>();
      List<String> ids = new ArrayList<>();
      for (int i = 0; i < 60; i++) {
        String itemId = "r" + round + "-" + i;
        ids.add(itemId);
        answers.add(client.send(push(itemId)));
      }
      Future<Void> undeployed = vertx.undeploy(id); // while most of them are still queued
      await(undeployed);
      for (int i = 0; i < answers.size(); i++) {
        Future<PushOutcome> f = answers.get(i);
        Throwable e = f.toCompletionStage().toCompletableFuture().handle((v, t) -> t).get(30, TimeUnit.SECONDS);
        if (e == null) {
          answeredStored.add(ids.get(i));
        }
      }
    }
    Thread.sleep(200); // a task refused by the closed pool surfaces on its thread right after the stop
    assertThat(uncaught).as("nothing thrown on the writer's threads at stop").isEmpty();
    assertThat(storedIds()).containsAll(answeredStored); // an answered push is stored
  }
}
