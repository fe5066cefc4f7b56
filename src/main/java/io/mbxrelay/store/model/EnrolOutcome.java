package io.mbxrelay.store.model;

/** The stored outcome of an enrolment (docs/protocol.md §4.1). */
public enum EnrolOutcome {
  /** Enrolled or re-enrolled. */
  OK,
  /** A new key while the live-enrolment cap is reached: 503 FULL. */
  FULL,
  /** The key was revoked: 403 REVOKED; revocation is permanent. */
  REVOKED,
  /** Another live key of the same proven account carries the name: 409 NAME_TAKEN. */
  NAME_TAKEN,
  /** The key's fingerprint or the token's client id is on the deny list: 403 DENIED (docs/protocol.md §7.8). */
  DENIED
}
