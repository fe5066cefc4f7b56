package io.mbxrelay.auth;

import static org.assertj.core.api.Assertions.assertThat;

import io.mbxrelay.testing.MutableClock;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.junit.jupiter.api.Test;

/** Issue 11 item 7: a fetch that never answers cannot hold the cache; time is a {@link MutableClock}. */
class JwksCacheTest {
  /** Lines these tests provoke on purpose (issue 22 item 7): kept out of the build output, asserted where provoked. */
  @org.junit.jupiter.api.extension.RegisterExtension
  static final io.mbxrelay.testing.ExpectedLog LOGS = io.mbxrelay.testing.ExpectedLog.forClass()
      .and("io.mbxrelay.auth.JwksCache", ch.qos.logback.classic.Level.WARN, "jwks fetch failed")
      .and("io.mbxrelay.auth.JwksCache", ch.qos.logback.classic.Level.WARN, "jwks fetch abandoned past its deadline");

  private static final String JWKS = "{\"keys\":[]}";

  @Test
  void a_fetch_that_never_answers_is_abandoned_after_its_deadline_and_the_next_refresh_fetches_again() {
    MutableClock clock = new MutableClock(1_000_000);
    JwksCache cache = new JwksCache(clock, 3_600_000, 60_000);
    List<CompletableFuture<String>> started = new ArrayList<>();
    cache.fetcher(() -> {
      CompletableFuture<String> f = new CompletableFuture<>();
      started.add(f);
      return f;
    }, 5_000);

    CompletionStage<Boolean> first = cache.refresh();
    assertThat(cache.refresh()).as("joined while inside the deadline").isSameAs(first);
    clock.advance(5_000);
    assertThat(cache.refresh()).isSameAs(first);
    assertThat(started).hasSize(1);

    clock.advance(1);
    CompletionStage<Boolean> second = cache.refresh();
    assertThat(second).isNotSameAs(first);
    assertThat(first.toCompletableFuture().getNow(null)).as("waiters of the hung fetch are answered").isFalse();
    assertThat(started).hasSize(2);
    assertThat(cache.abandoned()).isEqualTo(1);

    // the abandoned fetch answering late changes nothing; the live one installs
    started.get(0).complete("{\"keys\":[{\"kty\":\"oct\",\"k\":\"AAAA\",\"kid\":\"late\"}]}");
    assertThat(cache.size()).isZero();
    assertThat(cache.ageSeconds()).isEqualTo(-1);
    started.get(1).complete(JWKS);
    assertThat(second.toCompletableFuture().getNow(null)).isTrue();
    assertThat(cache.ageSeconds()).isZero();
    // and nothing is in flight any more: the next refresh is a new fetch
    cache.refresh();
    assertThat(started).hasSize(3);
    LOGS.assertSeen("jwks fetch abandoned past its deadline"); // issue 22 item 7: the line this test provokes
  }

  @Test
  void a_failed_fetch_clears_the_in_flight_fetch_at_once() {
    MutableClock clock = new MutableClock(0);
    JwksCache cache = new JwksCache(clock, 3_600_000, 60_000);
    int[] calls = {0};
    cache.fetcher(() -> {
      calls[0]++;
      return CompletableFuture.failedFuture(new IllegalStateException("down"));
    }, 5_000);
    assertThat(cache.refresh().toCompletableFuture().getNow(null)).isFalse();
    assertThat(cache.refresh().toCompletableFuture().getNow(null)).isFalse();
    assertThat(calls[0]).isEqualTo(2);
    LOGS.assertSeen("jwks fetch failed"); // issue 22 item 7: the line this test provokes
  }
}
