package io.mbxrelay.auth;

import static org.assertj.core.api.Assertions.assertThat;

import io.mbxrelay.crypto.Ed25519KeyPair;
import io.mbxrelay.wire.KeySpelling;
import org.junit.jupiter.api.Test;

/** Issue 11 items 5 and 6: one challenge per key, returned again; a full table sheds the oldest. */
class ChallengeStoreTest {

  @Test
  void asking_again_returns_the_open_nonce_with_its_original_expiry_in_any_spelling() {
    ChallengeStore s = new ChallengeStore(10, 1000);
    String k = Ed25519KeyPair.generate().publicKeyB64();
    String n = s.issue(k, 0).orElseThrow();
    assertThat(s.issue(k, 500)).contains(n);
    assertThat(s.issue(KeySpelling.spellings(k).get(2), 999)).contains(n);
    assertThat(s.pending(KeySpelling.spellings(k).get(1), 999)).contains(n);
    assertThat(s.pending(k, 1000)).isEmpty();
    String fresh = s.issue(k, 1000).orElseThrow();
    assertThat(fresh).isNotEqualTo(n);
    s.consume(KeySpelling.spellings(k).get(3), fresh);
    assertThat(s.pending(k, 1001)).isEmpty();
    assertThat(s.size()).isZero();
  }

  @Test
  void a_full_table_drops_expired_challenges_first_then_sheds_the_oldest_open_one() {
    ChallengeStore s = new ChallengeStore(3, 1000);
    String[] k = new String[5];
    for (int i = 0; i < k.length; i++) {
      k[i] = Ed25519KeyPair.generate().publicKeyB64();
    }
    s.issue(k[0], 0);
    s.issue(k[1], 600);
    s.issue(k[2], 700);
    assertThat(s.issue(k[3], 1000)).isPresent(); // k0 expired at 1000: dropped, nothing shed
    assertThat(s.shed()).isZero();
    assertThat(s.issue(k[4], 1001)).isPresent(); // full of open ones: the oldest (k1) is shed
    assertThat(s.shed()).isEqualTo(1);
    assertThat(s.pending(k[1], 1001)).isEmpty();
    assertThat(s.pending(k[2], 1001)).isPresent();
    assertThat(s.pending(k[4], 1001)).isPresent();
    assertThat(s.size()).isEqualTo(3);
  }

  @Test
  void an_answered_challenge_is_consumed_once_through_the_asynchronous_view() {
    Challenges c = Challenges.inMemory(new ChallengeStore(10, 1000));
    String k = Ed25519KeyPair.generate().publicKeyB64();
    String n = c.issue(k, 0).result().orElseThrow();
    assertThat(c.pending(k, 1).result()).contains(n);
    assertThat(c.consume(k, n).result()).isTrue();
    assertThat(c.consume(k, n).result()).as("a second answer of one challenge").isFalse();
    assertThat(c.pending(k, 2).result()).isEmpty();
  }
}
