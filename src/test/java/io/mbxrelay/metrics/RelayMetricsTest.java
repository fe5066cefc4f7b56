package io.mbxrelay.metrics;

import static org.assertj.core.api.Assertions.assertThat;

import io.mbxrelay.config.ConfigLoader;
import io.mbxrelay.store.StoreException;
import io.mbxrelay.testing.Scrape;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The meters whose callers other components own (expiry sweep, JWKS refresh, replay cache) and the reject-text
 * classification, exercised directly.
 */
class RelayMetricsTest {
  private static RelayMetrics metrics() throws Exception {
    return new RelayMetrics(new PrometheusMeterRegistry(PrometheusConfig.DEFAULT), ConfigLoader.load(null, Map.of()));
  }

  @Test
  void a_sweep_run_moves_runs_expired_notices_and_the_last_run_time() throws Exception {
    try (RelayMetrics m = metrics()) {
      long before = System.currentTimeMillis() / 1000;
      m.sweepRun(5, 3, 2);
      m.sweepRun(1, 0, 1);
      Scrape s = Scrape.parse(m.scrape());
      assertThat(s.value("mbxrelay_sweep_runs_total")).isEqualTo(2);
      assertThat(s.value("mbxrelay_sweep_items_expired_total")).isEqualTo(6);
      assertThat(s.value("mbxrelay_sweep_notices_enqueued_total")).isEqualTo(3);
      assertThat(s.value("mbxrelay_sweep_notices_skipped_total")).isEqualTo(3);
      assertThat(s.value("mbxrelay_sweep_last_run_timestamp_seconds")).isGreaterThanOrEqualTo(before);
      assertThat(s.value("mbxrelay_sweep_interval_seconds")).isEqualTo(600);
    }
  }

  @Test
  void jwks_and_replay_cache_gauges_read_zero_until_bound_then_their_supplier() throws Exception {
    try (RelayMetrics m = metrics()) {
      Scrape s = Scrape.parse(m.scrape());
      assertThat(s.value("mbxrelay_jwks_age_seconds")).isZero();
      assertThat(s.value("mbxrelay_replay_cache_size")).isZero();
      m.bindJwksAge(() -> 42.5);
      m.bindReplayCache(() -> 7);
      m.jwksRefresh(true);
      m.jwksRefresh(false);
      m.jwksRefresh(false);
      s = Scrape.parse(m.scrape());
      assertThat(s.value("mbxrelay_jwks_age_seconds")).isEqualTo(42.5);
      assertThat(s.value("mbxrelay_replay_cache_size")).isEqualTo(7);
      assertThat(s.value("mbxrelay_jwks_refreshes_total", "outcome=\"ok\"")).isEqualTo(1);
      assertThat(s.value("mbxrelay_jwks_refreshes_total", "outcome=\"failed\"")).isEqualTo(2);
    }
  }

  @Test
  void build_info_and_the_store_file_gauges_read_the_version_and_the_real_file_sizes(@TempDir Path dir)
      throws Exception {
    try (RelayMetrics m = metrics()) {
      Path db = dir.resolve("relay.db");
      Files.write(db, new byte[12_288]);
      m.buildInfo("1.2.3-test");
      m.bindStoreFiles(db);
      Scrape s = Scrape.parse(m.scrape());
      assertThat(s.value("mbxrelay_build_info", "version=\"1.2.3-test\"")).isEqualTo(1);
      assertThat(s.value("mbxrelay_ed25519_engine_info",
          "engine=\"" + io.mbxrelay.crypto.Ed25519Engine.inUse().kind().label() + "\"")).isEqualTo(1);
      assertThat(m.scrape()).as("one engine series").containsOnlyOnce("mbxrelay_ed25519_engine_info{");
      assertThat(s.value("mbxrelay_store_file_bytes")).isEqualTo(12_288);
      assertThat(s.value("mbxrelay_store_wal_bytes")).as("no WAL yet").isZero();
      Files.write(dir.resolve("relay.db-wal"), new byte[4_128]);
      assertThat(Scrape.parse(m.scrape()).value("mbxrelay_store_wal_bytes")).isEqualTo(4_128);
    }
  }

  @Test
  void recent_sweeps_keep_the_last_ten_newest_first_and_the_last_jwks_refresh_its_outcome() throws Exception {
    try (RelayMetrics m = metrics()) {
      assertThat(m.recentSweeps()).isEmpty();
      assertThat(m.lastJwksRefresh()).isNull();
      long before = System.currentTimeMillis();
      for (int i = 1; i <= 12; i++) {
        m.sweepRun(i, 2L * i, 3L * i);
      }
      List<RelayMetrics.SweepRecord> sweeps = m.recentSweeps();
      assertThat(sweeps).hasSize(RelayMetrics.RECENT_SWEEPS);
      assertThat(sweeps.get(0).itemsExpired()).isEqualTo(12);
      assertThat(sweeps.get(0).noticesEnqueued()).isEqualTo(24);
      assertThat(sweeps.get(0).noticesSkipped()).isEqualTo(36);
      assertThat(sweeps.get(9).itemsExpired()).isEqualTo(3);
      assertThat(sweeps.get(0).atMs()).isGreaterThanOrEqualTo(before);
      m.jwksRefresh(true);
      m.jwksRefresh(false);
      assertThat(m.lastJwksRefresh().ok()).isFalse();
      assertThat(m.lastJwksRefresh().atMs()).isGreaterThanOrEqualTo(before);
    }
  }

  @Test
  void a_corrupt_or_internal_transaction_failure_is_counted_by_kind() throws Exception {
    try (RelayMetrics m = metrics()) {
      m.writerTransaction(3, 1_000_000, StoreException.Kind.CORRUPT);
      m.writerTransaction(1, 1_000_000, StoreException.Kind.INTERNAL);
      m.writerTransaction(2, 1_000_000, null);
      Scrape s = Scrape.parse(m.scrape());
      assertThat(s.value("mbxrelay_writer_commit_failures_total", "kind=\"corrupt\"")).isEqualTo(1);
      assertThat(s.value("mbxrelay_writer_commit_failures_total", "kind=\"internal\"")).isEqualTo(1);
      assertThat(s.value("mbxrelay_writer_transaction_seconds_count")).isEqualTo(3);
      assertThat(s.value("mbxrelay_writer_transaction_commands_sum")).isEqualTo(6);
    }
  }

  @Test
  void every_reject_text_maps_to_its_bounded_class() {
    Map<String, RejectReason> expected = Map.of("rate", RejectReason.RATE, "bad kind", RejectReason.BAD_ITEM,
        "bad targets", RejectReason.BAD_ITEM, "sender not accepted by target", RejectReason.SENDER_NOT_ACCEPTED,
        "item id is not the envelope id", RejectReason.ENVELOPE, "envelope body is not sealed", RejectReason.ENVELOPE,
        "item id is not the receipt id", RejectReason.RECEIPT, "receipt is not signed by the sending host",
        RejectReason.RECEIPT, "quota:owner queue bytes exceeded for some-host", RejectReason.QUOTA,
        "bad envelope: no body", RejectReason.ENVELOPE);
    expected.forEach((text, cls) -> assertThat(RejectReason.of(io.mbxrelay.store.model.RejectReason.parse(text).reason()))
        .as(text).isEqualTo(cls));
    for (io.mbxrelay.store.model.RejectReason r : io.mbxrelay.store.model.RejectReason.values()) {
      assertThat(RejectReason.of(r)).as(r.name()).isNotEqualTo(RejectReason.OTHER);
    }
  }
}
