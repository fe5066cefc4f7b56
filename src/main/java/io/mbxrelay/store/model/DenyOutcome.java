package io.mbxrelay.store.model;

/**
 * The outcome of adding a deny-list entry (docs/protocol.md §7.8 "Revocation").
 *
 * @param added false when the entry already existed (the call is idempotent)
 * @param revoked live enrolments revoked by this call
 */
public record DenyOutcome(boolean added, int revoked) {}
