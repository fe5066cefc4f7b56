package io.mbxrelay.host;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.mbxrelay.crypto.Ed25519;
import io.mbxrelay.host.BlockingRelayClient.RelayUnreachable;
import io.mbxrelay.wire.CanonicalJson;
import io.mbxrelay.wire.Hashes;
import io.mbxrelay.wire.IsoTime;
import io.mbxrelay.wire.Json;
import io.mbxrelay.wire.ReceiptCheck;
import io.mbxrelay.wire.Utf8;
import java.sql.SQLException;
import java.util.List;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The receiver side (docs/protocol.md §6 "Receiver", §7.4; docs/host-library.md "What a tick does" step 5,
 * "Receiving"): up to 20 pages per tick, each item in its own store transaction with its local effect and the
 * checkpoint, envelopes handed to the {@link HostApplication}, delivery receipts queued for them, receipts and
 * expiry notices applied, refusals quarantined; then the ack. Used by {@link HostAgent} only, under its store lock.
 */
final class Inbox extends AgentPart {

  private static final Logger LOG = LoggerFactory.getLogger(Inbox.class);
  private static final int MAX_PAGES = 20;

  private final RelaySession session;
  private final Outbox outbox;
  private final HostApplication app;
  /** Whether the last tick's pulls ended on a page without {@code more} (then waiting is worth it). */
  volatile boolean caughtUp;

  private final RelayLane lane;

  Inbox(AgentContext ctx, RelayLane lane, Outbox outbox, HostApplication app) {
    super(ctx, lane.url);
    this.lane = lane;
    this.session = lane.session;
    this.outbox = outbox;
    this.app = app;
  }

  void pullAll(TickState t, String relayPub, HostAgent.Prefetched pre) throws Exception {
    caughtUp = false;
    int maxPull = store.maxPull(url);
    for (int page = 0; page < MAX_PAGES; page++) {
      HostStore.Position pos = store.position(url)
          .orElseThrow();
      PullResult r;
      if (page == 0 && pre != null && pre.epoch().equals(pos.epoch()) && pre.after() == pos.receivedThrough()) {
        r = pre.result(); // the page a long-poll wait brought, asked from this very position
      } else {
        try {
          r = lane.transport(relayPub).pull(pos.receivedThrough(), maxPull, pos.epoch());
        } catch (RelayUnreachable e) {
          t.notes.add("pull failed (relay unreachable); retried next tick");
          return;
        }
      }
      if (r instanceof EpochChanged e) {
        if (e.currentEpoch().isEmpty()) {
          throw new TickStop("refused", "pull answered 409 without an epoch");
        }
        session.epochChange(t, e.currentEpoch(), "relay epoch changed (seen in a pull answer)");
        continue;
      }
      if (r instanceof Refused f) {
        if (f.status() == 401) {
          session.on401(t, relayPub, "pull");
          continue;
        }
        t.notes.add("pull refused: " + f.status() + " " + f.error());
        return;
      }
      if (r instanceof BadAnswer b) {
        t.notes.add("pull answer not usable: " + b.why());
        return;
      }
      PullResult.Page p = (PullResult.Page) r;
      if (p.headSeq() < pos.receivedThrough()) {
        session.epochChange(t, p.epoch(), "relay went back in time (head_seq " + p.headSeq() + " < received_through "
            + pos.receivedThrough() + ")");
        continue;
      }
      for (PullResult.PulledItem item : p.items()) {
        if (item.seq() <= pos.receivedThrough()) {
          continue;
        }
        processItem(t, p.epoch(), item, relayPub);
      }
      options.hook().at("checkpoint-before-ack");
      if (!ack(t, relayPub)) {
        return;
      }
      if (!p.more()) {
        caughtUp = true;
        return;
      }
    }
  }

