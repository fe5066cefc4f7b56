package io.mbxrelay.wire;

import static org.assertj.core.api.Assertions.assertThat;

import io.mbxrelay.crypto.Ed25519KeyPair;
import java.util.HashSet;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Issue 11 item 4: each 32-byte key has 4 valid base64 spellings; they are one key. */
class KeySpellingTest {

  @Test
  void every_key_has_four_spellings_that_pass_the_pubkey_check_and_decode_to_the_same_bytes() {
    for (int n = 0; n < 50; n++) {
      String pub = Ed25519KeyPair.generate().publicKeyB64();
      List<String> all = KeySpelling.spellings(pub);
      assertThat(all).hasSize(4).first().isEqualTo(pub);
      assertThat(new HashSet<>(all)).hasSize(4);
      for (String s : all) {
        assertThat(B64.isPubkey(s)).isTrue();
        assertThat(B64.decodeLenient(s).orElseThrow()).isEqualTo(B64.decodeLenient(pub).orElseThrow());
        assertThat(KeySpelling.canonical(s)).contains(pub);
        assertThat(KeySpelling.same(s, pub)).isTrue();
        assertThat(KeySpelling.spellings(s)).isEqualTo(all);
      }
    }
  }

  @Test
  void invalid_key_fields_have_no_canonical_spelling_and_are_never_the_same_key() {
    String pub = Ed25519KeyPair.generate().publicKeyB64();
    assertThat(KeySpelling.canonical(null)).isEmpty();
    assertThat(KeySpelling.canonical("AAAA")).isEmpty();
    assertThat(KeySpelling.canonical(pub.replace('+', '-').replace('/', '_'))).isEqualTo(
        pub.contains("+") || pub.contains("/") ? java.util.Optional.empty() : java.util.Optional.of(pub));
    assertThat(KeySpelling.same(null, null)).isFalse();
    assertThat(KeySpelling.same("AAAA", "AAAA")).isFalse();
    assertThat(KeySpelling.same(pub, Ed25519KeyPair.generate().publicKeyB64())).isFalse();
    assertThat(KeySpelling.canonicalOrSelf("junk")).isEqualTo("junk");
    assertThat(KeySpelling.spellings("junk")).containsExactly("junk");
  }
}
