package io.mbxrelay.http;

import io.vertx.core.Context;
import java.util.Collection;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Long-poll pulls waiting for their host's next item (issue 9 goal 4; {@code GET /v2/relay/items?…&wait=N}): the
 * writer calls {@link #wake(Collection)} after each COMMIT with the targets that received items, and each waiting pull
 * of those targets is woken on its own event loop, reads its page again and answers.
 *
 * <p>Bounded: at most {@link #MAX_PER_TARGET} waits per target and {@code maxWaiting} in all; a pull over either bound
 * is answered at once with its (empty) page, exactly as without {@code wait}.
 *
 * <p>Threading: {@link #wake} is safe on any thread (the writer); a waiter's callbacks run on its event loop.
 */
public final class PullWaiters implements io.mbxrelay.writer.ItemsCommitted {
  /** Most pulls one host may hold open at once (a host runs one receive loop). */
  public static final int MAX_PER_TARGET = 4;

  /** One waiting pull. */
  public interface Waiter {
    /** Called on the waiter's event loop when an item for its target was committed. */
    void woken();

    /**
     * Called on the waiter's event loop when the relay stops ({@link #release()}): read the page once more and
     * answer it now, whatever it holds (normally the empty page), instead of waiting on.
     */
    void released();
  }

  private record Entry(Waiter waiter, Context context) {}

  private final Map<String, Set<Entry>> byTarget = new ConcurrentHashMap<>();
  private final AtomicInteger waiting = new AtomicInteger();
  private final int maxWaiting;
  private volatile boolean released;

  /** @param maxWaiting most pulls waiting at once over all targets */
  public PullWaiters(int maxWaiting) {
    this.maxWaiting = maxWaiting;
  }

  /**
   * Registers a waiting pull.
   *
   * @param target the host whose items it waits for
   * @param context the event loop to wake it on
   * @param waiter what to call
   * @return a handle to cancel the wait, or null when a bound is reached (answer at once)
   */
  public Runnable register(String target, Context context, Waiter waiter) {
    if (released) {
      return null; // the relay is stopping: answer at once
    }
    if (waiting.incrementAndGet() > maxWaiting) {
      waiting.decrementAndGet();
      return null;
    }
    Entry e = new Entry(waiter, context);
    boolean[] added = {false};
    byTarget.compute(target, (k, set) -> {
      Set<Entry> s = set == null ? ConcurrentHashMap.newKeySet() : set;
      if (s.size() < MAX_PER_TARGET) {
        s.add(e);
        added[0] = true;
      }
      return s;
    });
    if (!added[0]) {
      waiting.decrementAndGet();
      return null;
    }
    return () -> {
      boolean[] removed = {false};
      byTarget.computeIfPresent(target, (k, set) -> {
        removed[0] = set.remove(e);
        return set.isEmpty() ? null : set;
      });
      if (removed[0]) {
        waiting.decrementAndGet();
      }
    };
  }

  /** The writer's signal ({@link io.mbxrelay.writer.ItemsCommitted}): wakes the waiters of these targets. */
  @Override
  public void itemsCommitted(java.util.Set<String> targets) {
    wake(targets);
  }

  /**
   * Wakes every pull waiting for one of the targets (called by the writer after COMMIT, before replies).
   *
   * @param targets hosts that received items in the committed transaction
   */
  public void wake(Collection<String> targets) {
    for (String target : targets) {
      Set<Entry> set = byTarget.get(target);
      if (set != null) {
        for (Entry e : set) {
          e.context().runOnContext(v -> e.waiter().woken());
        }
      }
    }
  }

  /**
   * The relay is stopping (issue 12 item 1): every waiting pull answers its page now, on its own event loop, and a
   * pull that asks to wait from now on is answered at once. Safe on any thread; the waits are not held until the end
   * of the stop's grace period.
   *
   * @return the pulls that were waiting
   */
  public int release() {
    released = true;
    int n = 0;
    for (Set<Entry> set : byTarget.values()) {
      for (Entry e : set) {
        n++;
        e.context().runOnContext(v -> e.waiter().released());
      }
    }
    return n;
  }

  /** Pulls waiting now (a gauge). */
  public int waiting() {
    return waiting.get();
  }
}
