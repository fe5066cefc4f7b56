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
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The sender side (docs/protocol.md §6 "Sender", §7.3; docs/host-library.md "Peer encryption keys", "Several relays",
 * "What a tick does" steps 1, 3, 4): queueing messages (sealed at once for a pinned key, else waiting in
 * {@code drafts}), sealing the waiting ones once a verified key is known, keeping one outbox row per message and
 * relay in use, pushing each relay's due rows and recording its verified accept receipts, the sender's own deadlines
 * over all of a message's rows, and settling them. Used by {@link HostAgent} only, under its store lock.
 *
 * <p><b>Rows and messages.</b> A message to one peer has one row per relay, all with the same sealed bytes (sealed
 * once; resealed together only while no relay can hold them). A row's state is that relay's: {@code pending},
 * {@code repush}, {@code relay-accepted}, {@code dropped} (its relay is no longer in use), or a relay-level end
 * ({@code unconfirmed}, {@code undelivered}, {@code expired}) while other rows still carry the message. The message
 * settles when the peer's delivery receipt arrives through any relay (every row becomes {@code settled}); it raises
 * an alert only when its last live row ends.
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

  /** The relays in use, in order (the agent's list). */
  private final List<String> urls;

  Outbox(AgentContext ctx, List<String> urls) {
    super(ctx, null);
    this.urls = List.copyOf(urls);
  }

  private void requireRelay() {
    if (urls.isEmpty()) {
      throw new IllegalStateException("this host uses no relay: add one first (CLI: host relay set URL)");
    }
  }

  /** The smallest item limit of the relays in use (each from its last info, 524,288 before any). */
  private int itemLimit(StringBuilder whose) throws SQLException {
    int limit = Integer.MAX_VALUE;
    for (String u : urls) {
      int l = store.maxItemBytes(u);
      if (l < limit) {
        limit = l;
        whose.setLength(0);
        whose.append(u);
      }
    }
    return limit;
  }

  /**
   * Queues a message for one peer host (docs/host-library.md "Envelopes", "Peer encryption keys"): builds the v3
   * envelope (new ULID), and seals it for the peer's pinned encryption key right away, or keeps it on this host
   * until a tick has verified the peer's ad from a relay. Nothing is ever sent unsealed. Returns after the commit.
   *
   * @param draft what to send ({@code from}/{@code to} addresses, subject, body, kind)
   * @param targetPubkey the peer host's key (base64); must be an accepted peer
   * @return the envelope id and whether it is sealed yet
   * @throws SQLException on storage errors
   * @throws IllegalArgumentException when the target is not a peer or the draft is invalid (reason in the message)
   * @throws IllegalStateException when the agent uses no relay
   */
  HostAgent.Queued sendMessage(SealedEnvelope.Draft draft, String targetPubkey) throws SQLException {
    requireRelay();
    long now = now();
    String id = Ulid.next(now);
    ObjectNode plain = SealedEnvelope.build(draft, id, now);
    // the sealed wire carries the ciphertext twice (body and enc.body), so a body under the 256 KB envelope limit can
    // still be over a relay's item limit; its size does not depend on the key, so a throw-away key measures it
    int sealedBytes = seal(plain, io.mbxrelay.host.seal.EncKeyPair.generate().publicKeyB64()).length;
    StringBuilder whose = new StringBuilder();
    int limit = itemLimit(whose); // each relay's own limit from its last info (issue 21 bug 3)
    if (sealedBytes > limit) {
      throw new IllegalArgumentException("body too large: sealed, the envelope is " + sealedBytes + " bytes, over the"
          + " relay item limit of " + limit + " bytes (" + whose + " max_item_bytes; a sealed envelope is about 2.7"
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
        rows.insertDraft(urls.get(0), id, targetPubkey, Json.stringify(plain),
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
   * Queues sealed bytes, one row per relay in use; {@code encPub} (the key they are sealed for) and {@code plainJson}
   * (the plaintext envelope, kept on this host so the rows can be resealed if the peer's key changes before a relay
   * stored them) are null for bytes the application sealed itself.
   */
  private void insertOutbox(String msgId, String targetPubkey, byte[] wire, String encPub, String plainJson)
      throws SQLException {
    long now = now();
    String hash = Hashes.sha256Hex(wire);
    for (String u : urls) {
      rows.insertEnvelope(u, msgId, targetPubkey, wire, hash, encPub, plainJson, now);
    }
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
   * Queues an envelope durably for one target on every relay in use (docs/protocol.md §7.3: the wire bytes are
   * persisted before the first attempt and reused on every retry). Returns after the commit; pushing happens on
   * {@link HostAgent#tick()}.
   *
   * @param msgId the envelope id (= item id)
   * @param targetPubkey the target's pinned host key (base64); must be an accepted peer
   * @param wire the sealed envelope bytes for that target
   * @return the outcome
   * @throws SQLException on storage errors
   * @throws IllegalArgumentException when the target is not a peer
   * @throws IllegalStateException when the agent uses no relay
   */
  HostAgent.SendOutcome send(String msgId, String targetPubkey, byte[] wire) throws SQLException {
    if (isPlaintextEnvelope(wire)) {
      throw new IllegalArgumentException("a plaintext envelope (enc: null) is never sent: seal it (sendMessage)");
    }
    requireRelay();
    String hash = Hashes.sha256Hex(wire);
    synchronized (store) {
      return store.tx(c -> {
        if (!store.isPeer(targetPubkey)) {
          throw new IllegalArgumentException("target is not an accepted peer: add it first");
        }
        Optional<String> existing = rows.wireHash(msgId, targetPubkey);
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

  /** Settles every row of a message to one target, whatever relay it was on; returns the rows changed. */
  int settle(String msgId, String target) throws SQLException {
    return rows.markSettled(msgId, target, now());
  }

  /**
   * Keeps one row per message and relay in use (docs/host-library.md "Several relays"): a live message (a row
   * pending, to re-push, accepted or dropped, none settled) gets a row, with the same bytes, on each relay in use that
   * has none — a relay added later, or after {@code host relay set} moved this host to another URL; a dropped row on a
   * relay in use again is revived; live rows on relays no longer in use are dropped (their messages go through the
   * relays in use; nothing is silently gone). A delivery receipt waiting only on a relay no longer used moves to the
   * first relay in use. With no relay in use nothing moves.
   */
  void dispatch(TickState t) throws SQLException {
    if (urls.isEmpty()) {
      return;
    }
    long now = now();
    int[] n = store.tx(c -> {
      int copied = 0;
      for (String u : urls) {
        copied += rows.copyLiveEnvelopesTo(u, now);
      }
      copied += rows.moveWaitingReceiptsTo(urls, now);
      int revived = rows.reviveDropped(urls, now);
      int dropped = rows.dropOutside(urls);
      return new int[] {copied, revived, dropped};
    });
    if (n[2] > 0) {
      t.notes.add(n[2] + " outbox row(s) queued for a relay no longer in use dropped; their messages moved to "
          + String.join(", ", urls));
    }
    if (n[0] + n[1] > 0) {
      t.notes.add((n[0] + n[1]) + " queued item(s) now also queued for " + String.join(", ", urls));
    }
  }

  /**
   * The sender's own deadlines (docs/protocol.md §7.3): no relay notice needed. A row accepted by a relay whose
   * deadline ({@code accept.at + retention + 24 h}) passed, or one no relay accepted within its retention + 24 h,
   * ends on that relay; when a message's last live row ends it raises one alert ({@code unconfirmed}, or
   * {@code undelivered} when no relay ever accepted it). Also a message that has waited
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
        ctx.alert("waiting-for-key", null, d[2], d[1], text);
        return null;
      });
      t.notes.add(text);
    }
    Map<String, HostStore.OutboxRow> ended = new LinkedHashMap<>();
    for (HostStore.OutboxRow r : rows.pastDeadline(now)) {
      store.tx(c -> {
        rows.markUnconfirmed(r.id(), now);
        return null;
      });
      ended.putIfAbsent(r.msgId() + "|" + r.targetPubkey(), r);
    }
    for (HostStore.OutboxRow r : rows.pendingPastRetention(now, GRACE_MS)) {
      store.tx(c -> {
        rows.markUndelivered(r.id(), now);
        return null;
      });
      ended.putIfAbsent(r.msgId() + "|" + r.targetPubkey(), r);
    }
    for (HostStore.OutboxRow r : ended.values()) {
      if (rows.liveRows(r.msgId(), r.targetPubkey()) > 0) {
        continue; // another relay still carries it: its own deadline decides
      }
      String name = peers.getOrDefault(r.targetPubkey(), Fingerprint.ofB64(r.targetPubkey()));
      String text;
      String kind;
      if (rows.anyInState(r.msgId(), r.targetPubkey(), "unconfirmed")) {
        kind = "unconfirmed";
        text = rows.everReceiptFrom(r.targetPubkey())
            ? "Undelivered/unconfirmed to " + name + ": no delivery receipt for message " + r.msgId()
                + " by its deadline"
            : "Unconfirmed to " + name + ": no delivery confirmation for message " + r.msgId()
                + " (that host never sent a delivery receipt; it may be older than 0.5.3)";
      } else {
        kind = "undelivered";
        text = "Undelivered to " + name + ": " + (urls.size() > 1 ? "no relay ever accepted" : "the relay never accepted")
            + " message " + r.msgId() + " (last problem: " + r.lastError() + ")";
      }
      String alertText = text;
      store.tx(c -> {
        ctx.alert(kind, r.relay(), r.targetPubkey(), r.itemId(), alertText);
        return null;
      });
      t.notes.add(text);
    }
  }

  /**
   * A relay's valid expiry notice for a row (docs/protocol.md §4.10): the row ends on that relay; the message raises
   * the "Undelivered" alert only when no other relay still carries it.
   */
  void expired(TickState t, String relay, HostStore.OutboxRow row) throws SQLException {
    if (row.state().equals("settled") || row.state().equals("expired")) {
      return;
    }
    rows.markExpired(row.id(), now());
    String target = row.targetPubkey();
    String name = store.peers().getOrDefault(target, Fingerprint.ofB64(target));
    if (rows.liveRows(row.msgId(), target) > 0) {
      t.notes.add("the relay expired message " + row.itemId() + " before " + name + " pulled it; another relay"
          + " still carries it");
      return;
    }
    ctx.alert("expired", relay, target, row.itemId(), "Undelivered to " + name + ": the relay expired message "
        + row.itemId() + " before " + name + " pulled it");
  }

  /** A duration for people: minutes below 2 h, else hours. */
  static String waited(long ms) {
    return ms < 7_200_000L ? Math.max(1, ms / 60_000) + " min" : ms / 3_600_000 + " h";
  }

  /**
   * Seals the messages waiting for a key (docs/host-library.md "Peer encryption keys"): per peer, the pinned key,
   * else a relay's ad verified by {@link PeerEncKeys} (looked up once per tick, on the relays of this tick in order
   * until one serves a usable ad), else — when no relay can be asked — the newest verified ad while unexpired.
   * Without a usable key the message stays waiting with the reason (backoff 5 s doubling to 15 min); it is never
   * sent unsealed. A sealed message gets a row on every relay in use.
   *
   * @param open the relays whose session is open this tick, with their pinned keys
   */
  void sealWaiting(TickState t, Map<RelayLane, String> open) throws Exception {
    int maxBatch = store.maxBatch(urls.get(0));
    List<String[]> drafts = rows.draftsDue(now(), maxBatch);
    int sealed = 0;
    for (String[] r : drafts) {
      String target = r[2];
      PeerEncKeys.Resolution k = key(t, target, open);
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

  /** The peer's key as resolved once this tick. */
  private PeerEncKeys.Resolution key(TickState t, String target, Map<RelayLane, String> open) throws Exception {
    PeerEncKeys.Resolution k = t.keys.get(target);
    if (k == null) {
      k = resolve(target, open);
      t.keys.put(target, k);
    }
    return k;
  }

  /**
   * Reseals due rows for a peer's new encryption key (issue 21 bug 4): a message whose pending rows are sealed for a
   * key the peer no longer advertises (a newer verified ad) or no longer has pinned is sealed again for the current
   * key — one new ciphertext for all of its rows that no relay can hold (never pushed there, or every push there
   * definitely refused: {@code unsure} is 0). A row a relay may hold keeps its bytes: a reseal under the same id would
   * be a relay {@code conflict}.
   */
  void resealForNewKeys(TickState t, Map<RelayLane, String> open) throws Exception {
    Map<String, List<String[]>> byMessage = new LinkedHashMap<>();
    for (String[] r : rows.resealable(urls, now(), 500)) {
      byMessage.computeIfAbsent(r[4] + "|" + r[1], x -> new ArrayList<>()).add(r);
    }
    int resealed = 0;
    for (List<String[]> group : byMessage.values()) {
      String[] first = group.get(0);
      PeerEncKeys.Resolution k = key(t, first[1], open);
      if (k.encPub() == null || k.encPub().equals(first[2])) {
        continue;
      }
      byte[] wire = seal((ObjectNode) Json.parse(first[3]), k.encPub());
      String encPub = k.encPub();
      store.tx(c -> {
        for (String[] r : group) {
          rows.reseal(Long.parseLong(r[0]), wire, Hashes.sha256Hex(wire), encPub);
        }
        return null;
      });
      resealed++;
    }
    if (resealed > 0) {
      t.notes.add(resealed + " queued message(s) resealed for their peer's new encryption key");
    }
  }

  private PeerEncKeys.Resolution resolve(String target, Map<RelayLane, String> open) throws Exception {
    Optional<HostStore.Peer> p = store.peer(target);
    if (p.isEmpty()) {
      return PeerEncKeys.Resolution.none("the target is no longer an accepted peer");
    }
    PeerEncKeys.Resolution pinned = PeerEncKeys.pinned(p.get());
    if (pinned.encPub() != null) {
      return pinned;
    }
    // the relays of this tick in order: the first usable verified ad wins; a relay that cannot be asked (unreachable,
    // errors) is skipped, and so is one serving an ad that fails the checks (another relay may be honest)
    PeerEncKeys.Resolution definite = null;
    PeerEncKeys.Resolution failed = null;
    for (Map.Entry<RelayLane, String> lane : open.entrySet()) {
      EncKeyAnswer a;
      try {
        a = lane.getKey().transport(lane.getValue()).encKey(target);
      } catch (RelayUnreachable e) {
        continue;
      }
      if (a instanceof EncKeyAnswer.Found f) {
        HostStore.Peer peer = store.peer(target).orElseThrow(); // re-read: another relay's ad may have been taken
        PeerEncKeys.Resolution r = store.tx(c -> PeerEncKeys.fromRelay(store, peer, f.answer(), now()));
        if (r.encPub() != null) {
          return r;
        }
        LOG.warn("peer encryption key refused [reason: {}]", r.why());
        definite = definite == null ? r : definite;
      } else if (a instanceof Refused f && f.status() == 404) {
        definite = definite == null ? PeerEncKeys.Resolution.none("no encryption key: the relay has no ad for that"
            + " host (it publishes one when its host runs; or pin its key with `host peer add --enc-key`)")
            : definite;
      } else if (failed == null) {
        failed = PeerEncKeys.Resolution.none("no encryption key: enc-key look-up failed ("
            + (a instanceof Refused f ? f.status() + " " + f.error() : ((BadAnswer) a).why()) + ")");
      }
    }
    if (definite != null) {
      return definite;
    }
    // no relay could be asked: the newest verified ad while it is unexpired
    PeerEncKeys.Resolution c = PeerEncKeys.cached(store.peer(target).orElseThrow(), now());
    if (c.encPub() != null) {
      return c;
    }
    return failed != null ? failed : PeerEncKeys.Resolution.none("no encryption key: relay unreachable");
  }

  /** Pushes the due rows of one relay (docs/host-library.md "What a tick does" step 4). */
  void pushDue(TickState t, RelayLane lane, String relayPub) throws Exception {
    String url = lane.url;
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
        overLimit(t, url, r, wire.length, limit); // queued before this relay's limit was known: refused forever
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
      res = lane.transport(relayPub).push(items);
    } catch (RelayUnreachable e) {
      keepPending(t, due, "push outcome unknown (" + e.getMessage() + "); same bytes retried", true);
      return;
    }
    options.hook().at("push-answered-before-record");
    if (res instanceof Refused f && f.status() == 401) {
      keepPending(t, due, "push refused: 401 " + f.error(), false);
      lane.session.on401(t, relayPub, "push");
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
      lane.session.epochChange(t, seenEpoch, "relay epoch changed (seen in a push answer)");
    }
  }

  /** A row over its relay's item limit is not pushed there: it ends on that relay (an alert if it was the last). */
  private void overLimit(TickState t, String url, HostStore.OutboxRow r, int bytes, int limit) throws SQLException {
    String name = store.peers().getOrDefault(r.targetPubkey(), Fingerprint.ofB64(r.targetPubkey()));
    String text = "Undelivered to " + name + ": message " + r.msgId() + " is " + bytes + " bytes sealed, over the"
        + " relay's item limit of " + limit + " bytes (" + url + " max_item_bytes)";
    store.tx(c -> {
      rows.deferRow(r.id(), r.nextAt(), "over the relay item limit of " + limit + " bytes");
      rows.markUndelivered(r.id(), now());
      if (rows.liveRows(r.msgId(), r.targetPubkey()) == 0) {
        ctx.alert("undelivered", url, r.targetPubkey(), r.itemId(), text);
      }
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
