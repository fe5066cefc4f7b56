package io.mbxrelay.store.postgres;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Set;

/**
 * The {@code mbx_items} notification channel that wakes long-poll pulls held on other instances (issue 20 item 8;
 * docs/scale-out.md "What is shared"). A writer transaction that stored items sends, inside the transaction (so
 * PostgreSQL delivers it only at COMMIT), one or more notifications naming the targets that received items; every
 * instance's listener ({@link PgStore}) wakes its own waiting pulls of those targets.
 *
 * <p>Payload: {@code <instance id> SP <target>[,<target>…]}, at most {@link #MAX_PAYLOAD} bytes (PostgreSQL refuses
 * 8,000 or more); a transaction with more targets sends several. Targets are base64 public keys (ASCII, no comma or
 * space). The instance id lets the sender skip its own notifications (its waiters were woken by its writer already).
 *
 * <p>A notification lost with the listener's connection is not replayed: a pull it would have woken answers at its
 * wait's end (at most the {@code wait} it asked for), as before this channel existed. Stateless and thread-safe.
 */
final class PgItemsChannel {
  /** The channel name. */
  static final String CHANNEL = "mbx_items";
  /** Most bytes of one payload (PostgreSQL's limit is 8,000 bytes exclusive). */
  static final int MAX_PAYLOAD = 7_900;

  private PgItemsChannel() {}

  /**
   * The payloads announcing that these targets received items.
   *
   * @param instanceId the sending instance's id (ASCII, no space)
   * @param targets target public keys, base64
   * @return one payload per chunk of targets, each at most {@link #MAX_PAYLOAD} bytes; empty when there are no targets
   */
  static List<String> payloads(String instanceId, Collection<String> targets) {
    List<String> out = new ArrayList<>();
    StringBuilder b = null;
    for (String t : targets) {
      if (b != null && b.length() + 1 + t.length() > MAX_PAYLOAD) {
        out.add(b.toString());
        b = null;
      }
      if (b == null) {
        b = new StringBuilder(Math.min(MAX_PAYLOAD, 64 + targets.size() * 45)).append(instanceId).append(' ').append(t);
      } else {
        b.append(',').append(t);
      }
    }
    if (b != null) {
      out.add(b.toString());
    }
    return out;
  }

  /**
   * The targets a payload names, unless it came from this instance.
   *
   * @param payload a notification payload of {@link #CHANNEL}
   * @param ownInstanceId this instance's id
   * @return the targets, or an empty set for this instance's own or a malformed payload
   */
  static Set<String> targets(String payload, String ownInstanceId) {
    int sp = payload == null ? -1 : payload.indexOf(' ');
    if (sp <= 0 || sp == payload.length() - 1 || payload.regionMatches(0, ownInstanceId, 0, sp)
        && sp == ownInstanceId.length()) {
      return Set.of();
    }
    return Set.of(payload.substring(sp + 1).split(","));
  }
}
