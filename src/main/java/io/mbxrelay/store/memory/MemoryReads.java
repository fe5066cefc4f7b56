package io.mbxrelay.store.memory;

import io.mbxrelay.budget.PageBudget;
import io.mbxrelay.store.model.DenyEntry;
import io.mbxrelay.store.model.EncAds;
import io.mbxrelay.store.model.Enrolment;
import io.mbxrelay.store.model.HostState;
import io.mbxrelay.store.model.ItemRow;
import io.mbxrelay.store.spi.LedgerBackend.Usage;
import io.mbxrelay.store.model.Page;
import io.mbxrelay.store.model.PulledItem;
import io.mbxrelay.store.model.QueueStats;
import io.mbxrelay.store.spi.RelayReads;
import io.mbxrelay.store.memory.MemoryStore.AdV1;
import io.mbxrelay.store.memory.MemoryStore.AdV2;
import io.mbxrelay.store.memory.MemoryStore.ItemKey;
import io.mbxrelay.wire.Hashes;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.WorkerExecutor;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.Callable;

/**
 * The {@link RelayReads} of a {@link MemoryStore}: each read runs on a small worker pool of its own under the store's
 * read lock, so it sees only committed state and an event loop never waits for a write transaction. The answers are
 * those of {@link io.mbxrelay.store.sqlite.SqliteReads} row for row (the same page plan as
 * {@link io.mbxrelay.store.jdbc.JdbcPage}); wire bytes handed out are copies.
 *
 * <p>Errors: a future fails with a {@link io.mbxrelay.store.StoreException} ({@code UNAVAILABLE}) when the read lock
 * is not had within 10 s, and {@link #pull} with {@link PageBudget.Exhausted} as the interface says.
 *
 * <p>Safe on any event loop; every method returns a future completed on the caller's context.
 */
public final class MemoryReads implements RelayReads {
  private static final Comparator<Enrolment> NEWEST_FIRST = Comparator.comparing(Enrolment::enrolledAt)
      .thenComparing(Enrolment::hostPubkey).reversed();

  private final MemoryStore s;
  private final WorkerExecutor readers;

  /**
   * @param vertx Vert.x (owns the reader threads)
   * @param store the store read
   * @param threads reader threads (at least 1)
   */
  public MemoryReads(Vertx vertx, MemoryStore store, int threads) {
    this.s = Objects.requireNonNull(store);
    this.readers = vertx.createSharedWorkerExecutor("mbx-memory-reads", Math.max(1, threads));
  }

  private <T> Future<T> read(Callable<T> read) {
    return readers.executeBlocking(() -> {
      MemoryStore.acquire(s.lock.readLock(), "read");
      try {
        return read.call();
      } finally {
        s.lock.readLock().unlock();
      }
    }, false);
  }

  @Override
  public Future<Optional<Enrolment>> enrolment(String hostPubkey) {
    return read(() -> Optional.ofNullable(s.enrolments.get(hostPubkey)));
  }

  /** Newest enrolled first; rows enrolled in the same millisecond by key, descending. */
  @Override
  public Future<List<Enrolment>> liveByName(String name, int limit) {
    String lower = MemoryStore.asciiLower(name);
    return read(() -> s.enrolments.values().stream()
        .filter(e -> e.live() && MemoryStore.asciiLower(e.hostName()).equals(lower))
        .sorted(NEWEST_FIRST)
        .limit(limit)
        .toList());
  }

  @Override
  public Future<HostState> hostState(String hostPubkey) {
    return read(() -> {
      AdV1 v1 = s.adsV1.get(hostPubkey);
      AdV2 v2 = s.adsV2.get(hostPubkey);
      return new HostState(s.nextSeq.getOrDefault(hostPubkey, 1L) - 1, s.acked.getOrDefault(hostPubkey, 0L),
          v1 == null ? null : v1.encPub(), v2 == null ? null : v2.record());
    });
  }

