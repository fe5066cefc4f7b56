package io.mbxrelay.crypto;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.parallel.Isolated;

/**
 * The bound on the keys {@link Ed25519#verify(String, byte[], String)} keeps decoded (the relay's
 * {@code trust.verifierCacheMaxKeys}).
 */
@Isolated // the cache is process-wide
class Ed25519CacheTest {
  private static final byte[] MSG = "cache".getBytes(StandardCharsets.UTF_8);

  @AfterEach
  void restore() {
    Ed25519.cacheBound(Ed25519.DEFAULT_CACHE_KEYS);
  }

  private static List<Ed25519KeyPair> keys(int n) {
    List<Ed25519KeyPair> keys = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      keys.add(Ed25519KeyPair.generate());
    }
    return keys;
  }

  @Test
  void the_cache_stays_within_its_bound_and_every_verdict_stays_right() {
    Ed25519.cacheBound(16);
    long evicted = Ed25519.evictedKeys();
    List<Ed25519KeyPair> keys = keys(40);
    for (int round = 0; round < 2; round++) {
      for (Ed25519KeyPair k : keys) {
        assertThat(Ed25519.verify(k.publicKeyB64(), MSG, k.signB64(MSG))).isTrue();
        byte[] bad = k.sign(MSG);
        bad[3] ^= 1;
        assertThat(Ed25519.verify(k.publicKeyB64(), MSG, java.util.Base64.getEncoder().encodeToString(bad)))
            .isFalse();
        assertThat(Ed25519.cachedKeys()).isLessThanOrEqualTo(16);
      }
    }
    // 80 lookups of a key; at most 16 keys survive round 1 and at most 16 are held at the end
    assertThat(Ed25519.evictedKeys() - evicted).isGreaterThanOrEqualTo(80 - 2 * 16);
  }

  @Test
  void a_lower_bound_drops_the_excess_at_once_and_zero_keeps_nothing() {
    Ed25519.cacheBound(1000);
    for (Ed25519KeyPair k : keys(50)) {
      assertThat(Ed25519.verify(k.publicKeyB64(), MSG, k.signB64(MSG))).isTrue();
    }
    assertThat(Ed25519.cachedKeys()).isGreaterThanOrEqualTo(50);
    Ed25519.cacheBound(10);
    assertThat(Ed25519.cachedKeys()).isLessThanOrEqualTo(10);
    Ed25519.cacheBound(0);
    assertThat(Ed25519.cachedKeys()).isZero();
    Ed25519KeyPair k = Ed25519KeyPair.generate();
    assertThat(Ed25519.verify(k.publicKeyB64(), MSG, k.signB64(MSG))).isTrue();
    assertThat(Ed25519.cachedKeys()).isZero();
  }
}
