package io.mbxrelay.host;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.mbxrelay.wire.B64;
import io.mbxrelay.wire.IsoTime;
import io.mbxrelay.wire.Json;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.util.Optional;

/**
 * <b>Demo only — not encryption.</b> Builds a v3 envelope that passes the relay's shape check (docs/protocol.md §4.9) and its
 * "sealed" rule ({@code enc} present), for trying a relay from the command line ({@code mbxrelay host push
 * --demo-text}). The {@code enc.body} is the plain UTF-8 text in base64, {@code epk} and {@code nonce} are zero bytes,
 * and the subject says so; anyone, including the relay, can read it. Real hosts seal the body for the recipient's
 * X25519 key. Stateless and thread-safe.
 */
public final class DemoEnvelope {

  /** The subject that marks a demo envelope. */
  public static final String SUBJECT = "mbxrelay demo, not encrypted";

  private static final SecureRandom RANDOM = new SecureRandom();
  private static final char[] CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ".toCharArray();

  private DemoEnvelope() {}

  /**
   * A new ULID (48-bit ms timestamp + 80 random bits, Crockford base32, 26 characters; matches the envelope id rule
   * {@code ^[0-9A-HJKMNP-TV-Z]{26}$}).
   *
   * @param nowMs the timestamp part, ms since the epoch
   * @return the id
   */
  public static String newUlid(long nowMs) {
    char[] c = new char[26];
    long t = nowMs;
    for (int i = 9; i >= 0; i--) {
      c[i] = CROCKFORD[(int) (t & 31)];
      t >>>= 5;
    }
    for (int i = 10; i < 26; i++) {
      c[i] = CROCKFORD[RANDOM.nextInt(32)];
    }
    return new String(c);
  }

  /**
   * The demo envelope's wire bytes (compact JSON, UTF-8).
   *
   * @param id the envelope id (a ULID; it is also the item id)
   * @param from sender address, {@code name@host}
   * @param to recipient address, {@code name@host}
   * @param text the demo text (its UTF-8 bytes base64-encoded must stay under 349,548 bytes)
   * @param nowMs envelope {@code ts}, ms since the epoch
   * @return the wire bytes
   */
  public static byte[] wire(String id, String from, String to, String text, long nowMs) {
    ObjectNode e = Json.MAPPER.createObjectNode();
    e.put("v", 3).put("id", id).put("ts", IsoTime.format(nowMs)).put("from", from);
    e.putArray("to").add(to);
    e.put("thread", id).putNull("reply_to");
    e.put("kind", "message").put("subject", SUBJECT).put("body", "").put("needs_reply", false);
    e.putArray("refs");
    ObjectNode meta = e.putObject("meta");
    meta.putArray("mentions");
    meta.putArray("directives");
    meta.putArray("tags");
    meta.putArray("task_refs");
    e.putNull("authority");
    e.putObject("enc").put("v", 1).put("alg", "x25519+xchacha20poly1305").put("epk", B64.encode(new byte[32]))
        .put("nonce", B64.encode(new byte[24])).put("body", B64.encode(text.getBytes(StandardCharsets.UTF_8)));
    return Json.stringify(e).getBytes(StandardCharsets.UTF_8);
  }

  /**
   * Reads the text back from a demo envelope.
   *
   * @param wire wire bytes of any item
   * @return the text when the bytes are a demo envelope (subject {@link #SUBJECT}), else empty
   */
  public static Optional<String> text(byte[] wire) {
    try {
      JsonNode e = Json.parse(new String(wire, StandardCharsets.UTF_8));
      if (!SUBJECT.equals(e.path("subject").asText(null))) {
        return Optional.empty();
      }
      return B64.decodeLenient(e.path("enc").path("body").asText(""))
          .map(b -> new String(b, StandardCharsets.UTF_8));
    } catch (IllegalArgumentException e) {
      return Optional.empty();
    }
  }
}