  /** Acks through received_through when it passed the acked marker; false when the tick should stop pulling. */
  private boolean ack(TickState t, String relayPub) throws Exception {
    HostStore.Position pos = store.position(url)
        .orElseThrow();
    if (pos.receivedThrough() <= pos.ackedThrough()) {
      return true;
    }
    AckResult r;
    try {
      r = lane.transport(relayPub).ack(pos.epoch(), pos.receivedThrough());
    } catch (RelayUnreachable e) {
      t.notes.add("ack lost (relay unreachable); the next ack covers it");
      return false;
    }
    if (r instanceof AckResult.Acked a) {
      inRows.markAcked(url, pos.epoch(), pos.receivedThrough());
      return true;
    }
    if (r instanceof EpochChanged e && !e.currentEpoch().isEmpty()) {
      session.epochChange(t, e.currentEpoch(), "relay epoch changed (seen in an ack answer)");
      return true;
    }
    if (r instanceof AckResult.BadAck b) {
      session.epochChange(t, pos.epoch(), "relay went back in time (ack beyond head " + b.headSeq() + ")");
      return true;
    }
    t.notes.add("ack refused: " + (r instanceof Refused f ? f.status() + " " + f.error() : "bad answer"));
    return false;
  }

  private void processItem(TickState t, String epoch, PullResult.PulledItem item, String relayPub) throws Exception {
    int[] counts = new int[5];
    store.tx(c -> {
      String reason;
      try {
        reason = switch (item.kind()) {
          case "envelope" -> envelope(epoch, item, counts);
          case "receipt" -> receipt(item, counts);
          case "expired" -> notice(t, item, relayPub, counts);
          default -> "unknown kind";
        };
      } catch (SQLException e) {
        throw e;
      } catch (RuntimeException e) {
        throw e;
      } catch (Exception e) {
        throw new AppFailure(e);
      }
      if (reason != null) {
        inRows.quarantine(url, epoch, item.seq(), item.kind(), item.itemId(), item.senderPubkey(), reason,
            item.wire(), now());
        counts[4]++;
        LOG.info("item quarantined [kind: {}] [reason: {}]", item.kind(), reason);
      }
      options.hook().at("receive-before-commit");
      inRows.markReceived(url, epoch, item.seq());
      return null;
    });
    t.delivered += counts[0];
    t.duplicates += counts[1];
    t.receipts += counts[2];
    t.notices += counts[3];
    t.quarantined += counts[4];
  }

  /** The application's callback threw: rolled back, rethrown to the tick's caller. */
  static final class AppFailure extends RuntimeException {
    AppFailure(Exception cause) {
      super("the application's receive callback failed: " + cause.getClass().getSimpleName(), cause);
    }
  }

  private static JsonNode parse(byte[] wire) {
    try {
      return Json.parse(Utf8.decode(wire));
    } catch (IllegalArgumentException e) {
      return null;
    }
  }

  /** @return quarantine reason or null when done */
  private String envelope(String epoch, PullResult.PulledItem item, int[] counts) throws Exception {
    JsonNode env = parse(item.wire());
    if (env == null || !env.isObject()) {
      return "bad wire: not a JSON object";
    }
    if (!item.itemId().equals(env.path("id").asText(null))) {
      return "item id is not the envelope id";
    }
    Optional<String> peer = inRows.peerName(item.senderPubkey());
    if (peer.isEmpty()) {
      return "host not paired";
    }
    boolean seen = inRows.wasReceived(item.senderPubkey(), item.itemId());
    if (seen) {
      counts[1]++;
      requeueReceipt(item.itemId(), item.senderPubkey());
      return null;
    }
    HostApplication.Verdict v = app.receive(new HostApplication.Delivery(url, epoch, item.seq(), item.itemId(),
        item.senderPubkey(), peer.get(), item.wire(), store.connection()));
    if (v instanceof HostApplication.Verdict.Refused r) {
      return "refused by the application: " + r.reason();
    }
    inRows.markReceivedMessage(item.senderPubkey(), item.itemId(), url, epoch, item.seq(), now());
    if (v instanceof HostApplication.Verdict.Accepted a) {
      counts[0]++;
      queueReceipt(item.itemId(), item.senderPubkey(), a.recipient());
    } else {
      counts[1]++;
      if (!requeueReceipt(item.itemId(), item.senderPubkey())) {
        queueReceipt(item.itemId(), item.senderPubkey(), null);
      }
    }
    return null;
  }

