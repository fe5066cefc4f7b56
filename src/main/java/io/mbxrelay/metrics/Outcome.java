package io.mbxrelay.metrics;

import java.util.Locale;

/**
 * Bounded {@code outcome} label values of the counters that have several ends: acks, enrolments, JWKS refreshes and
 * writer transaction failures. Each meter documents which of these it uses.
 */
public enum Outcome {
  /** Ack stored, enrolment stored, JWKS refreshed. */
  OK,
  /** Ack named another epoch (409 EPOCH). */
  EPOCH_CHANGED,
  /** Ack beyond the head seq (400 BAD_ACK). */
  BAD_ACK,
  /** Enrolment refused: relay capacity reached. */
  FULL,
  /** Enrolment refused: the key was revoked. */
  REVOKED,
  /** Enrolment refused: the name is taken in the account. */
  NAME_TAKEN,
  /** Enrolment refused by the enrolment authority. */
  DENIED,
  /** JWKS refresh failed. */
  FAILED,
  /** Writer transaction failed: I/O, disk full, busy or read-only (503). */
  UNAVAILABLE,
  /** Writer transaction failed: corruption (fail-stop). */
  CORRUPT,
  /** Writer transaction failed: a bug (500). */
  INTERNAL;

  /** The label value: lower-case enum name. */
  public String label() {
    return name().toLowerCase(Locale.ROOT);
  }
}
