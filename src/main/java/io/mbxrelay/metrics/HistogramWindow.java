package io.mbxrelay.metrics;

import io.micrometer.core.instrument.distribution.CountAtBucket;
import io.micrometer.core.instrument.distribution.HistogramSnapshot;
import io.micrometer.core.instrument.distribution.HistogramSupport;
import java.util.ArrayDeque;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

/**
 * A quantile over the recent past of a timer that publishes a percentile histogram, estimated the way Prometheus'
 * {@code histogram_quantile(q, rate(x_bucket[window]))} does: the difference of the cumulative bucket counts between
 * now and a sample taken about {@code window} ago, with linear interpolation inside the bucket that holds the rank.
 * The Prometheus registry's histograms count since start, so a quantile read straight from them would describe the
 * whole uptime; this one describes the last few minutes.
 *
 * <p>Nothing is added to the path that records into the timer: {@link #sample()} takes a histogram snapshot (what
 * a scrape does) and is called from a timer every {@code window / (samples - 1)}.
 *
 * <p>Threading: safe on any thread (methods are synchronized; snapshots are Micrometer's and thread-safe).
 */
public final class HistogramWindow {
  private final HistogramSupport histogram;
  private final long windowNanos;
  private final LongSupplier nanoTime;
  private final ArrayDeque<Sample> samples = new ArrayDeque<>();

  private record Sample(long atNanos, double[] bucketsSeconds, double[] cumulative, long count) {}

  /**
   * An estimate over the recent window.
   *
   * @param seconds the quantile, seconds; NaN when nothing was recorded within the window
   * @param count values recorded within the window
   * @param windowSeconds the window actually covered, seconds (shorter than asked for until the relay has run that
   *     long)
   */
  public record Estimate(double seconds, long count, double windowSeconds) {}

  /**
   * @param histogram a timer built with {@code publishPercentileHistogram()} (cumulative buckets)
   * @param windowMs how far back the estimate reaches, ms
   * @param nanoTime monotonic time, ns (tests inject one)
   */
  public HistogramWindow(HistogramSupport histogram, long windowMs, LongSupplier nanoTime) {
    this.histogram = Objects.requireNonNull(histogram);
    this.nanoTime = Objects.requireNonNull(nanoTime);
    if (windowMs < 1) {
      throw new IllegalArgumentException("windowMs must be positive");
    }
    this.windowNanos = TimeUnit.MILLISECONDS.toNanos(windowMs);
    sample();
  }

  /** Takes a sample now and forgets those that the next-older sample already covers for the window. */
  public synchronized void sample() {
    Sample now = take();
    samples.addLast(now);
    // keep the newest sample that is at least a window old as the base; drop the ones before it
    while (samples.size() > 2) {
      var it = samples.iterator();
      it.next();
      Sample second = it.next();
      if (now.atNanos() - second.atNanos() >= windowNanos) {
        samples.removeFirst();
      } else {
        break;
      }
    }
  }

  /**
   * The quantile over the values recorded since the oldest kept sample (about a window ago).
   *
   * @param q the quantile, 0..1 (0.99 for p99)
   * @return the estimate
   */
  public synchronized Estimate quantile(double q) {
    if (!(q >= 0 && q <= 1)) {
      throw new IllegalArgumentException("q must be within 0..1");
    }
    Sample end = take();
    Sample start = samples.peekFirst();
    double window = (end.atNanos() - start.atNanos()) / 1e9;
    long count = end.count() - start.count();
    if (count <= 0 || end.cumulative().length != start.cumulative().length) {
      return new Estimate(Double.NaN, Math.max(0, count), window);
    }
    double rank = q * count;
    double lowerBound = 0;
    double lowerCount = 0;
    for (int i = 0; i < end.cumulative().length; i++) {
      double upperBound = end.bucketsSeconds()[i];
      double upperCount = end.cumulative()[i] - start.cumulative()[i];
      if (upperCount >= rank && upperCount > lowerCount) {
        double fraction = (rank - lowerCount) / (upperCount - lowerCount);
        return new Estimate(lowerBound + (upperBound - lowerBound) * fraction, count, window);
      }
      lowerBound = upperBound;
      lowerCount = upperCount;
    }
    // the rank lies above the highest bucket (the +Inf bucket): like histogram_quantile, answer the highest bound
    return new Estimate(lowerBound, count, window);
  }

  private Sample take() {
    long at = nanoTime.getAsLong();
    HistogramSnapshot s = histogram.takeSnapshot();
    CountAtBucket[] buckets = s.histogramCounts();
    double[] bounds = new double[buckets.length];
    double[] counts = new double[buckets.length];
    for (int i = 0; i < buckets.length; i++) {
      bounds[i] = buckets[i].bucket(TimeUnit.SECONDS);
      counts[i] = buckets[i].count();
    }
    return new Sample(at, bounds, counts, s.count());
  }
}
