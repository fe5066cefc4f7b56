package io.mbxrelay.http;

import static io.mbxrelay.http.HttpAnswers.answer;
import static io.mbxrelay.http.HttpAnswers.bodyObject;
import static io.mbxrelay.http.HttpAnswers.guarded;
import static io.mbxrelay.http.HttpAnswers.ok;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.mbxrelay.crypto.Ed25519;
import io.mbxrelay.config.RelayConfig;
import io.mbxrelay.metrics.Outcome;
import io.mbxrelay.metrics.RateLimitedLogger;
import io.mbxrelay.store.model.AckOutcome;
import io.mbxrelay.store.model.Enrolment;
import io.mbxrelay.store.model.PushOutcome;
import io.mbxrelay.store.StoreCommand;
import io.mbxrelay.wire.AcceptReceipt;
import io.mbxrelay.wire.B64;
import io.mbxrelay.wire.CanonicalJson;
import io.mbxrelay.wire.Hashes;
import io.mbxrelay.wire.JsNumber;
import io.mbxrelay.wire.Json;
import io.mbxrelay.wire.PushBody;
import io.mbxrelay.wire.KeySpelling;
import io.mbxrelay.wire.WireCheck;
import io.vertx.ext.web.RoutingContext;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The item endpoints (docs/protocol.md §3): {@code POST /v2/relay/items} (the checks the request alone decides, one
 * {@link StoreCommand.PushBatch} for the writer, the signed accept receipts), {@code GET /v2/relay/items} (pages,
 * long polls, the page budget, damaged rows set aside) and {@code POST /v2/relay/ack}. Safe on any event loop.
 */
final class ItemRoutes {
  private static final Logger LOG = LoggerFactory.getLogger(ItemRoutes.class);
  private static final RateLimitedLogger WARN = new RateLimitedLogger(LOG);

  private final RelayServices s;
  private final RelayConfig.Limits limits;

  ItemRoutes(RelayServices services) {
    this.s = Objects.requireNonNull(services);
    this.limits = services.config().limits();
  }

  private long now() {
    return s.clock().millis();
  }

  /**
   * One pushed item after the checks that need no store (docs/protocol.md §3 push v2 steps 1–5 as far as the request alone
   * decides them): either refused already ({@code early} set) or a {@link StoreCommand.Push} for the writer.
   */
  private record PreparedItem(String echoId, io.mbxrelay.store.model.RejectReason.Rejection early, StoreCommand.Push push,
      List<String> keysAsSent) {
    PreparedItem(String echoId, io.mbxrelay.store.model.RejectReason.Rejection early, StoreCommand.Push push) {
      this(echoId, early, push, null);
    }
  }

  void push(RoutingContext ctx) {
    Enrolment caller = ctx.get(HopAuthHandler.CALLER);
    // the body read once into typed items (issue 18 "decode once"); the same reading as JSON.parse, see PushBody
    PushBody.Result body = PushBody.parse(HttpAnswers.rawBytes(ctx));
    if (body instanceof PushBody.NotJson) {
      throw RelayError.NOT_JSON;
    }
    if (body instanceof PushBody.NotObject) {
      throw RelayError.NOT_OBJECT;
    }
    List<PushBody.Item> items = ((PushBody.Items) body).items();
    if (items == null || items.size() > limits.maxBatch()) {
      throw RelayError.batchTooLong(limits.maxBatch());
    }
    boolean withinRate = s.pushRate().tryAcquire(caller.hostPubkey(), now());
    List<PreparedItem> prepared = new ArrayList<>(items.size());
    List<StoreCommand.Push> toStore = new ArrayList<>(items.size());
    for (PushBody.Item item : items) {
      PreparedItem p = prepare(caller, item, withinRate);
      prepared.add(p);
      if (p.push() != null) {
        toStore.add(p.push());
      }
    }
    if (toStore.isEmpty()) {
      answerPush(ctx, caller, prepared, List.of());
      return;
    }
    // the whole request is one command: one event-bus message, grouped with other requests' commands
    s.writes().send(new StoreCommand.PushBatch(toStore))
        .onSuccess(guarded(ctx, outcomes -> answerPush(ctx, caller, prepared, outcomes)))
        .onFailure(ctx::fail);
  }

