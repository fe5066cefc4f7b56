package io.mbxrelay.crypto;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class FingerprintTest {

  private static final String PUB = "iojj3XQJ8ZX9UtstPLpdcspnCb8dlBIb83SIAbQPb1w=";
  private static final String FP = "3475-0f98-bd59-fcfc";

  @Test
  void the_fingerprint_is_the_first_16_hex_digits_of_sha256_in_groups_of_four() {
    assertThat(Fingerprint.ofB64(PUB)).isEqualTo(FP);
    assertThat(Fingerprint.of(new byte[32])).matches("[0-9a-f]{4}(-[0-9a-f]{4}){3}");
  }

  @Test
  void normalize_accepts_what_an_operator_types_for_relay_set_key() {
    assertThat(Fingerprint.normalize(FP)).contains(FP);
    assertThat(Fingerprint.normalize("3475-0F98-BD59-FCFC")).contains(FP);
    assertThat(Fingerprint.normalize("34750f98bd59fcfc")).contains(FP);
    assertThat(Fingerprint.normalize(" 34750F98BD59FCFC\n")).contains(FP);
    assertThat(Fingerprint.normalize(PUB)).contains(FP);
  }

  @Test
  void normalize_refuses_anything_else() {
    assertThat(Fingerprint.normalize(null)).isEmpty();
    assertThat(Fingerprint.normalize("")).isEmpty();
    assertThat(Fingerprint.normalize("3475-0f98-bd59")).isEmpty();
    assertThat(Fingerprint.normalize("3475-0f98-bd59-fcfg")).isEmpty();
    assertThat(Fingerprint.normalize("34750f98-bd59fcfc")).isEmpty();
    assertThat(Fingerprint.normalize(PUB.substring(0, 43))).isEmpty();
  }
}
