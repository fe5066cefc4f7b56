package io.mbxrelay.store.model;

/** The stored outcome of a rotation record (docs/protocol.md §4.4). */
public sealed interface RotateOutcome {
  /**
   * Applied.
   *
   * @param moved queued items re-sequenced under the new key ({@code {moved:n}})
   */
  record Moved(int moved) implements RotateOutcome {}

  /** The old key is not a live enrolment: 404 {@code the rotated key is not enrolled here}. */
  record NotEnrolled() implements RotateOutcome {}

  /** {@code rec.host} differs from the old enrolment's name: 400 BAD_ROTATION {@code rotation names another host}. */
  record NamesAnotherHost() implements RotateOutcome {}

  /**
   * The new key was revoked (in any of its spellings) or is on the deny list (issue 11 item 3): 409 {@code the new
   * key was revoked here}.
   */
  record NewKeyRevoked() implements RotateOutcome {}
}
