package io.mbxrelay.bench;

import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.LongAdder;
import org.HdrHistogram.ConcurrentHistogram;
import org.HdrHistogram.Histogram;

/**
 * Counters of one benchmark phase: per request kind ({@link Op}) the latency of successes (2xx only) and of failures in
 * HdrHistograms (µs, 3 significant digits, up to 1 h), successes per wall-clock second, and errors by class with the
 * first sample of each. Failures are never dropped: they are counted by class and their latencies kept apart, so a
 * summary can say both what succeeded and how long the failures took. Thread-safe (event loops record concurrently).
 */
final class BenchStats {
  static final long HIGHEST_US = 3_600_000_000L;
  /** The latency {@link Op#slowSeconds()} counts from: issue 18 goal 5's push bound, 50 ms, in µs. */
  static final long SLOW_US = 50_000;

  /** Errors by class ({@code "push: HTTP 503"}, {@code "pull: timeout"}, …) with a first sample each. */
  final Map<String, LongAdder> errors = new ConcurrentHashMap<>();
  private final Map<String, String> samples = new ConcurrentHashMap<>();
  /** Start of the phase, {@link System#nanoTime()}. */
  final long t0;
  final int seconds;

  BenchStats(long t0, int seconds) {
    this.t0 = t0;
    this.seconds = seconds;
  }

  /** One request kind. */
  final class Op {
    final String name;
    final Histogram ok = new ConcurrentHistogram(HIGHEST_US, 3);
    final Histogram failed = new ConcurrentHistogram(HIGHEST_US, 3);
    /**
     * Latency of the successes from the moment the generator sent them, where {@link #ok} counts from when they were
     * due: the difference is the generator's own lag (its pauses, its share of the cores). Only kinds whose due time
     * and send time differ record it.
     */
    final Histogram okFromSend = new ConcurrentHistogram(HIGHEST_US, 3);
    final AtomicLongArray perSecond = new AtomicLongArray(Math.max(1, seconds));
    /** Successes slower than {@link #SLOW_US}, by the second of the phase they were due in. */
    final AtomicLongArray slowByDueSecond = new AtomicLongArray(Math.max(1, seconds));
    final LongAdder notSent = new LongAdder();

    Op(String name) {
      this.name = name;
    }

    /** A 2xx answer; latency from the scheduled start and from the send, ns. */
    void ok(long latencyNanos, long nowNanos, long sinceSendNanos) {
      okFromSend.recordValue(us(sinceSendNanos));
      ok(latencyNanos, nowNanos);
    }

    /** A 2xx answer; latency from the scheduled start, ns. */
    void ok(long latencyNanos, long nowNanos) {
      ok.recordValue(us(latencyNanos));
      long i = (nowNanos - t0) / 1_000_000_000L;
      if (i >= 0 && i < perSecond.length()) {
        perSecond.incrementAndGet((int) i);
      }
      long due = (nowNanos - latencyNanos - t0) / 1_000_000_000L;
      if (us(latencyNanos) > SLOW_US && due >= 0 && due < slowByDueSecond.length()) {
        slowByDueSecond.incrementAndGet((int) due);
      }
    }

    /**
     * Where the tail sits in time: {@code "N over 50 ms, due in second s: n, …"} for the (at most 6) seconds with the
     * most of them, in time order; empty when none. Tells a start-up transient or one stall from a steady tail.
     */
    String slowSeconds() {
      long total = 0;
      java.util.List<Integer> worst = new java.util.ArrayList<>();
      for (int i = 0; i < slowByDueSecond.length(); i++) {
        total += slowByDueSecond.get(i);
        if (slowByDueSecond.get(i) > 0) {
          worst.add(i);
        }
      }
      if (total == 0) {
        return "";
      }
      int nonZero = worst.size();
      worst.sort((a, b) -> Long.compare(slowByDueSecond.get(b), slowByDueSecond.get(a)));
      worst = new java.util.ArrayList<>(worst.subList(0, Math.min(6, nonZero)));
      java.util.Collections.sort(worst);
      StringBuilder b = new StringBuilder(String.format(Locale.ROOT, "%d over %d ms, due in second", total,
          SLOW_US / 1000));
      for (int i : worst) {
        b.append(' ').append(i).append(": ").append(slowByDueSecond.get(i)).append(',');
      }
      b.setLength(b.length() - 1);
      return b.append(worst.size() < nonZero ? ", …" : "").toString();
    }

