package io.mbxrelay.crypto;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.mbxrelay.wire.B64;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

class Ed25519Test {

  private static final byte[] MSG = "hello relay".getBytes(StandardCharsets.UTF_8);

  @Test
  void verify_decodes_key_and_signature_leniently_like_node() {
    Ed25519KeyPair k = Ed25519KeyPair.generate();
    byte[] sig = k.sign(MSG);
    String urlSig = Base64.getUrlEncoder().withoutPadding().encodeToString(sig);
    String urlKey = Base64.getUrlEncoder().withoutPadding().encodeToString(k.publicKey());
    assertThat(Ed25519.verify(urlKey, MSG, urlSig)).isTrue();
    assertThat(Ed25519.verify(k.publicKeyB64(), MSG, " " + B64.encode(sig) + "\n")).isTrue();
  }

  @Test
  void verify_never_throws_and_answers_false_for_anything_malformed() {
    Ed25519KeyPair k = Ed25519KeyPair.generate();
    String sig = k.signB64(MSG);
    assertThat(Ed25519.verify(null, MSG, sig)).isFalse();
    assertThat(Ed25519.verify(k.publicKeyB64(), null, sig)).isFalse();
    assertThat(Ed25519.verify(k.publicKeyB64(), MSG, null)).isFalse();
    assertThat(Ed25519.verify("", MSG, sig)).isFalse();
    assertThat(Ed25519.verify(k.publicKeyB64(), MSG, "")).isFalse();
    assertThat(Ed25519.verify(k.publicKeyB64().substring(0, 40), MSG, sig)).isFalse();
    assertThat(Ed25519.verify(k.publicKeyB64(), MSG, sig.substring(0, 80))).isFalse();
    assertThat(Ed25519.verify(B64.encode(new byte[32]), MSG, sig)).isFalse();
    byte[] allOnes = new byte[64];
    java.util.Arrays.fill(allOnes, (byte) 0xff);
    assertThat(Ed25519.verify(k.publicKey(), MSG, allOnes)).isFalse();
    assertThat(Ed25519.verify(new byte[31], MSG, new byte[64])).isFalse();
  }

  @Test
  void a_seed_of_the_wrong_size_is_refused_without_echoing_it() {
    byte[] seed = new byte[31];
    java.util.Arrays.fill(seed, (byte) 0x41);
    assertThatThrownBy(() -> Ed25519KeyPair.fromSeed(seed))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageNotContaining("AAAA")
        .hasMessageNotContaining("41");
    assertThatThrownBy(() -> Ed25519KeyPair.fromSeed(null)).isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void to_string_shows_the_fingerprint_and_no_key_material() {
    Ed25519KeyPair k = Ed25519KeyPair.generate();
    assertThat(k.toString())
        .contains(k.fingerprint())
        .doesNotContain(k.seedB64())
        .doesNotContain(k.publicKeyB64());
  }

  @Test
  void public_key_is_a_defensive_copy_and_the_seed_is_copied_on_creation() {
    byte[] seed = new byte[32];
    Ed25519KeyPair k = Ed25519KeyPair.fromSeed(seed);
    String pub = k.publicKeyB64();
    seed[0] = 9;
    k.publicKey()[0] ^= 1;
    assertThat(k.publicKeyB64()).isEqualTo(pub);
    assertThat(Ed25519.verify(k.publicKey(), MSG, k.sign(MSG))).isTrue();
  }

  @Test
  void one_key_pair_signs_correctly_from_many_threads_at_once() throws Exception {
    Ed25519KeyPair k = Ed25519KeyPair.generate();
    ExecutorService pool = Executors.newFixedThreadPool(8);
    try {
      List<Future<Boolean>> results =
          IntStream.range(0, 400)
              .mapToObj(i -> pool.submit(() -> {
                byte[] m = ("message " + i).getBytes(StandardCharsets.UTF_8);
                return Ed25519.verify(k.publicKey(), m, k.sign(m)) && k.signB64(m).equals(k.signB64(m));
              }))
              .toList();
      for (Future<Boolean> r : results) {
        assertThat(r.get()).isTrue();
      }
    } finally {
      pool.shutdownNow();
    }
  }

  /**
   * The key-text path verifies against a cached decoded point; it must accept exactly what the byte path accepts,
   * including for the small-order points (where cofactorless checks differ between libraries) and random junk keys.
   */
  @Test
  void the_cached_point_path_accepts_exactly_what_the_byte_path_accepts() {
    java.util.HexFormat hex = java.util.HexFormat.of();
    List<String> smallOrder = List.of(
        "0100000000000000000000000000000000000000000000000000000000000000",
        "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
        "0000000000000000000000000000000000000000000000000000000000000000",
        "0000000000000000000000000000000000000000000000000000000000000080",
        "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a",
        "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac03fa",
        "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05",
        "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc85");
    for (String k : smallOrder) {
      byte[] key = hex.parseHex(k);
      for (String r : smallOrder) {
        byte[] sig = new byte[64];
        System.arraycopy(hex.parseHex(r), 0, sig, 0, 32); // R a small-order point, S = 0
        assertThat(Ed25519.verify(B64.encode(key), MSG, B64.encode(sig)))
            .as("key %s R %s", k, r).isEqualTo(Ed25519.verify(key, MSG, sig));
      }
    }
    java.util.Random random = new java.util.Random(7);
    for (int i = 0; i < 2000; i++) {
      byte[] key = new byte[32];
      byte[] sig = new byte[64];
      random.nextBytes(key);
      random.nextBytes(sig);
      sig[63] &= 0x0f;
      assertThat(Ed25519.verify(B64.encode(key), MSG, B64.encode(sig))).isEqualTo(Ed25519.verify(key, MSG, sig));
    }
    Ed25519KeyPair k = Ed25519KeyPair.generate();
    byte[] sig = k.sign(MSG);
    assertThat(Ed25519.verify(k.publicKeyB64(), MSG, B64.encode(sig))).isTrue(); // twice: once decoded, once cached
    assertThat(Ed25519.verify(k.publicKeyB64(), MSG, B64.encode(sig))).isTrue();
    assertThat(Ed25519.verify(k.publicKeyB64(), "other".getBytes(StandardCharsets.UTF_8), B64.encode(sig))).isFalse();
  }
}
