package io.mbxrelay.store;

import io.mbxrelay.store.model.AckOutcome;
import io.mbxrelay.store.model.DenyOutcome;
import io.mbxrelay.store.model.EnrolOutcome;
import io.mbxrelay.store.model.PushOutcome;
import io.mbxrelay.store.model.RejectReason;
import io.mbxrelay.store.model.RotateOutcome;
import io.mbxrelay.store.model.SendersOutcome;
import io.mbxrelay.store.model.SweepCounts;
import java.util.List;
import java.util.Objects;
import java.util.OptionalLong;

/**
 * A write command for the single writer (docs/architecture.md "One writer"). Each command runs inside its own savepoint of a
 * (possibly shared) transaction; its result is handed back only after the transaction committed.
 *
 * @param <R> the result type of the command
 */
public sealed interface StoreCommand<R>
    permits StoreCommand.Push, StoreCommand.PushBatch, StoreCommand.Enrol, StoreCommand.Ack, StoreCommand.Heartbeat, StoreCommand.Probe,
        StoreCommand.SweepBatch, StoreCommand.PruneDedup, StoreCommand.LogOp,
    // trust commands (issue 3): allowlist, enc-key ads, rotation, deny list
    StoreCommand.PublishSenders, StoreCommand.PublishEncAdV1, StoreCommand.PublishEncAdV2, StoreCommand.Rotate,
    StoreCommand.Deny, StoreCommand.Undeny,
    // v1 compatibility (docs/protocol.md §3 "v1 endpoints")
    StoreCommand.PushV1, StoreCommand.AckV1, StoreCommand.SetAsideDamaged {

  /**
   * How many rows this command may write, for the writer's group-commit bound ({@code store.writerBatchMaxItems}).
   *
   * @return rows (items × targets for pushes, 1 for everything else)
   */
  default int weightRows() {
    return 1;
  }

  /**
   * Runs this command through the handler's method for it (the ledger's dispatch; {@link CommandHandler}).
   *
   * @param handler the handler
   * @return the command's result
   * @throws StoreException as the handler throws
   */
  R applyTo(CommandHandler handler) throws StoreException;

  /**
   * How many wire bytes this command may write, for the writer's group-commit bound
   * ({@code store.writerBatchMaxBytes}).
   *
   * @return bytes (0 for commands that store no wire)
   */
  default long weightBytes() {
    return 0;
  }

  /**
   * The targets whose per-target rows (counter, queue usage, dedup, acked) this command may change, for a backend that
   * locks rows: the ledger locks every target of a batch in one canonical order before the first command runs, so two
   * writers' batches over the same targets cannot deadlock (issue 20 item 3). Writer thread only.
   *
   * @param into receives each target key (duplicates allowed)
   */
  default void lockKeys(java.util.function.Consumer<String> into) {
    // no per-target rows
  }

  /**
   * Stores one pushed item for all its targets, all or nothing (docs/protocol.md §3 push v2, step 5 database checks and step
   * 6; docs/protocol.md §7.3).
   *
   * @param senderPubkey the authenticated caller's host key
   * @param senderHost the caller's stored host name (kept in {@code items.sender_host})
   * @param kind {@code envelope} or {@code receipt}
   * @param itemId the item id (1..300 UTF-16 units), already validated
   * @param targets the targets in request order
   */
  record Push(String senderPubkey, String senderHost, String kind, String itemId, List<Target> targets)
      implements StoreCommand<PushOutcome> {
    @Override
    public PushOutcome applyTo(CommandHandler h) throws StoreException {
      return h.push(this);
    }

    @Override
    public void lockKeys(java.util.function.Consumer<String> into) {
      for (Target t : targets) {
        into.accept(t.hostPubkey());
      }
    }

    public Push {
      Objects.requireNonNull(senderPubkey);
      Objects.requireNonNull(senderHost);
      Objects.requireNonNull(kind);
      Objects.requireNonNull(itemId);
      targets = List.copyOf(targets);
    }

    @Override
    public int weightRows() {
      return targets.size();
    }

    @Override
    public long weightBytes() {
      long n = 0;
      for (Target t : targets) {
        n += t.wire() == null ? 0 : t.wire().length;
      }
      return n;
    }
  }

  /**
   * The items of one push request, all from the same sender, stored in request order in one transaction (docs/protocol.md §3
   * push v2 steps 5–6): each item all or nothing over its targets and independent of the others. The HTTP layer sends
   * one batch per request, so group commit takes whole requests and a request costs one event-bus message.
   *
   * @param items the items needing the store, in request order (each {@link Push} names the same sender)
   */
  record PushBatch(List<Push> items) implements StoreCommand<List<PushOutcome>> {
    @Override
    public List<PushOutcome> applyTo(CommandHandler h) throws StoreException {
      return h.pushBatch(this);
    }

    @Override
    public void lockKeys(java.util.function.Consumer<String> into) {
      for (Push p : items) {
        p.lockKeys(into);
      }
    }

    public PushBatch {
      items = List.copyOf(items);
    }

    @Override
    public int weightRows() {
      int n = 0;
      for (Push p : items) {
        n += p.weightRows();
      }
      return n;
    }

    @Override
    public long weightBytes() {
      long n = 0;
      for (Push p : items) {
        n += p.weightBytes();
      }
      return n;
    }
  }

  /**
   * One target of a {@link Push}.
   *
   * @param hostPubkey the target's key string as sent
   * @param wire decoded wire bytes, or {@code null} when {@code precheckFailure} is set
   * @param wireHash lowercase hex SHA-256 of {@code wire}, or {@code null} with the wire
   * @param precheckFailure the reject reason found by the event loop's checks for this target (duplicate target, bad
   *     wire, size, content), which docs/protocol.md §3 orders after the enrolment and allowlist checks, or {@code null}
   */
  record Target(String hostPubkey, byte[] wire, String wireHash, RejectReason.Rejection precheckFailure) {
    public Target {
      Objects.requireNonNull(hostPubkey);
    }
  }

  /**
   * Enrols (or re-enrols) a host key after its challenge signature and the authority check (docs/protocol.md §4.1).
   *
   * @param hostName label from the request (HOST_RE)
   * @param hostPubkey the key
   * @param ownerFp unproven owner claim
   * @param account proven account or {@code null}
   * @param authorizedBy authority name or {@code null}
   * @param clientId the account token's {@code client_id} (deny list key, docs/protocol.md §7.8), or {@code null}
   * @param org the account token's {@code org}, or {@code null}
   */
  record Enrol(String hostName, String hostPubkey, String ownerFp, String account, String authorizedBy,
      String clientId, String org) implements StoreCommand<EnrolOutcome> {
    @Override
    public EnrolOutcome applyTo(CommandHandler h) throws StoreException {
      return h.enrol(this);
    }

    /** An enrolment without a token client (host-key challenge, tests). */
    public Enrol(String hostName, String hostPubkey, String ownerFp, String account, String authorizedBy) {
      this(hostName, hostPubkey, ownerFp, account, authorizedBy, null, null);
    }
  }

  /**
   * Transport ack of a target's items (docs/protocol.md §3 ack v2).
   *
   * @param targetPubkey the authenticated caller
   * @param epoch the epoch the caller names ({@code ""} when absent)
   * @param through {@code floor(Number(through))} when that is a safe integer, else empty
   */
  record Ack(String targetPubkey, String epoch, OptionalLong through) implements StoreCommand<AckOutcome> {
    @Override
    public AckOutcome applyTo(CommandHandler h) throws StoreException {
      return h.ack(this);
    }

    @Override
    public void lockKeys(java.util.function.Consumer<String> into) {
      into.accept(targetPubkey);
    }
  }

  /**
   * Writes {@code meta.heartbeat} = now (docs/protocol.md §5 "Epoch / heartbeat").
   */
  record Heartbeat() implements StoreCommand<Long> {
    @Override
    public Long applyTo(CommandHandler h) throws StoreException {
      return h.heartbeat(this);
    }
  }

  /**
   * A readiness probe: the writer answers it on its thread without a transaction of commands, through
   * {@link RelayStore#probeWriter()} (write lock taken, one meta row read, rolled back; nothing committed). Result
   * {@code true} when the lock was taken and the row read.
   */
  record Probe() implements StoreCommand<Boolean> {
    @Override
    public Boolean applyTo(CommandHandler h) throws StoreException {
      return h.probe(this);
    }
  }

  // ---- retention (docs/protocol.md §7.6, §4.10, §5 "Sweep") ----

  /**
   * One bounded sweep transaction: deletes at most {@code maxRows} items whose {@code expires_at ≤ now} (ordered by
   * expires_at, target, seq), leaving their dedup rows as tombstones, and enqueues for the sender of each expired
   * envelope one signed {@code relay-expired} notice (once; skipped and counted when the sender is not live or its
   * queue is over the target caps).
   *
   * @param nowMs sweep time (ms since the epoch)
   * @param maxRows most items deleted in this transaction (docs/protocol.md §3: 500)
   * @param signer signs the canonical notice bytes with the relay key, returning the base64 signature
   */
  record SweepBatch(long nowMs, int maxRows, java.util.function.Function<byte[], String> signer)
      implements StoreCommand<SweepCounts> {
    @Override
    public SweepCounts applyTo(CommandHandler h) throws StoreException {
      return h.sweepBatch(this);
    }
  }

  /**
   * Deletes at most {@code maxRows} dedup rows older than the horizon whose item no longer exists (docs/protocol.md §5:
   * horizon = retention + 7 days).
   *
   * @param beforeIso dedup rows with {@code accepted_at} before this ISO time are candidates
   * @param maxRows most rows deleted in this transaction
   */
  record PruneDedup(String beforeIso, int maxRows) implements StoreCommand<Integer> {
    @Override
    public Integer applyTo(CommandHandler h) throws StoreException {
      return h.pruneDedup(this);
    }
  }

  /**
   * Appends an entry to the ops log (last 1,000 kept; docs/protocol.md §5 "ops").
   *
   * @param op short op name, e.g. {@code sweep}
   * @param receiptJson the receipt JSON text
   */
  record LogOp(String op, String receiptJson) implements StoreCommand<Boolean> {
    @Override
    public Boolean applyTo(CommandHandler h) throws StoreException {
      return h.logOp(this);
    }
  }

  // ---- trust commands (issue 3). All run on the writer thread only, each in its own savepoint. ----

  /**
   * Stores a target's sender allowlist (docs/protocol.md §4.3) unless a list with the same or a newer {@code iat} is stored.
   *
   * @param targetPubkey the authenticated caller (= {@code list.host_pubkey})
   * @param senders the listed sender keys, deduplicated, in first-seen order (≤ max_senders)
   * @param iat {@code list.iat} as sent (an ISO time string)
   * @param iatMs {@code iat} parsed, epoch ms (the stale check compares parsed times)
   * @param record canonical JSON of the list as received
   * @param sig the target's signature over {@code record}
   */
  record PublishSenders(String targetPubkey, List<String> senders, String iat, long iatMs, String record, String sig)
      implements StoreCommand<SendersOutcome> {
    @Override
    public SendersOutcome applyTo(CommandHandler h) throws StoreException {
      return h.publishSenders(this);
    }

    public PublishSenders {
      Objects.requireNonNull(targetPubkey);
      senders = List.copyOf(senders);
      Objects.requireNonNull(iat);
      Objects.requireNonNull(record);
      Objects.requireNonNull(sig);
    }
  }

  /**
   * Stores a v1 enc-key ad (docs/protocol.md §4.2), already verified. Result: {@code true}.
   *
   * @param hostPubkey the caller
   * @param hostName the caller's enrolled name (the ad signs it)
   * @param encPub the advertised key as sent (v1 does not validate it)
   * @param sig the caller's signature over canonical {@code {v:1, host, enc_pub}}
   */
  record PublishEncAdV1(String hostPubkey, String hostName, String encPub, String sig)
      implements StoreCommand<Boolean> {
    @Override
    public Boolean applyTo(CommandHandler h) throws StoreException {
      return h.publishEncAdV1(this);
    }
  }

  /**
   * Stores a v2 enc-key ad record (docs/protocol.md §4.2), already verified. Result: {@code true} when stored, {@code false} when
   * it is not newer than the stored ad (issue 11 item 13).
   *
   * @param hostPubkey the caller (= {@code ad.host_pubkey})
   * @param record canonical JSON of the ad as received
   * @param sig the caller's signature over {@code record}
   */
  record PublishEncAdV2(String hostPubkey, String record, String sig) implements StoreCommand<Boolean> {
    @Override
    public Boolean applyTo(CommandHandler h) throws StoreException {
      return h.publishEncAdV2(this);
    }
  }

  /**
   * Applies a verified rotation record in one transaction (docs/protocol.md §4.4; §7.2 "Rotation"): revoke the old key,
   * upsert the new one with the old name, owner_fp and account, re-sequence the old queue under the new key (dedup
   * rows follow), drop the old ads, move the old allowlist and swap old→new in other allowlists.
   *
   * @param oldPub the rotated (old) key, which must be live
   * @param newPub the new key, which must not be revoked
   * @param host {@code rec.host}, which must equal the old enrolment's stored name
   */
  record Rotate(String oldPub, String newPub, String host) implements StoreCommand<RotateOutcome> {
    @Override
    public RotateOutcome applyTo(CommandHandler h) throws StoreException {
      return h.rotate(this);
    }

    @Override
    public void lockKeys(java.util.function.Consumer<String> into) {
      into.accept(oldPub);
      into.accept(newPub);
    }
  }

  /**
   * Adds a deny-list entry and revokes every live enrolment it matches (docs/protocol.md §7.8 "Revocation").
   *
   * @param kind {@code host_fp} or {@code client_id}
   * @param value a canonical fingerprint ({@code xxxx-xxxx-xxxx-xxxx}) or a client id
   * @param note free operator text (≤ 200 chars), stored, never logged
   */
  record Deny(String kind, String value, String note) implements StoreCommand<DenyOutcome> {
    @Override
    public DenyOutcome applyTo(CommandHandler h) throws StoreException {
      return h.deny(this);
    }

    public Deny {
      Objects.requireNonNull(kind);
      Objects.requireNonNull(value);
      note = note == null ? "" : note;
    }
  }

  /**
   * Removes a deny-list entry. Revocations it caused stay (revocation is permanent). Result: whether it existed.
   *
   * @param kind {@code host_fp} or {@code client_id}
   * @param value the entry's value
   */
  record Undeny(String kind, String value) implements StoreCommand<Boolean> {
    @Override
    public Boolean applyTo(CommandHandler h) throws StoreException {
      return h.undeny(this);
    }
  }

  // ---- v1 compatibility (docs/protocol.md §3 "v1 endpoints") ----

  /**
   * One v1 envelope push, all or nothing over its recipient hosts: the allowlist per target in order; then, unless
   * every target already has a dedup row (counted as stored, hash not compared), the quota per target and the insert
   * of the missing targets with {@code expires_at = NULL} (v1 items never expire).
   *
   * @param senderPubkey the authenticated caller's key
   * @param senderHost the caller's stored name
   * @param envelopeId the envelope id (dedup item id)
   * @param wire {@code JSON.stringify} re-serialisation of the parsed envelope
   * @param wireHash lowercase hex SHA-256 of {@code wire}
   * @param targets resolved recipient hosts in order of first appearance in {@code to}
   * @param precheckFailure the error found by name resolution for the host after the last of {@code targets}, which
   *     the reference reports after checking the earlier hosts' allowlists, or null
   */
  record PushV1(String senderPubkey, String senderHost, String envelopeId, byte[] wire, String wireHash,
      List<V1Target> targets, String precheckFailure) implements StoreCommand<java.util.Optional<String>> {
    @Override
    public java.util.Optional<String> applyTo(CommandHandler h) throws StoreException {
      return h.pushV1(this);
    }

    @Override
    public void lockKeys(java.util.function.Consumer<String> into) {
      for (V1Target t : targets) {
        into.accept(t.hostPubkey());
      }
    }

    public PushV1 {
      targets = List.copyOf(targets);
    }
  }

  /**
   * A resolved v1 recipient host.
   *
   * @param hostPubkey its key
   * @param name the host part as written in {@code to} (used in error texts)
   */
  record V1Target(String hostPubkey, String name) {}

  /**
   * v1 ack: clamps {@code floor(Number(cursor))} to {@code [0, head]} and deletes the caller's items through it.
   *
   * @param targetPubkey the caller
   * @param cursor the floored cursor, or empty when it is not a number (then 0)
   */
  record AckV1(String targetPubkey, OptionalLong cursor) implements StoreCommand<Long> {
    @Override
    public Long applyTo(CommandHandler h) throws StoreException {
      return h.ackV1(this);
    }

    @Override
    public void lockKeys(java.util.function.Consumer<String> into) {
      into.accept(targetPubkey);
    }
  }

  /**
   * Moves items whose stored wire no longer matches their {@code wire_hash} out of the queue into
   * {@code damaged_items} (issue 10 item 1), after checking the hash again on the writer's connection: a pull never
   * serves such bytes, and one damaged row must not stop its host's queue. The dedup rows stay (a retry by the sender
   * is still a duplicate: the sender learns from the missing delivery receipt, as for any loss). Result: rows moved.
   *
   * @param targetPubkey the host whose queue held them
   * @param seqs their seqs
   */
  record SetAsideDamaged(String targetPubkey, List<Long> seqs) implements StoreCommand<Integer> {
    @Override
    public Integer applyTo(CommandHandler h) throws StoreException {
      return h.setAsideDamaged(this);
    }

    @Override
    public void lockKeys(java.util.function.Consumer<String> into) {
      into.accept(targetPubkey);
    }

    public SetAsideDamaged {
      Objects.requireNonNull(targetPubkey);
      seqs = List.copyOf(seqs);
    }
  }
}
