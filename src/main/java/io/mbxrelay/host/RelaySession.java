package io.mbxrelay.host;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.mbxrelay.crypto.Fingerprint;
import io.mbxrelay.host.BlockingRelayClient.RelayUnreachable;
import io.mbxrelay.wire.Hashes;
import io.mbxrelay.wire.Json;
import java.nio.charset.StandardCharsets;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The relay session of one tick (docs/protocol.md §6 "Per tick"; docs/host-library.md "What a tick does" step 2):
 * signed info and the pin check, the epoch check, enrolment (with its backoff), the sender allowlist and this host's
 * enc-key ad; the epoch change / rewind every part of the tick may meet; the 401 handling — for one relay (its
 * {@link RelayLane}: another relay's session is not affected). Used by {@link HostAgent} only, under its store lock,
 * on the ticking thread.
 */
final class RelaySession extends AgentPart {

  private static final Logger LOG = LoggerFactory.getLogger(RelaySession.class);
  /** Retry of an allowlist the relay answered 409 (it holds one dated at most 5 min ahead of its clock), ms. */
  static final long ALLOWLIST_RETRY_MS = 30_000;


  /** The longest pull wait the relay offered in the last session, s (0: none). */
  volatile int relayPullWait;
  /** The relay key of the last session (the long-poll wait uses its transport). */
  volatile String sessionRelayPub;

  private final RelayLane lane;

  RelaySession(AgentContext ctx, RelayLane lane) {
    super(ctx, lane.url);
    this.lane = lane;
  }

  String openSession(TickState t) throws Exception {
    Optional<HostStore.RelayState> st = store.relay(url);
    if (st.isEmpty()) {
      throw new TickStop("no-pin", "no relay key pinned for " + url + ": run `mbxrelay host relay set " + url + "`");
    }
    if (st.get().presentedPubkey() != null) {
      throw new TickStop("relay-key-changed", "relay key changed (pinned " + Fingerprint.ofB64(st.get().relayPubkey())
          + ", presented " + Fingerprint.ofB64(st.get().presentedPubkey()) + "): relay unused until confirmed");
    }
    long sessionNext = relays.sessionNextAt(url);
    if (sessionNext > now()) {
      throw new TickStop("backoff", null);
    }
    String relayPub = st.get().relayPubkey();
    RelayInfo info = info(t, relayPub);
    relayPullWait = info.pullWaitMaxSeconds();
    sessionRelayPub = relayPub;
    relays.setLimits(url, info.limits().retentionDays() > 0 ? info.limits().retentionDays() : 14,
        info.limits().maxBatch() > 0 ? info.limits().maxBatch() : 200,
        info.limits().maxPull() > 0 ? info.limits().maxPull() : 500,
        info.limits().maxItemBytes() > 0 ? info.limits().maxItemBytes() : Outbox.MAX_ITEM_BYTES);
    String stored = st.get().epoch();
    if (stored == null) {
      store.tx(c -> {
        relays.setEpoch(url, info.epoch());
        relays.resetPosition(url, info.epoch());
        return null;
      });
    } else if (!stored.equals(info.epoch())) {
      epochChange(t, info.epoch(), "relay epoch changed");
    }
    boolean enrolled = info.you().map(y -> key.publicKeyB64().equals(y.pubkey())).orElse(false);
    String cache = url + "|" + relayPub + "|" + info.epoch() + "|" + key.publicKeyB64();
    if (enrolled) {
      relays.markEnrolled(url, cache);
    } else {
      enrol(t, relayPub, cache);
    }
    publishAllowlist(t, relayPub);
    publishEncAd(t, relayPub, info);
    return relayPub;
  }

  /**
   * docs/protocol.md §6 step 5: publish the enc-key ad (v2, then v1) when none was published for this relay, it is more than
   * 24 h old, the key or the epoch changed, or {@code you.enc_ad} no longer shows it. A v2 404 means an old relay (v1
   * must then succeed); once v2 succeeded, v1 failures are tolerated. A failure is retried on the next tick.
   */
  private void publishEncAd(TickState t, String relayPub, RelayInfo info) throws Exception {
    String encPub = HostEncKey.loadOrCreate(store).publicKeyB64();
    String stateKey = "enc_ad:" + url;
    JsonNode last = store.setting(stateKey).map(Json::parse).orElse(null);
    JsonNode shown = info.you().map(RelayInfo.You::encAd).orElse(null);
    boolean drift = shown == null || shown.isNull()
        || !(encPub.equals(shown.path("enc_pub").asText(null)) || encPub.equals(shown.path("v1").asText(null)));
    boolean due = last == null || now() - last.path("at").asLong() > 86_400_000L
        || !encPub.equals(last.path("enc_pub").asText()) || !info.epoch().equals(last.path("epoch").asText())
        || drift;
    if (!due) {
      return;
    }
    String name = info.you().map(RelayInfo.You::host).orElse(options.hostName());
    EncAdResult v2;
    EncAdResult v1;
    try {
      v2 = lane.transport(relayPub).publishEncAd(name, encPub, now());
      v1 = lane.transport(relayPub).publishEncAdV1(name, encPub);
    } catch (RelayUnreachable e) {
      t.notes.add("enc-key ad not published (relay unreachable); retried next tick");
      return;
    }
    boolean v2ok = v2 instanceof EncAdResult.Published;
    boolean oldRelay = v2 instanceof Refused f && f.status() == 404;
    if (v2ok || (oldRelay && v1 instanceof EncAdResult.Published)) {
      ObjectNode state = Json.MAPPER.createObjectNode().put("at", now()).put("epoch", info.epoch())
          .put("enc_pub", encPub).put("v2", v2ok);
      store.putSetting(stateKey, Json.stringify(state));
      t.notes.add("enc-key ad published (" + (v2ok ? "v2" : "v1 only: the relay has no v2 ads") + ")");
    } else {
      EncAdResult why = v2ok || oldRelay ? v1 : v2;
      t.notes.add("enc-key ad refused: " + (why instanceof Refused f ? f.status() + " " + f.error() : "bad answer")
          + "; retried next tick");
    }
  }

  private RelayInfo info(TickState t, String relayPub) throws Exception {
    InfoResult r;
    try {
      r = lane.transport(relayPub).info();
    } catch (RelayUnreachable e) {
      throw sessionFailure("unreachable", "relay unreachable: " + e.getMessage(), 30_000);
    }
    if (r instanceof InfoResult.Ok ok) {
      return ok.info();
    }
    if (r instanceof RelayKeyChanged c) {
      store.tx(x -> {
        HostAgent.recordKeyChange(store, url, relayPub, c.presentedPubkey(), now());
        return null;
      });
      throw new TickStop("relay-key-changed", "relay key changed (pinned " + c.pinnedFingerprint() + ", presented "
          + Fingerprint.ofB64(c.presentedPubkey()) + "): relay unused until confirmed");
    }
    if (r instanceof Refused f) {
      throw sessionFailure("refused", "relay info refused: " + f.status() + " " + f.error(),
          transient_(f.status()) ? 30_000 : 3_600_000);
    }
    BadAnswer b = (BadAnswer) r;
    throw sessionFailure("refused", "relay info not usable: " + b.why(), 3_600_000);
  }

  static boolean transient_(int status) {
    return status == 429 || status == 502 || status == 503 || status == 504;
  }

  private TickStop sessionFailure(String session, String note, long capMs) throws SQLException {
    int failures = relays.sessionFailures(url) + 1;
    long delay = ctx.backoff(250, capMs, failures);
    relays.setSessionBackoff(url, failures, now() + delay);
    return new TickStop(session, note + " (next try in " + delay + " ms)");
  }

  private void enrol(TickState t, String relayPub, String cache) throws Exception {
    long next = relays.enrolNextAt(url);
    if (next > now()) {
      throw new TickStop("enrol-failed", "not enrolled and enrolment is backing off after a failure");
    }
    EnrolResult r;
    try {
      r = lane.transport(relayPub).enrol(options.ownerFp());
    } catch (RelayUnreachable e) {
      throw sessionFailure("unreachable", "relay unreachable while enrolling: " + e.getMessage(), 30_000);
    }
    if (r instanceof EnrolResult.Enrolled) {
      relays.markFreshlyEnrolled(url, cache);
      t.freshEnrol = true;
      t.notes.add("enrolled on " + url);
      return;
    }
    enrolFailure(t, r instanceof Refused f ? "enrolment refused: " + f.status() + " " + f.error()
        : "enrolment failed: " + r.getClass().getSimpleName());
  }

  private void enrolFailure(TickState t, String why) throws Exception {
    int n = relays.enrolFailures(url) + 1;
    long delay = Math.min(3_600_000L, 60_000L << Math.min(6, n - 1));
    relays.setEnrolBackoff(url, n, now() + delay);
    throw new TickStop("enrol-failed", why + " (permanent until fixed; next enrolment try in " + delay / 1000 + " s)");
  }

  /** Any 401: the enrolled cache goes; right after a fresh enrolment it is permanent (backoff), else re-enrol. */
  void on401(TickState t, String relayPub, String what) throws Exception {
    relays.clearEnrolled(url);
    if (t.freshEnrol) {
      enrolFailure(t, what + " answered 401 right after a fresh enrolment (clock skew?)");
    }
    enrol(t, relayPub, null);
  }

  private void publishAllowlist(TickState t, String relayPub) throws Exception {
    List<String> peers = new ArrayList<>(store.peers().keySet());
    if (peers.isEmpty()) {
      return;
    }
    String digest = Hashes.sha256Hex(String.join("\n", peers).getBytes(StandardCharsets.UTF_8));
    Optional<String[]> st = relays.allowlistState(url);
    if (st.isEmpty() || digest.equals(st.get()[0]) || Long.parseLong(st.get()[1]) > now()) {
      return;
    }
    // every list is newer than the last one sent (the relay keeps the newest by iat and answers 409 to one that is
    // not), so two lists within one millisecond or after a clock step back are not refused
    long iat = Math.max(now(), relays.allowlistIat(url) + 1);
    relays.setAllowlistIat(url, iat);
    SendersResult r;
    try {
      r = lane.transport(relayPub).publishSenders(peers, iat);
    } catch (RelayUnreachable e) {
      t.notes.add("allowlist not published (relay unreachable); retried next tick");
      return;
    }
    if (r instanceof SendersResult.Published) {
      relays.setAllowlistDigest(url, digest);
      t.notes.add("allowlist published (" + peers.size() + " peer(s))");
    } else if (r instanceof Refused f && f.status() == 409) {
      // the relay holds a list at least as new (ours from another clock, or one dated ahead): this one is NOT
      // published, so the peers added since would stay refused; retried with a newer iat until it passes
      relays.setAllowlistNextAt(url, now() + ALLOWLIST_RETRY_MS);
      t.notes.add("allowlist not published: the relay holds a newer list (409 " + f.error() + "); retried with a"
          + " newer iat in " + ALLOWLIST_RETRY_MS / 1000 + " s");
    } else if (r instanceof Refused f && f.status() == 404) {
      relays.setAllowlistNextAt(url, now() + 3_600_000L);
      t.notes.add("relay does not support sender allowlists yet (404); retried in 1 h");
    } else {
      relays.setAllowlistNextAt(url, now() + 600_000L);
      t.notes.add("allowlist refused: " + (r instanceof Refused f ? f.status() + " " + f.error() : "bad answer"));
    }
  }

  /** Epoch change or rewind (docs/protocol.md §6): re-push accepted rows, position 0 in the new epoch, acked marker gone. */
  void epochChange(TickState t, String newEpoch, String why) throws Exception {
    if (++t.epochChanges > 3) {
      throw new TickStop("refused", "relay keeps changing its epoch; stopping this tick");
    }
    t.epochChanged = true;
    int n = store.tx(c -> {
      int rows = relays.requeueAccepted(url, now());
      relays.changeEpoch(url, newEpoch);
      relays.resetPosition(url, newEpoch);
      return rows;
    });
    t.notes.add(why + ": " + n + " row(s) back in the outbox for re-push, receive position reset to 0");
    LOG.info("relay epoch change handled [rows: {}]", n);
  }
}