  /**
   * Answers {@code {results:[…]}} in request order: refusals as {@code rejected:<why>}, stored items with their
   * accept receipt signed by the relay key (docs/protocol.md §3 "Success result"), written without building a JSON tree.
   */
  private void answerPush(RoutingContext ctx, Enrolment caller, List<PreparedItem> prepared,
      List<PushOutcome> outcomes) {
    StringBuilder out = new StringBuilder(32 + prepared.size() * 960);
    String sender = HopAuthHandler.callerKeyAsSent(ctx, caller);
    out.append("{\"results\":[");
    int next = 0;
    for (int i = 0; i < prepared.size(); i++) {
      if (i > 0) {
        out.append(',');
      }
      PreparedItem p = prepared.get(i);
      PushOutcome outcome = p.push() == null ? new PushOutcome.Rejected(p.early()) : outcomes.get(next++);
      if (outcome instanceof PushOutcome.Rejected r) {
        AcceptReceipt.appendRejected(p.echoId(), r.wireText(), out);
        s.metrics().itemRejected(r.reason());
        continue;
      }
      PushOutcome.Stored st = (PushOutcome.Stored) outcome;
      List<AcceptReceipt.Target> targets = new ArrayList<>(st.targets().size());
      for (int j = 0; j < st.targets().size(); j++) {
        PushOutcome.TargetSeq t = st.targets().get(j);
        // stored targets are in request order; the receipt echoes each key as the caller spelled it
        String key = p.keysAsSent() == null ? t.hostPubkey() : p.keysAsSent().get(j);
        targets.add(new AcceptReceipt.Target(key, t.seq(), t.wireHash()));
      }
      AcceptReceipt receipt = new AcceptReceipt(s.relayKey().publicKeyB64(), st.epoch(), sender,
          p.echoId(), targets, st.at());
      receipt.appendResult(st.fresh(), s.relayKey().signB64(receipt.canonicalBytes()), out);
      if (st.fresh()) {
        s.metrics().itemAccepted();
      } else {
        s.metrics().itemDuplicate();
      }
    }
    out.append("]}");
    answer(ctx, 200, out.toString());
  }

  private static io.mbxrelay.store.model.RejectReason.Rejection early(io.mbxrelay.store.model.RejectReason reason) {
    return new io.mbxrelay.store.model.RejectReason.Rejection(reason, null);
  }

  private PreparedItem prepare(Enrolment caller, PushBody.Item item, boolean withinRate) {
    String echoId = item.itemId() != null ? item.itemId() : "";
    if (!withinRate) {
      return new PreparedItem(echoId, early(io.mbxrelay.store.model.RejectReason.RATE), null);
    }
    if (item.itemId() == null || echoId.isEmpty() || echoId.length() > 300) {
      return new PreparedItem(echoId, early(io.mbxrelay.store.model.RejectReason.BAD_ITEM_ID), null);
    }
    String kind = item.kind() != null ? item.kind() : "";
    if (!kind.equals("envelope") && !kind.equals("receipt")) {
      return new PreparedItem(echoId, early(io.mbxrelay.store.model.RejectReason.BAD_KIND), null);
    }
    List<PushBody.Target> targets = item.targets();
    if (targets == null || targets.isEmpty() || targets.size() > limits.maxTargets()) {
      return new PreparedItem(echoId, early(io.mbxrelay.store.model.RejectReason.BAD_TARGETS), null);
    }
    List<StoreCommand.Target> list = new ArrayList<>(targets.size());
    Set<String> seen = targets.size() == 1 ? null : new HashSet<>();
    List<String> keysAsSent = null;
    for (PushBody.Target t : targets) {
      String sent = t.keyAsSent();
      // targets are looked up, compared and stored in the canonical spelling (issue 11 item 4): two spellings of one
      // key are a duplicate target; an honest client's key is already canonical (no allocation)
      String key = KeySpelling.isCanonical(sent) ? sent : KeySpelling.canonicalOrSelf(sent);
      if (keysAsSent == null && !key.equals(sent)) {
        keysAsSent = new ArrayList<>(targets.size());
        for (StoreCommand.Target before : list) {
          keysAsSent.add(before.hostPubkey());
        }
      }
      if (keysAsSent != null) {
        keysAsSent.add(sent);
      }
      io.mbxrelay.store.model.RejectReason.Rejection failure = null;
      byte[] wire = null;
      String hash = null;
      if (seen != null && !seen.add(key)) {
        failure = early(io.mbxrelay.store.model.RejectReason.DUPLICATE_TARGET);
      } else {
        Optional<byte[]> decoded = t.wire() == null ? Optional.empty() : t.wire().decode();
        if (decoded.isEmpty()) {
          failure = early(io.mbxrelay.store.model.RejectReason.BAD_WIRE);
        } else if (decoded.get().length > limits.maxItemBytes()) {
          failure = early(io.mbxrelay.store.model.RejectReason.SIZE);
        } else {
          wire = decoded.get();
          failure = WireCheck.check(kind, echoId, wire, caller.hostPubkey(), Ed25519::verify)
              .map(io.mbxrelay.store.model.RejectReason::parse)
              .orElse(null);
          hash = failure == null ? Hashes.sha256Hex(wire) : null;
          if (failure != null) {
            wire = null;
          }
        }
      }
      list.add(new StoreCommand.Target(key, wire, hash, failure));
      if (failure != null) {
        break; // targets after the first failing one cannot change the result
      }
    }
    // the enrolment and allowlist checks that docs/protocol.md §3 orders before these failures run in the writer
    return new PreparedItem(echoId, null,
        new StoreCommand.Push(caller.hostPubkey(), caller.hostName(), kind, echoId, list), keysAsSent);
  }