  /** Queues a signed delivery receipt (docs/protocol.md §4.8) for the sender; its bytes are kept for every retry. */
  private void queueReceipt(String msgId, String senderPubkey, String recipient) throws SQLException {
    long n = Long.parseLong(store.meta("receipt_seq").orElse("0")) + 1;
    store.putMeta("receipt_seq", Long.toString(n));
    ObjectNode rec = Json.MAPPER.createObjectNode().put("v", 1).put("type", "receipt").put("msg", msgId)
        .put("recipient", recipient != null ? recipient : "owner@" + options.hostName()).put("state", "delivered")
        .put("at", IsoTime.format(now())).put("seq", n);
    if (!ReceiptCheck.isValidRec(rec)) {
      LOG.warn("delivery receipt not queued: the record would be invalid [msg length: {}]", msgId.length());
      return;
    }
    ObjectNode wire = Json.MAPPER.createObjectNode();
    wire.set("rec", rec);
    wire.put("sig", key.signB64(CanonicalJson.canonicalBytes(rec)));
    byte[] bytes = CanonicalJson.canonicalBytes(wire);
    rows.insertReceipt(url, ReceiptCheck.itemIdFor(rec), msgId, senderPubkey, bytes, Hashes.sha256Hex(bytes), now());
  }

  /**
   * A duplicate envelope re-queues its stored receipt (same bytes) on the relay it came through: that relay may have
   * lost it, or (several relays) the receipt so far went only through the relay the first copy came from. Returns
   * whether a receipt for that message exists on any relay.
   */
  private boolean requeueReceipt(String msgId, String senderPubkey) throws SQLException {
    List<Long> ids = rows.receiptIds(url, msgId, senderPubkey);
    for (long id : ids) {
      rows.requeueSent(id, now());
    }
    return !ids.isEmpty() || rows.copyReceiptTo(url, msgId, senderPubkey, now()) > 0;
  }

  private String receipt(PullResult.PulledItem item, int[] counts) throws SQLException {
    JsonNode w = parse(item.wire());
    JsonNode rec = w == null ? null : w.get("rec");
    JsonNode sig = w == null ? null : w.get("sig");
    if (!ReceiptCheck.isValidRec(rec) || sig == null || !sig.isTextual()) {
      return "bad receipt";
    }
    if (!ReceiptCheck.itemIdFor(rec).equals(item.itemId())) {
      return "item id is not the receipt id";
    }
    if (!store.isPeer(item.senderPubkey())) {
      return "receipt from a host that is not a peer";
    }
    if (!Ed25519.verify(item.senderPubkey(), CanonicalJson.canonicalBytes(rec), sig.textValue())) {
      return "receipt is not signed by the peer's key";
    }
    String msg = rec.get("msg").textValue();
    if (!rows.sentEnvelope(msg, item.senderPubkey())) {
      return "receipt for a message this host did not send to that host";
    }
    // whatever relay it came through, it settles every row of the message; the same receipt through another relay
    // (or again after an epoch change) changes nothing and is not counted
    if (outbox.settle(msg, item.senderPubkey()) > 0) {
      counts[2]++;
    }
    inRows.notePeerReceipt(item.senderPubkey(), now());
    return null;
  }

  private String notice(TickState t, PullResult.PulledItem item, String relayPub, int[] counts)
      throws SQLException {
    if (!relayPub.equals(item.senderPubkey())) {
      return "expiry notice not from the pinned relay key";
    }
    JsonNode w = parse(item.wire());
    JsonNode n = w == null ? null : w.get("notice");
    JsonNode sig = w == null ? null : w.get("sig");
    if (n == null || !n.isObject() || sig == null || !sig.isTextual()
        || !"relay-expired".equals(n.path("type").asText(null))) {
      return "bad expiry notice";
    }
    if (!Ed25519.verify(relayPub, CanonicalJson.canonicalBytes(n), sig.textValue())) {
      return "expiry notice is not signed by the pinned relay key";
    }
    String itemId = n.path("item_id").asText("");
    String target = n.path("target_pubkey").asText("");
    if (!item.itemId().equals("expired:" + itemId + ":" + target)) {
      return "expiry notice id does not match its content";
    }
    Optional<HostStore.OutboxRow> row = rows.envelope(url, itemId, target);
    if (row.isEmpty()) {
      return "expiry notice for an item this host did not send";
    }
    counts[3]++;
    outbox.expired(t, url, row.get());
    return null;
  }
}
