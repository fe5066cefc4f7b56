package io.mbxrelay.store.sqlite;

import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;

/**
 * What the single writer keeps in memory so a push costs two row inserts and no lookups (issue 9): per-target
 * {@code next_seq}, queue and sender-share usage, account usage and sender allowlists. Every entry is derived from the
 * tables as the writer's own connection sees them (including the open transaction's writes), loaded on first use and
 * kept right by the writer's own changes; anything the writer cannot follow exactly (a rolled-back transaction, a
 * rotation, a sweep, a change by another process) drops the affected entries, which are then read again.
 *
 * <p>Own code rather than a cache library: correctness depends on invalidating inside the writer's transaction
 * boundaries, which a general-purpose cache does not model. Bounded: usage and allowlist entries are evicted
 * least-recently-used beyond the limits below (an evicted entry is simply re-read).
 *
 * <p>Threading: writer thread only.
 */
final class WriterState {
  /** Usage entries kept (one per target with a queue). */
  static final int MAX_TARGET_USAGE = 20_000;
  /** Sender keys held by cached allowlists, in total (≈ 100 bytes each). */
  static final int MAX_ALLOWLIST_KEYS = 100_000;

  /** Items and bytes queued for one target, in total and per sender (docs/protocol.md §3 "Quota messages"). */
  static final class TargetUsage {
    long items;
    long bytes;
    /** sender → {items, bytes}; null until first needed (counted from the target's rows). */
    Map<String, long[]> bySender;

    void add(String sender, long n, long b) {
      items += n;
      bytes += b;
      if (bySender != null) {
        long[] s = bySender.computeIfAbsent(sender, k -> new long[2]);
        s[0] += n;
        s[1] += b;
        if (s[0] <= 0) {
          bySender.remove(sender);
        }
      }
    }
  }

  /** One counted change of a target's queue, kept until its command (or item) is known to stay. */
  record Delta(io.mbxrelay.store.model.Enrolment target, String sender, long items, long bytes) {}

  /** The counted changes of the running command, undone if it is rolled back to its savepoint. */
  final java.util.ArrayList<Delta> journal = new java.util.ArrayList<>();

  /** A seq advance, kept while a savepoint could still undo it: the target's next seq before. */
  record SeqUndo(String target, Long before) {}

  /** The seq advances since the outermost open savepoint. */
  final java.util.ArrayList<SeqUndo> seqJournal = new java.util.ArrayList<>();

  /** target → {items, bytes} changed in the open transaction, written to {@code queue_usage} before COMMIT. */
  final Map<String, long[]> pending = new HashMap<>();

  /** sender → {items, bytes} changed in the open transaction, written to {@code sender_totals} before COMMIT. */
  final Map<String, long[]> pendingSenders = new HashMap<>();

  /**
   * Committed usage values that are in the usage log but not yet in {@code queue_usage}/{@code sender_totals}
   * ({@link UsageLog}): {@link UsageLog#mapKey} → {items, bytes}, in key order for the sweep that folds them.
   */
  final java.util.TreeMap<String, long[]> unfolded = new java.util.TreeMap<>();
  /** {@link WriterCounters#DIRECT_KEYS}; lower in tests, so few keys take the log's path. */
  int directKeys = WriterCounters.DIRECT_KEYS;
  /** {@link WriterCounters#SWEEP_TRANSACTIONS}; lower in tests, so sweeps end often. */
  int sweepTransactions = WriterCounters.SWEEP_TRANSACTIONS;
  /** Whether {@link #unfolded} and the sweep position follow the log; false: replay the log before any use. */
  boolean unfoldedLoaded;
  /** Whether {@code usage_log} may hold rows. */
  boolean logRows;
  /** The next key the running sweep folds from ("" at its start). */
  String sweepCursor = "";
  /** Transactions since the running sweep started. */
  int sweepStep;
  /** The largest log row id when the running sweep started: rows up to it are superseded once it ends. */
  long sweepStartLogId;

  /** sender → {items, bytes} over all targets, as the open transaction sees it (loaded on first use). */
  final LinkedHashMap<String, long[]> senderTotals = new LinkedHashMap<>(1024, 0.75f, true) {
    @Override
    protected boolean removeEldestEntry(Map.Entry<String, long[]> eldest) {
      return size() > MAX_TARGET_USAGE;
    }
  };

  /** {items, bytes} of the whole store as the open transaction sees it; null until first needed. */
  long[] storeTotals;

  /** target → its next seq as the open transaction sees it (the store's floor and queue, then this writer's pushes). */
  final Map<String, Long> nextSeq = new HashMap<>();

  final LinkedHashMap<String, TargetUsage> usage = new LinkedHashMap<>(1024, 0.75f, true) {
    @Override
    protected boolean removeEldestEntry(Map.Entry<String, TargetUsage> eldest) {
      return size() > MAX_TARGET_USAGE;
    }
  };

  /** account → {items, bytes} over the account's live hosts. */
  final Map<String, long[]> accountUsage = new HashMap<>();

  /** target → its allowlist, or {@link #NO_LIST} when it has none. */
  private final LinkedHashMap<String, Set<String>> allowlists = new LinkedHashMap<>(1024, 0.75f, true);
  private int allowlistKeys;
  static final Set<String> NO_LIST = Set.of();

  Set<String> allowlist(String target) {
    return allowlists.get(target);
  }

  void putAllowlist(String target, Set<String> list) {
    Set<String> old = allowlists.put(target, list);
    allowlistKeys += list.size() - (old == null ? 0 : old.size());
    var it = allowlists.entrySet().iterator();
    while (allowlistKeys > MAX_ALLOWLIST_KEYS && it.hasNext()) {
      var e = it.next();
      if (e.getKey().equals(target)) {
        continue;
      }
      allowlistKeys -= e.getValue().size();
      it.remove();
    }
  }

  void removeAllowlist(String target) {
    Set<String> old = allowlists.remove(target);
    if (old != null) {
      allowlistKeys -= old.size();
    }
  }

  /** Drops the cached usage and lists (after a rotation or a deny: rare commands); seqs and pending stay. */
  void dropUsageAndLists() {
    usage.clear();
    accountUsage.clear();
    senderTotals.clear();
    storeTotals = null;
    allowlists.clear();
    allowlistKeys = 0;
  }

  /** Starts a sweep at the first key; log rows up to {@code logId} are superseded once it ends. */
  void startSweep(long logId) {
    sweepStartLogId = logId;
    sweepCursor = "";
    sweepStep = 0;
  }

  /** Forgets the unfolded values and the sweep: they are replayed from the log before their next use. */
  void dropUnfolded() {
    unfolded.clear();
    unfoldedLoaded = false;
    startSweep(0);
  }

  /** Drops everything (after a failed transaction or a change made by another process). */
  void dropAll() {
    dropUnfolded();
    nextSeq.clear();
    pending.clear();
    pendingSenders.clear();
    journal.clear();
    seqJournal.clear();
    dropUsageAndLists();
  }
}
