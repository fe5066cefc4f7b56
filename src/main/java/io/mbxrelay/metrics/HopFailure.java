package io.mbxrelay.metrics;

import java.util.Locale;

/**
 * Bounded reason class of a signed hop that did not verify (docs/protocol.md §2), the {@code reason} label of
 * {@link RelayMetrics#HOP_FAILURES}. Counted where a hop is required (the 401 path), not for the optional hop of
 * {@code info}.
 */
public enum HopFailure {
  /** {@code x-mbx-ts} or {@code x-mbx-sig} missing, or neither {@code x-mbx-key} nor {@code x-mbx-host}. */
  MISSING_HEADERS,
  /** {@code x-mbx-ts} does not parse. */
  BAD_TS,
  /** {@code x-mbx-ts} outside the hop window. */
  STALE,
  /** No live enrolment for the key or name. */
  UNKNOWN_KEY,
  /** The signature does not verify with the enrolled key(s). */
  BAD_SIGNATURE,
  /** The v1 name is carried by more live enrolments than {@code limits.maxPerName}. */
  CROWDED_NAME,
  /** The enrolment lookup on the read pool failed. */
  LOOKUP_FAILED;

  /** The label value: lower-case enum name. */
  public String label() {
    return name().toLowerCase(Locale.ROOT);
  }
}
