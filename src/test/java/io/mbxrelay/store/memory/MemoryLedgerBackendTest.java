package io.mbxrelay.store.memory;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.mbxrelay.store.model.DedupRow;
import io.mbxrelay.store.model.Enrolment;
import io.mbxrelay.store.model.ItemRow;
import io.mbxrelay.store.spi.LedgerBackend.Usage;
import io.mbxrelay.store.StoreException;
import io.mbxrelay.wire.Hashes;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** What the contract suite cannot see from outside the SPI: the undo log, the write lock and the read isolation. */
class MemoryLedgerBackendTest {
  private static final String RELAY = "r".repeat(43) + "=";
  private static final String T = "t".repeat(43) + "=";
  private static final String S = "s".repeat(43) + "=";
  private final MemoryStore store = new MemoryStore(RELAY);
  private final MemoryLedgerBackend backend = store.newBackend();
  private Vertx vertx;

  @AfterEach
  void tearDown() {
    backend.close();
    if (vertx != null) {
      vertx.close();
    }
  }

  private static Enrolment enrolment(String key) {
    return new Enrolment(key, "host", "", "acct", "jwt", "1970-01-01T00:00:00.000Z", null);
  }

  private static ItemRow item(long seq, String text) {
    byte[] w = text.getBytes(StandardCharsets.UTF_8);
    return new ItemRow(T, seq, "envelope", "id" + seq, S, "sender", w, Hashes.sha256Hex(w), w.length,
        "1970-01-01T00:00:00.000Z", "1970-01-08T00:00:00.000Z");
  }

  private void store(long seq, String text) throws StoreException {
    backend.insertItem(backend.enrolment(T).orElseThrow(), item(seq, text));
    backend.insertDedup(new DedupRow(S, "id" + seq, T, item(seq, text).wireHash(), seq, "1970-01-01T00:00:00.000Z"));
    backend.useSeq(T, seq);
  }

  @Test
  void rolling_back_to_a_savepoint_undoes_rows_counters_and_seqs_and_a_rollback_undoes_the_whole_transaction()
      throws Exception {
    backend.begin();
    backend.upsertEnrolment(enrolment(T));
    store(1, "one");
    backend.savepoint();
    store(2, "three");
    backend.savepoint();
    backend.deleteThrough(T, 2);
    backend.revoke(T, "1970-01-01T00:00:01.000Z");
    backend.raiseAcked(T, 2);
    assertThat(backend.targetUsage(T)).isEqualTo(Usage.NONE);
    backend.rollbackToSavepoint();
    assertThat(backend.targetUsage(T)).isEqualTo(new Usage(2, 8));
    assertThat(backend.enrolment(T).orElseThrow().live()).isTrue();
    backend.rollbackToSavepoint();
    assertThat(backend.nextSeq(T)).isEqualTo(2);
    assertThat(backend.targetUsage(T)).isEqualTo(new Usage(1, 3));
    assertThat(backend.senderShare(T, S)).isEqualTo(new Usage(1, 3));
    assertThat(backend.senderTotal(S)).isEqualTo(new Usage(1, 3));
    assertThat(backend.accountUsage("acct")).isEqualTo(new Usage(1, 3));
    assertThat(backend.storeTotals()).isEqualTo(new Usage(1, 3));
    assertThat(backend.dedup(S, "id2", T)).isEmpty();
    assertThat(backend.queue(T)).extracting(ItemRow::seq).containsExactly(1L);
    assertThat(backend.expiring("1970-01-09T00:00:00.000Z", 10)).extracting(ItemRow::seq).containsExactly(1L);
    backend.rollback();

    assertThat(backend.enrolment(T)).isEmpty();
    assertThat(backend.nextSeq(T)).isEqualTo(1);
    assertThat(store.enrolmentCache().get(T)).isEmpty();
    backend.begin();
    assertThat(backend.queue(T)).isEmpty();
    assertThat(backend.dedup(S, "id1", T)).isEmpty();
    assertThat(backend.storeTotals()).isEqualTo(Usage.NONE);
    assertThat(backend.expiring("1970-01-09T00:00:00.000Z", 10)).isEmpty();
    assertThat(store.targetUsage).isEmpty();
    assertThat(store.senderShare).isEmpty();
    assertThat(store.senderTotals).isEmpty();
    assertThat(store.acked).isEmpty();
    backend.rollback();
  }

  @Test
  void a_commit_keeps_the_changes_and_updates_the_enrolment_cache() throws Exception {
    backend.begin();
    backend.upsertEnrolment(enrolment(T));
    store(7, "seven");
    assertThat(store.enrolmentCache().get(T)).isEmpty(); // not before COMMIT
    backend.commit();
    assertThat(store.enrolmentCache().get(T)).isPresent();
    assertThat(backend.nextSeq(T)).isEqualTo(8);
    try (MemoryLedgerBackend again = store.newBackend()) { // a restart: a new session over the same state
      again.begin();
      assertThat(again.queue(T)).extracting(ItemRow::seq).containsExactly(7L);
      assertThat(again.targetUsage(T)).isEqualTo(new Usage(1, 5));
      again.rollback();
    }
  }

  @Test
  void reads_wait_while_a_write_transaction_is_open_and_then_see_only_what_it_committed() throws Exception {
    vertx = Vertx.vertx();
    MemoryReads reads = new MemoryReads(vertx, store, 1);
    backend.begin();
    backend.upsertEnrolment(enrolment(T));
    store(1, "one");
    Future<Long> head = reads.headSeq(T);
    Future<Optional<Enrolment>> row = reads.enrolment(T);
    long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (!store.lock.hasQueuedThreads() && System.nanoTime() < until) {
      Thread.onSpinWait(); // the reader is parked on the read lock
    }
    assertThat(store.lock.hasQueuedThreads()).isTrue();
    assertThat(head.isComplete()).isFalse();
    backend.rollback();
    assertThat(head.toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS)).isZero();
    assertThat(row.toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS)).isEmpty();
    reads.close();
  }

  @Test
  void table_operations_need_a_transaction_and_one_thread_cannot_open_two() throws Exception {
    assertThatThrownBy(() -> backend.insertDedup(new DedupRow(S, "x", T, "h", 1, "a")))
        .isInstanceOfSatisfying(StoreException.class, e -> assertThat(e.kind()).isEqualTo(StoreException.Kind.INTERNAL));
    backend.begin();
    try (MemoryLedgerBackend other = store.newBackend()) {
      assertThatThrownBy(other::begin).isInstanceOf(StoreException.class).hasMessageContaining("another session");
    }
    backend.upsertEnrolment(enrolment(T));
    store(1, "one");
    assertThatThrownBy(() -> backend.insertItem(enrolment(T), item(1, "again"))).isInstanceOf(StoreException.class)
        .hasMessageContaining("exists");
    backend.rollback();
  }

  @Test
  void the_ops_log_keeps_the_newest_thousand_entries() throws Exception {
    backend.begin();
    for (int i = 1; i <= 1005; i++) {
      backend.logOp("op", "{\"n\":" + i + "}", "1970-01-01T00:00:00.000Z");
    }
    backend.commit();
    assertThat(store.ops).hasSize(1000);
    assertThat(store.ops.firstEntry().getValue().receipt()).isEqualTo("{\"n\":6}");
    assertThat(List.copyOf(store.ops.keySet()).get(999)).isEqualTo(1005L);
  }
}
