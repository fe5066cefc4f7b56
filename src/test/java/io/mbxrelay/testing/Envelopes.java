package io.mbxrelay.testing;

import io.mbxrelay.wire.B64;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;

/** Sealed test envelopes that pass the docs/protocol.md §4.9 shape check. The relay never looks inside the ciphertext. */
public final class Envelopes {
  private static final SecureRandom RANDOM = new SecureRandom();
  private static final char[] CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ".toCharArray();

  private Envelopes() {}

  /** A fresh ULID-shaped id. */
  public static String newId() {
    char[] c = new char[26];
    c[0] = '0';
    for (int i = 1; i < 26; i++) {
      c[i] = CROCKFORD[RANDOM.nextInt(32)];
    }
    return new String(c);
  }

  /** A sealed envelope with a ciphertext body of about {@code bodyBytes}, compact JSON. */
  public static byte[] sealed(String id, int bodyBytes) {
    byte[] ct = new byte[Math.max(16, bodyBytes * 3 / 4)];
    RANDOM.nextBytes(ct);
    String body = B64.encode(ct);
    return ("{\"v\":3,\"id\":\"" + id + "\",\"ts\":\"2026-11-29T12:00:00.000Z\",\"from\":\"alice@alpha\","
        + "\"to\":[\"bob@beta\"],\"thread\":\"" + id + "\",\"reply_to\":null,\"kind\":\"message\","
        + "\"subject\":\"\",\"body\":\"\",\"needs_reply\":false,\"refs\":[],"
        + "\"meta\":{\"mentions\":[],\"directives\":[],\"tags\":[],\"task_refs\":[]},\"authority\":null,"
        + "\"enc\":{\"v\":1,\"alg\":\"x25519+xchacha20poly1305\",\"epk\":\"" + B64.encode(new byte[32])
        + "\",\"nonce\":\"" + B64.encode(new byte[24]) + "\",\"body\":\"" + body + "\"}}")
        .getBytes(StandardCharsets.UTF_8);
  }

  /** A small sealed envelope. */
  public static byte[] sealed(String id) {
    return sealed(id, 64);
  }
}
