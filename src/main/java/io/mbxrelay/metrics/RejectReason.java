package io.mbxrelay.metrics;

import java.util.Locale;

/**
 * Bounded reason class of a rejected push item, the {@code reason} label of {@link RelayMetrics#ITEMS_REJECTED}. The
 * wire texts (docs/protocol.md §3 push v2, "rejected:&lt;why&gt;") carry host names and free text, so they never become label
 * values; each typed reason ({@link io.mbxrelay.store.model.RejectReason}) names one of these fixed classes ({@link #of}).
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
  /** No reason names it today; kept so the series exists for dashboards that sum every class. */
  OTHER;

  /** The label value: lower-case enum name, e.g. {@code not_enrolled}. */
  public String label() {
    return name().toLowerCase(Locale.ROOT);
  }

  /**
   * The class of a typed reject reason (its {@link io.mbxrelay.store.model.RejectReason#metricLabel()}). Pure; safe on any
   * thread.
   *
   * @param reason the ledger's or the edge's reason
   * @return its class
   */
  public static RejectReason of(io.mbxrelay.store.model.RejectReason reason) {
    return valueOf(reason.metricLabel().toUpperCase(Locale.ROOT));
  }
}
