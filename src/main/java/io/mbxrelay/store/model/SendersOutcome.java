package io.mbxrelay.store.model;

/** The stored outcome of a sender allowlist (docs/protocol.md §4.3). */
public enum SendersOutcome {
  /** Stored; it replaces any older list. */
  STORED,
  /** A list with the same or a newer {@code iat} is stored: 409 {@code a newer sender list is already stored}. */
  STALE
}