  /**
   * A page within a {@link PageBudget} as {@link io.mbxrelay.store.sqlite.SqliteReads#pull} plans it: within what the
   * budget has left for the client, its wire bytes held in the budget (the caller releases them); an empty page holds
   * nothing.
   */
  @Override
  public Future<Page> pull(String target, long after, int limit, long maxBytes, PageBudget budget, String client) {
    return read(() -> {
      if (budget == null) {
        return page(target, after, limit, maxBytes);
      }
      long free = budget.free(client);
      Page page = page(target, after, limit, Math.max(1, Math.min(maxBytes, free)));
      if (page.items().isEmpty()) {
        return page; // holds nothing (a page of only damaged rows still moves the host past them)
      }
      if (free <= 0) {
        throw new PageBudget.Exhausted();
      }
      budget.hold(client, page.wireBytes());
      return page;
    });
  }

  /** {@link io.mbxrelay.store.jdbc.JdbcPage#read} over the items map; under the read lock. */
  private Page page(String target, long after, int limit, long maxBytes) {
    int n = 0;
    int fetched = 0;
    boolean full = false;
    long total = 0;
    long through = after;
    List<PulledItem> items = new ArrayList<>();
    List<Long> damaged = List.of();
    for (ItemRow r : s.items.subMap(new ItemKey(target, after), false, new ItemKey(target, Long.MAX_VALUE), true)
        .values()) {
      if (fetched == limit + 1) {
        break;
      }
      fetched++;
      if (full || n == limit) {
        continue; // counted for `more` only
      }
      if (n > 0 && total + r.bytes() > maxBytes) {
        full = true;
        continue;
      }
      total += r.bytes();
      through = r.seq();
      n++;
      // never serve bytes that are not what was accepted (issue 10 item 1)
      if (!Hashes.sha256Hex(r.wire()).equals(r.wireHash())) {
        damaged = damaged.isEmpty() ? new ArrayList<>() : damaged;
        damaged.add(r.seq());
        continue;
      }
      items.add(new PulledItem(r.seq(), r.kind(), r.itemId(), r.sender(), r.wire().clone(), r.senderHost()));
    }
    long head = s.nextSeq.getOrDefault(target, 1L) - 1;
    return new Page(head, items, fetched > n, n > 0 ? through : -1, damaged);
  }

  @Override
  public Future<Long> headSeq(String target) {
    return read(() -> s.nextSeq.getOrDefault(target, 1L) - 1);
  }

  @Override
  public Future<QueueStats> queueStats() {
    return read(() -> {
      long items = 0;
      long bytes = 0;
      long maxItems = 0;
      long maxBytes = 0;
      for (Usage u : s.targetUsage.values()) {
        items += u.items();
        bytes += u.bytes();
        maxItems = Math.max(maxItems, u.items());
        maxBytes = Math.max(maxBytes, u.bytes());
      }
      return new QueueStats(items, bytes, maxItems, maxBytes);
    });
  }

  @Override
  public Future<Void> probe() {
    return read(() -> null);
  }

  /** The ads while the key's enrolment is live; the name is the enrolment's. */
  @Override
  public Future<Optional<EncAds>> encAds(String hostPubkey) {
    return read(() -> {
      Enrolment e = s.enrolments.get(hostPubkey);
      if (e == null || !e.live()) {
        return Optional.empty();
      }
      AdV1 v1 = s.adsV1.get(hostPubkey);
      AdV2 v2 = s.adsV2.get(hostPubkey);
      return Optional.of(new EncAds(e.hostName(), e.hostPubkey(), v1 == null ? null : v1.encPub(),
          v1 == null ? null : v1.sig(), v2 == null ? null : v2.record(), v2 == null ? null : v2.sig()));
    });
  }

  /** Ordered by time added, then kind and value. */
  @Override
  public Future<List<DenyEntry>> denyList() {
    return read(() -> s.deny.values().stream()
        .sorted(Comparator.comparing(DenyEntry::addedAt).thenComparing(DenyEntry::kind)
            .thenComparing(DenyEntry::value))
        .toList());
  }

  @Override
  public void close() {
    readers.close();
  }
}
