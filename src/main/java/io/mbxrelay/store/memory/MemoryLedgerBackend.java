package io.mbxrelay.store.memory;

import io.mbxrelay.store.model.DedupRow;
import io.mbxrelay.store.model.DenyEntry;
import io.mbxrelay.store.model.Enrolment;
import io.mbxrelay.store.EnrolmentCache;
import io.mbxrelay.store.model.ItemRow;
import io.mbxrelay.store.spi.LedgerBackend;
import io.mbxrelay.store.StoreException;
import io.mbxrelay.store.memory.MemoryStore.AdV1;
import io.mbxrelay.store.memory.MemoryStore.AdV2;
import io.mbxrelay.store.memory.MemoryStore.Client;
import io.mbxrelay.store.memory.MemoryStore.Damaged;
import io.mbxrelay.store.memory.MemoryStore.DedupKey;
import io.mbxrelay.store.memory.MemoryStore.DenyId;
import io.mbxrelay.store.memory.MemoryStore.ExpiryKey;
import io.mbxrelay.store.memory.MemoryStore.ItemKey;
import io.mbxrelay.store.memory.MemoryStore.Op;
import io.mbxrelay.store.memory.MemoryStore.SenderList;
import io.mbxrelay.store.memory.MemoryStore.ShareKey;
import io.mbxrelay.wire.KeySpelling;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * One writer session on a {@link MemoryStore} ({@link LedgerBackend}): the table operations as plain collection
 * operations, with the transaction semantics the SPI defines.
 *
 * <p><b>Transactions: an undo log.</b> {@link #begin()} takes the store's write lock (held until {@link #commit()} or
 * {@link #rollback()}); every change to a table or counter is applied in place and its inverse appended to the log. A
 * savepoint is a mark in the log; {@link #rollbackToSavepoint()} runs the inverses back to the mark, newest first, so
 * rows, usage counters and seq advances all return to what they were; {@link #rollback()} runs them all;
 * {@link #commit()} drops the log. Readers hold the read lock, so nothing uncommitted is ever seen, and the enrolment
 * cache is updated from the committed rows before {@code commit()} returns.
 *
 * <p><b>Errors.</b> {@code INTERNAL} for a table operation outside a transaction, a second {@code begin()}, or an
 * insert of an item whose (target, seq) exists (the SQL backends' primary-key violation); {@code UNAVAILABLE} when the
 * write lock is not had within 10 s (another session's transaction) or the wait is interrupted; {@code INTERNAL} too
 * for a {@code begin()} on a thread that has a transaction open in another session of the same store. Nothing here is ever
 * {@code CORRUPT} or a {@linkplain StoreException#retryable() conflict}.
 *
 * <p><b>Cost.</b> Lookups by key are O(1) or O(log n); {@link #accountUsage}, {@link #nameTaken},
 * {@link #liveEnrolmentCount}, {@link #liveKeys} and {@link #revokeByClient} scan the enrolments,
 * {@link #moveRemainingDedup} and {@link #pruneDedup} the dedup rows, {@link #moveAllowlists} the allowlists.
 *
 * <p>Threading: one thread at a time (the writer). {@link #enrolment} and {@link #nextSeq} may also be called outside
 * a transaction: then they read committed state under the read lock.
 */
public final class MemoryLedgerBackend implements LedgerBackend {
  private final MemoryStore s;
  /** Inverses of this transaction's changes, oldest first. */
  private final List<Runnable> undo = new ArrayList<>();
  /** Undo-log lengths at each open savepoint, innermost last. */
  private final List<Integer> savepoints = new ArrayList<>();
  /** Keys whose enrolment rows this transaction touched (the cache follows them at commit). */
  private final Set<String> enrolmentsChanged = new LinkedHashSet<>();
  private boolean open;

  MemoryLedgerBackend(MemoryStore store) {
    this.s = store;
  }

  // ---- identity ----

  @Override
  public String relayPubkey() {
    return s.relayPubkey();
  }

  @Override
  public String epoch() {
    return s.epoch();
  }

  @Override
  public EnrolmentCache enrolmentCache() {
    return s.enrolmentCache();
  }

  // ---- transaction control ----

  @Override
  public void begin() throws StoreException {
    if (open) {
      throw internal("transaction already open");
    }
    if (s.lock.isWriteLockedByCurrentThread()) { // the lock is reentrant: a second session must not slip in
      throw internal("this thread has a transaction open in another session of the store");
    }
    MemoryStore.acquire(s.lock.writeLock(), "begin");
    open = true;
  }

  @Override
  public void savepoint() throws StoreException {
    tx();
    savepoints.add(undo.size());
  }

  @Override
  public void release() throws StoreException {
    tx();
    if (savepoints.isEmpty()) {
      throw internal("no savepoint to release");
    }
    savepoints.remove(savepoints.size() - 1);
  }

  @Override
  public void rollbackToSavepoint() throws StoreException {
    tx();
    if (savepoints.isEmpty()) {
      throw internal("no savepoint to roll back to");
    }
    undoTo(savepoints.remove(savepoints.size() - 1));
  }

  /** Nothing to flush: "durable" here means committed in this object, which outlives the ledger, not the process. */
  @Override
  public void commit() throws StoreException {
    tx();
    EnrolmentCache cache = s.enrolmentCache();
    for (String key : enrolmentsChanged) {
      Enrolment row = s.enrolments.get(key);
      if (row == null) {
        cache.remove(key);
      } else {
        cache.put(row); // a revoked row leaves the cache
      }
    }
    end();
  }

  @Override
  public void rollback() {
    if (!open) {
      return;
    }
    undoTo(0);
    end();
  }

  private void undoTo(int mark) {
    for (int i = undo.size() - 1; i >= mark; i--) {
      undo.remove(i).run();
    }
  }

  private void end() {
    undo.clear();
    savepoints.clear();
    enrolmentsChanged.clear();
    open = false;
    if (s.lock.isWriteLockedByCurrentThread()) {
      s.lock.writeLock().unlock();
    }
  }

  /** Nothing to pick up: every session of a store updates the shared enrolment cache at its own commit. */
  @Override
  public void refresh() {
    // no other process writes this store
  }

  @Override
  public boolean probeWriter() throws StoreException {
    MemoryStore.acquire(s.lock.writeLock(), "probe");
    try {
      return s.epoch() != null;
    } finally {
      s.lock.writeLock().unlock();
    }
  }

  private void tx() throws StoreException {
    if (!open) {
      throw internal("no open transaction");
    }
  }

  private static StoreException internal(String message) {
    return new StoreException(StoreException.Kind.INTERNAL, message, null);
  }

  // ---- undo-logged changes ----

  private <K, V> void put(Map<K, V> m, K k, V v) {
    V old = m.put(k, v);
    undo.add(old == null ? () -> m.remove(k) : () -> m.put(k, old));
  }

  private <K, V> V remove(Map<K, V> m, K k) {
    V old = m.remove(k);
    if (old != null) {
      undo.add(() -> m.put(k, old));
    }
    return old;
  }

  // ---- meta and ops log ----

  @Override
  public void putHeartbeat(long nowMs) throws StoreException {
    tx();
    Long old = s.heartbeat;
    s.heartbeat = nowMs;
    undo.add(() -> s.heartbeat = old);
  }

  @Override
  public void logOp(String op, String receiptJson, String atIso) throws StoreException {
    tx();
    long id = ++s.lastOpId;
    undo.add(() -> s.lastOpId = id - 1);
    put(s.ops, id, new Op(atIso, op, receiptJson));
    while (s.ops.firstKey() <= id - 1000) {
      remove(s.ops, s.ops.firstKey());
    }
  }

  // ---- enrolments ----

  @Override
  public Optional<Enrolment> enrolment(String hostPubkey) throws StoreException {
    if (!open) {
      return s.read(() -> Optional.ofNullable(s.enrolments.get(hostPubkey)));
    }
    return Optional.ofNullable(s.enrolments.get(hostPubkey));
  }

  @Override
  public long liveEnrolmentCount() throws StoreException {
    tx();
    return s.enrolments.values().stream().filter(Enrolment::live).count();
  }

  /** Compared like SQLite's {@code account = ? AND lower(host_name) = lower(?)}: a null account matches nothing. */
  @Override
  public boolean nameTaken(String account, String hostName, String exceptKey) throws StoreException {
    tx();
    if (account == null) {
      return false;
    }
    String name = MemoryStore.asciiLower(hostName);
    for (Enrolment e : s.enrolments.values()) {
      if (e.live() && account.equals(e.account()) && MemoryStore.asciiLower(e.hostName()).equals(name)
          && !e.hostPubkey().equals(exceptKey)) {
        return true;
      }
    }
    return false;
  }

  @Override
  public void upsertEnrolment(Enrolment row) throws StoreException {
    tx();
    put(s.enrolments, row.hostPubkey(), new Enrolment(row.hostPubkey(), row.hostName(), row.ownerFp(), row.account(),
        row.authorizedBy(), row.enrolledAt(), null));
    enrolmentsChanged.add(row.hostPubkey());
  }

  @Override
  public boolean revoke(String hostPubkey, String atIso) throws StoreException {
    tx();
    Enrolment e = s.enrolments.get(hostPubkey);
    if (e == null || !e.live()) {
      return false;
    }
    put(s.enrolments, hostPubkey, new Enrolment(e.hostPubkey(), e.hostName(), e.ownerFp(), e.account(),
        e.authorizedBy(), e.enrolledAt(), atIso));
    enrolmentsChanged.add(hostPubkey);
    return true;
  }

  @Override
  public boolean anyRevoked(List<String> keys) throws StoreException {
    tx();
    for (String k : keys) {
      Enrolment e = s.enrolments.get(k);
      if (e != null && !e.live()) {
        return true;
      }
    }
    return false;
  }

  /** In key order (the order is not part of the contract; a fixed one keeps runs repeatable). */
  @Override
  public List<String> liveKeys() throws StoreException {
    tx();
    return s.enrolments.values().stream().filter(Enrolment::live).map(Enrolment::hostPubkey).sorted().toList();
  }

  @Override
  public Optional<String> clientIdOf(String hostPubkey) throws StoreException {
    tx();
    Client c = s.clients.get(hostPubkey);
    return c == null ? Optional.empty() : Optional.ofNullable(c.clientId());
  }

  @Override
  public void recordClient(String hostPubkey, String clientId, String org, String atIso) throws StoreException {
    tx();
    put(s.clients, hostPubkey, new Client(clientId, org, atIso));
  }

  @Override
  public void copyClient(String from, String to, String atIso) throws StoreException {
    tx();
    Client c = s.clients.get(from);
    if (c != null) {
      put(s.clients, to, new Client(c.clientId(), c.org(), atIso));
    }
  }

  @Override
  public int revokeByClient(String clientId, String atIso) throws StoreException {
    tx();
    List<String> keys = new ArrayList<>();
    for (Map.Entry<String, Client> e : s.clients.entrySet()) {
      if (clientId.equals(e.getValue().clientId())) {
        keys.add(e.getKey());
      }
    }
    int n = 0;
    for (String k : keys) {
      if (revoke(k, atIso)) {
        n++;
      }
    }
    return n;
  }

  // ---- deny list ----

  @Override
  public boolean denied(String kind, String value) throws StoreException {
    tx();
    return s.deny.containsKey(new DenyId(kind, value));
  }

  @Override
  public boolean addDeny(String kind, String value, String note, String atIso) throws StoreException {
    tx();
    DenyId id = new DenyId(kind, value);
    if (s.deny.containsKey(id)) {
      return false;
    }
    put(s.deny, id, new DenyEntry(kind, value, note, atIso));
    return true;
  }

  @Override
  public boolean removeDeny(String kind, String value) throws StoreException {
    tx();
    return remove(s.deny, new DenyId(kind, value)) != null;
  }

  // ---- sender allowlists and enc-key ads ----

  @Override
  public Optional<Set<String>> allowlist(String target) throws StoreException {
    tx();
    SenderList list = s.senderLists.get(target);
    if (list == null) {
      return Optional.empty();
    }
    Set<String> out = new HashSet<>();
    for (String k : list.senders()) {
      out.add(KeySpelling.canonicalOrSelf(k));
    }
    return Optional.of(Collections.unmodifiableSet(out));
  }

  @Override
  public Optional<String> allowlistIat(String target) throws StoreException {
    tx();
    SenderList list = s.senderLists.get(target);
    return list == null ? Optional.empty() : Optional.ofNullable(list.iat());
  }

  @Override
  public void putAllowlist(String target, List<String> senders, String iat, String record, String sig)
      throws StoreException {
    tx();
    put(s.senderLists, target, new SenderList(List.copyOf(senders), iat, record, sig));
  }

  @Override
  public void moveAllowlists(String oldKey, List<String> oldSpellings, String newKey) throws StoreException {
    tx();
    SenderList own = s.senderLists.get(oldKey);
    if (own != null) {
      remove(s.senderLists, oldKey);
      put(s.senderLists, newKey, own);
    }
    Set<String> olds = new HashSet<>(oldSpellings);
    for (Map.Entry<String, SenderList> e : List.copyOf(s.senderLists.entrySet())) {
      SenderList l = e.getValue();
      if (l.senders().stream().noneMatch(olds::contains)) {
        continue;
      }
      LinkedHashSet<String> next = new LinkedHashSet<>(); // each key once, as SQLite's json_group_array(DISTINCT …)
      for (String k : l.senders()) {
        next.add(olds.contains(k) ? newKey : k);
      }
      put(s.senderLists, e.getKey(), new SenderList(List.copyOf(next), l.iat(), l.record(), l.sig()));
    }
  }

  @Override
  public void putEncAdV1(String hostPubkey, String hostName, String encPub, String sig, String atIso)
      throws StoreException {
    tx();
    put(s.adsV1, hostPubkey, new AdV1(hostName, encPub, sig, atIso));
  }

  @Override
  public Optional<String> encAdV2(String hostPubkey) throws StoreException {
    tx();
    AdV2 ad = s.adsV2.get(hostPubkey);
    return ad == null ? Optional.empty() : Optional.of(ad.record());
  }

  @Override
  public void putEncAdV2(String hostPubkey, String record, String sig, String atIso) throws StoreException {
    tx();
    put(s.adsV2, hostPubkey, new AdV2(record, sig, atIso));
  }

  @Override
  public void dropEncAds(String hostPubkey) throws StoreException {
    tx();
    remove(s.adsV1, hostPubkey);
    remove(s.adsV2, hostPubkey);
  }

  // ---- seqs ----

  @Override
  public long nextSeq(String target) throws StoreException {
    if (!open) {
      return s.read(() -> s.nextSeq.getOrDefault(target, 1L));
    }
    return s.nextSeq.getOrDefault(target, 1L);
  }

  @Override
  public void useSeq(String target, long seq) throws StoreException {
    tx();
    if (seq + 1 > s.nextSeq.getOrDefault(target, 1L)) {
      put(s.nextSeq, target, seq + 1);
    }
  }

  // ---- dedup ----

  @Override
  public boolean insertDedup(DedupRow row) throws StoreException {
    tx();
    DedupKey k = new DedupKey(row.sender(), row.itemId(), row.target());
    if (s.dedup.containsKey(k)) {
      return false;
    }
    put(s.dedup, k, row);
    return true;
  }

  @Override
  public Optional<DedupRow> dedup(String sender, String itemId, String target) throws StoreException {
    tx();
    return Optional.ofNullable(s.dedup.get(new DedupKey(sender, itemId, target)));
  }

  @Override
  public void moveDedup(String sender, String itemId, String from, String to, long newSeq) throws StoreException {
    tx();
    DedupKey src = new DedupKey(sender, itemId, from);
    DedupKey dst = new DedupKey(sender, itemId, to);
    DedupRow row = s.dedup.get(src);
    if (row == null || s.dedup.containsKey(dst)) {
      return;
    }
    remove(s.dedup, src);
    put(s.dedup, dst, new DedupRow(sender, itemId, to, row.wireHash(), newSeq, row.acceptedAt()));
  }

  @Override
  public void moveRemainingDedup(String from, String to) throws StoreException {
    tx();
    List<DedupKey> keys = new ArrayList<>();
    for (DedupKey k : s.dedup.keySet()) {
      if (k.target().equals(from)) {
        keys.add(k);
      }
    }
    for (DedupKey k : keys) {
      DedupRow row = remove(s.dedup, k);
      DedupKey dst = new DedupKey(k.sender(), k.itemId(), to);
      if (!s.dedup.containsKey(dst)) {
        put(s.dedup, dst, new DedupRow(row.sender(), row.itemId(), to, row.wireHash(), row.seq(), row.acceptedAt()));
      }
    }
  }

  @Override
  public int pruneDedup(String beforeIso, int maxRows) throws StoreException {
    tx();
    List<DedupKey> gone = new ArrayList<>();
    for (Map.Entry<DedupKey, DedupRow> e : s.dedup.entrySet()) {
      if (gone.size() >= maxRows) {
        break;
      }
      DedupRow d = e.getValue();
      if (d.acceptedAt().compareTo(beforeIso) < 0 && !s.items.containsKey(new ItemKey(d.target(), d.seq()))) {
        gone.add(e.getKey());
      }
    }
    gone.forEach(k -> remove(s.dedup, k));
    return gone.size();
  }

  // ---- items ----

  /** Stores a copy of the wire bytes, so a caller that reuses its array cannot change a stored item. */
  @Override
  public void insertItem(Enrolment target, ItemRow item) throws StoreException {
    tx();
    ItemKey k = new ItemKey(item.target(), item.seq());
    if (s.items.containsKey(k)) {
      throw internal("insert item: (target, seq) exists");
    }
    put(s.items, k, new ItemRow(item.target(), item.seq(), item.kind(), item.itemId(), item.sender(),
        item.senderHost(), item.wire().clone(), item.wireHash(), item.bytes(), item.acceptedAt(), item.expiresAt()));
    if (item.expiresAt() != null) {
      ExpiryKey e = new ExpiryKey(item.expiresAt(), item.target(), item.seq());
      s.expiries.add(e);
      undo.add(() -> s.expiries.remove(e));
    }
    count(item.target(), item.sender(), 1, item.bytes());
  }

  /** Deletes one row and uncounts it; the row, or null when there was none. */
  private ItemRow delete(ItemKey k) {
    ItemRow row = remove(s.items, k);
    if (row == null) {
      return null;
    }
    if (row.expiresAt() != null) {
      ExpiryKey e = new ExpiryKey(row.expiresAt(), row.target(), row.seq());
      if (s.expiries.remove(e)) {
        undo.add(() -> s.expiries.add(e));
      }
    }
    count(row.target(), row.sender(), -1, -row.bytes());
    return row;
  }

  /** Moves every counter of a target's row by {@code n} items and {@code bytes} bytes; a counter at zero is dropped. */
  private void count(String target, String sender, long n, long bytes) {
    bump(s.targetUsage, target, n, bytes);
    bump(s.senderShare, new ShareKey(target, sender), n, bytes);
    bump(s.senderTotals, sender, n, bytes);
    Usage old = s.storeTotals;
    s.storeTotals = new Usage(old.items() + n, old.bytes() + bytes);
    undo.add(() -> s.storeTotals = old);
  }

  private <K> void bump(Map<K, Usage> m, K k, long n, long bytes) {
    Usage u = m.getOrDefault(k, Usage.NONE);
    Usage next = new Usage(u.items() + n, u.bytes() + bytes);
    if (next.items() == 0 && next.bytes() == 0) {
      remove(m, k);
    } else {
      put(m, k, next);
    }
  }

  private List<ItemKey> keysOf(String target, long fromSeq, long toSeq) {
    return List.copyOf(s.items.subMap(new ItemKey(target, fromSeq), true, new ItemKey(target, toSeq), true).keySet());
  }

  @Override
  public int deleteThrough(String target, long through) throws StoreException {
    tx();
    List<ItemKey> keys = keysOf(target, Long.MIN_VALUE, through);
    keys.forEach(this::delete);
    return keys.size();
  }

  @Override
  public boolean deleteItem(String target, long seq) throws StoreException {
    tx();
    return delete(new ItemKey(target, seq)) != null;
  }

  @Override
  public List<ItemRow> queue(String target) throws StoreException {
    tx();
    return List.copyOf(s.items.subMap(new ItemKey(target, Long.MIN_VALUE), true, new ItemKey(target, Long.MAX_VALUE),
        true).values());
  }

  @Override
  public int deleteQueue(String target) throws StoreException {
    tx();
    List<ItemKey> keys = keysOf(target, Long.MIN_VALUE, Long.MAX_VALUE);
    keys.forEach(this::delete);
    return keys.size();
  }

  @Override
  public Optional<ItemRow> item(String target, long seq) throws StoreException {
    tx();
    return Optional.ofNullable(s.items.get(new ItemKey(target, seq)));
  }

  @Override
  public void setAside(String target, long seq, String foundAtIso) throws StoreException {
    tx();
    ItemRow row = delete(new ItemKey(target, seq));
    if (row != null) {
      s.damaged.add(new Damaged(row, foundAtIso));
      undo.add(() -> s.damaged.remove(s.damaged.size() - 1));
    }
  }

  @Override
  public List<ItemRow> expiring(String atIso, int maxRows) throws StoreException {
    tx();
    List<ItemRow> out = new ArrayList<>();
    for (ExpiryKey e : s.expiries) {
      if (out.size() >= maxRows || e.expiresAt().compareTo(atIso) > 0) {
        break;
      }
      ItemRow r = s.items.get(new ItemKey(e.target(), e.seq()));
      out.add(new ItemRow(r.target(), r.seq(), r.kind(), r.itemId(), r.sender(), r.senderHost(), null, r.wireHash(),
          r.bytes(), r.acceptedAt(), r.expiresAt()));
    }
    return out;
  }

  @Override
  public long raiseAcked(String target, long through) throws StoreException {
    tx();
    Long stored = s.acked.get(target);
    if (stored == null || through > stored) {
      put(s.acked, target, through);
      return through;
    }
    return stored;
  }

  // ---- usage counters ----

  @Override
  public Usage targetUsage(String target) throws StoreException {
    tx();
    return s.targetUsage.getOrDefault(target, Usage.NONE);
  }

  @Override
  public Usage senderShare(String target, String sender) throws StoreException {
    tx();
    return s.senderShare.getOrDefault(new ShareKey(target, sender), Usage.NONE);
  }

  /** Summed over the account's live enrolments (a scan of the enrolments). */
  @Override
  public Usage accountUsage(String account) throws StoreException {
    tx();
    long items = 0;
    long bytes = 0;
    for (Enrolment e : s.enrolments.values()) {
      if (e.live() && account.equals(e.account())) {
        Usage u = s.targetUsage.getOrDefault(e.hostPubkey(), Usage.NONE);
        items += u.items();
        bytes += u.bytes();
      }
    }
    return new Usage(items, bytes);
  }

  @Override
  public Usage senderTotal(String sender) throws StoreException {
    tx();
    return s.senderTotals.getOrDefault(sender, Usage.NONE);
  }

  @Override
  public Usage storeTotals() throws StoreException {
    tx();
    return s.storeTotals;
  }

  /** Abandons an open transaction; the store and its rows stay. */
  @Override
  public void close() {
    rollback();
  }
}
