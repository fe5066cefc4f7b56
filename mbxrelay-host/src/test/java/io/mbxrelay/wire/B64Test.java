package io.mbxrelay.wire;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

class B64Test {

  private static byte[] dec(String s) {
    return B64.decodeLenient(s).orElseThrow();
  }

  @Test
  void encode_is_standard_base64_with_padding() {
    assertThat(B64.encode(new byte[] {(byte) 0xfb, (byte) 0xff})).isEqualTo("+/8=");
    assertThat(B64.base64UrlNoPad(new byte[] {(byte) 0xfb, (byte) 0xff})).isEqualTo("-_8");
    assertThat(B64.base64UrlNoPad(new byte[16])).hasSize(22);
  }

  @Test
  void lenient_decode_accepts_unpadded_and_url_safe_input() {
    assertThat(dec("+/8=")).containsExactly(0xfb, 0xff);
    assertThat(dec("+/8")).containsExactly(0xfb, 0xff);
    assertThat(dec("-_8")).containsExactly(0xfb, 0xff);
    assertThat(dec("-/8")).containsExactly(0xfb, 0xff);
    assertThat(dec("aGVsbG8")).isEqualTo("hello".getBytes(StandardCharsets.US_ASCII));
  }

  @Test
  void lenient_decode_skips_junk_and_stops_at_the_first_padding_character() {
    assertThat(dec("aG Vs\nbG8*")).isEqualTo("hello".getBytes(StandardCharsets.US_ASCII));
    assertThat(dec("aGk=aGk=")).isEqualTo("hi".getBytes(StandardCharsets.US_ASCII));
    assertThat(dec("")).isEmpty();
    assertThat(dec("a")).isEmpty();
    assertThat(dec("!!!")).isEmpty();
    assertThat(B64.decodeLenient(null)).isEmpty();
  }

  @Test
  void lenient_decode_reads_characters_above_latin1_by_their_low_byte_as_node_does() {
    assertThat(dec("QUJ\u0141")).containsExactly(0x41, 0x42, 0x40); // U+0141 acts as 'A' (0x41)
    assertThat(dec("QUJD\u00c1")).containsExactly(0x41, 0x42, 0x43); // U+00C1 is skipped
  }

  @Test
  void the_std_check_is_the_wire_regex_and_ignores_length_modulo_four() {
    assertThat(B64.isStdB64("eyJ2IjozfQ==")).isTrue();
    assertThat(B64.isStdB64("abc")).isTrue();
    assertThat(B64.isStdB64("abc===")).isFalse();
    assertThat(B64.isStdB64("")).isFalse();
    assertThat(B64.isStdB64("ab-_")).isFalse();
    assertThat(B64.isStdB64("ab\n")).isFalse();
    assertThat(B64.isStdB64(null)).isFalse();
  }

  @Test
  void is_pubkey_needs_44_std_characters_that_decode_to_32_bytes() {
    String key = B64.encode(new byte[32]);
    assertThat(B64.isPubkey(key)).isTrue();
    assertThat(B64.isPubkey(key.substring(0, 43))).isFalse();
    assertThat(B64.isPubkey(B64.encode(new byte[33]))).isFalse(); // 44 chars, 33 bytes
    assertThat(B64.isPubkey("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA==")).isFalse(); // 44 chars, 31 bytes
    assertThat(B64.isPubkey(key.replace('A', '-'))).isFalse();
    assertThat(B64.isPubkey(null)).isFalse();
  }

  @Test
  void sha256_hex_is_lower_case_and_64_digits() {
    assertThat(Hashes.sha256Hex("abc".getBytes(StandardCharsets.US_ASCII)))
        .isEqualTo("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  }
}
