package io.mbxrelay.store.model;

import java.util.Objects;

/**
 * Why one pushed item was refused (docs/protocol.md §3, answered {@code rejected:<text>}): each reason carries
 * its exact wire text, and {@link #metricLabel()} its bounded class for the {@code mbxrelay_items_rejected_total}
 * metric (host names and free text never become label values).
 */
public enum RejectReason {
  /** The sender's push window is exhausted. */
  RATE("rate", "rate"),
  BAD_ITEM_ID("bad item id", "bad_item"),
  BAD_KIND("bad kind", "bad_item"),
  BAD_TARGETS("bad targets", "bad_item"),
  /** Not base64 or not UTF-8 JSON. */
  BAD_WIRE("bad wire", "bad_wire"),
  /** The target is not a live enrolment. */
  NOT_ENROLLED("target not enrolled", "not_enrolled"),
  /** The target's allowlist does not name the sender. */
  SENDER_NOT_ACCEPTED("sender not accepted by target", "sender_not_accepted"),
  DUPLICATE_TARGET("duplicate target", "duplicate_target"),
  SIZE("item over size limit", "size"),
  /** Detail: {@code ": "} and the shape problem. */
  BAD_ENVELOPE("bad envelope", "envelope"),
  ENVELOPE_ID_MISMATCH("item id is not the envelope id", "envelope"),
  NOT_SEALED("envelope body is not sealed", "envelope"),
  BAD_RECEIPT("bad receipt", "receipt"),
  RECEIPT_ID_MISMATCH("item id is not the receipt id", "receipt"),
  RECEIPT_NOT_SIGNED("receipt is not signed by the sending host", "receipt"),
  /** Same item id, different bytes. */
  CONFLICT("conflict", "conflict"),
  /** Detail: which quota, e.g. {@code queue depth exceeded for alpha} (docs/protocol.md §3 "Quota messages"). */
  QUOTA("quota:", "quota");

  private final String text;
  private final String label;

  RejectReason(String text, String label) {
    this.text = text;
    this.label = label;
  }

  /** The wire text, or its fixed prefix for reasons with a detail ({@link #BAD_ENVELOPE}, {@link #QUOTA}). */
  public String text() {
    return text;
  }

  /** The metric label class (e.g. {@code not_enrolled}). */
  public String metricLabel() {
    return label;
  }

  /**
   * The text after {@code rejected:}.
   *
   * @param detail the detail, or null
   * @return {@link #text()} followed by the detail
   */
  public String wireText(String detail) {
    return detail == null ? text : text + detail;
  }

  /**
   * The reason and detail of a wire text (the inverse of {@link #wireText}), for texts produced by the checks.
   *
   * @param wireText the text after {@code rejected:}
   * @return the rejection
   * @throws IllegalArgumentException when no reason produces the text
   */
  public static Rejection parse(String wireText) {
    Objects.requireNonNull(wireText);
    for (RejectReason r : values()) {
      if (r.text.equals(wireText)) {
        return new Rejection(r, null);
      }
    }
    if (wireText.startsWith(QUOTA.text)) {
      return new Rejection(QUOTA, wireText.substring(QUOTA.text.length()));
    }
    if (wireText.startsWith(BAD_ENVELOPE.text)) {
      return new Rejection(BAD_ENVELOPE, wireText.substring(BAD_ENVELOPE.text.length()));
    }
    throw new IllegalArgumentException("not a reject text: " + wireText);
  }

  /**
   * A reason with its detail.
   *
   * @param reason the reason
   * @param detail text after the reason's text, or null
   */
  public record Rejection(RejectReason reason, String detail) {
    public Rejection {
      Objects.requireNonNull(reason);
    }

    /** The text after {@code rejected:}. */
    public String wireText() {
      return reason.wireText(detail);
    }
  }
}
