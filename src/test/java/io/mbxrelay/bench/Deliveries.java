package io.mbxrelay.bench;

import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;
import org.HdrHistogram.ConcurrentHistogram;
import org.HdrHistogram.Histogram;

/**
 * Follows each pushed item from its push to the pull answer that carried it: the latency from the push's 200 answer to
 * that pull answer (µs histogram; 0 when the pull answer came first, which is counted), items delivered, duplicates
 * (an item of ours delivered twice) and foreign items (pulled but not pushed by this run, e.g. from a filled store).
 * Only items whose push was answered in the current phase count in its latency and delivered figures. Thread-safe.
 */
final class Deliveries {
  private enum State { SENT, ANSWERED, PULLED }

  /** {@code at}: when the push was answered (ANSWERED) or the pull answer came (PULLED); {@code sent}: push start. */
  private record Mark(State state, long at, long sent) {}

  private final Map<String, Mark> pending = new ConcurrentHashMap<>();
  private final Set<String> delivered = ConcurrentHashMap.newKeySet();

  /** Figures of one phase. */
  static final class Phase {
    final long t0;
    final Histogram latency = new ConcurrentHistogram(BenchStats.HIGHEST_US, 3);
    /** From the push's (scheduled) start to the pull answer: what the sending host waits for. */
    final Histogram fromSend = new ConcurrentHistogram(BenchStats.HIGHEST_US, 3);
    final LongAdder answered = new LongAdder();
    final LongAdder deliveredNow = new LongAdder();
    final LongAdder deliveredEarlier = new LongAdder();
    final LongAdder pulledFirst = new LongAdder();
    final LongAdder duplicates = new LongAdder();
    final LongAdder foreign = new LongAdder();

    Phase(long t0) {
      this.t0 = t0;
    }
  }

  private volatile Phase phase = new Phase(System.nanoTime());

  /** Starts counting a new phase at {@code t0} (nanoTime); items answered before it are "earlier". */
  Phase newPhase(long t0) {
    phase = new Phase(t0);
    return phase;
  }

  /** A push of this item is being sent; {@code due} is its scheduled start (nanoTime). */
  void sent(String id, long due) {
    pending.put(id, new Mark(State.SENT, 0, due));
  }

  /** The push was answered 200 with the item accepted, at {@code now}. */
  void answered(String id, long now) {
    Phase ph = phase;
    if (now - ph.t0 >= 0) {
      ph.answered.increment();
    }
    pending.compute(id, (k, m) -> {
      if (m != null && m.state() == State.PULLED) {
        if (now - ph.t0 >= 0) {
          ph.pulledFirst.increment();
          ph.latency.recordValue(0);
          ph.fromSend.recordValue(BenchStats.us(m.at() - m.sent()));
        }
        return null;
      }
      return new Mark(State.ANSWERED, now, m == null ? now : m.sent());
    });
  }

  /** The push failed: the item may or may not be stored; forget it unless it was already pulled. */
  void failed(String id) {
    pending.computeIfPresent(id, (k, m) -> m.state() == State.SENT ? null : m);
  }

  /** A pull answer carrying this item arrived at {@code now}. */
  void pulled(String id, long now) {
    Phase ph = phase;
    if (!delivered.add(id)) {
      ph.duplicates.increment();
      return;
    }
    Mark m = pending.get(id);
    if (m == null) {
      delivered.remove(id);
      ph.foreign.increment();
      return;
    }
    if (m.state() == State.SENT) {
      // the page beat the push's answer: answered() records 0 latency when the answer comes
      pending.put(id, new Mark(State.PULLED, now, m.sent()));
      ph.deliveredNow.increment();
      return;
    }
    pending.remove(id);
    if (m.at() - ph.t0 < 0) {
      ph.deliveredEarlier.increment();
      return;
    }
    ph.deliveredNow.increment();
    ph.latency.recordValue(BenchStats.us(now - m.at()));
    ph.fromSend.recordValue(BenchStats.us(now - m.sent()));
  }

  /** Items of this phase whose push was answered but which no pull answer carried yet. */
  long undelivered() {
    Phase ph = phase;
    return pending.values().stream().filter(m -> m.state() == State.ANSWERED && m.at() - ph.t0 >= 0).count();
  }

  /**
   * Two lines: delivered, duplicates, foreign, undelivered; then the latency percentiles from the push answer (0 when
   * the pull answer came first) and from the push's scheduled start.
   */
  String summary(String latencyName) {
    Phase ph = phase;
    return String.format(Locale.ROOT, "delivered: %d of %d pushed in the phase (+%d pushed earlier, %d from before the"
            + " run), duplicates %d, not yet pulled %d%n%s: %s (%d pull answers came before their push answer, counted"
            + " 0)%npush start → pull answer: %s",
        ph.deliveredNow.sum(), ph.answered.sum(), ph.deliveredEarlier.sum(), ph.foreign.sum(), ph.duplicates.sum(),
        undelivered(), latencyName, BenchStats.percentiles(ph.latency), ph.pulledFirst.sum(),
        BenchStats.percentiles(ph.fromSend));
  }
}
