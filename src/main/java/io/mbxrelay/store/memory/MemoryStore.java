package io.mbxrelay.store.memory;

import io.mbxrelay.config.RelayConfig;
import io.mbxrelay.store.model.DedupRow;
import io.mbxrelay.store.model.DenyEntry;
import io.mbxrelay.store.model.Enrolment;
import io.mbxrelay.store.EnrolmentCache;
import io.mbxrelay.store.model.ItemRow;
import io.mbxrelay.store.spi.LedgerBackend.Usage;
import io.mbxrelay.store.RelayLedger;
import io.mbxrelay.store.StoreException;
import java.time.Clock;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.NavigableSet;
import java.util.Objects;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.function.Supplier;

/**
 * A relay store held in plain Java collections (docs/architecture.md "Store: ledger and backends"): the executable
 * reference of the {@link io.mbxrelay.store.spi.LedgerBackend} contract, and the fast backend for tests that do not
 * exercise SQL. It plays the part of the database: writer sessions ({@link #newBackend()}, {@link MemoryLedgerBackend})
 * and reads ({@link MemoryReads}) are opened over one instance, and a test's "restart" opens a new ledger over the same
 * instance, which keeps every row, as a durable store would.
 *
 * <p><b>Not a production backend.</b> Nothing is written to disk: the state lives as long as this object and is gone
 * with the process. It is bounded by nothing but the heap (the ledger's quotas bound what it admits; each item holds
 * its wire bytes plus a few hundred bytes of keys and counters, each dedup row about 300 bytes). It is not offered as
 * a {@code store.backend} choice.
 *
 * <p>Tables (each as the SQLite schema has it, docs/protocol.md §5): enrolments, enrolment clients, deny list, sender
 * lists, v1 and v2 enc-key ads, seqs, acked, dedup, items (ordered by target then seq, with an index by
 * {@code expires_at} for the sweep), damaged items, usage counters per target, per (target, sender) and per sender, the
 * store totals, the heartbeat and the ops log (newest 1,000 entries). Per-account usage is summed over the account's
 * live enrolments when asked.
 *
 * <p>The relay key is given and the epoch (a UUID v4) is drawn when the store is created; both are fixed for its
 * life. There is no heartbeat-based epoch rotation: the state cannot outlive a stopped relay.
 *
 * <p>Threading: thread-safe. One write transaction runs at a time over the whole store: a session holds the write lock
 * from {@code begin()} to {@code commit()} or {@code rollback()}, so transactions of several sessions run one after
 * another, each as if alone (no conflicts, nothing to retry). Reads take the read lock, so they see only committed
 * state and wait while a write transaction is open, and a {@code begin()} waits for the reads in progress (unlike the
 * SQL backends' snapshot reads; there is no I/O under the lock, so either wait lasts as long as the work in memory).
 */
public final class MemoryStore {
  /** How long {@code begin()}, {@code probeWriter()} and a read wait for the lock before failing UNAVAILABLE, ms. */
  static final long LOCK_TIMEOUT_MS = 10_000;

  private final String relayPubkey;
  private final String epoch;
  private final EnrolmentCache cache = new EnrolmentCache();
  final ReentrantReadWriteLock lock = new ReentrantReadWriteLock();

  // ---- tables: read and written under the lock only ----

  /** host_pubkey → row, live or revoked. */
  final Map<String, Enrolment> enrolments = new HashMap<>();
  /** host_pubkey → the token client recorded at its enrolment. */
  final Map<String, Client> clients = new HashMap<>();
  /** (kind, value) → entry. */
  final Map<DenyId, DenyEntry> deny = new HashMap<>();
  /** target → its sender allowlist. */
  final Map<String, SenderList> senderLists = new HashMap<>();
  /** host_pubkey → v1 enc-key ad. */
  final Map<String, AdV1> adsV1 = new HashMap<>();
  /** host_pubkey → v2 enc-key ad record. */
  final Map<String, AdV2> adsV2 = new HashMap<>();
  /** target → next_seq (absent: 1). */
  final Map<String, Long> nextSeq = new HashMap<>();
  /** target → acked_through (absent: 0). */
  final Map<String, Long> acked = new HashMap<>();
  /** (sender, item id, target) → row. */
  final Map<DedupKey, DedupRow> dedup = new HashMap<>();
  /** (target, seq) → row, in target then seq order. */
  final NavigableMap<ItemKey, ItemRow> items = new TreeMap<>();
  /** Items that expire, in (expires_at, target, seq) order (the sweep's order). */
  final NavigableSet<ExpiryKey> expiries = new TreeSet<>();
  /** Items set aside because their wire no longer matched their hash. */
  final List<Damaged> damaged = new ArrayList<>();
  /** target → queued items and bytes (absent: none). */
  final Map<String, Usage> targetUsage = new HashMap<>();
  /** (target, sender) → what the sender holds in the target's queue (absent: none). */
  final Map<ShareKey, Usage> senderShare = new HashMap<>();
  /** sender → what it holds over all targets (absent: none). */
  final Map<String, Usage> senderTotals = new HashMap<>();
  /** Items and bytes of the whole store. */
  Usage storeTotals = Usage.NONE;
  /** The last heartbeat written, ms since the epoch, or null. */
  Long heartbeat;
  /** id → entry; the newest 1,000 are kept. */
  final NavigableMap<Long, Op> ops = new TreeMap<>();
  /** The last ops-log id handed out. */
  long lastOpId;

