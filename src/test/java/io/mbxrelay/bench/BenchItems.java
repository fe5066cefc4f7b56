package io.mbxrelay.bench;

import io.mbxrelay.testing.Envelopes;
import io.mbxrelay.wire.B64;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Push bodies for the hosted-relay benchmark: sealed envelopes of the shape {@link Envelopes#sealed(String, int)}
 * builds (the relay checks it, docs/protocol.md §4.9), made cheaply enough for a million items. A few envelopes with random
 * ciphertext are built once by {@code Envelopes}; each item takes one of them with its own id (the relay never looks
 * inside the ciphertext, and dedup is by {@code (sender, item_id, target)}). Ids are ULID-shaped like
 * {@link Envelopes#newId()} but drawn from {@link ThreadLocalRandom} (SecureRandom costs ~25 µs per id). Thread-safe.
 */
final class BenchItems {
  private static final char[] CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ".toCharArray();
  private static final int TEMPLATES = 16;

  /** Per template: the envelope text split around its id (the id occurs as {@code id} and as {@code thread}). */
  private final String[][] parts = new String[TEMPLATES][];
  private final int wireBytes;

  /**
   * @param itemBytes the wanted size of one item's wire bytes (the sealed envelope JSON), bytes; at least ~560
   */
  BenchItems(int itemBytes) {
    String probeId = Envelopes.newId();
    int overhead = Envelopes.sealed(probeId, 16).length - 24; // 16 ciphertext bytes are 24 base64 chars
    int bodyChars = Math.max(24, itemBytes - overhead);
    int size = 0;
    for (int t = 0; t < TEMPLATES; t++) {
      String id = Envelopes.newId();
      String text = new String(Envelopes.sealed(id, bodyChars), StandardCharsets.UTF_8);
      parts[t] = text.split(id, -1);
      size = text.length();
    }
    this.wireBytes = size;
  }

  /** Size of one item's wire bytes (before base64), bytes. */
  int wireBytes() {
    return wireBytes;
  }

  /**
   * A ULID as hosts make them (AgentMBX, and this repository's host library): the 48-bit millisecond timestamp in its
   * first ten characters, then 80 random bits. Ids made in send order sort in send order, so the relay's dedup key
   * (item id first) takes them at one end of its index.
   *
   * <p>Not {@code Ulid.next}: it is synchronized and draws from {@code SecureRandom}, and the prepare step builds a
   * phase's pushes in a parallel stream.
   *
   * @param atMs the timestamp part, ms since the epoch
   * @return 26 Crockford characters
   */
  static String ulidAt(long atMs) {
    ThreadLocalRandom r = ThreadLocalRandom.current();
    char[] c = new char[26];
    long t = atMs;
    for (int i = 9; i >= 0; i--) {
      c[i] = CROCKFORD[(int) (t & 31)];
      t >>>= 5;
    }
    for (int i = 10; i < 26; i++) {
      c[i] = CROCKFORD[r.nextInt(32)];
    }
    return new String(c);
  }

  /**
   * A fresh ULID-shaped item id with no time order (26 Crockford characters, the first {@code 0}, as
   * {@link Envelopes#newId()}): every id lands at a random place in the relay's dedup index, which no host that makes
   * real ULIDs does; {@code bench-hosted pulls --item-ids random} keeps that worst case measurable.
   */
  static String newId() {
    ThreadLocalRandom r = ThreadLocalRandom.current();
    char[] c = new char[26];
    c[0] = '0';
    for (int i = 1; i < 26; i++) {
      c[i] = CROCKFORD[r.nextInt(32)];
    }
    return new String(c);
  }

  /** The wire bytes of a sealed envelope with this id, base64 (the push's {@code wire_b64}). */
  String wireB64(String id) {
    String[] p = parts[ThreadLocalRandom.current().nextInt(TEMPLATES)];
    return B64.encode(String.join(id, p).getBytes(StandardCharsets.UTF_8));
  }

  /** One push target: an item id for one target key. */
  record Target(String itemId, String hostPubkey) {}

  /**
   * A push body {@code {"items":[{kind:"envelope",item_id,targets:[{host_pubkey,wire_b64}]},…]}} (docs/protocol.md §3), one
   * target per item, as UTF-8 bytes.
   */
  byte[] pushBody(List<Target> items) {
    StringBuilder b = new StringBuilder(items.size() * (wireBytes * 4 / 3 + 200) + 16);
    b.append("{\"items\":[");
    for (int i = 0; i < items.size(); i++) {
      Target t = items.get(i);
      b.append(i == 0 ? "" : ",").append("{\"kind\":\"envelope\",\"item_id\":\"").append(t.itemId())
          .append("\",\"targets\":[{\"host_pubkey\":\"").append(t.hostPubkey()).append("\",\"wire_b64\":\"")
          .append(wireB64(t.itemId())).append("\"}]}");
    }
    return b.append("]}").toString().getBytes(StandardCharsets.UTF_8);
  }
}
