package io.mbxrelay.host;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.mbxrelay.crypto.Ed25519;
import io.mbxrelay.crypto.Ed25519KeyPair;
import io.mbxrelay.crypto.Fingerprint;
import io.mbxrelay.host.BlockingRelayClient.RelayUnreachable;
import io.mbxrelay.wire.CanonicalJson;
import io.mbxrelay.wire.Hashes;
import io.mbxrelay.wire.IsoTime;
import io.mbxrelay.wire.Json;
import io.mbxrelay.wire.ReceiptCheck;
import io.mbxrelay.wire.Utf8;
import java.nio.charset.StandardCharsets;
import java.sql.SQLException;
import java.time.Clock;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.random.RandomGenerator;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The durable host side of one relay (issue 5; docs/protocol.md §6, §7.3 "Sender side", §7.4, §7.5, §7.8, §7.9): a sender outbox
 * whose rows leave only on a verified accept receipt and settle only on the target's delivery receipt (or its own
 * deadline), and a receiver checkpoint that advances only in the same SQLite transaction as each item's local effect.
 * The caller drives it with {@link #tick()} (the CLI's {@code run} does so in a loop).
 *
 * <p><b>Retries.</b> No call sleeps. A failed push leaves its rows pending with {@code next_at} = now + capped
 * exponential backoff with jitter (1 s doubling, cap 15 min, factor 0.5–1.0); a failed session (I/O, 429, 502, 503,
 * 504) sets the relay's {@code next_at} (250 ms doubling, cap 30 s, jitter). Pushes <i>are</i> retried —
 * unlike a transport client that never retries a send — because the relay's dedup makes a retry with the same bytes a {@code duplicate} with the
 * original seq. Permanent failures (401 right after a fresh enrolment, other 4xx) back off longer (enrolment 1 min
 * doubling to 1 h) and are reported in {@link TickReport#notes()} and {@link #doctor()}.
 *
 * <p><b>Threading.</b> Every public method locks the {@link HostStore}; one tick at a time. The application callback
 * runs on the ticking thread inside the store transaction. Blocking I/O: not for a Vert.x event loop.
 */
public final class HostAgent implements AutoCloseable {

  private static final Logger LOG = LoggerFactory.getLogger(HostAgent.class);
  private static final long DAY_MS = 86_400_000L;
  private static final long GRACE_MS = DAY_MS;
  private static final int MAX_PAGES = 20;

  /**
   * Test-only crash points (issue 5 "crash windows"): called at named points; a drill halts the process there.
   * Points: {@code push-answered-before-record}, {@code receive-before-commit}, {@code checkpoint-before-ack}.
   */
  @FunctionalInterface
  public interface Hook {
    /**
     * @param point the point reached
     */
    void at(String point);
  }

  /**
   * Agent options.
   *
   * @param hostName this host's name (HOST_RE; used to enrol and as {@code owner@<name>} in delivery receipts)
   * @param ownerFp owner fingerprint sent at enrolment, or ""
   * @param clock time source for {@code next_at}, deadlines and records
   * @param random jitter source
   * @param hook crash hook (tests), never null
   */
  public record Options(String hostName, String ownerFp, Clock clock, RandomGenerator random, Hook hook) {
    /** Validates. */
    public Options {
      if (hostName == null || !ReceiptCheck.HOST_RE.matcher(hostName).matches()) {
        throw new IllegalArgumentException("host name must match [A-Za-z0-9][A-Za-z0-9._-]{0,62}");
      }
      ownerFp = ownerFp == null ? "" : ownerFp;
      Objects.requireNonNull(clock);
      Objects.requireNonNull(random);
      hook = hook == null ? p -> { } : hook;
    }

    /**
     * Defaults: system clock, a fresh random source, no hook.
     *
     * @param hostName this host's name
     * @return the options
     */
    public static Options of(String hostName) {
      return new Options(hostName, "", Clock.systemUTC(), new java.security.SecureRandom(), null);
    }
  }

  private final HostStore store;
  private final Ed25519KeyPair key;
  private final String url;
  private final Options options;
  private final RelayTransport.Factory transports;
  private final HostApplication app;
  private RelayTransport transport;
  private String transportKey;

  /**
   * An agent for one relay.
   *
   * @param store the host store (not closed by the agent)
   * @param key this host's key (its public key is recorded in the store; a store of another key is refused)
   * @param relayUrl the relay base URL
   * @param options options
   * @param transports makes the transport once the relay key is pinned
   * @param app receives envelopes
   * @throws SQLException on storage errors
   * @throws IllegalStateException when the store belongs to another host key
   */
  public HostAgent(HostStore store, Ed25519KeyPair key, String relayUrl, Options options,
      RelayTransport.Factory transports, HostApplication app) throws SQLException {
    this.store = Objects.requireNonNull(store);
    this.key = Objects.requireNonNull(key);
    this.url = RelayPins.normalizeUrl(relayUrl);
    this.options = Objects.requireNonNull(options);
    this.transports = Objects.requireNonNull(transports);
    this.app = Objects.requireNonNull(app);
    synchronized (store) {
      store.tx(c -> {
        Optional<String> k = store.meta("host_pubkey");
        if (k.isPresent() && !k.get().equals(key.publicKeyB64())) {
          throw new IllegalStateException("this host store belongs to another host key ("
              + Fingerprint.ofB64(k.get()) + ")");
        }
        store.putMeta("host_pubkey", key.publicKeyB64());
        store.putMeta("host_name", options.hostName());
        return null;
      });
    }
  }

  /** @return the normalized relay URL */
  public String relayUrl() {
    return url;
  }

  // ---------------------------------------------------------------- pinning (docs/protocol.md §7.1)

  /** Outcome of {@link #pin}. */
  public sealed interface PinOutcome permits PinOutcome.Pinned, PinOutcome.Unchanged, PinOutcome.Mismatch,
      PinOutcome.Changed {
    /**
     * A key is now pinned (first pin, or a confirmed replacement).
     *
     * @param fingerprint its fingerprint
     * @param trustOnFirstUse true when no expected fingerprint was given
     * @param replaced the fingerprint of the key it replaced, or null
     */
    record Pinned(String fingerprint, boolean trustOnFirstUse, String replaced) implements PinOutcome {}

    /** @param fingerprint the pinned key, unchanged */
    record Unchanged(String fingerprint) implements PinOutcome {}

    /**
     * The relay's key does not have the expected fingerprint; nothing pinned.
     *
     * @param expected the fingerprint asked for
     * @param presented the relay's
     */
    record Mismatch(String expected, String presented) implements PinOutcome {}

    /**
     * A key is pinned and the relay presents another one: relay use stops until the owner confirms.
     *
     * @param pinned the pinned fingerprint
     * @param presented the relay's
     */
    record Changed(String pinned, String presented) implements PinOutcome {}
  }

  /**
   * Pins a relay key (docs/protocol.md §7.1 {@code relay set <url> [--key <fp>]}) given the key the relay presents in its info.
   *
   * @param store the host store
   * @param relayUrl relay URL
   * @param presentedPubkey the key the relay presents (base64)
   * @param expectedFingerprint the fingerprint the owner expects, or null (trust on first use)
   * @param confirm the owner confirms a changed key
   * @param nowMs now, ms
   * @return the outcome
   * @throws SQLException on storage errors
   */
  public static PinOutcome pin(HostStore store, String relayUrl, String presentedPubkey, String expectedFingerprint,
      boolean confirm, long nowMs) throws SQLException {
    String u = RelayPins.normalizeUrl(relayUrl);
    String presented = Fingerprint.ofB64(presentedPubkey);
    if (expectedFingerprint != null) {
      String exp = Fingerprint.normalize(expectedFingerprint)
          .orElseThrow(() -> new IllegalArgumentException("not a relay key fingerprint"));
      if (!exp.equals(presented)) {
        return new PinOutcome.Mismatch(exp, presented);
      }
    }
    synchronized (store) {
      return store.tx(c -> {
        Optional<HostStore.RelayState> st = store.one("SELECT * FROM relays WHERE url=?", HostStore.RELAY, u);
        if (st.isEmpty()) {
          store.update("INSERT INTO relays(url, relay_pubkey, pinned_at) VALUES(?, ?, ?)", u, presentedPubkey, nowMs);
          return new PinOutcome.Pinned(presented, expectedFingerprint == null, null);
        }
        String pinned = st.get().relayPubkey();
        if (pinned.equals(presentedPubkey)) {
          store.update("UPDATE relays SET presented_pubkey=NULL, presented_at=NULL WHERE url=?", u);
          return new PinOutcome.Unchanged(presented);
        }
        if (confirm || expectedFingerprint != null) {
          store.update("UPDATE relays SET relay_pubkey=?, pinned_at=?, presented_pubkey=NULL, presented_at=NULL,"
              + " enrolled_cache=NULL, allowlist_digest=NULL WHERE url=?", presentedPubkey, nowMs, u);
          return new PinOutcome.Pinned(presented, false, Fingerprint.ofB64(pinned));
        }
        recordKeyChange(store, u, pinned, presentedPubkey, nowMs);
        return new PinOutcome.Changed(Fingerprint.ofB64(pinned), presented);
      });
    }
  }

  private static void recordKeyChange(HostStore store, String u, String pinned, String presented, long nowMs)
      throws SQLException {
    int n = store.update("UPDATE relays SET presented_pubkey=?, presented_at=? WHERE url=? AND"
        + " (presented_pubkey IS NULL OR presented_pubkey<>?)", presented, nowMs, u, presented);
    if (n > 0) {
      store.update("INSERT INTO alerts(at, kind, relay, text) VALUES(?, 'relay-key-changed', ?, ?)", nowMs, u,
          "relay key changed for " + u + ": pinned " + Fingerprint.ofB64(pinned) + ", the relay presents "
              + Fingerprint.ofB64(presented) + "; relay not used until the owner confirms (relay set " + u
              + " --key <fingerprint> or --confirm)");
    }
  }

  // ---------------------------------------------------------------- application API

  /**
   * Records an accepted peer (its key verifies its delivery receipts; its envelopes are accepted; it is on the
   * allowlist published to the relay).
   *
   * @param hostPubkey the peer's base64 host key
   * @param name a label for alerts ({@code HOST_RE})
   * @throws SQLException on storage errors
   */
  public void addPeer(String hostPubkey, String name) throws SQLException {
    if (!io.mbxrelay.wire.B64.isPubkey(hostPubkey)) {
      throw new IllegalArgumentException("peer key must be a base64 32-byte public key");
    }
    synchronized (store) {
      store.tx(c -> store.update("INSERT INTO peers(host_pubkey, name, added_at) VALUES(?, ?, ?) ON CONFLICT"
          + "(host_pubkey) DO UPDATE SET name=excluded.name", hostPubkey, name, now()));
    }
  }

  /** Outcome of {@link #send}. */
  public enum SendOutcome {
    /** Stored durably in the outbox; it will be pushed on the next tick. */
    QUEUED,
    /** The same bytes were already queued for that target (nothing changed). */
    ALREADY_QUEUED,
    /** Another wire was already queued under that id for that target: refused (it would be a relay conflict). */
    CONFLICT
  }

  /**
   * Queues an envelope durably for one target (docs/protocol.md §7.3: the wire bytes are persisted before the first attempt
   * and reused on every retry). Returns after the commit; pushing happens on {@link #tick()}.
   *
   * @param msgId the envelope id (= item id)
   * @param targetPubkey the target's pinned host key (base64); must be an accepted peer
   * @param wire the sealed envelope bytes for that target
   * @return the outcome
   * @throws SQLException on storage errors
   * @throws IllegalArgumentException when the target is not a peer
   */
  public SendOutcome send(String msgId, String targetPubkey, byte[] wire) throws SQLException {
    String hash = Hashes.sha256Hex(wire);
    synchronized (store) {
      return store.tx(c -> {
        if (store.one("SELECT 1 FROM peers WHERE host_pubkey=?", rs -> 1, targetPubkey).isEmpty()) {
          throw new IllegalArgumentException("target is not an accepted peer: add it first");
        }
        Optional<String> existing = store.one("SELECT wire_hash FROM outbox WHERE relay=? AND item_id=? AND"
            + " target_pubkey=?", rs -> rs.getString(1), url, msgId, targetPubkey);
        if (existing.isPresent()) {
          return existing.get().equals(hash) ? SendOutcome.ALREADY_QUEUED : SendOutcome.CONFLICT;
        }
        long now = now();
        store.update("INSERT INTO outbox(relay, kind, item_id, msg_id, target_pubkey, wire, wire_hash, state,"
            + " next_at, created_at) VALUES(?, 'envelope', ?, ?, ?, ?, ?, 'pending', ?, ?)", url, msgId, msgId,
            targetPubkey, wire, hash, now, now);
        return SendOutcome.QUEUED;
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
  public boolean markDelivered(String msgId, String targetPubkey) throws SQLException {
    synchronized (store) {
      return store.tx(c -> settle(msgId, targetPubkey)) > 0;
    }
  }

  private int settle(String msgId, String target) throws SQLException {
    return store.update("UPDATE outbox SET state='settled', done_at=? WHERE kind='envelope' AND msg_id=? AND"
        + " target_pubkey=? AND state<>'settled'", now(), msgId, target);
  }

  // ---------------------------------------------------------------- doctor

  /**
   * Lines for people about this relay's health ({@code mbxrelay host doctor}): pin state (a changed key and how to
   * confirm it), last session error, outbox counts, unconfirmed/expired rows, quarantine size. No key material
   * (fingerprints only).
   *
   * @return problems first; empty list means nothing to report
   * @throws SQLException on storage errors
   */
  public List<String> doctor() throws SQLException {
    return doctor(store, url);
  }

  /**
   * {@link #doctor()} for a store and relay URL without an agent.
   *
   * @param store the host store
   * @param relayUrl the relay URL
   * @return the problem lines (empty when healthy)
   * @throws SQLException on storage errors
   */
  public static List<String> doctor(HostStore store, String relayUrl) throws SQLException {
    String u = RelayPins.normalizeUrl(relayUrl);
    List<String> out = new ArrayList<>();
    synchronized (store) {
      Optional<HostStore.RelayState> st = store.one("SELECT * FROM relays WHERE url=?", HostStore.RELAY, u);
      if (st.isEmpty()) {
        out.add("no relay key pinned for " + u + ": run `mbxrelay host relay set " + u + "`");
        return out;
      }
      if (st.get().presentedPubkey() != null) {
        out.add("relay key changed for " + u + ": pinned " + Fingerprint.ofB64(st.get().relayPubkey())
            + ", the relay presents " + Fingerprint.ofB64(st.get().presentedPubkey())
            + "; the relay is not used until you confirm. Ask the relay's operator for its key fingerprint; only if it"
            + " is " + Fingerprint.ofB64(st.get().presentedPubkey()) + " run `mbxrelay host relay set " + u
            + " --key <that fingerprint>`");
      }
      if (st.get().lastError() != null) {
        out.add("last relay problem: " + st.get().lastError());
      }
      for (String[] r : store.query("SELECT state, count(*) FROM outbox WHERE relay=? AND state IN ('pending',"
          + " 'repush', 'unconfirmed', 'expired', 'undelivered') GROUP BY state", rs -> new String[] {rs.getString(1),
              rs.getString(2)}, u)) {
        out.add(r[1] + " outbox row(s) " + r[0]);
      }
      long q = store.one("SELECT count(*) FROM quarantine WHERE relay=?", rs -> rs.getLong(1), u).orElse(0L);
      if (q > 0) {
        out.add(q + " quarantined item(s): `mbxrelay host quarantine`");
      }
    }
    return out;
  }

  // ---------------------------------------------------------------- tick

  /** The longest pull wait the relay offered in the last session, s (0: none). */
  private volatile int relayPullWait;
  /** The relay key of the last session (the long-poll wait uses its transport). */
  private volatile String sessionRelayPub;
  /** Whether the last tick's pulls ended on a page without {@code more} (then waiting is worth it). */
  private volatile boolean caughtUp;

  private final class Tick {
    String session = "ok";
    boolean epochChanged;
    int accepted;
    int notAccepted;
    int delivered;
    int duplicates;
    int receipts;
    int notices;
    int quarantined;
    boolean freshEnrol;
    int epochChanges;
    final List<String> notes = new ArrayList<>();

    TickReport report() throws SQLException {
      Optional<HostStore.Position> p = store.one("SELECT * FROM positions WHERE relay=?", HostStore.POSITION, url);
      return new TickReport(session, epochChanged, accepted, notAccepted, delivered, duplicates, receipts, notices,
          quarantined, p.map(HostStore.Position::receivedThrough).orElse(-1L),
          p.map(HostStore.Position::ackedThrough).orElse(-1L), notes, session.equals("ok") ? relayPullWait : 0,
          session.equals("ok") && caughtUp);
    }
  }

  /** Thrown inside a tick to end it with a session state. */
  private static final class Stop extends Exception {
    final String session;

    Stop(String session, String note) {
      super(note, null, false, false);
      this.session = session;
    }
  }

  /**
   * One tick: deadlines, then the session (signed info, pin check, epoch check, enrolment, allowlist), the push of due
   * outbox rows, and up to 20 pulled pages with their acks (docs/protocol.md §6). Never sleeps.
   *
   * @return what happened
   * @throws SQLException on storage errors (the tick stops; state stays consistent)
   * @throws Exception when the application's callback throws (rolled back; offered again next tick)
   */
  public TickReport tick() throws Exception {
    return tick(0);
  }

  /** Longest pull wait a host asks for, s: inside the transport's 35 s idle timeout (docs/host-library.md). */
  public static final int MAX_PULL_WAIT_SECONDS = 25;

  /** Whether the outbox has an item due for this relay now (pending or to re-push, its time come). */
  private boolean outboxDue() throws SQLException {
    synchronized (store) {
      return store.one("SELECT 1 FROM outbox WHERE relay=? AND state IN ('pending', 'repush') AND next_at<=? LIMIT 1",
          rs -> rs.getInt(1), url, now()).isPresent();
    }
  }

  private boolean outboxDueQuietly() {
    try {
      return outboxDue();
    } catch (SQLException e) {
      return false; // the tick after the wait reads the outbox again and reports a failing store
    }
  }

  /** A page pulled with {@code wait} outside the store lock, and the position it was asked from. */
  private record Prefetched(String epoch, long after, PullResult result) {}

  /**
   * A tick that may first wait for inbound mail: when the relay offers long-poll pulls ({@link RelayInfo
   * #pullWaitMaxSeconds()}) and the last tick had pulled everything, pulls with {@code wait} (at most
   * {@code waitSeconds}, the relay's offer and {@link #MAX_PULL_WAIT_SECONDS}) without holding the host store, then
   * runs {@link #tick()} starting from the page that wait returned. A loop of {@code tick(n)} thus receives an item as
   * soon as the relay commits it and pushes the outbox at least every {@code n} seconds, with no timer of its own.
   * With {@code waitSeconds} 0, a relay without the offer, or pages still to pull, it is exactly {@link #tick()}.
   *
   * @param waitSeconds longest wait before the tick, s
   * @return what the tick did
   * @throws Exception as {@link #tick()}
   */
  public TickReport tick(int waitSeconds) throws Exception {
    Prefetched pre = null;
    int wait = Math.min(Math.min(waitSeconds, relayPullWait), MAX_PULL_WAIT_SECONDS);
    String relayPub = sessionRelayPub;
    if (wait > 0 && caughtUp && relayPub != null && !outboxDue()) { // mail to push (receipts too) goes out first
      Optional<HostStore.Position> pos;
      int maxPull;
      RelayTransport tr;
      synchronized (store) {
        pos = store.one("SELECT * FROM positions WHERE relay=?", HostStore.POSITION, url);
        maxPull = store.one("SELECT max_pull FROM relays WHERE url=?", rs -> rs.getInt(1), url).orElse(500);
        tr = transport(relayPub);
      }
      if (pos.isPresent()) {
        try {
          // a send queued meanwhile (by this process or another on the same host store) ends the wait
          Optional<PullResult> page = tr.pull(pos.get().receivedThrough(), maxPull, pos.get().epoch(), wait,
              this::outboxDueQuietly);
          if (page.isPresent()) {
            pre = new Prefetched(pos.get().epoch(), pos.get().receivedThrough(), page.get());
          }
        } catch (RelayUnreachable e) {
          // the tick below meets the same relay and reports it
        }
      }
    }
    synchronized (store) {
      Tick t = new Tick();
      adoptRowsOfOtherRelays(t);
      checkDeadlines(t);
      try {
        String relayPub2 = openSession(t);
        pushDue(t, relayPub2);
        pullAll(t, relayPub2, pre != null && relayPub2.equals(relayPub) ? pre : null);
        store.update("UPDATE relays SET last_error=NULL, last_ok_at=?, session_failures=0 WHERE url=?", now(), url);
      } catch (Stop s) {
        t.session = s.session;
        if (s.getMessage() != null) {
          t.notes.add(s.getMessage());
        }
        if (!s.session.equals("backoff") && !s.session.equals("no-pin")) {
          store.update("UPDATE relays SET last_error=? WHERE url=?", s.getMessage(), url);
        }
      }
      return t.report();
    }
  }

  private long now() {
    return options.clock().millis();
  }

  /** The sender's own deadline (docs/protocol.md §7.3): no relay notice needed. */
  /**
   * Rows queued for another relay URL (after {@code host relay set} moved this host to a new URL) would otherwise
   * never be pushed nor reach their deadline: they move to the current relay, relay-accepted ones as {@code repush}
   * (the new relay may not hold them; dedup absorbs it when it does). Never silently gone (issue: host side).
   */
  private void adoptRowsOfOtherRelays(Tick t) throws SQLException {
    int moved = store.update("UPDATE OR IGNORE outbox SET relay=?, next_at=?, state=CASE WHEN state='relay-accepted'"
        + " THEN 'repush' ELSE state END WHERE relay<>? AND state IN ('pending', 'repush', 'relay-accepted')",
        url, now(), url);
    if (moved > 0) {
      t.notes.add(moved + " outbox row(s) queued for another relay URL moved to " + url);
    }
  }

  private void checkDeadlines(Tick t) throws SQLException {
    long now = now();
    Map<String, String> peers = store.peers();
    for (HostStore.OutboxRow r : store.query("SELECT * FROM outbox WHERE relay=? AND kind='envelope' AND state IN"
        + " ('relay-accepted', 'repush') AND deadline_at IS NOT NULL AND deadline_at<=?", HostStore.OUTBOX, url, now)) {
      String name = peers.getOrDefault(r.targetPubkey(), Fingerprint.ofB64(r.targetPubkey()));
      boolean everReceipt = store.one("SELECT 1 FROM peer_receipts WHERE host_pubkey=?", rs -> 1, r.targetPubkey())
          .isPresent();
      String text = everReceipt
          ? "Undelivered/unconfirmed to " + name + ": no delivery receipt for message " + r.msgId()
              + " by its deadline"
          : "Unconfirmed to " + name + ": no delivery confirmation for message " + r.msgId()
              + " (that host never sent a delivery receipt; it may be older than 0.5.3)";
      store.tx(c -> {
        store.update("UPDATE outbox SET state='unconfirmed', done_at=? WHERE id=?", now, r.id());
        alert("unconfirmed", r.targetPubkey(), r.itemId(), text);
        return null;
      });
      t.notes.add(text);
    }
    int retention = store.one("SELECT retention_days FROM relays WHERE url=?", rs -> rs.getInt(1), url).orElse(14);
    long limit = now - retention * DAY_MS - GRACE_MS;
    for (HostStore.OutboxRow r : store.query("SELECT * FROM outbox WHERE relay=? AND kind='envelope' AND"
        + " state='pending' AND created_at<=?", HostStore.OUTBOX, url, limit)) {
      String name = peers.getOrDefault(r.targetPubkey(), Fingerprint.ofB64(r.targetPubkey()));
      String text = "Undelivered to " + name + ": the relay never accepted message " + r.msgId()
          + " (last problem: " + r.lastError() + ")";
      store.tx(c -> {
        store.update("UPDATE outbox SET state='undelivered', done_at=? WHERE id=?", now, r.id());
        alert("undelivered", r.targetPubkey(), r.itemId(), text);
        return null;
      });
      t.notes.add(text);
    }
  }

  private void alert(String kind, String target, String itemId, String text) throws SQLException {
    store.update("INSERT INTO alerts(at, kind, relay, target_pubkey, item_id, text) VALUES(?, ?, ?, ?, ?, ?)", now(),
        kind, url, target, itemId, text);
    LOG.warn("host alert [kind: {}]", kind);
  }

  private RelayTransport transport(String relayPub) {
    String k = relayPub;
    if (transport == null || !k.equals(transportKey)) {
      if (transport != null) {
        transport.close();
      }
      transport = transports.open(url, options.hostName(), relayPub);
      transportKey = k;
    }
    return transport;
  }

  // ---- session (docs/protocol.md §6 per tick) ----

  private String openSession(Tick t) throws Exception {
    Optional<HostStore.RelayState> st = store.one("SELECT * FROM relays WHERE url=?", HostStore.RELAY, url);
    if (st.isEmpty()) {
      throw new Stop("no-pin", "no relay key pinned for " + url + ": run `mbxrelay host relay set " + url + "`");
    }
    if (st.get().presentedPubkey() != null) {
      throw new Stop("relay-key-changed", "relay key changed (pinned " + Fingerprint.ofB64(st.get().relayPubkey())
          + ", presented " + Fingerprint.ofB64(st.get().presentedPubkey()) + "): relay unused until confirmed");
    }
    long sessionNext = store.one("SELECT session_next_at FROM relays WHERE url=?", rs -> rs.getLong(1), url)
        .orElse(0L);
    if (sessionNext > now()) {
      throw new Stop("backoff", null);
    }
    String relayPub = st.get().relayPubkey();
    RelayInfo info = info(t, relayPub);
    relayPullWait = info.pullWaitMaxSeconds();
    sessionRelayPub = relayPub;
    store.update("UPDATE relays SET retention_days=?, max_batch=?, max_pull=? WHERE url=?",
        info.limits().retentionDays() > 0 ? info.limits().retentionDays() : 14,
        info.limits().maxBatch() > 0 ? info.limits().maxBatch() : 200,
        info.limits().maxPull() > 0 ? info.limits().maxPull() : 500, url);
    String stored = st.get().epoch();
    if (stored == null) {
      store.tx(c -> {
        store.update("UPDATE relays SET epoch=? WHERE url=?", info.epoch(), url);
        store.update("INSERT INTO positions(relay, epoch, received_through, acked_through) VALUES(?, ?, 0, 0)"
            + " ON CONFLICT(relay) DO UPDATE SET epoch=excluded.epoch, received_through=0, acked_through=0", url,
            info.epoch());
        return null;
      });
    } else if (!stored.equals(info.epoch())) {
      epochChange(t, info.epoch(), "relay epoch changed");
    }
    boolean enrolled = info.you().map(y -> key.publicKeyB64().equals(y.pubkey())).orElse(false);
    String cache = url + "|" + relayPub + "|" + info.epoch() + "|" + key.publicKeyB64();
    if (enrolled) {
      store.update("UPDATE relays SET enrolled_cache=?, enrol_failures=0 WHERE url=?", cache, url);
    } else {
      enrol(t, relayPub, cache);
    }
    publishAllowlist(t, relayPub);
    publishEncAd(t, relayPub, info);
    return relayPub;
  }

  /**
   * This host's X25519 encryption key, base64 (32 bytes), generated with BouncyCastle and kept in the host store on
   * first use. Peers seal envelopes for it; the relay advertises it (docs/protocol.md §4.2).
   *
   * @return the base64 public key
   * @throws SQLException when the store fails
   */
  public String encPublicKey() throws SQLException {
    Optional<String> pub = store.setting("enc_pub");
    if (pub.isPresent()) {
      return pub.get();
    }
    org.bouncycastle.crypto.params.X25519PrivateKeyParameters priv =
        new org.bouncycastle.crypto.params.X25519PrivateKeyParameters(new java.security.SecureRandom());
    String encoded = io.mbxrelay.wire.B64.encode(priv.generatePublicKey().getEncoded());
    store.putSetting("enc_priv", io.mbxrelay.wire.B64.encode(priv.getEncoded()));
    store.putSetting("enc_pub", encoded);
    return encoded;
  }

  /**
   * docs/protocol.md §6 step 5: publish the enc-key ad (v2, then v1) when none was published for this relay, it is more than
   * 24 h old, the key or the epoch changed, or {@code you.enc_ad} no longer shows it. A v2 404 means an old relay (v1
   * must then succeed); once v2 succeeded, v1 failures are tolerated. A failure is retried on the next tick.
   */
  private void publishEncAd(Tick t, String relayPub, RelayInfo info) throws Exception {
    String encPub = encPublicKey();
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
      v2 = transport(relayPub).publishEncAd(name, encPub, now());
      v1 = transport(relayPub).publishEncAdV1(name, encPub);
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

  private RelayInfo info(Tick t, String relayPub) throws Exception {
    InfoResult r;
    try {
      r = transport(relayPub).info();
    } catch (RelayUnreachable e) {
      throw sessionFailure("unreachable", "relay unreachable: " + e.getMessage(), 30_000);
    }
    if (r instanceof InfoResult.Ok ok) {
      return ok.info();
    }
    if (r instanceof RelayKeyChanged c) {
      store.tx(x -> {
        recordKeyChange(store, url, relayPub, c.presentedPubkey(), now());
        return null;
      });
      throw new Stop("relay-key-changed", "relay key changed (pinned " + c.pinnedFingerprint() + ", presented "
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

  private Stop sessionFailure(String session, String note, long capMs) throws SQLException {
    int failures = store.one("SELECT session_failures FROM relays WHERE url=?", rs -> rs.getInt(1), url).orElse(0) + 1;
    long delay = backoff(250, capMs, failures);
    store.update("UPDATE relays SET session_failures=?, session_next_at=? WHERE url=?", failures, now() + delay, url);
    return new Stop(session, note + " (next try in " + delay + " ms)");
  }

  /** Capped exponential backoff with jitter factor 0.5–1.0: base·2^(n−1), at most cap. */
  long backoff(long baseMs, long capMs, int n) {
    double raw = Math.min((double) capMs, baseMs * Math.pow(2, Math.max(0, n - 1)));
    return (long) (raw * (0.5 + 0.5 * options.random().nextDouble()));
  }

  private void enrol(Tick t, String relayPub, String cache) throws Exception {
    long next = store.one("SELECT enrol_next_at FROM relays WHERE url=?", rs -> rs.getLong(1), url).orElse(0L);
    if (next > now()) {
      throw new Stop("enrol-failed", "not enrolled and enrolment is backing off after a failure");
    }
    EnrolResult r;
    try {
      r = transport(relayPub).enrol(options.ownerFp());
    } catch (RelayUnreachable e) {
      throw sessionFailure("unreachable", "relay unreachable while enrolling: " + e.getMessage(), 30_000);
    }
    if (r instanceof EnrolResult.Enrolled) {
      store.update("UPDATE relays SET enrolled_cache=?, allowlist_digest=NULL WHERE url=?", cache, url);
      t.freshEnrol = true;
      t.notes.add("enrolled on " + url);
      return;
    }
    enrolFailure(t, r instanceof Refused f ? "enrolment refused: " + f.status() + " " + f.error()
        : "enrolment failed: " + r.getClass().getSimpleName());
  }

  private void enrolFailure(Tick t, String why) throws Exception {
    int n = store.one("SELECT enrol_failures FROM relays WHERE url=?", rs -> rs.getInt(1), url).orElse(0) + 1;
    long delay = Math.min(3_600_000L, 60_000L << Math.min(6, n - 1));
    store.update("UPDATE relays SET enrol_failures=?, enrol_next_at=?, enrolled_cache=NULL WHERE url=?", n,
        now() + delay, url);
    throw new Stop("enrol-failed", why + " (permanent until fixed; next enrolment try in " + delay / 1000 + " s)");
  }

  /** Any 401: the enrolled cache goes; right after a fresh enrolment it is permanent (backoff), else re-enrol. */
  private void on401(Tick t, String relayPub, String what) throws Exception {
    store.update("UPDATE relays SET enrolled_cache=NULL WHERE url=?", url);
    if (t.freshEnrol) {
      enrolFailure(t, what + " answered 401 right after a fresh enrolment (clock skew?)");
    }
    enrol(t, relayPub, null);
  }

  private void publishAllowlist(Tick t, String relayPub) throws Exception {
    List<String> peers = new ArrayList<>(store.peers().keySet());
    if (peers.isEmpty()) {
      return;
    }
    String digest = Hashes.sha256Hex(String.join("\n", peers).getBytes(StandardCharsets.UTF_8));
    Optional<String[]> st = store.one("SELECT allowlist_digest, allowlist_next_at FROM relays WHERE url=?",
        rs -> new String[] {rs.getString(1), Long.toString(rs.getLong(2))}, url);
    if (st.isEmpty() || digest.equals(st.get()[0]) || Long.parseLong(st.get()[1]) > now()) {
      return;
    }
    SendersResult r;
    try {
      r = transport(relayPub).publishSenders(peers, now());
    } catch (RelayUnreachable e) {
      t.notes.add("allowlist not published (relay unreachable); retried next tick");
      return;
    }
    if (r instanceof SendersResult.Published || (r instanceof Refused f && f.status() == 409)) {
      store.update("UPDATE relays SET allowlist_digest=? WHERE url=?", digest, url);
      t.notes.add("allowlist published (" + peers.size() + " peer(s))");
    } else if (r instanceof Refused f && f.status() == 404) {
      store.update("UPDATE relays SET allowlist_next_at=? WHERE url=?", now() + 3_600_000L, url);
      t.notes.add("relay does not support sender allowlists yet (404); retried in 1 h");
    } else {
      store.update("UPDATE relays SET allowlist_next_at=? WHERE url=?", now() + 600_000L, url);
      t.notes.add("allowlist refused: " + (r instanceof Refused f ? f.status() + " " + f.error() : "bad answer"));
    }
  }

  /** Epoch change or rewind (docs/protocol.md §6): re-push accepted rows, position 0 in the new epoch, acked marker gone. */
  private void epochChange(Tick t, String newEpoch, String why) throws Exception {
    if (++t.epochChanges > 3) {
      throw new Stop("refused", "relay keeps changing its epoch; stopping this tick");
    }
    t.epochChanged = true;
    int n = store.tx(c -> {
      int rows = store.update("UPDATE outbox SET state='repush', next_at=?, attempts=2 WHERE relay=? AND"
          + " kind='envelope' AND state IN ('relay-accepted', 'repush')", now(), url);
      store.update("UPDATE relays SET epoch=?, enrolled_cache=NULL, allowlist_digest=NULL WHERE url=?", newEpoch,
          url);
      store.update("INSERT INTO positions(relay, epoch, received_through, acked_through) VALUES(?, ?, 0, 0)"
          + " ON CONFLICT(relay) DO UPDATE SET epoch=excluded.epoch, received_through=0, acked_through=0", url,
          newEpoch);
      return rows;
    });
    t.notes.add(why + ": " + n + " row(s) back in the outbox for re-push, receive position reset to 0");
    LOG.info("relay epoch change handled [rows: {}]", n);
  }

  // ---- sender ----

  private void pushDue(Tick t, String relayPub) throws Exception {
    int maxBatch = store.one("SELECT max_batch FROM relays WHERE url=?", rs -> rs.getInt(1), url).orElse(200);
    List<HostStore.OutboxRow> rows = store.query("SELECT * FROM outbox WHERE relay=? AND state IN ('pending',"
        + " 'repush') AND next_at<=? ORDER BY id LIMIT ?", HostStore.OUTBOX, url, now(), maxBatch);
    if (rows.isEmpty()) {
      return;
    }
    List<PushItem> items = new ArrayList<>(rows.size());
    for (HostStore.OutboxRow r : rows) {
      byte[] wire = store.one("SELECT wire FROM outbox WHERE id=?", rs -> rs.getBytes(1), r.id()).orElseThrow();
      items.add(new PushItem(r.kind(), r.itemId(), List.of(new PushItem.Target(r.targetPubkey(), wire))));
    }
    PushResult res;
    try {
      res = transport(relayPub).push(items);
    } catch (RelayUnreachable e) {
      keepPending(t, rows, "push outcome unknown (" + e.getMessage() + "); same bytes retried");
      return;
    }
    options.hook().at("push-answered-before-record");
    if (res instanceof Refused f && f.status() == 401) {
      keepPending(t, rows, "push refused: 401 " + f.error());
      on401(t, relayPub, "push");
      return;
    }
    if (!(res instanceof PushResult.Pushed pushed)) {
      String why = res instanceof Refused f ? "push refused: " + f.status() + " " + f.error()
          + (transient_(f.status()) ? "" : " (permanent)") : res instanceof BadAnswer b ? "push answer not usable: "
          + b.why() : "relay key changed";
      keepPending(t, rows, why);
      return;
    }
    String currentEpoch = store.one("SELECT epoch FROM relays WHERE url=?", rs -> rs.getString(1), url).orElse("");
    String seenEpoch = null;
    for (int i = 0; i < rows.size(); i++) {
      HostStore.OutboxRow r = rows.get(i);
      ItemOutcome o = pushed.items().get(i);
      if (o instanceof ItemOutcome.Accepted a) {
        long acceptedAt = IsoTime.parse(a.at()).orElse(now());
        int retention = store.one("SELECT retention_days FROM relays WHERE url=?", rs -> rs.getInt(1), url).orElse(14);
        long deadline = r.deadlineAt() != null ? r.deadlineAt() : acceptedAt + retention * DAY_MS + GRACE_MS;
        String state = r.kind().equals("envelope") ? "relay-accepted" : "sent";
        store.tx(c -> store.update("UPDATE outbox SET state=?, seq=?, epoch=?, accept=?, accept_sig=?,"
            + " accepted_at=?, deadline_at=?, last_error=? WHERE id=? AND state IN ('pending', 'repush')", state,
            a.targets().get(0).seq(), a.epoch(), Json.stringify(a.accept()), a.sig(), acceptedAt, deadline,
            a.duplicate() ? "duplicate" : null, r.id()));
        t.accepted++;
        if (!a.epoch().equals(currentEpoch)) {
          seenEpoch = a.epoch();
        }
      } else {
        String why = o instanceof ItemOutcome.Rejected j ? "rejected:" + j.reason()
            : "unverified accept: " + ((ItemOutcome.Unverified) o).why();
        keepPending(t, List.of(r), why);
      }
    }
    if (seenEpoch != null) {
      epochChange(t, seenEpoch, "relay epoch changed (seen in a push answer)");
    }
  }

  private void keepPending(Tick t, List<HostStore.OutboxRow> rows, String why) throws SQLException {
    store.tx(c -> {
      for (HostStore.OutboxRow r : rows) {
        long delay = backoff(1_000, 900_000, r.attempts() + 1);
        store.update("UPDATE outbox SET attempts=attempts+1, next_at=?, last_error=? WHERE id=?", now() + delay,
            why, r.id());
      }
      return null;
    });
    t.notAccepted += rows.size();
    t.notes.add(rows.size() + " row(s) kept pending: " + why);
  }

  // ---- receiver ----

  private void pullAll(Tick t, String relayPub, Prefetched pre) throws Exception {
    caughtUp = false;
    int maxPull = store.one("SELECT max_pull FROM relays WHERE url=?", rs -> rs.getInt(1), url).orElse(500);
    for (int page = 0; page < MAX_PAGES; page++) {
      HostStore.Position pos = store.one("SELECT * FROM positions WHERE relay=?", HostStore.POSITION, url)
          .orElseThrow();
      PullResult r;
      if (page == 0 && pre != null && pre.epoch().equals(pos.epoch()) && pre.after() == pos.receivedThrough()) {
        r = pre.result(); // the page a long-poll wait brought, asked from this very position
      } else {
        try {
          r = transport(relayPub).pull(pos.receivedThrough(), maxPull, pos.epoch());
        } catch (RelayUnreachable e) {
          t.notes.add("pull failed (relay unreachable); retried next tick");
          return;
        }
      }
      if (r instanceof EpochChanged e) {
        if (e.currentEpoch().isEmpty()) {
          throw new Stop("refused", "pull answered 409 without an epoch");
        }
        epochChange(t, e.currentEpoch(), "relay epoch changed (seen in a pull answer)");
        continue;
      }
      if (r instanceof Refused f) {
        if (f.status() == 401) {
          on401(t, relayPub, "pull");
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
        epochChange(t, p.epoch(), "relay went back in time (head_seq " + p.headSeq() + " < received_through "
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
  private boolean ack(Tick t, String relayPub) throws Exception {
    HostStore.Position pos = store.one("SELECT * FROM positions WHERE relay=?", HostStore.POSITION, url)
        .orElseThrow();
    if (pos.receivedThrough() <= pos.ackedThrough()) {
      return true;
    }
    AckResult r;
    try {
      r = transport(relayPub).ack(pos.epoch(), pos.receivedThrough());
    } catch (RelayUnreachable e) {
      t.notes.add("ack lost (relay unreachable); the next ack covers it");
      return false;
    }
    if (r instanceof AckResult.Acked a) {
      store.update("UPDATE positions SET acked_through=max(acked_through, ?) WHERE relay=? AND epoch=?",
          pos.receivedThrough(), url, pos.epoch());
      return true;
    }
    if (r instanceof EpochChanged e && !e.currentEpoch().isEmpty()) {
      epochChange(t, e.currentEpoch(), "relay epoch changed (seen in an ack answer)");
      return true;
    }
    if (r instanceof AckResult.BadAck b) {
      epochChange(t, pos.epoch(), "relay went back in time (ack beyond head " + b.headSeq() + ")");
      return true;
    }
    t.notes.add("ack refused: " + (r instanceof Refused f ? f.status() + " " + f.error() : "bad answer"));
    return false;
  }

  private void processItem(Tick t, String epoch, PullResult.PulledItem item, String relayPub) throws Exception {
    int[] counts = new int[5];
    store.tx(c -> {
      String reason;
      try {
        reason = switch (item.kind()) {
          case "envelope" -> envelope(epoch, item, counts);
          case "receipt" -> receipt(item, counts);
          case "expired" -> notice(item, relayPub, counts);
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
        store.update("INSERT INTO quarantine(relay, epoch, seq, kind, item_id, sender_pubkey, reason, wire, at)"
            + " VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?)", url, epoch, item.seq(), item.kind(), item.itemId(),
            item.senderPubkey(), reason, item.wire(), now());
        counts[4]++;
        LOG.info("item quarantined [kind: {}] [reason: {}]", item.kind(), reason);
      }
      options.hook().at("receive-before-commit");
      store.update("UPDATE positions SET received_through=? WHERE relay=? AND epoch=? AND received_through<?",
          item.seq(), url, epoch, item.seq());
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
    Optional<String> peer = store.one("SELECT name FROM peers WHERE host_pubkey=?", rs -> rs.getString(1),
        item.senderPubkey());
    if (peer.isEmpty()) {
      return "host not paired";
    }
    boolean seen = store.one("SELECT 1 FROM received WHERE sender_pubkey=? AND msg_id=?", rs -> 1,
        item.senderPubkey(), item.itemId()).isPresent();
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
    store.update("INSERT INTO received(sender_pubkey, msg_id, relay, epoch, seq, at) VALUES(?, ?, ?, ?, ?, ?)",
        item.senderPubkey(), item.itemId(), url, epoch, item.seq(), now());
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
    store.update("INSERT OR IGNORE INTO outbox(relay, kind, item_id, msg_id, target_pubkey, wire, wire_hash, state,"
        + " next_at, created_at) VALUES(?, 'receipt', ?, ?, ?, ?, ?, 'pending', ?, ?)", url,
        ReceiptCheck.itemIdFor(rec), msgId, senderPubkey, bytes, Hashes.sha256Hex(bytes), now(), now());
  }

  /** A duplicate envelope re-queues its stored receipt (same bytes): the relay may have lost it. */
  private boolean requeueReceipt(String msgId, String senderPubkey) throws SQLException {
    List<Long> ids = store.query("SELECT id FROM outbox WHERE relay=? AND kind='receipt' AND msg_id=? AND"
        + " target_pubkey=?", rs -> rs.getLong(1), url, msgId, senderPubkey);
    for (long id : ids) {
      store.update("UPDATE outbox SET state='pending', next_at=? WHERE id=? AND state='sent'", now(), id);
    }
    return !ids.isEmpty();
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
    if (store.one("SELECT 1 FROM peers WHERE host_pubkey=?", rs -> 1, item.senderPubkey()).isEmpty()) {
      return "receipt from a host that is not a peer";
    }
    if (!Ed25519.verify(item.senderPubkey(), CanonicalJson.canonicalBytes(rec), sig.textValue())) {
      return "receipt is not signed by the peer's key";
    }
    String msg = rec.get("msg").textValue();
    if (store.one("SELECT 1 FROM outbox WHERE relay=? AND kind='envelope' AND msg_id=? AND target_pubkey=?",
        rs -> 1, url, msg, item.senderPubkey()).isEmpty()) {
      return "receipt for a message this host did not send to that host";
    }
    settle(msg, item.senderPubkey());
    store.update("INSERT INTO peer_receipts(host_pubkey, last_at) VALUES(?, ?) ON CONFLICT(host_pubkey) DO UPDATE"
        + " SET last_at=excluded.last_at", item.senderPubkey(), now());
    counts[2]++;
    return null;
  }

  private String notice(PullResult.PulledItem item, String relayPub, int[] counts) throws SQLException {
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
    Optional<HostStore.OutboxRow> row = store.one("SELECT * FROM outbox WHERE relay=? AND kind='envelope' AND"
        + " item_id=? AND target_pubkey=?", HostStore.OUTBOX, url, itemId, target);
    if (row.isEmpty()) {
      return "expiry notice for an item this host did not send";
    }
    counts[3]++;
    if (!row.get().state().equals("settled") && !row.get().state().equals("expired")) {
      String name = store.peers().getOrDefault(target, Fingerprint.ofB64(target));
      store.update("UPDATE outbox SET state='expired', done_at=? WHERE id=?", now(), row.get().id());
      alert("expired", target, itemId, "Undelivered to " + name + ": the relay expired message " + itemId
          + " before " + name + " pulled it");
    }
    return null;
  }

  /** Closes the transport (the store stays open). */
  @Override
  public void close() {
    if (transport != null) {
      transport.close();
      transport = null;
    }
  }
}
