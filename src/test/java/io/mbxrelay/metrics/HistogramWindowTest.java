package io.mbxrelay.metrics;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import io.micrometer.core.instrument.Timer;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** The recent quantile of a cumulative Prometheus histogram, on an injected clock (no sleeps). */
class HistogramWindowTest {
  private final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
  // the same histogram settings as the writer's COMMIT timer
  private final Timer timer = Timer.builder("t").publishPercentileHistogram()
      .minimumExpectedValue(Duration.ofNanos(100_000)).maximumExpectedValue(Duration.ofSeconds(30)).register(registry);
  private final AtomicLong nanos = new AtomicLong(1_000_000_000L);

  private void advanceSeconds(long s) {
    nanos.addAndGet(TimeUnit.SECONDS.toNanos(s));
  }

  @Test
  void nothing_recorded_in_the_window_gives_no_quantile() {
    HistogramWindow w = new HistogramWindow(timer, 300_000, nanos::get);
    advanceSeconds(10);
    HistogramWindow.Estimate e = w.quantile(0.99);
    assertThat(e.seconds()).isNaN();
    assertThat(e.count()).isZero();
    assertThat(e.windowSeconds()).isEqualTo(10.0);
  }

  @Test
  void the_p99_of_1_to_100_ms_lies_in_the_bucket_that_holds_99_ms_like_histogram_quantile() {
    HistogramWindow w = new HistogramWindow(timer, 300_000, nanos::get);
    for (int i = 1; i <= 100; i++) {
      timer.record(i, TimeUnit.MILLISECONDS);
    }
    HistogramWindow.Estimate e = w.quantile(0.99);
    assertThat(e.count()).isEqualTo(100);
    // the bucket (89.5 ms, 111.8 ms] holds ranks 90..100; histogram_quantile interpolates linearly inside it
    assertThat(e.seconds()).isBetween(0.0894, 0.1119).isCloseTo(0.0995, within(0.015));
    assertThat(w.quantile(0.5).seconds()).isCloseTo(0.050, within(0.006));
  }

  @Test
  void values_older_than_the_window_drop_out_once_newer_samples_cover_it() {
    HistogramWindow w = new HistogramWindow(timer, 60_000, nanos::get);
    for (int i = 0; i < 50; i++) {
      timer.record(5, TimeUnit.SECONDS); // a slow spell long ago
    }
    for (int t = 0; t < 10; t++) { // sampled every 15 s for 150 s
      advanceSeconds(15);
      w.sample();
    }
    for (int i = 0; i < 100; i++) {
      timer.record(2, TimeUnit.MILLISECONDS);
    }
    HistogramWindow.Estimate e = w.quantile(0.99);
    assertThat(e.count()).isEqualTo(100);
    assertThat(e.seconds()).isLessThan(0.003);
    assertThat(e.windowSeconds()).isBetween(60.0, 75.0);
  }

  @Test
  void a_rank_beyond_the_highest_bucket_answers_the_highest_bound() {
    HistogramWindow w = new HistogramWindow(timer, 300_000, nanos::get);
    timer.record(120, TimeUnit.SECONDS);
    assertThat(w.quantile(0.99).seconds()).isEqualTo(30.0);
  }
}
