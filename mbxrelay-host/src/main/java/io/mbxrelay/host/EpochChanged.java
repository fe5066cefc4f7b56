package io.mbxrelay.host;

/**
 * The relay's epoch differs from the one the caller named (docs/protocol.md §3 pull/ack 409 {@code relay epoch changed: pull
 * again from 0}, or a page whose epoch differs): the caller must pull again from 0 in the new epoch and re-push what
 * it holds accepts for (docs/protocol.md §6 "Epoch change"). Immutable.
 *
 * @param currentEpoch the relay's current epoch (UUID string), or "" when the answer did not name it
 */
public record EpochChanged(String currentEpoch) implements PullResult, AckResult {}
