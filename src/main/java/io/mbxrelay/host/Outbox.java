package io.mbxrelay.host;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.mbxrelay.crypto.Fingerprint;
import io.mbxrelay.host.BlockingRelayClient.RelayUnreachable;
import io.mbxrelay.host.seal.SealException;
import io.mbxrelay.host.seal.SealedEnvelope;
import io.mbxrelay.host.seal.Ulid;
import io.mbxrelay.wire.Hashes;
import io.mbxrelay.wire.IsoTime;
import io.mbxrelay.wire.Json;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The sender side (docs/protocol.md §6 "Sender", §7.3; docs/host-library.md "Peer encryption keys", "What a tick
 * does" steps 1, 3, 4): queueing messages (sealed at once for a pinned key, else waiting in {@code drafts}), sealing
 * the waiting ones once a verified key is known, pushing due rows and recording verified accept receipts, the
 * sender's own deadlines, and settling rows. Used by {@link HostAgent} only, under its store lock.
 */
final class Outbox extends AgentPart {

  private static final Logger LOG = LoggerFactory.getLogger(Outbox.class);
  private static final long DAY_MS = 86_400_000L;
  private static final long GRACE_MS = DAY_MS;
  /**
   * The AgentMBX relays' default item limit ({@code max_item_bytes}, docs/protocol.md §4.7), assumed until a relay's
   * info says otherwise.
   */
  static final int MAX_ITEM_BYTES = 524_288;

  private final RelaySession session;

  Outbox(AgentContext ctx, RelaySession session) {
    super(ctx);
    this.session = session;
  }

  /**
   * Queues a message for one peer host (docs/host-library.md "Envelopes", "Peer encryption keys"): builds the v3
   * envelope (new ULID), and seals it for the peer's pinned encryption key right away, or keeps it on this host
   * until a tick has verified the peer's ad from the relay. Nothing is ever sent unsealed. Returns after the commit.
   *
   * @param draft what to send ({@code from}/{@code to} addresses, subject, body, kind)
   * @param targetPubkey the peer host's key (base64); must be an accepted peer
   * @return the envelope id and whether it is sealed yet
   * @throws SQLException on storage errors
   * @throws IllegalArgumentException when the target is not a peer or the draft is invalid (reason in the message)
   */
  HostAgent.Queued sendMessage(SealedEnvelope.Draft draft, String targetPubkey) throws SQLException {
    long now = now();
    String id = Ulid.next(now);
    ObjectNode plain = SealedEnvelope.build(draft, id, now);
    // the sealed wire carries the ciphertext twice (body and enc.body), so a body under the 256 KB envelope limit can
    // still be over the relay's item limit; its size does not depend on the key, so a throw-away key measures it
    int sealedBytes = seal(plain, io.mbxrelay.host.seal.EncKeyPair.generate().publicKeyB64()).length;
    int limit = store.maxItemBytes(url); // the relay's own limit from its last info (issue 21 bug 3)
    if (sealedBytes > limit) {
      throw new IllegalArgumentException("body too large: sealed, the envelope is " + sealedBytes + " bytes, over the"
          + " relay item limit of " + limit + " bytes (" + url + " max_item_bytes; a sealed envelope is about 2.7"
          + " times its body)");
    }
    synchronized (store) {
      return store.tx(c -> {
        HostStore.Peer p = store.peer(targetPubkey)
            .orElseThrow(() -> new IllegalArgumentException("target is not an accepted peer: add it first"));
        PeerEncKeys.Resolution k = PeerEncKeys.pinned(p);
        if (k.encPub() != null) {
          insertOutbox(id, targetPubkey, seal(plain, k.encPub()), k.encPub(), Json.stringify(plain));
          return new HostAgent.Queued(id, true);
        }
        rows.insertDraft(url, id, targetPubkey, Json.stringify(plain),
            "waiting for the peer's encryption key (looked up on the next tick)", now);
        return new HostAgent.Queued(id, false);
      });
    }
  }

  private byte[] seal(ObjectNode plain, String encPub) {
    try {
      return SealedEnvelope.seal(plain, io.mbxrelay.wire.B64.decodeLenient(encPub).orElseThrow(), options.hostName(),
          key);
    } catch (SealException e) {
      throw new IllegalStateException("cannot seal for the peer's key: " + e.getMessage());
    }
  }

  /**
   * Queues sealed bytes; {@code encPub} (the key they are sealed for) and {@code plainJson} (the plaintext envelope,
   * kept on this host so the row can be resealed if the peer's key changes before the relay stored it) are null for
   * bytes the application sealed itself.
   */
  private void insertOutbox(String msgId, String targetPubkey, byte[] wire, String encPub, String plainJson)
      throws SQLException {
    long now = now();
    rows.insertEnvelope(url, msgId, targetPubkey, wire, Hashes.sha256Hex(wire), encPub, plainJson, now);
  }

  /** Whether the bytes are an envelope object whose {@code enc} is null, i.e. with a readable body. */
  private static boolean isPlaintextEnvelope(byte[] wire) {
    try {
      JsonNode e = Json.parse(wire);
      return e.isObject() && e.has("enc") && e.get("enc").isNull();
    } catch (IllegalArgumentException notJson) {
      return false; // not an envelope the relay would store either; it answers rejected:bad wire
    }
  }

  /**
   * Queues an envelope durably for one target (docs/protocol.md §7.3: the wire bytes are persisted before the first attempt
   * and reused on every retry). Returns after the commit; pushing happens on {@link HostAgent#tick()}.
   *
   * @param msgId the envelope id (= item id)
   * @param targetPubkey the target's pinned host key (base64); must be an accepted peer
   * @param wire the sealed envelope bytes for that target
   * @return the outcome
   * @throws SQLException on storage errors
   * @throws IllegalArgumentException when the target is not a peer
   */
  HostAgent.SendOutcome send(String msgId, String targetPubkey, byte[] wire) throws SQLException {
    if (isPlaintextEnvelope(wire)) {
      throw new IllegalArgumentException("a plaintext envelope (enc: null) is never sent: seal it (sendMessage)");
    }
    String hash = Hashes.sha256Hex(wire);
    synchronized (store) {
      return store.tx(c -> {
        if (!store.isPeer(targetPubkey)) {
          throw new IllegalArgumentException("target is not an accepted peer: add it first");
        }
        Optional<String> existing = rows.wireHash(url, msgId, targetPubkey);
        if (existing.isPresent()) {
          return existing.get().equals(hash) ? HostAgent.SendOutcome.ALREADY_QUEUED : HostAgent.SendOutcome.CONFLICT;
        }
        insertOutbox(msgId, targetPubkey, wire, null, null);
        return HostAgent.SendOutcome.QUEUED;
      });
    }
  }

  /**
   * Settles the envelope rows of a message for one target because the application learnt of the delivery by
   * another path (e.g. a LAN receipt) — docs/protocol.md §7.9 "or over the LAN".
   *
   * @param msgId the message id
   * @param targetPubkey the target host key
   * @return whether a row changed
   * @throws SQLException on storage errors
   */
  boolean markDelivered(String msgId, String targetPubkey) throws SQLException {
    synchronized (store) {
      return store.tx(c -> settle(msgId, targetPubkey)) > 0;
    }
  }

  int settle(String msgId, String target) throws SQLException {
    return rows.markSettled(msgId, target, now());
  }

  /**
   * Rows queued for another relay URL (after {@code host relay set} moved this host to a new URL) would otherwise
   * never be pushed nor reach their deadline: they move to the current relay, relay-accepted ones as {@code repush}
   * (the new relay may not hold them; dedup absorbs it when it does). Never silently gone (issue: host side).
   */
  void adoptRowsOfOtherRelays(TickState t) throws SQLException {
    int moved = rows.adoptOutboxRows(url, now());
    moved += rows.adoptDrafts(url, now());
    if (moved > 0) {
      t.notes.add(moved + " outbox row(s) queued for another relay URL moved to " + url);
    }
  }

  /**
   * The sender's own deadlines (docs/protocol.md §7.3): no relay notice needed. Also a message that has waited
   * {@link HostAgent.Options#keyWaitAlertMs()} for its peer's encryption key raises one {@code waiting-for-key} alert
   * (issue 21 bug 5); it keeps waiting.
   */
  void checkDeadlines(TickState t) throws SQLException {
    long now = now();
    Map<String, String> peers = store.peers();
    for (String[] d : rows.draftsWaitingSince(now - options.keyWaitAlertMs())) {
      String name = peers.getOrDefault(d[2], Fingerprint.ofB64(d[2]));
      String text = "Not sent yet to " + name + ": message " + d[1] + " has waited " + waited(now - Long.parseLong(
          d[3])) + " for " + name + "'s encryption key (" + d[4] + "); it stays queued and goes out once a key is"
          + " known (" + name + " advertises one when it runs, or pin it with `host peer add --enc-key`)";
      store.tx(c -> {
        rows.markDraftAlerted(Long.parseLong(d[0]), now);
        ctx.alert("waiting-for-key", d[2], d[1], text);
        return null;
      });
      t.notes.add(text);
    }
    for (HostStore.OutboxRow r : rows.pastDeadline(url, now)) {
      String name = peers.getOrDefault(r.targetPubkey(), Fingerprint.ofB64(r.targetPubkey()));
      boolean everReceipt = rows.everReceiptFrom(r.targetPubkey());
      String text = everReceipt
          ? "Undelivered/unconfirmed to " + name + ": no delivery receipt for message " + r.msgId()
              + " by its deadline"
          : "Unconfirmed to " + name + ": no delivery confirmation for message " + r.msgId()
              + " (that host never sent a delivery receipt; it may be older than 0.5.3)";
      store.tx(c -> {
        rows.markUnconfirmed(r.id(), now);
        ctx.alert("unconfirmed", r.targetPubkey(), r.itemId(), text);
        return null;
      });
      t.notes.add(text);
    }
    int retention = store.retentionDays(url);
    long limit = now - retention * DAY_MS - GRACE_MS;
    for (HostStore.OutboxRow r : rows.pendingCreatedBy(url, limit)) {
      String name = peers.getOrDefault(r.targetPubkey(), Fingerprint.ofB64(r.targetPubkey()));
      String text = "Undelivered to " + name + ": the relay never accepted message " + r.msgId()
          + " (last problem: " + r.lastError() + ")";
      store.tx(c -> {
        rows.markUndelivered(r.id(), now);
        ctx.alert("undelivered", r.targetPubkey(), r.itemId(), text);
        return null;
      });
      t.notes.add(text);
    }
  }

  /** A duration for people: minutes below 2 h, else hours. */
  static String waited(long ms) {
    return ms < 7_200_000L ? Math.max(1, ms / 60_000) + " min" : ms / 3_600_000 + " h";
  }

  /**
   * Seals the messages waiting for a key (docs/host-library.md "Peer encryption keys"): per peer, the pinned key,
   * else the relay's ad verified by {@link PeerEncKeys} (looked up once per tick), else — when the relay cannot be
   * asked — the newest verified ad while unexpired. Without a usable key the message stays waiting with the reason
   * (backoff 5 s doubling to 15 min); it is never sent unsealed.
   */
  void sealWaiting(TickState t, String relayPub) throws Exception {
    int maxBatch = store.maxBatch(url);
    List<String[]> drafts = rows.draftsDue(url, now(), maxBatch);
    Map<String, PeerEncKeys.Resolution> keys = t.keys;
    int sealed = 0;
    for (String[] r : drafts) {
      String target = r[2];
      PeerEncKeys.Resolution k = keys.get(target);
      if (k == null) {
        k = resolve(target, relayPub);
        keys.put(target, k);
      }
      if (k.encPub() != null) {
        ObjectNode plain = (ObjectNode) Json.parse(r[3]);
        byte[] wire = seal(plain, k.encPub());
        String encPub = k.encPub();
        store.tx(c -> {
          insertOutbox(r[1], target, wire, encPub, r[3]);
          rows.deleteDraft(Long.parseLong(r[0]));
          return null;
        });
        sealed++;
      } else {
        String why = k.why();
        long delay = ctx.backoff(5_000, 900_000, Integer.parseInt(r[4]) + 1);
        rows.deferDraft(Long.parseLong(r[0]), now() + delay, why);
        t.notes.add("message " + r[1] + " to " + store.peers().getOrDefault(target, Fingerprint.ofB64(target))
            + " still waiting: " + why);
      }
    }
    if (sealed > 0) {
      t.notes.add(sealed + " waiting message(s) sealed for their peer's key");
    }
  }

  /**
   * Reseals due rows for a peer's new encryption key (issue 21 bug 4): a pending row sealed for a key the peer no
   * longer advertises (a newer verified ad) or no longer has pinned is sealed again for the current key — but only
   * while the relay cannot hold its bytes (never pushed, or every push definitely refused: {@code unsure} is 0). A row
   * the relay may hold keeps its bytes: a reseal under the same id would be a relay {@code conflict}.
   */
  void resealForNewKeys(TickState t, String relayPub) throws Exception {
    List<String[]> due = rows.resealable(url, now(), store.maxBatch(url));
    int resealed = 0;
    for (String[] r : due) {
      String target = r[1];
      PeerEncKeys.Resolution k = t.keys.get(target);
      if (k == null) {
        k = resolve(target, relayPub);
        t.keys.put(target, k);
      }
      if (k.encPub() == null || k.encPub().equals(r[2])) {
        continue;
      }
      byte[] wire = seal((ObjectNode) Json.parse(r[3]), k.encPub());
      String encPub = k.encPub();
      store.tx(c -> rows.reseal(Long.parseLong(r[0]), wire, Hashes.sha256Hex(wire), encPub));
      resealed++;
    }
    if (resealed > 0) {
      t.notes.add(resealed + " queued message(s) resealed for their peer's new encryption key");
    }
  }

  private PeerEncKeys.Resolution resolve(String target, String relayPub) throws Exception {
    Optional<HostStore.Peer> p = store.peer(target);
    if (p.isEmpty()) {
      return PeerEncKeys.Resolution.none("the target is no longer an accepted peer");
    }
    PeerEncKeys.Resolution pinned = PeerEncKeys.pinned(p.get());
    if (pinned.encPub() != null) {
      return pinned;
    }
    EncKeyAnswer a;
    try {
      a = ctx.transport(relayPub).encKey(target);
    } catch (RelayUnreachable e) {
      PeerEncKeys.Resolution c = PeerEncKeys.cached(p.get(), now());
      return c.encPub() != null ? c : PeerEncKeys.Resolution.none("no encryption key: relay unreachable");
    }
    if (a instanceof EncKeyAnswer.Found f) {
      PeerEncKeys.Resolution r = store.tx(c -> PeerEncKeys.fromRelay(store, p.get(), f.answer(), now()));
      if (r.encPub() == null) {
        LOG.warn("peer encryption key refused [reason: {}]", r.why());
      }
      return r;
    }
    if (a instanceof Refused f && f.status() == 404) {
      return PeerEncKeys.Resolution.none("no encryption key: the relay has no ad for that host (it publishes one when"
          + " its host runs; or pin its key with `host peer add --enc-key`)");
    }
    PeerEncKeys.Resolution c = PeerEncKeys.cached(p.get(), now());
    return c.encPub() != null ? c : PeerEncKeys.Resolution.none("no encryption key: enc-key look-up failed ("
        + (a instanceof Refused f ? f.status() + " " + f.error() : ((BadAnswer) a).why()) + ")");
  }

  void pushDue(TickState t, String relayPub) throws Exception {
    int maxBatch = store.maxBatch(url);
    List<HostStore.OutboxRow> due = this.rows.outboxDue(url, now(), maxBatch);
    if (due.isEmpty()) {
      return;
    }
    int limit = store.maxItemBytes(url);
    List<PushItem> items = new ArrayList<>(due.size());
    List<HostStore.OutboxRow> fit = new ArrayList<>(due.size());
    for (HostStore.OutboxRow r : due) {
      byte[] wire = this.rows.wire(r.id()).orElseThrow();
      if (wire.length > limit) {
        overLimit(t, r, wire.length, limit); // queued before this relay's limit was known: it would refuse it forever
        continue;
      }
      fit.add(r);
      items.add(new PushItem(r.kind(), r.itemId(), List.of(new PushItem.Target(r.targetPubkey(), wire))));
    }
    due = fit;
    if (due.isEmpty()) {
      return;
    }
    PushResult res;
    try {
      res = ctx.transport(relayPub).push(items);
    } catch (RelayUnreachable e) {
      keepPending(t, due, "push outcome unknown (" + e.getMessage() + "); same bytes retried", true);
      return;
    }
    options.hook().at("push-answered-before-record");
    if (res instanceof Refused f && f.status() == 401) {
      keepPending(t, due, "push refused: 401 " + f.error(), false);
      session.on401(t, relayPub, "push");
      return;
    }
    if (!(res instanceof PushResult.Pushed pushed)) {
      String why = res instanceof Refused f ? "push refused: " + f.status() + " " + f.error()
          + (RelaySession.transient_(f.status()) ? "" : " (permanent)")
          : res instanceof BadAnswer b ? "push answer not usable: " + b.why() : "relay key changed";
      // a 5xx (e.g. 503: the relay's writer timed out, outcome unknown) or an unreadable answer may follow a commit
      boolean unsure = res instanceof BadAnswer || res instanceof Refused f && f.status() >= 500;
      keepPending(t, due, why, unsure);
      return;
    }
    String currentEpoch = relays.epoch(url).orElse("");
    String seenEpoch = null;
    for (int i = 0; i < due.size(); i++) {
      HostStore.OutboxRow r = due.get(i);
      ItemOutcome o = pushed.items().get(i);
      if (o instanceof ItemOutcome.Accepted a) {
        long acceptedAt = IsoTime.parse(a.at()).orElse(now());
        int retention = store.retentionDays(url);
        long deadline = r.deadlineAt() != null ? r.deadlineAt() : acceptedAt + retention * DAY_MS + GRACE_MS;
        String state = r.kind().equals("envelope") ? "relay-accepted" : "sent";
        store.tx(c -> {
          this.rows.markAccepted(r.id(), state, a.targets().get(0).seq(), a.epoch(), Json.stringify(a.accept()),
              a.sig(), acceptedAt, deadline, a.duplicate() ? "duplicate" : null);
          return null;
        });
        t.accepted++;
        if (!a.epoch().equals(currentEpoch)) {
          seenEpoch = a.epoch();
        }
      } else {
        String why = o instanceof ItemOutcome.Rejected j ? "rejected:" + j.reason()
            : "unverified accept: " + ((ItemOutcome.Unverified) o).why();
        // the relay may hold bytes under this id: it claimed to (unverified), or holds other ones (conflict)
        boolean unsure = o instanceof ItemOutcome.Unverified
            || o instanceof ItemOutcome.Rejected j && j.reason().equals("conflict");
        keepPending(t, List.of(r), why, unsure);
      }
    }
    if (seenEpoch != null) {
      session.epochChange(t, seenEpoch, "relay epoch changed (seen in a push answer)");
    }
  }

  /** A row over the relay's item limit is not pushed: it becomes {@code undelivered} with an alert. */
  private void overLimit(TickState t, HostStore.OutboxRow r, int bytes, int limit) throws SQLException {
    String name = store.peers().getOrDefault(r.targetPubkey(), Fingerprint.ofB64(r.targetPubkey()));
    String text = "Undelivered to " + name + ": message " + r.msgId() + " is " + bytes + " bytes sealed, over the"
        + " relay's item limit of " + limit + " bytes (" + url + " max_item_bytes)";
    store.tx(c -> {
      rows.deferRow(r.id(), r.nextAt(), "over the relay item limit of " + limit + " bytes");
      rows.markUndelivered(r.id(), now());
      ctx.alert("undelivered", r.targetPubkey(), r.itemId(), text);
      return null;
    });
    t.notes.add(text);
  }

  /** Keeps rows pending with backoff; {@code unsure}: the relay may have stored these bytes (never resealed). */
  private void keepPending(TickState t, List<HostStore.OutboxRow> rows, String why, boolean unsure)
      throws SQLException {
    store.tx(c -> {
      for (HostStore.OutboxRow r : rows) {
        long delay = ctx.backoff(1_000, 900_000, r.attempts() + 1);
        this.rows.deferRow(r.id(), now() + delay, why);
        if (unsure) {
          this.rows.markUnsure(r.id());
        }
      }
      return null;
    });
    t.notAccepted += rows.size();
    t.notes.add(rows.size() + " row(s) kept pending: " + why);
  }
}
