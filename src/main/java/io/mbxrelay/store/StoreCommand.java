package io.mbxrelay.store;

import java.util.List;
import java.util.Objects;
import java.util.OptionalLong;

/**
 * A write command for the single writer (STYLE "One writer"). Each command runs inside its own savepoint of a
 * (possibly shared) transaction; its result is handed back only after the transaction committed.
 *
 * @param <R> the result type of the command
 */
public sealed interface StoreCommand<R>
    permits StoreCommand.Push, StoreCommand.Enrol, StoreCommand.Ack, StoreCommand.Heartbeat, StoreCommand.Probe {

  /**
   * Stores one pushed item for all its targets, all or nothing (wire.md §3 push v2, step 5 database checks and step
   * 6; seed 000 §3).
   *
   * @param senderPubkey the authenticated caller's host key
   * @param senderHost the caller's stored host name (kept in {@code items.sender_host})
   * @param kind {@code envelope} or {@code receipt}
   * @param itemId the item id (1..300 UTF-16 units), already validated
   * @param targets the targets in request order
   */
  record Push(String senderPubkey, String senderHost, String kind, String itemId, List<Target> targets)
      implements StoreCommand<PushOutcome> {
    public Push {
      Objects.requireNonNull(senderPubkey);
      Objects.requireNonNull(senderHost);
      Objects.requireNonNull(kind);
      Objects.requireNonNull(itemId);
      targets = List.copyOf(targets);
    }
  }

  /**
   * One target of a {@link Push}.
   *
   * @param hostPubkey the target's key string as sent
   * @param wire decoded wire bytes, or {@code null} when {@code precheckFailure} is set
   * @param wireHash lowercase hex SHA-256 of {@code wire}, or {@code null} with the wire
   * @param precheckFailure the reject reason found by the event loop's checks for this target (duplicate target, bad
   *     wire, size, content), which wire.md orders after the enrolment and allowlist checks, or {@code null}
   */
  record Target(String hostPubkey, byte[] wire, String wireHash, String precheckFailure) {
    public Target {
      Objects.requireNonNull(hostPubkey);
    }
  }

  /**
   * Enrols (or re-enrols) a host key after its challenge signature and the authority check (wire.md §4.1).
   *
   * @param hostName label from the request (HOST_RE)
   * @param hostPubkey the key
   * @param ownerFp unproven owner claim
   * @param account proven account or {@code null}
   * @param authorizedBy authority name or {@code null}
   */
  record Enrol(String hostName, String hostPubkey, String ownerFp, String account, String authorizedBy)
      implements StoreCommand<EnrolOutcome> {}

  /**
   * Transport ack of a target's items (wire.md §3 ack v2).
   *
   * @param targetPubkey the authenticated caller
   * @param epoch the epoch the caller names ({@code ""} when absent)
   * @param through {@code floor(Number(through))} when that is a safe integer, else empty
   */
  record Ack(String targetPubkey, String epoch, OptionalLong through) implements StoreCommand<AckOutcome> {}

  /**
   * Writes {@code meta.heartbeat} = now (wire.md §5 "Epoch / heartbeat").
   */
  record Heartbeat() implements StoreCommand<Long> {}

  /**
   * A probe transaction for readiness: takes the write lock, rewrites one meta row with its own value (so the store
   * must accept a page write) and commits. Result {@code true} when the row was written.
   */
  record Probe() implements StoreCommand<Boolean> {}
}