  void pull(RoutingContext ctx) {
    Enrolment caller = ctx.get(HopAuthHandler.CALLER);
    QueryParams q = QueryParams.parse(ctx.request().query());
    double afterN = Math.floor(JsNumber.ofString(q.get("after")));
    long after = Double.isNaN(afterN) || afterN < 0 ? 0 : (long) Math.min(afterN, JsNumber.MAX_SAFE);
    String limitRaw = q.get("limit");
    double limitN = Math.floor(limitRaw == null ? limits.maxPull() : JsNumber.ofString(limitRaw));
    int limit = Double.isNaN(limitN) || limitN == 0 ? limits.maxPull()
        : (int) Math.max(1, Math.min(limits.maxPull(), limitN));
    if (q.contains("epoch") && !s.epoch().equals(q.get("epoch"))) {
      throw RelayError.pullEpochChanged(s.epoch());
    }
    new PagePull(ctx, caller.hostPubkey(), after, limit, waitMs(q.get("wait"))).start();
  }

  /** The most a pull may wait, s: 60, and always 5 s inside the connection idle timeout. */
  int maxWaitSeconds() {
    return (int) Math.max(0, Math.min(60, (s.config().http().idleTimeoutMs() - 5_000) / 1000));
  }

  /** {@code wait} in ms: {@code floor(Number(wait))} seconds, clamped to 0..{@link #maxWaitSeconds()}; absent → 0. */
  private long waitMs(String raw) {
    if (raw == null) {
      return 0;
    }
    double w = Math.floor(JsNumber.ofString(raw));
    return Double.isNaN(w) || w <= 0 ? 0 : (long) Math.min(w, maxWaitSeconds()) * 1000;
  }

  /**
   * One pull page, possibly a long poll: read the page; when it is empty and the caller asked to wait, stay registered
   * with {@link PullWaiters} until an item for the caller commits (then read again) or the wait ends (then read again
   * and answer what is there, normally the empty page). Registered before the first read, so an item committed while
   * that read runs still wakes it. A wake that finds nothing (a rolled-back insert) waits on. Every step runs on the
   * request's event loop.
   */
  private final class PagePull implements PullWaiters.Waiter {
    private final RoutingContext ctx;
    private final String target;
    private final String client;
    private final long after;
    private final int limit;
    private final long deadlineNanos;
    /** Registered with {@link PullWaiters} (until its sweep, a release, or {@link #finish()}). */
    private boolean registered;
    private boolean reading;
    private boolean wokenWhileReading;
    private boolean done;