  /**
   * Creates an empty store pinned to a relay key, with a fresh epoch.
   *
   * @param relayPubkey the relay public key (base64, 44 chars)
   */
  public MemoryStore(String relayPubkey) {
    this.relayPubkey = Objects.requireNonNull(relayPubkey);
    this.epoch = UUID.randomUUID().toString();
  }

  /** The relay public key this store is pinned to (base64, 44 chars). */
  public String relayPubkey() {
    return relayPubkey;
  }

  /** The store epoch (a UUID v4 string, docs/protocol.md §5), fixed for the store's life. */
  public String epoch() {
    return epoch;
  }

  /** The committed live enrolments, shared by every session of this store (reads safe on any thread). */
  public EnrolmentCache enrolmentCache() {
    return cache;
  }

  /**
   * A writer session: transactions for one thread at a time.
   *
   * @return a new session; close it when done (closing it leaves the state)
   */
  public MemoryLedgerBackend newBackend() {
    return new MemoryLedgerBackend(this);
  }

  /**
   * The relay's writer store: the {@link RelayLedger} over a new writer session. Closing it closes the session, not
   * this store, so a ledger opened again over this store is a restart that kept every row.
   *
   * @param clock time source of the ledger
   * @param limits protocol limits (quotas, retention, caps)
   * @return the ledger, for one thread
   */
  public RelayLedger newLedger(Clock clock, RelayConfig.Limits limits) {
    return new RelayLedger(newBackend(), clock, limits);
  }

  /**
   * Runs a read of committed state under the read lock.
   *
   * @throws StoreException UNAVAILABLE when the lock was not had within {@link #LOCK_TIMEOUT_MS} or the wait was
   *     interrupted
   */
  <T> T read(Supplier<T> read) throws StoreException {
    ReentrantReadWriteLock.ReadLock r = lock.readLock();
    acquire(r, "read");
    try {
      return read.get();
    } finally {
      r.unlock();
    }
  }

  /** Takes a lock within {@link #LOCK_TIMEOUT_MS}, or fails UNAVAILABLE (the analogue of SQLite's busy timeout). */
  static void acquire(java.util.concurrent.locks.Lock l, String what) throws StoreException {
    try {
      if (!l.tryLock(LOCK_TIMEOUT_MS, TimeUnit.MILLISECONDS)) {
        throw new StoreException(StoreException.Kind.UNAVAILABLE, what + ": store busy", null);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new StoreException(StoreException.Kind.UNAVAILABLE, what + ": interrupted", e);
    }
  }

  // ---- row shapes ----

  /** A token client record: {@code client_id}, {@code org}, ISO time recorded. */
  record Client(String clientId, String org, String at) {}

  /** The deny list's key. */
  record DenyId(String kind, String value) {}

  /** A sender allowlist: the keys as published, the record's {@code iat} text, the record and its signature. */
  record SenderList(List<String> senders, String iat, String record, String sig) {}

  /** A v1 enc-key ad: the name it was published under, the key, its signature, ISO time stored. */
  record AdV1(String hostName, String encPub, String sig, String at) {}

  /** A v2 enc-key ad: the record (canonical JSON), its signature, ISO time stored. */
  record AdV2(String record, String sig, String at) {}

  /** A set-aside item and the ISO time it was found damaged. */
  record Damaged(ItemRow row, String foundAt) {}

  /** An ops-log entry. */
  record Op(String at, String op, String receipt) {}

  /** The dedup key. */
  record DedupKey(String sender, String itemId, String target) {}

  /** A (target, sender) pair of the per-target sender counters. */
  record ShareKey(String target, String sender) {}

  /** The items key, ordered by target then seq. */
  record ItemKey(String target, long seq) implements Comparable<ItemKey> {
    @Override
    public int compareTo(ItemKey o) {
      int c = target.compareTo(o.target);
      return c != 0 ? c : Long.compare(seq, o.seq);
    }
  }

  /** The sweep's order: expires_at, target, seq. */
  record ExpiryKey(String expiresAt, String target, long seq) implements Comparable<ExpiryKey> {
    @Override
    public int compareTo(ExpiryKey o) {
      int c = expiresAt.compareTo(o.expiresAt);
      if (c == 0) {
        c = target.compareTo(o.target);
      }
      return c != 0 ? c : Long.compare(seq, o.seq);
    }
  }

  /** SQLite's {@code lower()}: ASCII letters only (names match case-insensitively that way, docs/protocol.md §2). */
  static String asciiLower(String s) {
    char[] out = s.toCharArray();
    for (int i = 0; i < out.length; i++) {
      if (out[i] >= 'A' && out[i] <= 'Z') {
        out[i] = (char) (out[i] + 32);
      }
    }
    return new String(out);
  }
}
