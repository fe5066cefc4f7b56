package io.mbxrelay.store;

import io.mbxrelay.store.model.AckOutcome;
import io.mbxrelay.store.model.DedupRow;
import io.mbxrelay.store.model.DenyKey;
import io.mbxrelay.store.model.DenyOutcome;
import io.mbxrelay.store.model.EnrolOutcome;
import io.mbxrelay.store.model.Enrolment;
import io.mbxrelay.store.model.ItemRow;
import io.mbxrelay.store.model.PushOutcome;
import io.mbxrelay.store.model.RejectReason;
import io.mbxrelay.store.model.RotateOutcome;
import io.mbxrelay.store.model.SendersOutcome;
import io.mbxrelay.store.model.SweepCounts;
import io.mbxrelay.store.spi.LedgerBackend;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.mbxrelay.config.RelayConfig;
import io.mbxrelay.crypto.Fingerprint;
import io.mbxrelay.wire.CanonicalJson;
import io.mbxrelay.wire.Hashes;
import io.mbxrelay.wire.IsoTime;
import io.mbxrelay.wire.Json;
import io.mbxrelay.wire.KeySpelling;
import java.time.Clock;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The relay's store rules over any {@link LedgerBackend} (docs/architecture.md "Store: ledger and backends"): push
 * admission in the order and with the texts of docs/protocol.md §3, the seq rule, quotas, dedup, acks,
 * enrolment, allowlists, enc-key ads, rotation, the deny list, the expiry sweep and its signed notices, and the v1
 * compatibility commands. It knows no SQL.
 *
 * <p>{@link #execute(List)} runs a batch of commands in one backend transaction (group commit), each command in its
 * own savepoint, each multi-target item in one more; the results are returned only after the backend's commit.
 *
 * <p>Threading: owned by one thread (the writer), like its backend session.
 */
public final class RelayLedger implements RelayStore {
  private static final Logger LOG = LoggerFactory.getLogger(RelayLedger.class);
  /** Runs of a batch that lost a race with another writer ({@link StoreException#retryable()}) before giving up. */
  static final int MAX_ATTEMPTS = 5;

  /** Called after all commands of a transaction ran and before COMMIT, and right after it (test crash harness). */
  public interface CommitHook {
    /**
     * @param commands the commands of the transaction
     * @param committed false before COMMIT, true right after COMMIT returned
     */
    void at(List<? extends StoreCommand<?>> commands, boolean committed);
  }

  private final LedgerBackend backend;
  private final Clock clock;
  private final RelayConfig.Limits limits;
  private final Rules rules = new Rules();
  private CommitHook hook = (c, done) -> {};
  private Consumer<Map<String, Long>> newItems = heads -> {};
  /**
   * Targets that received an item in the open transaction, each with the highest seq stored for it (long-poll pulls wake
   * after COMMIT; the empty-page cache learns the new head). Changes made inside a savepoint are journaled in
   * {@link #headUndo} so that rolling the savepoint back takes them out again.
   */
  private final Map<String, Long> newItemHeads = new HashMap<>();
  /** Inverse of each change to {@link #newItemHeads} made inside a savepoint: the target and its earlier value. */
  private final List<Map.Entry<String, Long>> headUndo = new ArrayList<>();
  /** {@link #headUndo}'s size when each open savepoint began, innermost last. */
  private final List<Integer> headMarks = new ArrayList<>();
  private long lastIsoMs;
  private String lastIso;
  /** The running transaction reached its COMMIT: from here a failure may follow a COMMIT that took effect. */
  private boolean committing;
  /** Savepoints open in the running transaction. */
  private int depth;
  /** Batches run again after a lost race (issue 20 item 3: with the canonical lock order, only the rare rest). */
  private long retries;
  /** How deny-list changes came in, for their ops-log entries. */
  private String denyVia = "/admin/deny";

  /**
   * @param backend the backend session (owned: closed with the ledger)
   * @param clock time source
   * @param limits quotas, retention and caps
   */
  public RelayLedger(LedgerBackend backend, Clock clock, RelayConfig.Limits limits) {
    this.backend = Objects.requireNonNull(backend);
    this.clock = Objects.requireNonNull(clock);
    this.limits = Objects.requireNonNull(limits);
  }

  /** The backend session. */
  public LedgerBackend backend() {
    return backend;
  }

  /**
   * Names the way deny-list changes reach this ledger in their ops-log entries ({@code via}): {@code /admin/deny}
   * for a relay (the default), {@code mbxrelay deny} for the operator's command beside it.
   *
   * @param via the name
   * @return this ledger
   */
  public RelayLedger denyVia(String via) {
    this.denyVia = Objects.requireNonNull(via);
    return this;
  }

  /** Installs the commit hook (test crash harness only). */
  public void commitHook(CommitHook hook) {
    this.hook = Objects.requireNonNull(hook);
  }

  /**
   * Installs the observer of committed items: called on the writer thread after each COMMIT that stored at least one
   * item, before any reply of that transaction, with the targets that received items (long-poll pulls wake on it),
   * each mapped to the highest seq the transaction stored for it, which is the target's head seq once committed. A
   * command or item rolled back to its savepoint names nothing. A transaction that failed at or after its COMMIT may
   * have committed: its heads are signalled too, before the failure is thrown (a head signalled for nothing stored
   * only makes pulls read).
   *
   * @param observer receives an unmodifiable map of target key to its new head seq
   */
  @Override
  public void onNewItems(Consumer<Map<String, Long>> observer) {
    this.newItems = Objects.requireNonNull(observer);
  }

  @Override
  public String epoch() {
    return backend.epoch();
  }

  @Override
  public String relayPubkey() {
    return backend.relayPubkey();
  }

  @Override
  public List<CommandResult> execute(List<? extends StoreCommand<?>> commands) throws StoreException {
    if (commands.isEmpty()) {
      return List.of();
    }
    for (int attempt = 1; ; attempt++) {
      try {
        return runOnce(commands);
      } catch (StoreException e) {
        if (!e.retryable() || attempt >= MAX_ATTEMPTS) {
          throw e;
        }
        retries++;
        LOG.debug("transaction lost a race with another writer; running it again [attempt: {}]", attempt);
      }
    }
  }

  /**
   * One transaction over the batch. Commands run without savepoints of their own (a savepoint and its release are two
   * statements per command, a third of the statements of a single-item push; issue 18): a command that fails (a bug,
   * an {@code INTERNAL} store error) makes the whole transaction roll back, and the batch runs again with each command
   * in its own savepoint, so that one command fails alone exactly as before. Refusals are values and never take that
   * path; a multi-target item keeps its own savepoint either way.
   */
  private List<CommandResult> runOnce(List<? extends StoreCommand<?>> commands) throws StoreException {
    List<CommandResult> results = runTransaction(commands, false);
    return results != null ? results : runTransaction(commands, true);
  }

  /**
   * @param isolated each command in its own savepoint (a failing command rolls back alone)
   * @return the results after COMMIT, or null when {@code isolated} is false and a command failed (rolled back)
   */
  private List<CommandResult> runTransaction(List<? extends StoreCommand<?>> commands, boolean isolated)
      throws StoreException {
    depth = 0;
    committing = false;
    clearHeads();
    backend.begin();
    List<CommandResult> results = new ArrayList<>(commands.size());
    try {
      if (backend.locksTargets()) {
        lockInCanonicalOrder(commands);
      }
      for (StoreCommand<?> command : commands) {
        if (isolated) {
          results.add(runInSavepoint(command));
        } else if (!runDirectly(command, results)) {
          backend.rollback();
          clearHeads();
          return null;
        }
      }
      hook.at(commands, false);
      committing = true;
      try {
        backend.commit();
      } catch (StoreException e) {
        throw StoreException.duringCommit(e); // it may have committed (issue 20 item 4)
      }
    } catch (StoreException | RuntimeException e) {
      if (committing) {
        // a failed COMMIT, or the backend's work after one that succeeded: it may have committed, so its heads are
        // signalled anyway (one signalled too high only makes pulls read; one never signalled could leave an empty
        // page answered from memory over a stored item)
        signalNewItems();
      }
      backend.rollback();
      clearHeads();
      if (e instanceof StoreException se) {
        throw se;
      }
      throw new StoreException(StoreException.Kind.INTERNAL, "transaction failed", e);
    } catch (Error e) {
      // An Error (OutOfMemoryError, ...) must not leave the write connection inside an open transaction.
      if (committing) {
        signalNewItems(); // as above: it may have committed
      }
      backend.rollback();
      clearHeads();
      throw e;
    }
    signalNewItems();
    hook.at(commands, true);
    return results;
  }

  /** Hands the transaction's new heads to the observer, if it stored items, and forgets them. */
  private void signalNewItems() {
    if (newItemHeads.isEmpty()) {
      return;
    }
    Map<String, Long> heads = Map.copyOf(newItemHeads);
    clearHeads();
    try {
      newItems.accept(heads);
    } catch (RuntimeException e) {
      LOG.warn("new-item observer failed [error: {}]", e.toString());
    }
  }

  /**
   * Locks every target the batch may change, in ascending key order, before its first command (issue 20 item 3): each
   * writer otherwise locks targets in item order, and two writers' batches naming the same targets in different orders
   * deadlock.
   */
  private void lockInCanonicalOrder(List<? extends StoreCommand<?>> commands) throws StoreException {
    java.util.TreeSet<String> keys = new java.util.TreeSet<>();
    for (StoreCommand<?> command : commands) {
      command.lockKeys(keys::add);
    }
    if (!keys.isEmpty()) {
      backend.lockTargets(keys);
    }
  }

  /**
   * Runs a command outside a savepoint of its own.
   *
   * @return false when it failed in a way that {@link #runInSavepoint} would confine to the command (the caller rolls
   *     the transaction back); I/O, corruption and lost races propagate as from {@link #runInSavepoint}
   */
  private boolean runDirectly(StoreCommand<?> command, List<CommandResult> results) throws StoreException {
    try {
      results.add(new CommandResult(command.applyTo(rules), null));
      return true;
    } catch (StoreException e) {
      if (e.kind() != StoreException.Kind.INTERNAL || e.retryable()) {
        throw e;
      }
      return false;
    } catch (RuntimeException e) {
      return false; // logged when the isolated run meets it again
    }
  }

  private CommandResult runInSavepoint(StoreCommand<?> command) throws StoreException {
    int mark = depth;
    savepoint();
    try {
      Object value = command.applyTo(rules);
      release();
      return new CommandResult(value, null);
    } catch (StoreException e) {
      if (e.kind() != StoreException.Kind.INTERNAL || e.retryable()) {
        throw e; // I/O, corruption or a lost race: the whole transaction is suspect
      }
      undoTo(mark);
      return new CommandResult(null, e);
    } catch (RuntimeException e) {
      undoTo(mark);
      LOG.error("store command failed [command: {}]", command.getClass().getSimpleName(), e);
      return new CommandResult(null, new StoreException(StoreException.Kind.INTERNAL, "command failed", e));
    }
  }

  private void savepoint() throws StoreException {
    backend.savepoint();
    depth++;
    headMarks.add(headUndo.size());
  }

  private void release() throws StoreException {
    backend.release();
    depth--;
    headMarks.remove(headMarks.size() - 1); // its changes now belong to the enclosing savepoint or the transaction
  }

  private void rollbackToSavepoint() throws StoreException {
    backend.rollbackToSavepoint();
    depth--;
    int mark = headMarks.remove(headMarks.size() - 1);
    for (int i = headUndo.size() - 1; i >= mark; i--) {
      Map.Entry<String, Long> undo = headUndo.remove(i);
      if (undo.getValue() == null) {
        newItemHeads.remove(undo.getKey());
      } else {
        newItemHeads.put(undo.getKey(), undo.getValue());
      }
    }
  }

  private void clearHeads() {
    newItemHeads.clear();
    headUndo.clear();
    headMarks.clear();
  }

  /** Rolls back every savepoint opened since {@code mark} (a command that failed inside an item's savepoint). */
  private void undoTo(int mark) throws StoreException {
    while (depth > mark) {
      rollbackToSavepoint();
    }
  }

  /**
   * How many times a batch was run again because it lost a race with another writer (a deadlock, a serialization
   * failure or a concurrent insert of the same key; {@link StoreException#retryable()}). Writer thread only.
   *
   * @return retries since this ledger was made
   */
  public long retries() {
    return retries;
  }

  @Override
  public Optional<Enrolment> enrolment(String hostPubkey) throws StoreException {
    return backend.enrolment(hostPubkey);
  }

  @Override
  public long headSeq(String targetPubkey) throws StoreException {
    return backend.nextSeq(targetPubkey) - 1;
  }

  @Override
  public boolean probeWriter() throws StoreException {
    return backend.probeWriter();
  }

  @Override
  public void refreshIfChangedElsewhere() throws StoreException {
    backend.refresh();
  }

  @Override
  public void close() {
    backend.close();
  }

  /** {@code iso(now)} for consecutive items of the same millisecond without formatting again. */
  private String iso(long ms) {
    if (ms != lastIsoMs || lastIso == null) {
      lastIso = IsoTime.format(ms);
      lastIsoMs = ms;
    }
    return lastIso;
  }

  /** docs/protocol.md §5 "Seq allocation": {@code cur = max(next_seq or 1, now_ms)}; {@code next_seq = cur + 1}. */
  private long allocateSeq(String target, long nowMs) throws StoreException {
    long cur = Math.max(backend.nextSeq(target), nowMs);
    backend.useSeq(target, cur);
    return cur;
  }

  private void insertItem(Enrolment target, ItemRow row) throws StoreException {
    backend.insertItem(target, row);
    Long before = newItemHeads.get(row.target());
    if (before == null || row.seq() > before) {
      if (!headMarks.isEmpty()) {
        headUndo.add(new java.util.AbstractMap.SimpleImmutableEntry<>(row.target(), before));
      }
      newItemHeads.put(row.target(), row.seq());
    }
  }

  /** The target's allowlist check (docs/protocol.md §4.3): no list → anyone enrolled; else listed keys only. */
  private boolean senderAccepted(String target, String sender) throws StoreException {
    Optional<Set<String>> list = backend.allowlist(target);
    return list.isEmpty() || list.get().contains(sender);
  }

  /** True when the key's fingerprint or the token's client id is on the deny list. */
  private boolean denied(String hostPubkey, String clientId) throws StoreException {
    if (backend.denied(DenyKey.HOST_FP, Fingerprint.ofB64(hostPubkey))) {
      return true;
    }
    return clientId != null && backend.denied(DenyKey.CLIENT_ID, clientId);
  }

  /**
   * Quota checks in the order and with the texts of docs/protocol.md §3 "Quota messages" (the text after
   * {@code quota:}); null when within quota.
   */
  private String quotaFailure(String sender, Enrolment target, long bytes) throws StoreException {
    String name = target.hostName();
    LedgerBackend.Usage q = backend.targetUsage(target.hostPubkey());
    if (q.items() + 1 > limits.maxQueueItems()) {
      return "queue depth exceeded for " + name;
    }
    if (q.bytes() + bytes > limits.maxQueueBytes()) {
      return "queue bytes exceeded for " + name;
    }
    LedgerBackend.Usage s = backend.senderShare(target.hostPubkey(), sender);
    if (s.items() + 1 > limits.maxSenderItems() || s.bytes() + bytes > limits.maxSenderBytes()) {
      return "sender share exceeded for " + name;
    }
    if (target.account() != null) {
      LedgerBackend.Usage o = backend.accountUsage(target.account());
      if (o.items() + 1 > limits.maxOwnerItems()) {
        return "owner queue depth exceeded for " + name;
      }
      if (o.bytes() + bytes > limits.maxOwnerBytes()) {
        return "owner queue bytes exceeded for " + name;
      }
    }
    // Beyond the reference (issue 11 item 8): what one sender holds over all targets, and the whole store.
    LedgerBackend.Usage t = backend.senderTotal(sender);
    if (t.items() + 1 > limits.maxSenderTotalItems() || t.bytes() + bytes > limits.maxSenderTotalBytes()) {
      return "sender total exceeded";
    }
    LedgerBackend.Usage all = backend.storeTotals();
    if (all.items() + 1 > limits.maxStoreItems() || all.bytes() + bytes > limits.maxStoreBytes()) {
      return "relay store full";
    }
    return null;
  }

  /** The rules, one method per command ({@link CommandHandler}). */
  private final class Rules implements CommandHandler {

    // ---- push (docs/protocol.md §3 steps 5-6) ----

    @Override
    public List<PushOutcome> pushBatch(StoreCommand.PushBatch b) throws StoreException {
      List<PushOutcome> out = new ArrayList<>(b.items().size());
      for (StoreCommand.Push p : b.items()) {
        out.add(push(p));
      }
      return out;
    }

    /**
     * One item, all or nothing over its targets. Per target: enrolment, allowlist, then the event loop's own finding
     * (that order is the protocol's); then per target the quota, and within quota the dedup row is inserted (a
     * unique-key insert that reports a conflict) and, when it was new, the item row; only a conflicting insert or a
     * quota refusal reads the stored dedup row (an existing dedup row wins over the quota). A multi-target item runs
     * in its own savepoint.
     */
    @Override
    public PushOutcome push(StoreCommand.Push p) throws StoreException {
      List<StoreCommand.Target> targets = p.targets();
      Enrolment[] enrolled = new Enrolment[targets.size()];
      for (int i = 0; i < targets.size(); i++) {
        StoreCommand.Target t = targets.get(i);
        Optional<Enrolment> e = backend.enrolment(t.hostPubkey());
        if (e.isEmpty() || !e.get().live()) {
          return new PushOutcome.Rejected(RejectReason.NOT_ENROLLED, null);
        }
        if (!senderAccepted(t.hostPubkey(), p.senderPubkey())) {
          return new PushOutcome.Rejected(RejectReason.SENDER_NOT_ACCEPTED, null);
        }
        if (t.precheckFailure() != null) {
          return new PushOutcome.Rejected(t.precheckFailure().reason(), t.precheckFailure().detail());
        }
        enrolled[i] = e.get();
      }
      long now = clock.millis();
      String nowIso = iso(now);
      String expiresAt = IsoTime.format(now + limits.retentionMs());
      boolean multi = targets.size() > 1;
      if (multi) {
        savepoint();
      }
      boolean fresh = false;
      String earliest = null;
      List<PushOutcome.TargetSeq> out = new ArrayList<>(targets.size());
      for (int i = 0; i < targets.size(); i++) {
        StoreCommand.Target t = targets.get(i);
        String quota = quotaFailure(p.senderPubkey(), enrolled[i], t.wire().length);
        if (quota == null) {
          long seq = Math.max(backend.nextSeq(t.hostPubkey()), now);
          if (backend.insertDedup(new DedupRow(p.senderPubkey(), p.itemId(), t.hostPubkey(), t.wireHash(), seq,
              nowIso))) {
            insertItem(enrolled[i], new ItemRow(t.hostPubkey(), seq, p.kind(), p.itemId(), p.senderPubkey(),
                p.senderHost(), t.wire(), t.wireHash(), t.wire().length, nowIso, expiresAt));
            backend.useSeq(t.hostPubkey(), seq);
            fresh = true;
            out.add(new PushOutcome.TargetSeq(t.hostPubkey(), seq, t.wireHash()));
            continue;
          }
        }
        Optional<DedupRow> row = backend.dedup(p.senderPubkey(), p.itemId(), t.hostPubkey());
        if (row.isEmpty()) {
          if (quota == null) {
            throw new IllegalStateException("dedup insert refused but no dedup row found");
          }
          return rejectItem(multi, RejectReason.QUOTA, quota);
        }
        if (!row.get().wireHash().equals(t.wireHash())) {
          return rejectItem(multi, RejectReason.CONFLICT, null);
        }
        out.add(new PushOutcome.TargetSeq(t.hostPubkey(), row.get().seq(), row.get().wireHash()));
        if (earliest == null || row.get().acceptedAt().compareTo(earliest) < 0) {
          earliest = row.get().acceptedAt();
        }
      }
      if (multi) {
        release();
      }
      return new PushOutcome.Stored(fresh, out, fresh ? nowIso : earliest, backend.epoch());
    }

    /** Refuses an item; a multi-target one is rolled back to its savepoint (its seqs and counts too). */
    private PushOutcome rejectItem(boolean multi, RejectReason reason, String detail) throws StoreException {
      if (multi) {
        rollbackToSavepoint();
      }
      return new PushOutcome.Rejected(reason, detail);
    }

    // ---- ack (docs/protocol.md §3) ----

    @Override
    public AckOutcome ack(StoreCommand.Ack a) throws StoreException {
      long head = backend.nextSeq(a.targetPubkey()) - 1;
      String epoch = backend.epoch();
      if (!epoch.equals(a.epoch())) {
        return new AckOutcome.EpochChanged(epoch, head);
      }
      if (a.through().isEmpty() || a.through().getAsLong() < 0 || a.through().getAsLong() > head) {
        return new AckOutcome.BadAck(epoch, head);
      }
      long through = a.through().getAsLong();
      // raised first: a SQLite v5 store then needs no seq floor for the rows the ack deletes (Schema.SEQ_FLOOR_TRIGGER)
      long acked = backend.raiseAcked(a.targetPubkey(), through);
      int deleted = backend.deleteThrough(a.targetPubkey(), through);
      return new AckOutcome.Done(acked, deleted, head);
    }

    // ---- enrol (docs/protocol.md §4.1, the stored part) ----

    @Override
    public EnrolOutcome enrol(StoreCommand.Enrol e) throws StoreException {
      Optional<Enrolment> existing = backend.enrolment(e.hostPubkey());
      if (existing.isPresent() && !existing.get().live()) {
        return EnrolOutcome.REVOKED;
      }
      if (denied(e.hostPubkey(), e.clientId())) {
        return EnrolOutcome.DENIED;
      }
      if (existing.isEmpty() && backend.liveEnrolmentCount() >= limits.maxEnrolments()) {
        return EnrolOutcome.FULL;
      }
      String account = e.account();
      String authorizedBy = e.authorizedBy();
      if (account == null && existing.isPresent() && existing.get().account() != null) {
        account = existing.get().account();
        authorizedBy = existing.get().authorizedBy();
      }
      if (account != null && backend.nameTaken(account, e.hostName(), e.hostPubkey())) {
        return EnrolOutcome.NAME_TAKEN;
      }
      String now = IsoTime.format(clock.millis());
      backend.upsertEnrolment(new Enrolment(e.hostPubkey(), e.hostName(), e.ownerFp(), account, authorizedBy, now,
          null));
      if (e.clientId() != null) { // a grant without a token client keeps the stored client
        backend.recordClient(e.hostPubkey(), e.clientId(), e.org(), now);
      }
      return EnrolOutcome.OK;
    }

    // ---- meta ----

    @Override
    public Long heartbeat(StoreCommand.Heartbeat c) throws StoreException {
      long now = clock.millis();
      backend.putHeartbeat(now);
      return now;
    }

    @Override
    public Boolean probe(StoreCommand.Probe c) {
      throw new IllegalArgumentException("a probe runs outside transactions (probeWriter)");
    }

    @Override
    public Boolean logOp(StoreCommand.LogOp op) throws StoreException {
      backend.logOp(op.op(), op.receiptJson(), IsoTime.format(clock.millis()));
      return true;
    }

    // ---- retention (docs/protocol.md §5) ----

    @Override
    public SweepCounts sweepBatch(StoreCommand.SweepBatch sb) throws StoreException {
      String at = IsoTime.format(sb.nowMs());
      List<ItemRow> rows = backend.expiring(at, sb.maxRows());
      if (backend.locksTargets() && !rows.isEmpty()) {
        // the queues it empties and the senders it notifies, in the canonical order (issue 20 item 3)
        java.util.TreeSet<String> keys = new java.util.TreeSet<>();
        for (ItemRow r : rows) {
          keys.add(r.target());
          if (r.kind().equals("envelope")) {
            keys.add(r.sender());
          }
        }
        backend.lockTargets(keys);
      }
      int envelopes = 0;
      int receipts = 0;
      int expired = 0;
      int notices = 0;
      int notEnrolled = 0;
      int overCap = 0;
      long freed = 0;
      String expiresAt = IsoTime.format(sb.nowMs() + limits.retentionMs());
      String relay = backend.relayPubkey();
      for (ItemRow r : rows) {
        backend.deleteItem(r.target(), r.seq());
        freed += r.bytes();
        switch (r.kind()) {
          case "envelope" -> envelopes++;
          case "receipt" -> receipts++;
          default -> expired++;
        }
        if (!r.kind().equals("envelope")) {
          continue; // receipts are advisory and notices never beget notices
        }
        Optional<Enrolment> sender = backend.enrolment(r.sender());
        if (sender.isEmpty() || !sender.get().live()) {
          notEnrolled++;
          continue;
        }
        String noticeId = "expired:" + r.itemId() + ":" + r.target();
        if (backend.dedup(relay, noticeId, r.sender()).isPresent()) {
          continue; // already told
        }
        byte[] wire = expiryNotice(r, at, sb.signer());
        LedgerBackend.Usage q = backend.targetUsage(r.sender());
        if (q.items() + 1 > limits.maxQueueItems() || q.bytes() + wire.length > limits.maxQueueBytes()) {
          overCap++;
          continue;
        }
        String hash = Hashes.sha256Hex(wire);
        long seq = allocateSeq(r.sender(), sb.nowMs());
        insertItem(sender.get(), new ItemRow(r.sender(), seq, "expired", noticeId, relay, "relay", wire, hash,
            wire.length, at, expiresAt));
        backend.insertDedup(new DedupRow(relay, noticeId, r.sender(), hash, seq, at));
        notices++;
      }
      return new SweepCounts(rows.size(), envelopes, receipts, expired, notices, notEnrolled, overCap, freed);
    }

    /** The signed {@code relay-expired} notice for an expired envelope (docs/protocol.md §4.10). */
    private byte[] expiryNotice(ItemRow r, String at, java.util.function.Function<byte[], String> signer) {
      ObjectNode notice = Json.MAPPER.createObjectNode();
      notice.put("v", 1);
      notice.put("type", "relay-expired");
      notice.put("item_id", r.itemId());
      notice.put("target_pubkey", r.target());
      notice.put("accepted_at", r.acceptedAt());
      notice.put("expired_at", at);
      ObjectNode wireNode = Json.MAPPER.createObjectNode();
      wireNode.set("notice", notice);
      wireNode.put("sig", signer.apply(CanonicalJson.canonicalBytes(notice)));
      return CanonicalJson.canonicalBytes(wireNode);
    }

    @Override
    public Integer pruneDedup(StoreCommand.PruneDedup pd) throws StoreException {
      return backend.pruneDedup(pd.beforeIso(), pd.maxRows());
    }

    @Override
    public Integer setAsideDamaged(StoreCommand.SetAsideDamaged d) throws StoreException {
      String now = IsoTime.format(clock.millis());
      int moved = 0;
      for (long seq : d.seqs()) {
        Optional<ItemRow> row = backend.item(d.targetPubkey(), seq);
        // checked again here: gone already (acked, expired) or the reader was wrong means nothing to do
        if (row.isEmpty() || Hashes.sha256Hex(row.get().wire()).equals(row.get().wireHash())) {
          continue;
        }
        backend.setAside(d.targetPubkey(), seq, now);
        moved++;
      }
      if (moved > 0) {
        LOG.error("damaged items set aside [count: {}]: their wire no longer matches the hash accepted;"
            + " see damaged_items", moved);
      }
      return moved;
    }

    // ---- trust (docs/protocol.md §4.3, "Enc-key ads", "Rotation"; docs/deny-list.md) ----

    @Override
    public SendersOutcome publishSenders(StoreCommand.PublishSenders p) throws StoreException {
      Optional<String> storedIat = backend.allowlistIat(p.targetPubkey());
      if (storedIat.isPresent()) {
        OptionalLong stored = IsoTime.parse(storedIat.get());
        // an unparsable stored iat cannot be newer than a parsable one
        if (stored.isPresent() && stored.getAsLong() >= p.iatMs()) {
          return SendersOutcome.STALE;
        }
      }
      backend.putAllowlist(p.targetPubkey(), p.senders(), p.iat(), p.record(), p.sig());
      return SendersOutcome.STORED;
    }

    @Override
    public Boolean publishEncAdV1(StoreCommand.PublishEncAdV1 a) throws StoreException {
      backend.putEncAdV1(a.hostPubkey(), a.hostName(), a.encPub(), a.sig(), IsoTime.format(clock.millis()));
      return Boolean.TRUE;
    }

    /**
     * Stores a v2 ad unless the stored one is at least as new (issue 11 item 13): an ad whose {@code iat} is older
     * than the stored ad's, or equal with other content, is refused ({@code false}). The stored ad itself sent again
     * is accepted and changes nothing. A stored ad whose {@code iat} cannot be parsed never blocks.
     */
    @Override
    public Boolean publishEncAdV2(StoreCommand.PublishEncAdV2 a) throws StoreException {
      Optional<String> stored = backend.encAdV2(a.hostPubkey());
      if (stored.isPresent()) {
        if (stored.get().equals(a.record())) {
          return Boolean.TRUE;
        }
        OptionalLong storedIat = adIat(stored.get());
        OptionalLong newIat = adIat(a.record());
        if (storedIat.isPresent() && (newIat.isEmpty() || newIat.getAsLong() <= storedIat.getAsLong())) {
          return Boolean.FALSE;
        }
      }
      backend.putEncAdV2(a.hostPubkey(), a.record(), a.sig(), IsoTime.format(clock.millis()));
      return Boolean.TRUE;
    }

    /**
     * A verified rotation record in one transaction: revoke the old key, enrol the new one with the old name,
     * owner_fp and account, move the old queue in seq order after anything already queued for the new key (new
     * seqs; dedup rows follow), drop the old ads, move the old allowlist and name the new key in other lists.
     */
    @Override
    public RotateOutcome rotate(StoreCommand.Rotate r) throws StoreException {
      Optional<Enrolment> old = backend.enrolment(r.oldPub());
      if (old.isEmpty() || !old.get().live()) {
        return new RotateOutcome.NotEnrolled();
      }
      if (!old.get().hostName().equals(r.host())) {
        return new RotateOutcome.NamesAnotherHost();
      }
      // Issue 11 item 3: a revoked key must not come back under another spelling of itself, and a key on the deny
      // list must not go live through a rotation.
      if (backend.anyRevoked(KeySpelling.spellings(r.newPub()))
          || denied(r.newPub(), backend.clientIdOf(r.oldPub()).orElse(null))) {
        return new RotateOutcome.NewKeyRevoked();
      }
      long nowMs = clock.millis();
      String at = IsoTime.format(nowMs);
      Enrolment o = old.get();
      backend.revoke(r.oldPub(), at);
      backend.upsertEnrolment(new Enrolment(r.newPub(), o.hostName(), o.ownerFp(), o.account(),
          o.authorizedBy() == null ? "host-rotation" : o.authorizedBy(), at, null));
      backend.copyClient(r.oldPub(), r.newPub(), at);
      Enrolment fresh = backend.enrolment(r.newPub()).orElseThrow();
      int moved = 0;
      for (ItemRow it : backend.queue(r.oldPub())) {
        if (backend.dedup(it.sender(), it.itemId(), r.newPub()).isPresent()) {
          continue; // the sender already pushed this item to the new key: one copy per (sender, item, target)
        }
        long seq = allocateSeq(r.newPub(), nowMs);
        insertItem(fresh, new ItemRow(r.newPub(), seq, it.kind(), it.itemId(), it.sender(), it.senderHost(),
            it.wire(), it.wireHash(), it.bytes(), it.acceptedAt(), it.expiresAt()));
        backend.moveDedup(it.sender(), it.itemId(), r.oldPub(), r.newPub(), seq);
        moved++;
      }
      // Remaining dedup rows of the old key (tombstones of acked or expired items) follow it too, so a late retry to
      // the new key is still a duplicate; a row the new key already has wins.
      backend.moveRemainingDedup(r.oldPub(), r.newPub());
      backend.deleteQueue(r.oldPub());
      backend.dropEncAds(r.oldPub());
      backend.moveAllowlists(r.oldPub(), KeySpelling.spellings(r.oldPub()), r.newPub());
      return new RotateOutcome.Moved(moved);
    }

    @Override
    public DenyOutcome deny(StoreCommand.Deny d) throws StoreException {
      String at = IsoTime.format(clock.millis());
      boolean added = backend.addDeny(d.kind(), d.value(), d.note(), at);
      int revoked = 0;
      if (d.kind().equals(DenyKey.CLIENT_ID)) {
        revoked = backend.revokeByClient(d.value(), at);
      } else {
        // A fingerprint is a hash prefix: no store can index it, so the live keys are scanned (an operator action).
        for (String key : backend.liveKeys()) {
          boolean hit;
          try {
            hit = Fingerprint.ofB64(key).equals(d.value());
          } catch (IllegalArgumentException e) {
            hit = false; // a stored key that does not decode cannot match
          }
          if (hit && backend.revoke(key, at)) {
            revoked++;
          }
        }
      }
      ObjectNode receipt = denyReceipt("relay-deny", d.kind(), d.value(), at).put("note", d.note());
      opLog("deny-add", receipt.put("added", added).put("revoked", revoked), at);
      return new DenyOutcome(added, revoked);
    }

    @Override
    public Boolean undeny(StoreCommand.Undeny u) throws StoreException {
      String at = IsoTime.format(clock.millis());
      boolean removed = backend.removeDeny(u.kind(), u.value());
      opLog("deny-remove", denyReceipt("relay-undeny", u.kind(), u.value(), at).put("removed", removed), at);
      return removed;
    }

    private ObjectNode denyReceipt(String type, String kind, String value, String at) {
      return Json.MAPPER.createObjectNode().put("v", 1).put("type", type).put("at", at).put("kind", kind)
          .put("value", value).put("via", denyVia);
    }

    /**
     * An ops-log entry in the same transaction as the change (deny changes appear in {@code mbxrelay log}), from the
     * operator's command and from the admin endpoint alike.
     */
    private void opLog(String op, ObjectNode receipt, String at) throws StoreException {
      backend.logOp(op, Json.stringify(receipt), at);
    }

    // ---- v1 compatibility (docs/wire-compatibility.md) ----

    /**
     * Empty when stored (or already stored), else the error text; any partial write is rolled back: the allowlist
     * per target in order; then, unless every target already has a dedup row (counted as stored, hash not
     * compared), the quota per target and the insert of the missing targets ({@code expires_at} null).
     */
    @Override
    public Optional<String> pushV1(StoreCommand.PushV1 p) throws StoreException {
      List<Enrolment> enrolled = new ArrayList<>(p.targets().size());
      for (StoreCommand.V1Target t : p.targets()) {
        // The name was resolved on a read snapshot; a rotation, deny or revocation may have committed since.
        Optional<Enrolment> e = backend.enrolment(t.hostPubkey());
        if (e.isEmpty() || !e.get().live()) {
          return Optional.of("recipient host not enrolled: " + t.name());
        }
        if (!senderAccepted(t.hostPubkey(), p.senderPubkey())) {
          return Optional.of("sender not accepted by " + t.name());
        }
        enrolled.add(e.get());
      }
      if (p.precheckFailure() != null) {
        return Optional.of(p.precheckFailure());
      }
      List<Integer> missing = new ArrayList<>();
      for (int i = 0; i < p.targets().size(); i++) {
        if (backend.dedup(p.senderPubkey(), p.envelopeId(), p.targets().get(i).hostPubkey()).isEmpty()) {
          missing.add(i);
        }
      }
      if (missing.isEmpty()) {
        return Optional.empty();
      }
      long now = clock.millis();
      String nowIso = iso(now);
      savepoint();
      for (int i : missing) {
        StoreCommand.V1Target t = p.targets().get(i);
        String quota = quotaFailure(p.senderPubkey(), enrolled.get(i), p.wire().length);
        if (quota != null) {
          rollbackToSavepoint(); // all or nothing, seqs too
          return Optional.of(quota);
        }
        long seq = allocateSeq(t.hostPubkey(), now);
        insertItem(enrolled.get(i), new ItemRow(t.hostPubkey(), seq, "envelope", p.envelopeId(), p.senderPubkey(),
            p.senderHost(), p.wire(), p.wireHash(), p.wire().length, nowIso, null));
        backend.insertDedup(new DedupRow(p.senderPubkey(), p.envelopeId(), t.hostPubkey(), p.wireHash(), seq,
            nowIso));
      }
      release();
      return Optional.empty();
    }

    @Override
    public Long ackV1(StoreCommand.AckV1 a) throws StoreException {
      long head = backend.nextSeq(a.targetPubkey()) - 1;
      long cursor = Math.max(0, Math.min(head, a.cursor().orElse(0)));
      backend.raiseAcked(a.targetPubkey(), cursor); // first, as in ack
      backend.deleteThrough(a.targetPubkey(), cursor);
      return cursor;
    }
  }

  /** The parsed {@code iat} of a stored or new ad record (canonical JSON), or empty. */
  private static OptionalLong adIat(String record) {
    try {
      var iat = Json.parse(record).get("iat");
      return iat != null && iat.isTextual() ? IsoTime.parse(iat.textValue()) : OptionalLong.empty();
    } catch (IllegalArgumentException e) {
      return OptionalLong.empty();
    }
  }
}
