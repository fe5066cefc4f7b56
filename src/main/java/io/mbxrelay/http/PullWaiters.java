package io.mbxrelay.http;

import io.vertx.core.Context;
import java.util.Arrays;
import java.util.Collection;
import java.util.Map;
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
 * <p>Cheap per waiting host (issue 18 goal 4): a wait is one small entry in a per-target array, with its deadline in
 * it; there is no timer per wait. One periodic {@link #sweep(long)} (every {@link #SWEEP_MS} ms, started by the
 * composition root) ends the waits whose deadline passed, so a wait answers up to {@link #SWEEP_MS} ms after its
 * {@code wait=} seconds.
 *
 * <p>Threading: {@link #wake}, {@link #sweep} and {@link #release} are safe on any thread; a waiter's callbacks run on
 * its event loop.
 */
public final class PullWaiters implements io.mbxrelay.writer.ItemsCommitted {
  /** Most pulls one host may hold open at once (a host runs one receive loop). */
  public static final int MAX_PER_TARGET = 4;

  /** Interval of the deadline sweep, ms: how late at most a wait that saw no item is answered. */
  public static final long SWEEP_MS = 200;

  /** One waiting pull. */
  public interface Waiter {
    /** Called on the waiter's event loop when an item for its target was committed (it stays registered). */
    void woken();

    /**
     * Called on the waiter's event loop when its deadline passed ({@link #sweep}); it is no longer registered: read the
     * page once more and answer whatever it holds.
     */
    void expired();

    /**
     * Called on the waiter's event loop when the relay stops ({@link #release()}): read the page once more and
     * answer it now, whatever it holds (normally the empty page), instead of waiting on.
     */
    void released();
  }

  private record Entry(Waiter waiter, Context context, long deadlineNanos) {}

  private static final Entry[] NONE = new Entry[0];

  /** Target → its waits (1..{@link #MAX_PER_TARGET}), copied on write; an absent key means none. */
  private final Map<String, Entry[]> byTarget = new ConcurrentHashMap<>();
  private final AtomicInteger waiting = new AtomicInteger();
  private final int maxWaiting;
  private volatile boolean released;

  /** @param maxWaiting most pulls waiting at once over all targets */
  public PullWaiters(int maxWaiting) {
    this.maxWaiting = maxWaiting;
  }

  /**
   * Registers a waiting pull until {@code deadlineNanos}, then {@link Waiter#expired()} (unless cancelled first).
   *
   * @param target the host whose items it waits for
   * @param context the event loop to call it on
   * @param deadlineNanos when the wait ends, {@link System#nanoTime()} scale
   * @param waiter what to call
   * @return true when registered ({@link #cancel} it when it answers or its connection closes); false when a bound is
   *     reached or the relay is stopping (answer at once)
   */
  public boolean register(String target, Context context, long deadlineNanos, Waiter waiter) {
    if (released) {
      return false; // the relay is stopping: answer at once
    }
    if (waiting.incrementAndGet() > maxWaiting) {
      waiting.decrementAndGet();
      return false;
    }
    Entry e = new Entry(waiter, context, deadlineNanos);
    boolean[] added = {false};
    byTarget.compute(target, (k, arr) -> {
      Entry[] a = arr == null ? NONE : arr;
      if (a.length >= MAX_PER_TARGET) {
        return arr;
      }
      Entry[] b = Arrays.copyOf(a, a.length + 1);
      b[a.length] = e;
      added[0] = true;
      return b;
    });
    if (!added[0]) {
      waiting.decrementAndGet();
    }
    return added[0];
  }

  /**
   * Ends a wait (answered, or its connection closed); nothing when it is no longer registered.
   *
   * @param target as registered
   * @param waiter as registered
   */
  public void cancel(String target, Waiter waiter) {
    boolean[] removed = {false};
    byTarget.computeIfPresent(target, (k, arr) -> {
      Entry[] b = without(arr, waiter, Long.MIN_VALUE);
      removed[0] = b.length < arr.length;
      return b.length == 0 ? null : b;
    });
    if (removed[0]) {
      waiting.decrementAndGet();
    }
  }

  /** {@code arr} without the entries of {@code waiter} (if not null) and those whose deadline is before {@code now}. */
  private static Entry[] without(Entry[] arr, Waiter waiter, long now) {
    int keep = 0;
    for (Entry e : arr) {
      if (e.waiter() != waiter && e.deadlineNanos() - now >= 0) {
        keep++;
      }
    }
    if (keep == arr.length) {
      return arr;
    }
    Entry[] b = new Entry[keep];
    int i = 0;
    for (Entry e : arr) {
      if (e.waiter() != waiter && e.deadlineNanos() - now >= 0) {
        b[i++] = e;
      }
    }
    return b;
  }

  /** The writer's signal ({@link io.mbxrelay.writer.ItemsCommitted}): wakes the waiters of these targets. */
  @Override
  public void itemsCommitted(java.util.Map<String, Long> heads) {
    wake(heads.keySet());
  }

  /**
   * Wakes every pull waiting for one of the targets (called by the writer after COMMIT, before replies).
   *
   * @param targets hosts that received items in the committed transaction
   */
  public void wake(Collection<String> targets) {
    for (String target : targets) {
      Entry[] arr = byTarget.get(target);
      if (arr != null) {
        for (Entry e : arr) {
          e.context().runOnContext(v -> e.waiter().woken());
        }
      }
    }
  }

  /**
   * Ends every wait whose deadline passed: it is unregistered here and {@link Waiter#expired()} runs on its event loop.
   * Called every {@link #SWEEP_MS} ms by one periodic timer for the whole relay; safe on any thread.
   *
   * @param nowNanos {@link System#nanoTime()}
   * @return the waits ended
   */
  public int sweep(long nowNanos) {
    int ended = 0;
    for (Map.Entry<String, Entry[]> me : byTarget.entrySet()) {
      boolean due = false;
      for (Entry e : me.getValue()) {
        due |= e.deadlineNanos() - nowNanos < 0;
      }
      if (!due) {
        continue;
      }
      Entry[][] gone = {NONE};
      byTarget.computeIfPresent(me.getKey(), (k, arr) -> {
        Entry[] b = without(arr, null, nowNanos);
        if (b.length < arr.length) {
          Entry[] g = new Entry[arr.length - b.length];
          int i = 0;
          for (Entry e : arr) {
            if (e.deadlineNanos() - nowNanos < 0) {
              g[i++] = e;
            }
          }
          gone[0] = g;
        }
        return b.length == 0 ? null : b;
      });
      for (Entry e : gone[0]) {
        waiting.decrementAndGet();
        ended++;
        e.context().runOnContext(v -> e.waiter().expired());
      }
    }
    return ended;
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
    for (Entry[] arr : byTarget.values()) {
      for (Entry e : arr) {
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
