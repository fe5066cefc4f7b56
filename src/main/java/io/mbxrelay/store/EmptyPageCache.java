package io.mbxrelay.store;

import io.mbxrelay.budget.PageBudget;
import io.mbxrelay.store.model.DenyEntry;
import io.mbxrelay.store.model.EncAds;
import io.mbxrelay.store.model.Enrolment;
import io.mbxrelay.store.model.HostState;
import io.mbxrelay.store.model.Page;
import io.mbxrelay.store.model.QueueStats;
import io.mbxrelay.store.spi.RelayReads;
import io.vertx.core.Future;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;

/**
 * A negative cache of pull pages (issue 18 goal 5): answers a pull that would find nothing from memory, without a
 * read. Many pulls of a hosted relay are a host asking for its queue after it acked everything, or a host nobody wrote
 * to; each used to cost a read transaction on a page reader thread.
 *
 * <p>Per target it keeps a fact about the committed queue: the head seq {@code H} (last allocated seq) and a floor
 * {@code F ≤ H} such that no queued row has a seq in {@code (F, H]}. A pull with {@code after ≥ F} then finds no row
 * (rows never have a seq above the head) and its page is {@code {head_seq: H, items: [], more: false}}, what the read
 * would answer. Facts come from three sources, merged so that the head only moves up:
 *
 * <ul>
 *   <li>at start, one scan of every live host's head and highest queued seq ({@link #seed});
 *   <li>each page a read returns whole ({@code more} false, nothing damaged): {@code F} is its last item's seq, or
 *       {@code after} when it is empty;
 *   <li>the writer after each COMMIT that stored items, before that transaction's answers and before long-poll pulls
 *       are woken ({@link #committed}): the new head {@code S} with {@code F = S} (the row at {@code S} exists). A
 *       COMMIT that failed is signalled too, since it may have committed: a head too high only makes pulls below it
 *       read, where a missing one could answer empty over a stored item.
 * </ul>
 *
 * <p>Why a fact stays true: a committed row never gets a seq at or below a head already committed (the ledger
 * allocates {@code max(next_seq, now_ms)}, one writer), rows below it only go away (acks, expiry, set-aside), and an
 * ack never moves the head. A read's fact comes from a snapshot that may be older than the writer's latest COMMIT; it
 * then carries a lower head and loses the merge. Between a COMMIT and {@link #committed} a pull may still be answered
 * empty, as a read that began just before the COMMIT would be: the push's answer and the waiters' wake-up come after.
 *
 * <p>Only for a store one process writes (SQLite): another instance's commits on a shared database would not be seen.
 * Bounded: past {@code maxEntries} reads add no new targets (the writer still records heads for targets that receive
 * items, bounded by the enrolled hosts), and past twice that the cache starts over (a generation: facts of reads that
 * began before the reset are never used, even when one is stored after it).
 *
 * <p>Threading: {@link #committed} on the writer thread, everything else on any thread.
 */
public final class EmptyPageCache implements RelayReads {

  /** A fact about one target's queue, learnt in generation {@code gen}. */
  private record Fact(long head, long floor, long gen) {}

  private final RelayReads reads;
  private final int maxEntries;
  private final ConcurrentHashMap<String, Fact> facts = new ConcurrentHashMap<>();
  private final AtomicLong generation = new AtomicLong();
  private final LongAdder hits = new LongAdder();

  /**
   * @param reads the store's reads (every other method is passed through)
   * @param maxEntries targets reads may add facts for (the enrolment bound, {@code limits.maxEnrolments}), ≥ 1
   */
  public EmptyPageCache(RelayReads reads, int maxEntries) {
    this.reads = Objects.requireNonNull(reads);
    if (maxEntries < 1) {
      throw new IllegalArgumentException("maxEntries < 1");
    }
    this.maxEntries = maxEntries;
  }

  /**
   * The writer's signal after a COMMIT (chained before the long-poll waiters' one): each target's new head.
   *
   * @param heads target key (canonical) → the highest seq the committed transaction stored for it
   */
  public void committed(Map<String, Long> heads) {
    long gen = generation.get();
    for (Map.Entry<String, Long> e : heads.entrySet()) {
      long seq = e.getValue();
      facts.merge(e.getKey(), new Fact(seq, seq, gen), EmptyPageCache::newer);
    }
    trim();
  }