    PagePull(RoutingContext ctx, String target, long after, int limit, long waitMs) {
      this.ctx = ctx;
      this.target = target;
      this.client = BodyCapHandler.clientKey(s, ctx.request());
      this.after = after;
      this.limit = limit;
      this.deadlineNanos = waitMs == 0 ? 0 : System.nanoTime() + waitMs * 1_000_000L;
    }

    void start() {
      if (deadlineNanos != 0) {
        // no timer per wait (issue 18 goal 4): the waiters' one sweep ends the wait at its deadline
        registered = s.waiters().register(target, ctx.vertx().getOrCreateContext(), deadlineNanos, this);
        if (registered) {
          // the routing context's end handler runs on answer and on close alike (a response closeHandler would
          // replace Vert.x Web's own, which the body budget's release relies on)
          ctx.addEndHandler(ar -> finish());
        }
      }
      read(false);
    }

    @Override
    public void woken() {
      if (done) {
        return;
      }
      if (reading) {
        wokenWhileReading = true;
      } else {
        read(false);
      }
    }

    @Override
    public void expired() {
      registered = false; // the sweep unregistered it: the next read answers whatever it finds
      if (!done) {
        read(true);
      }
    }

    @Override
    public void released() {
      if (done) {
        return;
      }
      if (registered) {
        registered = false; // no longer waiting: the next read answers whatever it finds
        s.waiters().cancel(target, this);
      }
      read(true);
    }

    private void read(boolean last) {
      if (done) {
        return;
      }
      if (reading) {
        wokenWhileReading |= last;
        return;
      }
      if (deadlineNanos != 0 && s.enrolments().get(target).isEmpty()) {
        // revoked (deny, rotation) while it waited: the answer a fresh request would get, not a page
        finish();
        ctx.fail(RelayError.BAD_HOP);
        return;
      }
      reading = true;
      wokenWhileReading = false;
      s.reads().pull(target, after, limit, limits.maxPullBytes(), s.pageBudget(), client).onComplete(ar -> {
        reading = false;
        if (ar.failed()) {
          if (!done) {
            finish();
            if (ar.cause() instanceof io.mbxrelay.budget.PageBudget.Exhausted) {
              ctx.response().putHeader("retry-after", "1");
              ctx.fail(RelayError.busy(false));
            } else {
              ctx.fail(ar.cause());
            }
          }
          return;
        }
        io.mbxrelay.store.model.Page page = ar.result();
        long held = page.wireBytes(); // held in the budget by the read; released when the answer is done
        if (done) {
          s.pageBudget().release(client, held);
          return;
        }
        boolean waiting = registered && System.nanoTime() < deadlineNanos;
        if (!page.damaged().isEmpty()) {
          setAside(target, page.damaged());
        }
        if (page.items().isEmpty() && page.damaged().isEmpty() && waiting) {
          if (wokenWhileReading) {
            read(false); // an item committed while this read ran
          }
          return; // wait for an item or the deadline
        }
        finish();
        s.metrics().pullPage(page.items().size());
        writePage(ctx, page, after, client, held);
      });
    }

    private void finish() {
      done = true;
      if (registered) {
        registered = false;
        s.waiters().cancel(target, this);
      }
    }
  }

  /**
   * Writes a pull page with {@link PageWriter} (issue 10 item 12, issue 22 item 1): item by item in chunks, each
   * handed to the connection only while little of what went before is unwritten, so a full 8 MiB page never exists
   * as one JSON tree and one string. The page's wire bytes ({@code held}) stay counted in
   * {@link io.mbxrelay.budget.PageBudget} until the answer's last byte was written to the socket or the connection
   * closed; a page that makes no progress for {@code http.pageStallMs} is cut (connection closed) and its bytes given
   * back.
   */
  private void writePage(RoutingContext ctx, io.mbxrelay.store.model.Page page, long after, String client, long held) {
    if (ctx.response().ended() || ctx.response().closed()) {
      s.pageBudget().release(client, held);
      return; // the client went away; nothing was acked, so nothing is lost
    }
    io.vertx.core.http.HttpServerResponse resp = ctx.response();
    boolean[] released = {false};
    Runnable release = () -> {
      if (!released[0]) {
        released[0] = true;
        s.pageBudget().release(client, held);
      }
    };
    // a close before the answer ended; after it, the writer's last write fails instead
    ctx.addEndHandler(ar -> {
      if (ar.failed()) {
        release.run();
      }
    });
    resp.setStatusCode(200).putHeader("content-type", "application/json").setChunked(true);
    long stallMs = s.config().http().pageStallMs();
    PageWriter.start(ctx.vertx(), resp, () -> closeNow(ctx), page, s.epoch(), after, stallMs, () -> {
      s.metrics().pullPageCut();
      WARN.warn("pull page cut", "pull page cut: the client read nothing for {} ms [held: {} bytes]", stallMs, held);
    }, release);
  }

