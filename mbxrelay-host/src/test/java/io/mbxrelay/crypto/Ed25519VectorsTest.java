package io.mbxrelay.crypto;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.mbxrelay.wire.B64;
import io.mbxrelay.wire.CanonicalJson;
import io.mbxrelay.wire.Json;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Every key and signature vector of {@code vectors.json} (independent JS implementation, @noble/curves). */
class Ed25519VectorsTest {

  private static JsonNode vectors;

  @BeforeAll
  static void load() throws Exception {
    try (InputStream in = Ed25519VectorsTest.class.getResourceAsStream("/vectors.json")) {
      vectors = Json.parse(new String(in.readAllBytes(), StandardCharsets.UTF_8));
    }
  }

  private static Ed25519KeyPair key(int n) {
    return Ed25519KeyPair.fromSeed(B64.decodeLenient(vectors.get("keys").get(n - 1).get("seed_b64").textValue()).orElseThrow());
  }

  @Test
  void keys_from_seeds_give_the_public_keys_and_fingerprints() {
    assertThat(vectors.get("keys").size()).isEqualTo(3);
    for (JsonNode k : vectors.get("keys")) {
      Ed25519KeyPair pair = Ed25519KeyPair.fromSeed(B64.decodeLenient(k.get("seed_b64").textValue()).orElseThrow());
      assertThat(pair.publicKeyB64()).isEqualTo(k.get("public_b64").textValue());
      assertThat(pair.seedB64()).isEqualTo(k.get("seed_b64").textValue());
      assertThat(pair.fingerprint()).isEqualTo(k.get("fingerprint").textValue());
      assertThat(Fingerprint.ofB64(k.get("public_b64").textValue())).isEqualTo(k.get("fingerprint").textValue());
    }
  }

  @Test
  void hop_texts_are_reproduced_from_method_path_query_ts_and_body() {
    int hops = 0;
    for (JsonNode v : vectors.get("signatures")) {
      if (!v.get("what").textValue().startsWith("hop:")) {
        continue;
      }
      hops++;
      JsonNode parsed = Json.parse(v.get("signed_text").textValue());
      String method = parsed.get("method").textValue();
      String pathAndQuery = parsed.get("path").textValue();
      int q = pathAndQuery.indexOf('?');
      String rawPath = q < 0 ? pathAndQuery : pathAndQuery.substring(0, q);
      String rawQuery = q < 0 ? null : pathAndQuery.substring(q + 1);
      String rawBody = v.has("raw_body") ? v.get("raw_body").textValue() : "";
      String signed = HopText.signedText(method, HopText.signedPath(rawPath, rawQuery), parsed.get("ts").textValue(), rawBody);
      assertThat(signed).isEqualTo(v.get("signed_text").textValue());
    }
    assertThat(hops).isEqualTo(3);
  }

  @Test
  void records_canonicalize_to_the_signed_texts() {
    for (JsonNode v : vectors.get("signatures")) {
      if (v.has("record")) {
        assertThat(CanonicalJson.canonicalize(v.get("record"))).isEqualTo(v.get("signed_text").textValue());
      }
    }
  }

  @Test
  void signing_with_the_given_seed_yields_exactly_the_given_signature_and_it_verifies() {
    for (JsonNode v : vectors.get("signatures")) {
      String what = v.get("what").textValue();
      Ed25519KeyPair signer = what.contains("key 2") ? key(2) : key(1);
      byte[] text = v.get("signed_text").textValue().getBytes(StandardCharsets.UTF_8);
      String sig = v.get("signature").textValue();
      assertThat(signer.signB64(text)).as(what).isEqualTo(sig);
      assertThat(sig).hasSize(88);
      assertThat(Ed25519.verify(signer.publicKeyB64(), text, sig)).as(what).isTrue();
      assertThat(Ed25519.verify(key(3).publicKeyB64(), text, sig)).as(what).isFalse();
    }
  }

  @Test
  void verification_fails_after_one_flipped_bit_in_message_signature_or_key() {
    for (JsonNode v : vectors.get("signatures")) {
      Ed25519KeyPair signer = v.get("what").textValue().contains("key 2") ? key(2) : key(1);
      byte[] text = v.get("signed_text").textValue().getBytes(StandardCharsets.UTF_8);
      byte[] sig = B64.decodeLenient(v.get("signature").textValue()).orElseThrow();
      byte[] pub = signer.publicKey();
      for (int bit : new int[] {0, 7, 100}) {
        byte[] m = text.clone();
        m[bit / 8 % m.length] ^= (byte) (1 << (bit % 8));
        assertThat(Ed25519.verify(pub, m, sig)).isFalse();
      }
      for (int bit : new int[] {0, 255, 256, 511}) {
        byte[] s = sig.clone();
        s[bit / 8] ^= (byte) (1 << (bit % 8));
        assertThat(Ed25519.verify(pub, text, s)).isFalse();
        assertThat(Ed25519.verify(signer.publicKeyB64(), text, B64.encode(s))).isFalse();
      }
      byte[] p = pub.clone();
      p[3] ^= 1;
      assertThat(Ed25519.verify(p, text, sig)).isFalse();
    }
  }
}
