package io.mbxrelay.store;

import io.mbxrelay.store.model.Enrolment;
import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The in-memory enrolment table holds live rows only (review finding: every rotation left a revoked row in memory for
 * good, and every deny re-read scanned them all).
 */
class EnrolmentCacheTest {
  private static Enrolment row(String key, String name, String revokedAt) {
    return new Enrolment(key, name, "", null, null, "2026-11-30T00:00:00.000Z", revokedAt);
  }

  @Test
  void a_revoked_row_takes_the_key_out_and_rotations_leave_nothing_behind() {
    EnrolmentCache cache = new EnrolmentCache();
    for (int i = 0; i < 1000; i++) { // a host rotating 1000 times: each old key is revoked, the new one live
      cache.put(row("k" + i, "Alpha", null));
      if (i > 0) {
        cache.put(row("k" + (i - 1), "Alpha", "2026-11-30T00:00:01.000Z"));
      }
    }
    assertThat(cache.liveCount()).isEqualTo(1);
    assertThat(cache.get("k998")).isEmpty();
    assertThat(cache.get("k999")).map(Enrolment::hostName).contains("Alpha");
    assertThat(cache.liveByName("alpha", 10)).extracting(Enrolment::hostPubkey).containsExactly("k999");
  }

  @Test
  void a_full_reload_keeps_only_live_rows() {
    EnrolmentCache cache = new EnrolmentCache();
    cache.put(row("gone", "beta", null));
    cache.replaceAll(List.of(row("a", "alpha", null), row("r", "alpha", "2026-11-30T00:00:01.000Z")));
    assertThat(cache.liveCount()).isEqualTo(1);
    assertThat(cache.get("r")).isEmpty();
    assertThat(cache.get("gone")).isEmpty();
    assertThat(cache.liveByName("ALPHA", 10)).extracting(Enrolment::hostPubkey).containsExactly("a");
  }
}