  /**
   * Closes the request's connection at once, as its idle timeout does: the channel is closed below Vert.x's handler,
   * whose own close first flushes what is queued (issue 22 item 1: a stalled reader never lets that flush end). The
   * pending writes then fail, which gives their page's bytes back.
   */
  private static void closeNow(RoutingContext ctx) {
    if (ctx.request().connection() instanceof io.vertx.core.net.impl.ConnectionBase c) {
      c.channelHandlerContext().close();
    } else {
      ctx.request().connection().close();
    }
  }

  /**
   * Damaged rows a page read found (issue 10 item 1): counted, logged without their content, and moved out of the
   * queue by the writer, so the host is never served them and is not stopped by them (the page's {@code last_seq}
   * already covers them).
   */
  void setAside(String target, List<Long> seqs) {
    s.metrics().damagedItems(seqs.size());
    WARN.warn("damaged item", "pull withheld damaged items [count: {}] [target: {}]: wire does not match its hash",
        seqs.size(), io.mbxrelay.crypto.Fingerprint.ofB64(target));
    s.writes().send(new StoreCommand.SetAsideDamaged(target, seqs)).onFailure(e -> WARN.warn("set aside failed",
        "damaged items not set aside yet [error: {}]: the next pull finds them again", e.toString()));
  }

  void ack(RoutingContext ctx) {
    Enrolment caller = ctx.get(HopAuthHandler.CALLER);
    ObjectNode body = bodyObject(ctx);
    String epoch = jsString(body.get("epoch"));
    OptionalLong through = JsNumber.safeFloor(JsNumber.of(body.get("through")));
    s.writes().send(new StoreCommand.Ack(caller.hostPubkey(), epoch, through)).onSuccess(outcome -> {
      if (outcome instanceof AckOutcome.Done d) {
        s.metrics().ack(Outcome.OK, d.deleted());
        ObjectNode out = Json.MAPPER.createObjectNode();
        out.put("acked_through", d.ackedThrough());
        out.put("deleted", d.deleted());
        out.put("head_seq", d.headSeq());
        ok(ctx, out);
      } else if (outcome instanceof AckOutcome.EpochChanged e) {
        s.metrics().ack(Outcome.EPOCH_CHANGED, 0);
        ctx.fail(RelayError.ackEpochChanged(e.epoch(), e.headSeq()));
      } else if (outcome instanceof AckOutcome.BadAck b) {
        s.metrics().ack(Outcome.BAD_ACK, 0);
        ctx.fail(RelayError.badAck(b.epoch(), b.headSeq()));
      }
    }).onFailure(ctx::fail);
  }

  /** JS {@code String(x ?? "")} of a JSON member. */
  private static String jsString(JsonNode n) {
    if (n == null || n.isNull() || n.isMissingNode()) {
      return "";
    }
    if (n.isTextual()) {
      return n.textValue();
    }
    if (n.isNumber() && !Double.isFinite(n.doubleValue())) {
      return n.doubleValue() > 0 ? "Infinity" : "-Infinity"; // String(1e999); canonical JSON refuses it
    }
    if (n.isNumber() || n.isBoolean()) {
      return CanonicalJson.canonicalize(n);
    }
    if (n.isArray()) {
      // Array.prototype.toString: elements joined with ",", null and undefined as ""
      List<String> parts = new ArrayList<>();
      n.forEach(e -> parts.add(e.isNull() ? "" : jsString(e)));
      return String.join(",", parts);
    }
    return "[object Object]";
  }
}
