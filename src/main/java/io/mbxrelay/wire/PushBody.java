package io.mbxrelay.wire;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * The body of {@code POST /v2/relay/items} read once into typed items ({@code docs/protocol.md §3} "Push v2"): each
 * item's {@code item_id}, {@code kind} and targets as JS would read them from {@code JSON.parse(body)} — a member that
 * is absent or not a string reads as absent, an item that is not an object has no members — with each target's
 * {@code wire_b64} kept as received until the checks ask for it ({@link WireText}).
 *
 * <p>Two readers give the same result. The common body, as every client writes it (ASCII, no escapes, each member at
 * most once, no members beyond the protocol's), is read straight from the bytes, and its base64 is decoded from them
 * without building strings (issue 18: the Jackson tree of a 200-item push and its 3 KB base64 strings cost about 15 µs
 * per item). Anything else — escapes, non-ASCII, duplicate or unknown members, other value types, invalid JSON — falls
 * back to the Jackson tree with the semantics of {@link Json#parse(byte[])} (duplicate keys: last wins).
 *
 * <p>Stateless and thread-safe; the result refers to the body's array, which must not change.
 */
public final class PushBody {

  /** One target of an item: {@code host_pubkey} as sent ({@code ""} when absent or not a string) and its wire text. */
  public record Target(String keyAsSent, WireText wire) {}

  /**
   * One pushed item.
   *
   * @param itemId {@code item_id} when it is a string, else null
   * @param kind {@code kind} when it is a string, else null
   * @param targets {@code targets} when it is an array (its elements in order), else null
   */
  public record Item(String itemId, String kind, List<Target> targets) {}

  /** What the body is. */
  public sealed interface Result permits Items, NotJson, NotObject {}

  /**
   * A body that is JSON: its {@code items} when that is an array, else null (answered 400 {@code batch must be an array
   * of at most N}, as a list over the limit is).
   */
  public record Items(List<Item> items) implements Result {}

  /** Not valid JSON (400 {@code request body is not valid JSON}). */
  public record NotJson() implements Result {}

  /** JSON {@code null} (400 {@code request body must be a JSON object}). */
  public record NotObject() implements Result {}

  /**
   * A {@code wire_b64} string as received: either a range of the body's bytes (ASCII, no escapes) or a decoded string.
   * Checked and decoded only when the item's earlier checks pass.
   */
  public static final class WireText {
    private final byte[] bytes;
    private final int off;
    private final int len;
    private final String text;

    private WireText(byte[] bytes, int off, int len, String text) {
      this.bytes = bytes;
      this.off = off;
      this.len = len;
      this.text = text;
    }

    /** The wire text of a string value; null for a member that is absent or not a string. */
    static WireText of(String text) {
      return text == null ? null : new WireText(null, 0, 0, text);
    }

    /**
     * The wire's base64 check then Node's lenient decoding ({@code docs/protocol.md §1} "wire_b64").
     *
     * @return the decoded wire bytes, or empty when the text fails {@code ^[A-Za-z0-9+/]+={0,2}$}
     */
    public Optional<byte[]> decode() {
      if (text != null) {
        return B64.isStdB64(text) ? B64.decodeLenient(text) : Optional.empty();
      }
      if (len > 0 && (len & 3) == 0) {
        // The JDK's decoder checks and decodes at once (intrinsified): it accepts only the standard alphabet with at
        // most two '=' at the end, a subset of what the wire's check accepts, and decodes that as Node does.
        try {
          return Optional.of(B64.decodeStd(bytes, off, len));
        } catch (IllegalArgumentException e) {
          // not plain padded base64: the wire's own check decides
        }
      }
      return B64.isStdB64(bytes, off, len) ? Optional.of(B64.decodeLenient(bytes, off, len)) : Optional.empty();
    }
  }

  private PushBody() {}

  /**
   * Reads a push body.
   *
   * @param body the body bytes as received (not null)
   * @return the items, or why the body is not one
   */
  public static Result parse(byte[] body) {
    List<Item> fast = new Reader(body).body();
    if (fast != null) {
      return new Items(fast);
    }
    JsonNode n;
    try {
      n = Json.parse(body);
    } catch (IllegalArgumentException e) {
      return new NotJson();
    }
    if (n == null || n.isNull()) {
      return new NotObject();
    }
    return new Items(fromTree(n.isObject() ? n.get("items") : null));
  }

  /** Whether the direct reader reads this body itself (tests: the fast path is taken, not only equivalent). */
  static boolean directlyReadable(byte[] body) {
    return new Reader(body).body() != null;
  }

  /** The typed items of a parsed {@code items} member, as JS reads them (null when it is not an array). */
  static List<Item> fromTree(JsonNode items) {
    if (items == null || !items.isArray()) {
      return null;
    }
    List<Item> out = new ArrayList<>(items.size());
    for (JsonNode item : items) {
      JsonNode targets = item.get("targets");
      List<Target> list = null;
      if (targets != null && targets.isArray()) {
        list = new ArrayList<>(targets.size());
        for (JsonNode t : targets) {
          list.add(new Target(text(t.get("host_pubkey"), ""), WireText.of(text(t.get("wire_b64"), null))));
        }
      }
      out.add(new Item(text(item.get("item_id"), null), text(item.get("kind"), null), list));
    }
    return out;
  }

  private static String text(JsonNode n, String otherwise) {
    return n != null && n.isTextual() ? n.textValue() : otherwise;
  }

  /**
   * The direct reader of the common body: {@code {"items":[{...}]}} with JSON whitespace anywhere between tokens.
   * Every method returns null (or -1) for anything it does not read itself, and the tree reader takes over.
   */
  private static final class Reader {
    private final byte[] b;
    private int i;
    /** Start and end of the last string read. */
    private int strStart;
    private int strEnd;

    Reader(byte[] b) {
      this.b = b;
    }

    List<Item> body() {
      ws();
      if (!eat('{')) {
        return null;
      }
      ws();
      if (!key("items")) {
        return null;
      }
      ws();
      if (!eat('[')) {
        return null;
      }
      List<Item> items = new ArrayList<>();
      ws();
      if (!eat(']')) {
        do {
          ws();
          Item item = item();
          if (item == null) {
            return null;
          }
          items.add(item);
          ws();
        } while (eat(','));
        if (!eat(']')) {
          return null;
        }
      }
      ws();
      if (!eat('}')) {
        return null;
      }
      ws();
      return i == b.length ? items : null;
    }

    private Item item() {
      if (!eat('{')) {
        return null;
      }
      String id = null;
      String kind = null;
      List<Target> targets = null;
      ws();
      if (eat('}')) {
        return new Item(null, null, null);
      }
      do {
        ws();
        if (!string()) {
          return null;
        }
        int ks = strStart;
        int ke = strEnd;
        ws();
        if (!eat(':')) {
          return null;
        }
        ws();
        if (is(ks, ke, "item_id") && id == null) {
          if (!string()) {
            return null;
          }
          id = ascii(strStart, strEnd);
        } else if (is(ks, ke, "kind") && kind == null) {
          if (!string()) {
            return null;
          }
          kind = ascii(strStart, strEnd);
        } else if (is(ks, ke, "targets") && targets == null) {
          targets = targets();
          if (targets == null) {
            return null;
          }
        } else {
          return null; // a duplicate or another member
        }
        ws();
      } while (eat(','));
      return eat('}') ? new Item(id, kind, targets) : null;
    }

    private List<Target> targets() {
      if (!eat('[')) {
        return null;
      }
      List<Target> out = new ArrayList<>(1);
      ws();
      if (eat(']')) {
        return out;
      }
      do {
        ws();
        Target t = target();
        if (t == null) {
          return null;
        }
        out.add(t);
        ws();
      } while (eat(','));
      return eat(']') ? out : null;
    }

    private Target target() {
      if (!eat('{')) {
        return null;
      }
      String key = null;
      WireText wire = null;
      ws();
      if (eat('}')) {
        return new Target("", null);
      }
      do {
        ws();
        if (!string()) {
          return null;
        }
        int ks = strStart;
        int ke = strEnd;
        ws();
        if (!eat(':')) {
          return null;
        }
        ws();
        if (!string()) {
          return null;
        }
        if (is(ks, ke, "host_pubkey") && key == null) {
          key = ascii(strStart, strEnd);
        } else if (is(ks, ke, "wire_b64") && wire == null) {
          wire = new WireText(b, strStart, strEnd - strStart, null);
        } else {
          return null;
        }
        ws();
      } while (eat(','));
      return eat('}') ? new Target(key == null ? "" : key, wire) : null;
    }

    /** Reads {@code "name"} then {@code :}. */
    private boolean key(String name) {
      if (!string() || !is(strStart, strEnd, name)) {
        return false;
      }
      ws();
      return eat(':');
    }

    /** A string of printable ASCII without escapes; its content is {@code [strStart, strEnd)}. */
    private boolean string() {
      if (!eat('"')) {
        return false;
      }
      int start = i;
      int end = AsciiScan.endOfPlainString(b, start, b.length);
      if (end == b.length || b[end] != '"') {
        return false; // an escape, a control, non-ASCII, or no closing quote
      }
      strStart = start;
      strEnd = end;
      i = end + 1;
      return true;
    }

    private boolean is(int start, int end, String name) {
      if (end - start != name.length()) {
        return false;
      }
      for (int k = 0; k < name.length(); k++) {
        if (b[start + k] != name.charAt(k)) {
          return false;
        }
      }
      return true;
    }

    private String ascii(int start, int end) {
      return new String(b, start, end - start, StandardCharsets.ISO_8859_1);
    }

    private boolean eat(char c) {
      if (i < b.length && b[i] == c) {
        i++;
        return true;
      }
      return false;
    }

    private void ws() {
      while (i < b.length) {
        byte c = b[i];
        if (c != ' ' && c != '\n' && c != '\r' && c != '\t') {
          return;
        }
        i++;
      }
    }
  }
}