    /** A failed request (non-2xx, transport error, rejected item): counted under {@code name + ": " + kind}. */
    void failed(String kind, String sample, long latencyNanos) {
      failed.recordValue(us(latencyNanos));
      error(name + ": " + kind, sample);
    }

    /** A request the generator did not send (its own bound): counted as an error, no latency. */
    void notSent(String kind) {
      notSent.increment();
      error(name + ": not sent, " + kind, "");
    }

    /** Successes per second over the phase. */
    double rate() {
      return ok.getTotalCount() / (double) seconds;
    }

    /** Successes in the slowest whole second of the phase. */
    long slowestSecond() {
      long min = Long.MAX_VALUE;
      for (int i = 0; i < perSecond.length(); i++) {
        min = Math.min(min, perSecond.get(i));
      }
      return min;
    }

    /**
     * {@code "<name>: N ok (R/s, slowest second S); p50 … p99 … p99.9 … max … ms[; F failed, with them p99 … max …]"}.
     */
    String summary() {
      StringBuilder b = new StringBuilder(String.format(Locale.ROOT, "%s: %d ok (%.0f/s, slowest second %d); %s",
          name, ok.getTotalCount(), rate(), slowestSecond(), percentiles(ok)));
      if (failed.getTotalCount() > 0) {
        Histogram all = ok.copy();
        all.add(failed);
        b.append(String.format(Locale.ROOT, "; %d FAILED (took p50 %s ms), all requests: %s", failed.getTotalCount(),
            ms(failed, 50), percentiles(all)));
      }
      if (notSent.sum() > 0) {
        b.append("; ").append(notSent.sum()).append(" NOT SENT (generator bound)");
      }
      return b.toString();
    }
  }

  /** Counts an error of a class with a sample (the first sample of each class is kept, 300 chars). */
  void error(String kind, String sample) {
    errors.computeIfAbsent(kind, k -> new LongAdder()).increment();
    String s = sample == null ? "" : sample.replace('\n', ' ');
    samples.putIfAbsent(kind, s.length() > 300 ? s.substring(0, 300) + "…" : s);
  }

  long errorCount() {
    return errors.values().stream().mapToLong(LongAdder::sum).sum();
  }

  /** {@code "errors: none"} or {@code "errors: N (class = n, …)"}. */
  String errorCounts() {
    if (errors.isEmpty()) {
      return "errors: none";
    }
    StringBuilder b = new StringBuilder("errors: ").append(errorCount()).append(" (");
    boolean first = true;
    for (Map.Entry<String, LongAdder> e : new TreeMap<>(errors).entrySet()) {
      b.append(first ? "" : ", ").append(e.getKey()).append(" = ").append(e.getValue().sum());
      first = false;
    }
    return b.append(')').toString();
  }

  /** {@link #errorCounts()} plus one line per class with its first sample. */
  String errorSummary() {
    StringBuilder b = new StringBuilder(errorCounts());
    for (String k : new TreeMap<>(errors).keySet()) {
      b.append("\n  first ").append(k).append(": ").append(samples.get(k));
    }
    return b.toString();
  }

  /** {@code "p50 x p99 y p99.9 z max w ms"} of a histogram (µs values), or {@code "no samples"}. */
  static String percentiles(Histogram h) {
    if (h.getTotalCount() == 0) {
      return "no samples";
    }
    return "p50 " + ms(h, 50) + " p99 " + ms(h, 99) + " p99.9 " + ms(h, 99.9) + " max "
        + fmt(h.getMaxValue() / 1000.0) + " ms";
  }

  static String ms(Histogram h, double pct) {
    return h.getTotalCount() == 0 ? "n/a" : fmt(h.getValueAtPercentile(pct) / 1000.0);
  }

  /** Milliseconds with 3 significant-ish digits: 0.412, 4.12, 41.2, 412, 4120. */
  static String fmt(double ms) {
    if (ms < 1) {
      return String.format(Locale.ROOT, "%.3f", ms);
    }
    if (ms < 10) {
      return String.format(Locale.ROOT, "%.2f", ms);
    }
    if (ms < 100) {
      return String.format(Locale.ROOT, "%.1f", ms);
    }
    return String.format(Locale.ROOT, "%.0f", ms);
  }

  static long us(long nanos) {
    return Math.min(HIGHEST_US, Math.max(0, nanos / 1000));
  }
}
