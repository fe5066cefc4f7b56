package io.mbxrelay.store;

import static org.assertj.core.api.Assertions.assertThat;

import io.mbxrelay.store.model.Page;
import io.mbxrelay.store.model.PulledItem;
import io.mbxrelay.store.spi.RelayReads;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import java.lang.reflect.Proxy;
import java.util.ArrayDeque;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The merge rules of {@link EmptyPageCache} in the orders a real store can produce but a test cannot time: a read whose
 * snapshot predates a COMMIT finishing after the writer's signal. The reads here are promises the test completes (the
 * HTTP-level behaviour on a real store is in {@code http.EmptyPagesTest}).
 */
class EmptyPageCacheTest {

  private static final String T = "target-key";

  /** Reads whose pull answers are completed by the test, in call order; any other read is a test bug. */
  private final ArrayDeque<Promise<Page>> pending = new ArrayDeque<>();

  private final RelayReads reads = (RelayReads) Proxy.newProxyInstance(getClass().getClassLoader(),
      new Class<?>[] {RelayReads.class}, (proxy, method, args) -> {
        if (method.getName().equals("pull") && args.length == 6) {
          Promise<Page> p = Promise.promise();
          pending.add(p);
          return p.future();
        }
        throw new UnsupportedOperationException(method.getName());
      });

  private static Page empty(long head) {
    return new Page(head, List.of(), false);
  }

  private static PulledItem item(long seq) {
    return new PulledItem(seq, "envelope", "id-" + seq, "sender", new byte[] {1}, "2026-12-03T00:00:00.000Z");
  }

  @Test
  void an_empty_read_is_remembered_for_that_cursor_and_any_later_one() {
    EmptyPageCache cache = new EmptyPageCache(reads, 10);
    Future<Page> first = cache.pull(T, 5, 100, 1 << 20, null, null);
    pending.remove().complete(empty(7));
    assertThat(first.result().items()).isEmpty();
    Page remembered = cache.pull(T, 5, 100, 1 << 20, null, null).result();
    assertThat(remembered).isEqualTo(empty(7));
    assertThat(cache.pull(T, 9, 100, 1 << 20, null, null).result()).isEqualTo(empty(7));
    assertThat(pending).isEmpty();
    assertThat(cache.hits()).isEqualTo(2);
    // below the cursor it learnt from, a row may still be queued: that pull is read
    cache.pull(T, 4, 100, 1 << 20, null, null);
    assertThat(pending).hasSize(1);
  }

  @Test
  void a_read_that_began_before_a_commit_cannot_hide_the_committed_item() {
    EmptyPageCache cache = new EmptyPageCache(reads, 10);
    Future<Page> stale = cache.pull(T, 0, 100, 1 << 20, null, null); // its snapshot: an empty queue, head 0
    cache.committed(Map.of(T, 12L)); // the writer stored seq 12 and signalled before the read finished
    pending.remove().complete(empty(0));
    assertThat(stale.result().items()).isEmpty();
    // the stale fact lost the merge: a pull below the new item is read, not answered empty
    cache.pull(T, 0, 100, 1 << 20, null, null);
    assertThat(pending).as("read again").hasSize(1);
    pending.remove().complete(new Page(12, List.of(item(12)), false));
    // past the item, memory answers with the writer's head
    assertThat(cache.pull(T, 12, 100, 1 << 20, null, null).result()).isEqualTo(empty(12));
  }

  @Test
  void a_partial_or_damaged_page_teaches_nothing_and_a_whole_one_teaches_its_last_seq() {
    EmptyPageCache cache = new EmptyPageCache(reads, 10);
    cache.pull(T, 0, 1, 1 << 20, null, null);
    pending.remove().complete(new Page(9, List.of(item(3)), true)); // more rows beyond
    cache.pull(T, 3, 100, 1 << 20, null, null);
    assertThat(pending).as("nothing learnt from a page with more").hasSize(1);
    pending.remove().complete(new Page(9, List.of(), false, 9, List.of(5L))); // only damaged rows, withheld
    cache.pull(T, 9, 100, 1 << 20, null, null);
    assertThat(pending).as("nothing learnt from a page with damaged rows").hasSize(1);
    pending.remove().complete(new Page(9, List.of(item(9)), false));
    assertThat(cache.pull(T, 9, 100, 1 << 20, null, null).result()).isEqualTo(empty(9));
    cache.pull(T, 8, 100, 1 << 20, null, null);
    assertThat(pending).as("the item at 9 may not be acked yet").hasSize(1);
  }

  @Test
  void past_its_bound_reads_add_no_target_and_past_twice_that_it_starts_over() {
    EmptyPageCache cache = new EmptyPageCache(reads, 2);
    for (String t : List.of("t1", "t2", "t3")) {
      cache.pull(t, 0, 100, 1 << 20, null, null);
      pending.remove().complete(empty(0));
    }
    assertThat(cache.size()).isEqualTo(2);
    cache.pull("t3", 0, 100, 1 << 20, null, null);
    assertThat(pending).as("t3 was not learnt").hasSize(1);
    pending.remove().complete(empty(0));
    // a read under way when the cache starts over is not stored late
    Future<Page> late = cache.pull("t1", 5, 100, 1 << 20, null, null);
    assertThat(late.isComplete()).isTrue(); // t1 is known: answered at once
    Future<Page> underWay = cache.pull("t4", 0, 100, 1 << 20, null, null);
    cache.committed(Map.of("w1", 1L, "w2", 1L, "w3", 1L)); // the writer's targets take it past 2 × 2
    assertThat(cache.size()).isZero();
    pending.remove().complete(empty(0));
    assertThat(underWay.result().items()).isEmpty();
    assertThat(cache.size()).as("the read began before the reset").isZero();
  }
}
