package io.mbxrelay.metrics;

import java.util.Locale;

/**
 * Bounded reason class of a rejected push item, the {@code reason} label of {@link RelayMetrics#ITEMS_REJECTED}. The
 * wire texts (docs/protocol.md §3 push v2, "rejected:&lt;why&gt;") carry host names and free text, so they never become label
 * values; {@link #classify(String)} maps each text to one of these fixed classes.
 */
public enum RejectReason {
  /** {@code rate}: the sender's push window is exhausted. */
  RATE,
  /** {@code bad item id}, {@code bad kind}, {@code bad targets}. */
  BAD_ITEM,
  /** {@code bad wire}: not base64 or not UTF-8 JSON. */
  BAD_WIRE,
  /** {@code target not enrolled}. */
  NOT_ENROLLED,
  /** {@code sender not accepted by target}. */
  SENDER_NOT_ACCEPTED,
  /** {@code duplicate target}. */
  DUPLICATE_TARGET,
  /** {@code item over size limit}. */
  SIZE,
  /** {@code bad envelope: …}, {@code item id is not the envelope id}, {@code envelope body is not sealed}. */
  ENVELOPE,
  /** {@code bad receipt}, {@code item id is not the receipt id}, {@code receipt is not signed by the sending host}. */
  RECEIPT,
  /** {@code conflict}: same item id, different bytes. */
  CONFLICT,
  /** {@code quota:…}. */
  QUOTA,
  /** Any text not listed above (a new reason added without a class here). */
  OTHER;

  /** The label value: lower-case enum name, e.g. {@code not_enrolled}. */
  public String label() {
    return name().toLowerCase(Locale.ROOT);
  }

  /**
   * Maps a reject text (what follows {@code rejected:}) to its class. Pure; safe on any thread.
   *
   * @param why the reject text, may be null
   * @return its class, {@link #OTHER} when unknown
   */
  public static RejectReason classify(String why) {
    if (why == null) {
      return OTHER;
    }
    switch (why) {
      case "rate":
        return RATE;
      case "bad item id":
      case "bad kind":
      case "bad targets":
        return BAD_ITEM;
      case "bad wire":
        return BAD_WIRE;
      case "target not enrolled":
        return NOT_ENROLLED;
      case "sender not accepted by target":
        return SENDER_NOT_ACCEPTED;
      case "duplicate target":
        return DUPLICATE_TARGET;
      case "item over size limit":
        return SIZE;
      case "item id is not the envelope id":
      case "envelope body is not sealed":
        return ENVELOPE;
      case "bad receipt":
      case "item id is not the receipt id":
      case "receipt is not signed by the sending host":
        return RECEIPT;
      case "conflict":
        return CONFLICT;
      default:
        if (why.startsWith("bad envelope")) {
          return ENVELOPE;
        }
        if (why.startsWith("quota:")) {
          return QUOTA;
        }
        return OTHER;
    }
  }
}