  /**
   * Learns every live host's queue from the store at once (one read transaction on a page reader, in the background):
   * after a restart the first pull of each host is then answered from memory too, as when thousands of long-polling
   * hosts reconnect at once. Facts from its snapshot merge like any read's; at most {@code maxEntries} hosts.
   *
   * @return the hosts the store handed over
   */
  public Future<Long> seed() {
    long gen = generation.get();
    return reads.scanQueueHeads((target, head, highestQueued) -> {
      if (facts.size() < maxEntries && generation.get() == gen) {
        // no row above the highest queued seq: nothing in (highestQueued, head]
        facts.merge(target, new Fact(head, Math.min(highestQueued, head), gen), EmptyPageCache::newer);
      }
    });
  }

  /** Pulls answered from memory since start. */
  public long hits() {
    return hits.sum();
  }

  /** Targets with a fact now. */
  public int size() {
    return facts.size();
  }

  @Override
  public Future<Page> pull(String target, long after, int limit, long maxBytes, PageBudget budget, String client) {
    long gen = generation.get();
    Fact f = facts.get(target);
    // the generation read again after the lookup: a fact stored late under a generation that has since ended (a read
    // that checked it just before a reset) is never used
    if (f != null && f.gen() == gen && gen == generation.get() && after >= f.floor()) {
      hits.increment();
      return Future.succeededFuture(new Page(f.head(), List.of(), false));
    }
    return reads.pull(target, after, limit, maxBytes, budget, client).map(page -> {
      learn(target, after, page, gen);
      return page;
    });
  }

  /** What a whole page says about the queue, stored when the cache has not started over since the read began. */
  private void learn(String target, long after, Page page, long gen) {
    if (page.more() || !page.damaged().isEmpty() || generation.get() != gen) {
      return;
    }
    long floor = Math.min(page.items().isEmpty() ? after : page.throughSeq(), page.headSeq());
    Fact fact = new Fact(page.headSeq(), Math.max(floor, 0), gen);
    if (facts.size() >= maxEntries) {
      facts.computeIfPresent(target, (k, old) -> newer(old, fact)); // full: only targets it knows
    } else {
      facts.merge(target, fact, EmptyPageCache::newer);
    }
    trim();
  }

  /**
   * The merge: a fact of an older generation is gone; the higher head wins (its fact is about the later queue); on the
   * same head both facts hold, so the lower floor does.
   */
  private static Fact newer(Fact old, Fact fresh) {
    if (old.gen() != fresh.gen()) {
      return old.gen() > fresh.gen() ? old : fresh;
    }
    if (old.head() != fresh.head()) {
      return old.head() > fresh.head() ? old : fresh;
    }
    return old.floor() <= fresh.floor() ? old : fresh;
  }

  /**
   * Starts over when the writer's entries took the cache past twice its bound (revoked hosts' facts linger): a new
   * generation, then only the older generations' facts removed. Not {@code clear()}: a fact the writer stored under the
   * new generation while the removal runs must survive it, or a read's older fact could take its place.
   */
  private void trim() {
    if (facts.size() > 2L * maxEntries) {
      long gen = generation.incrementAndGet();
      facts.values().removeIf(f -> f.gen() < gen);
    }
  }

  @Override
  public Future<Optional<Enrolment>> enrolment(String hostPubkey) {
    return reads.enrolment(hostPubkey);
  }

  @Override
  public Future<List<Enrolment>> liveByName(String name, int limit) {
    return reads.liveByName(name, limit);
  }

  @Override
  public Future<HostState> hostState(String hostPubkey) {
    return reads.hostState(hostPubkey);
  }

  @Override
  public Future<Long> headSeq(String target) {
    return reads.headSeq(target);
  }

  @Override
  public Future<Long> scanQueueHeads(QueueHeadSink sink) {
    return reads.scanQueueHeads(sink);
  }

  @Override
  public Future<QueueStats> queueStats() {
    return reads.queueStats();
  }

  @Override
  public Future<Void> probe() {
    return reads.probe();
  }

  @Override
  public Future<Optional<EncAds>> encAds(String hostPubkey) {
    return reads.encAds(hostPubkey);
  }

  @Override
  public Future<List<DenyEntry>> denyList() {
    return reads.denyList();
  }

  @Override
  public void close() {
    reads.close();
  }
}
