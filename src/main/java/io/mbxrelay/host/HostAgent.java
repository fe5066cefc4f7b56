package io.mbxrelay.host;

import io.mbxrelay.crypto.Ed25519KeyPair;
import io.mbxrelay.crypto.Fingerprint;
import io.mbxrelay.host.BlockingRelayClient.RelayUnreachable;
import io.mbxrelay.host.seal.EncKeyPair;
import io.mbxrelay.host.seal.SealedEnvelope;
import io.mbxrelay.wire.ReceiptCheck;
import java.sql.SQLException;
import java.time.Clock;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.random.RandomGenerator;

/**
 * The durable host side of one or several relays (issue 5, issue 21; docs/protocol.md §6, §7.3 "Sender side", §7.4,
 * §7.5, §7.8, §7.9; docs/host-library.md "Several relays"): a sender outbox whose rows leave only on a verified accept
 * receipt and settle only on the target's delivery receipt (or its own deadline), and a receiver checkpoint that
 * advances only in the same SQLite transaction as each item's local effect. The caller drives it with
 * {@link #tick()} (the CLI's {@code run} does so in a loop).
 *
 * <p><b>Several relays.</b> Every message is pushed to every relay of the agent (one outbox row per relay, the same
 * sealed bytes, each with its own verified accept receipt); every relay is pulled, and a message that arrives through
 * a second relay is a duplicate there (acked, its receipt re-queued on that relay, not handed to the application
 * again). A relay that is down, refuses, presents another key or rotates its epoch stops or rewinds only its own part
 * of a tick ({@link TickReport#relays()}, {@link #doctor()}).
 *
 * <p><b>Retries.</b> No call sleeps. A failed push leaves its rows pending with {@code next_at} = now + capped
 * exponential backoff with jitter (1 s doubling, cap 15 min, factor 0.5–1.0); a failed session (I/O, 429, 502, 503,
 * 504) sets the relay's {@code next_at} (250 ms doubling, cap 30 s, jitter). Pushes <i>are</i> retried —
 * unlike a transport client that never retries a send — because the relay's dedup makes a retry with the same bytes a
 * {@code duplicate} with the original seq. Permanent failures (401 right after a fresh enrolment, other 4xx) back off
 * longer (enrolment 1 min doubling to 1 h) and are reported in {@link TickReport#notes()} and {@link #doctor()}.
 *
 * <p><b>Parts.</b> This class is the public face and runs the tick; the work is in {@link Outbox} (queueing, sealing
 * waiting mail, one row per relay, pushing, deadlines), and per relay a {@link RelayLane} with its
 * {@link RelaySession} (info, pin, epoch, enrolment, allowlist, enc-key ad, epoch change) and {@link Inbox} (pulling,
 * receiving, receipts, notices, quarantine, acks), which share an {@link AgentContext} (store, keys, options,
 * transports, time).
 *
 * <p><b>Threading.</b> Every public method locks the {@link HostStore}; one tick at a time. The application callback
 * runs on the ticking thread inside the store transaction. Blocking I/O: not for a Vert.x event loop.
 */
public final class HostAgent implements AutoCloseable {

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
   * @param keyWaitAlertMs how long a message may wait for its peer's encryption key before an alert says so (ms,
   *     at least 1; it keeps waiting afterwards)
   */
  public record Options(String hostName, String ownerFp, Clock clock, RandomGenerator random, Hook hook,
      long keyWaitAlertMs) {

    /** Default of {@link #keyWaitAlertMs()}: 24 h. */
    public static final long DEFAULT_KEY_WAIT_ALERT_MS = 86_400_000L;

    /** Validates. */
    public Options {
      if (hostName == null || !ReceiptCheck.HOST_RE.matcher(hostName).matches()) {
        throw new IllegalArgumentException("host name must match [A-Za-z0-9][A-Za-z0-9._-]{0,62}");
      }
      ownerFp = ownerFp == null ? "" : ownerFp;
      Objects.requireNonNull(clock);
      Objects.requireNonNull(random);
      hook = hook == null ? p -> { } : hook;
      if (keyWaitAlertMs < 1) {
        throw new IllegalArgumentException("keyWaitAlertMs must be at least 1");
      }
    }

    /**
     * Options with the default key-wait alert (24 h).
     *
     * @param hostName this host's name
     * @param ownerFp owner fingerprint or ""
     * @param clock time source
     * @param random jitter source
     * @param hook crash hook or null
     */
    public Options(String hostName, String ownerFp, Clock clock, RandomGenerator random, Hook hook) {
      this(hostName, ownerFp, clock, random, hook, DEFAULT_KEY_WAIT_ALERT_MS);
    }

    /**
     * Defaults: system clock, a fresh random source, no hook, key-wait alert after 24 h.
     *
     * @param hostName this host's name
     * @return the options
     */
    public static Options of(String hostName) {
      return new Options(hostName, "", Clock.systemUTC(), new java.security.SecureRandom(), null);
    }

    /**
     * These options with another key-wait alert time.
     *
     * @param ms the time, ms (at least 1)
     * @return the new options
     */
    public Options withKeyWaitAlertMs(long ms) {
      return new Options(hostName, ownerFp, clock, random, hook, ms);
    }
  }

  private final HostStore store;
  private final Ed25519KeyPair key;
  private final List<String> urls;
  private final Options options;
  private final AgentContext ctx;
  private final Outbox outbox;
  private final List<RelayLane> lanes;

  /**
   * An agent for one relay: exactly {@link #HostAgent(HostStore, Ed25519KeyPair, List, Options,
   * RelayTransport.Factory, HostApplication)} with a list of one.
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
    this(store, key, List.of(relayUrl), options, transports, app);
  }

  /**
   * An agent for several relays (docs/host-library.md "Several relays"): every message is pushed to every relay, each
   * relay is pinned, enrolled, and pulled on its own (its own epoch, position and enc-key ad), and a relay that is
   * down, refuses or changed its key stops only its own part of a tick. Each URL must be pinned ({@link #pin}) before
   * a tick uses it. Rows queued for a relay not in the list move to the relays in it on the next tick.
   *
   * @param store the host store (not closed by the agent)
   * @param key this host's key (its public key is recorded in the store; a store of another key is refused)
   * @param relayUrls the relay base URLs in order (normalized; duplicates dropped); may be empty for an agent that
   *     only records peers (it cannot queue mail then)
   * @param options options
   * @param transports makes a relay's transport once its key is pinned
   * @param app receives envelopes (from whichever relay brings them first; once per message)
   * @throws SQLException on storage errors
   * @throws IllegalStateException when the store belongs to another host key
   */
  public HostAgent(HostStore store, Ed25519KeyPair key, List<String> relayUrls, Options options,
      RelayTransport.Factory transports, HostApplication app) throws SQLException {
    this.store = Objects.requireNonNull(store);
    this.key = Objects.requireNonNull(key);
    java.util.LinkedHashSet<String> set = new java.util.LinkedHashSet<>();
    relayUrls.forEach(u -> set.add(RelayPins.normalizeUrl(u)));
    this.urls = List.copyOf(set);
    this.options = Objects.requireNonNull(options);
    this.ctx = new AgentContext(store, key, options, Objects.requireNonNull(transports));
    this.outbox = new Outbox(ctx, urls);
    Objects.requireNonNull(app);
    List<RelayLane> ls = new ArrayList<>();
    for (String u : urls) {
      RelayLane lane = new RelayLane(ctx, u);
      lane.inbox = new Inbox(ctx, lane, outbox, app);
      ls.add(lane);
    }
    this.lanes = List.copyOf(ls);
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

  /** @return the first relay's normalized URL, or null when the agent uses none */
  public String relayUrl() {
    return urls.isEmpty() ? null : urls.get(0);
  }

  /** @return the normalized relay URLs, in order */
  public List<String> relayUrls() {
    return urls;
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
    RelayRows relays = new RelayRows(store);
    synchronized (store) {
      return store.tx(c -> {
        Optional<HostStore.RelayState> st = store.relay(u);
        if (st.isEmpty()) {
          relays.insertPin(u, presentedPubkey, nowMs);
          return new PinOutcome.Pinned(presented, expectedFingerprint == null, null);
        }
        String pinned = st.get().relayPubkey();
        if (pinned.equals(presentedPubkey)) {
          relays.clearPresented(u);
          return new PinOutcome.Unchanged(presented);
        }
        if (confirm || expectedFingerprint != null) {
          relays.repin(u, presentedPubkey, nowMs);
          return new PinOutcome.Pinned(presented, false, Fingerprint.ofB64(pinned));
        }
        recordKeyChange(store, u, pinned, presentedPubkey, nowMs);
        return new PinOutcome.Changed(Fingerprint.ofB64(pinned), presented);
      });
    }
  }

  /** Records that the relay presents another key than the pinned one (an alert once per presented key). */
  static void recordKeyChange(HostStore store, String u, String pinned, String presented, long nowMs)
      throws SQLException {
    int n = new RelayRows(store).recordPresented(u, presented, nowMs);
    if (n > 0) {
      store.insertKeyChangedAlert(nowMs, u,
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
    addPeer(hostPubkey, name, null);
  }

  /**
   * Records an accepted peer and pins its encryption key (docs/host-library.md "Peer encryption keys"): mail to it is
   * then sealed for that key without asking the relay.
   *
   * @param hostPubkey the peer's base64 host key
   * @param name the peer's host name ({@code HOST_RE}; its ads and addresses must name it)
   * @param encPub the peer's X25519 key (base64, 32 bytes), or null to leave the pinned key as it is
   * @throws SQLException on storage errors
   * @throws IllegalArgumentException for a malformed key, or a key already accepted under another name (a peer is
   *     renamed only with {@link #renamePeer}: its name is what its mail and receipts are checked against)
   */
  public void addPeer(String hostPubkey, String name, String encPub) throws SQLException {
    addPeer(hostPubkey, name, encPub, false);
  }

  /**
   * Renames an accepted peer (issue 21 bug 6: {@link #addPeer} no longer renames silently).
   *
   * @param hostPubkey the peer's base64 host key (must be accepted)
   * @param name its new host name ({@code HOST_RE})
   * @throws SQLException on storage errors
   * @throws IllegalArgumentException when the key is not an accepted peer
   */
  public void renamePeer(String hostPubkey, String name) throws SQLException {
    synchronized (store) {
      if (store.peer(hostPubkey).isEmpty()) {
        throw new IllegalArgumentException("not an accepted peer: add it first");
      }
    }
    addPeer(hostPubkey, name, null, true);
  }

  private void addPeer(String hostPubkey, String name, String encPub, boolean rename) throws SQLException {
    if (name == null || !ReceiptCheck.HOST_RE.matcher(name).matches()) {
      throw new IllegalArgumentException("peer name must be a host name ([A-Za-z0-9][A-Za-z0-9._-]{0,62})");
    }
    if (!io.mbxrelay.wire.B64.isPubkey(hostPubkey)) {
      throw new IllegalArgumentException("peer key must be a base64 32-byte public key");
    }
    if (encPub != null && !EncKeyPair.isPublicKey(encPub)) {
      throw new IllegalArgumentException("peer encryption key must be a base64 32-byte X25519 key");
    }
    if (encPub != null && !EncKeyPair.isSealable(encPub)) {
      throw new IllegalArgumentException(
          "peer encryption key is a low-order X25519 point: nothing can be sealed to it");
    }
    synchronized (store) {
      store.tx(c -> {
        Optional<HostStore.Peer> known = store.peer(hostPubkey);
        if (known.isPresent() && !known.get().name().equals(name) && !rename) {
          throw new IllegalArgumentException("that key is already the accepted peer " + known.get().name()
              + "; rename it with renamePeer (CLI: peer add --rename)");
        }
        store.upsertPeer(hostPubkey, name, ctx.now(), encPub);
        return null;
      });
    }
  }

  /**
   * What {@link #sendMessage} did.
   *
   * @param msgId the new envelope id
   * @param sealed true when sealed and in the outbox now (pinned key); false when waiting for the peer's key, which
   *     the next tick looks up on the relay
   */
  public record Queued(String msgId, boolean sealed) {}

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
   * @throws IllegalStateException when the agent uses no relay
   */
  public Queued sendMessage(SealedEnvelope.Draft draft, String targetPubkey) throws SQLException {
    return outbox.sendMessage(draft, targetPubkey);
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
   * Queues an envelope durably for one target, on every relay of the agent (docs/protocol.md §7.3: the wire bytes are
   * persisted before the first attempt and reused on every retry). Returns after the commit; pushing happens on
   * {@link #tick()}.
   *
   * @param msgId the envelope id (= item id)
   * @param targetPubkey the target's pinned host key (base64); must be an accepted peer
   * @param wire the sealed envelope bytes for that target
   * @return the outcome
   * @throws SQLException on storage errors
   * @throws IllegalArgumentException when the target is not a peer, or the bytes are an envelope with {@code enc: null}
   *     (plaintext is never sent)
   * @throws IllegalStateException when the agent uses no relay
   */
  public SendOutcome send(String msgId, String targetPubkey, byte[] wire) throws SQLException {
    return outbox.send(msgId, targetPubkey, wire);
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
    return outbox.markDelivered(msgId, targetPubkey);
  }

  // ---------------------------------------------------------------- doctor

  /**
   * Lines for people about the relays' health ({@code mbxrelay host doctor}): per relay its pin state (a changed key
   * and how to confirm it), last session error, outbox counts and quarantine size — prefixed {@code relay <url>:}
   * when the agent uses several, so each line says which relay it is about — then the messages waiting for a key.
   * No key material (fingerprints only).
   *
   * @return problems first; empty list means nothing to report
   * @throws SQLException on storage errors
   */
  public List<String> doctor() throws SQLException {
    return doctor(store, urls);
  }

  /**
   * {@link #doctor()} for a store and one relay URL without an agent.
   *
   * @param store the host store
   * @param relayUrl the relay URL
   * @return the problem lines (empty when healthy)
   * @throws SQLException on storage errors
   */
  public static List<String> doctor(HostStore store, String relayUrl) throws SQLException {
    return doctor(store, List.of(relayUrl));
  }

  /**
   * {@link #doctor()} for a store and its relays without an agent.
   *
   * @param store the host store
   * @param relayUrls the relay URLs (each line about one relay names it when there are several)
   * @return the problem lines (empty when healthy)
   * @throws SQLException on storage errors
   */
  public static List<String> doctor(HostStore store, List<String> relayUrls) throws SQLException {
    List<String> out = new ArrayList<>();
    OutboxRows outboxRows = new OutboxRows(store);
    synchronized (store) {
      if (relayUrls.isEmpty()) {
        out.add("no relay set: run `mbxrelay host relay set URL`");
      }
      for (String raw : relayUrls) {
        String u = RelayPins.normalizeUrl(raw);
        String prefix = relayUrls.size() > 1 ? "relay " + u + ": " : "";
        for (String line : relayDoctor(store, outboxRows, u)) {
          out.add(prefix + line);
        }
      }
      for (String[] r : outboxRows.draftsByTarget()) {
        out.add(r[1] + " message(s) to " + store.peers().getOrDefault(r[0], Fingerprint.ofB64(r[0]))
            + " waiting for its encryption key: " + r[2]);
      }
    }
    return out;
  }

  /**
   * The {@link #doctor()} lines about one relay only, without the {@code relay <url>:} prefix (pin, key change, last
   * problem, outbox rows, quarantine).
   *
   * @param store the host store
   * @param relayUrl the relay URL
   * @return its problem lines (empty when it is healthy)
   * @throws SQLException on storage errors
   */
  public static List<String> relayDoctor(HostStore store, String relayUrl) throws SQLException {
    synchronized (store) {
      return relayDoctor(store, new OutboxRows(store), RelayPins.normalizeUrl(relayUrl));
    }
  }

  private static List<String> relayDoctor(HostStore store, OutboxRows outboxRows, String u) throws SQLException {
    List<String> out = new ArrayList<>();
    Optional<HostStore.RelayState> st = store.relay(u);
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
    for (String[] r : outboxRows.countsByState(u)) {
      out.add(r[1] + " outbox row(s) " + r[0]);
    }
    long q = new InboxRows(store).quarantineCount(u);
    if (q > 0) {
      out.add(q + " quarantined item(s): `mbxrelay host quarantine`");
    }
    return out;
  }

  // ---------------------------------------------------------------- tick

  /** Longest pull wait a host asks for, s: inside the transport's 35 s idle timeout (docs/host-library.md). */
  public static final int MAX_PULL_WAIT_SECONDS = 25;

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

  /** Whether the outbox has an item due now on a relay of this agent (pending, to re-push, or waiting for a key). */
  private boolean outboxDue() throws SQLException {
    if (urls.isEmpty()) {
      return false;
    }
    synchronized (store) {
      return new OutboxRows(store).anyDue(urls, ctx.now());
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
  record Prefetched(String epoch, long after, PullResult result) {}

  /**
   * A tick that may first wait for inbound mail: when a relay offers long-poll pulls ({@link RelayInfo
   * #pullWaitMaxSeconds()}) and the last tick had pulled everything from every relay it reached, pulls with
   * {@code wait} (at most {@code waitSeconds}, the relay's offer and {@link #MAX_PULL_WAIT_SECONDS}) from the first
   * such relay without holding the host store, then runs {@link #tick()} starting from the page that wait returned.
   * A loop of {@code tick(n)} thus receives an item as soon as that relay commits it (every message goes to every
   * relay, so waiting on one is enough for mail from hosts that use it; the other relays are pulled by the tick that
   * follows, at least every {@code n} seconds), and pushes the outbox at least every {@code n} seconds, with no timer
   * of its own. With {@code waitSeconds} 0, no relay with the offer, or pages still to pull, it is exactly
   * {@link #tick()}.
   *
   * @param waitSeconds longest wait before the tick, s
   * @return what the tick did
   * @throws Exception as {@link #tick()}
   */
  public TickReport tick(int waitSeconds) throws Exception {
    Prefetched pre = null;
    RelayLane waitLane = null;
    boolean caughtUp = lanes.stream().allMatch(l -> !l.okLastTick || l.inbox.caughtUp);
    for (RelayLane l : lanes) {
      if (l.okLastTick && l.session.relayPullWait > 0 && l.session.sessionRelayPub != null) {
        waitLane = l;
        break;
      }
    }
    int wait = waitLane == null ? 0 : Math.min(Math.min(waitSeconds, waitLane.session.relayPullWait),
        MAX_PULL_WAIT_SECONDS);
    String waitRelayPub = waitLane == null ? null : waitLane.session.sessionRelayPub;
    if (wait > 0 && caughtUp && !outboxDue()) { // mail to push (receipts too) goes out first
      String relayPub = waitRelayPub;
      Optional<HostStore.Position> pos;
      int maxPull;
      RelayTransport tr;
      synchronized (store) {
        pos = store.position(waitLane.url);
        maxPull = store.maxPull(waitLane.url);
        tr = waitLane.transport(relayPub);
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
      TickState shared = new TickState();
      Map<RelayLane, TickState> states = new LinkedHashMap<>();
      Map<RelayLane, String> open = new LinkedHashMap<>();
      RelayRows relayRows = new RelayRows(store);
      outbox.dispatch(shared);
      outbox.checkDeadlines(shared);
      for (RelayLane lane : lanes) {
        TickState t = new TickState();
        states.put(lane, t);
        try {
          open.put(lane, lane.session.openSession(t));
        } catch (TickStop s) {
          stopped(relayRows, lane, t, s);
        }
      }
      if (!open.isEmpty()) {
        outbox.sealWaiting(shared, open);
        outbox.resealForNewKeys(shared, open);
      }
      for (RelayLane lane : new ArrayList<>(open.keySet())) {
        try {
          outbox.pushDue(states.get(lane), lane, open.get(lane));
        } catch (TickStop s) {
          stopped(relayRows, lane, states.get(lane), s);
          open.remove(lane);
        }
      }
      for (RelayLane lane : new ArrayList<>(open.keySet())) {
        TickState t = states.get(lane);
        String relayPub = open.get(lane);
        try {
          // the page the wait brought only if the relay still has the key it was asked with
          lane.inbox.pullAll(t, relayPub, lane == waitLane && pre != null && relayPub.equals(waitRelayPub) ? pre
              : null);
          relayRows.markOk(lane.url, ctx.now());
        } catch (TickStop s) {
          stopped(relayRows, lane, t, s);
          open.remove(lane);
        }
      }
      for (RelayLane lane : lanes) {
        lane.okLastTick = open.containsKey(lane);
        relayRows.setLastSession(lane.url, states.get(lane).session);
      }
      return report(shared, states, open);
    }
  }

  /** A lane's part of the tick ended: its state and note; the relay's last error unless it only backs off. */
  private static void stopped(RelayRows relayRows, RelayLane lane, TickState t, TickStop s) throws SQLException {
    t.session = s.session;
    if (s.getMessage() != null) {
      t.notes.add(s.getMessage());
    }
    if (!s.session.equals("backoff") && !s.session.equals("no-pin")) {
      relayRows.setLastError(lane.url, s.getMessage());
    }
  }

  private TickReport report(TickState shared, Map<RelayLane, TickState> states, Map<RelayLane, String> open)
      throws SQLException {
    List<String> notes = new ArrayList<>(shared.notes);
    List<TickReport.Relay> relays = new ArrayList<>();
    String session = lanes.isEmpty() ? "no-pin" : "ok";
    if (lanes.isEmpty()) {
      notes.add("this host uses no relay: add one (CLI: host relay set URL)");
    }
    int accepted = 0;
    int notAccepted = 0;
    int delivered = 0;
    int duplicates = 0;
    int receipts = 0;
    int notices = 0;
    int quarantined = 0;
    boolean epochChanged = false;
    int waitOffer = 0;
    boolean pulledAll = !open.isEmpty();
    for (RelayLane lane : lanes) {
      TickState t = states.get(lane);
      String prefix = lanes.size() > 1 ? "relay " + lane.url + ": " : "";
      t.notes.forEach(n -> notes.add(prefix + n));
      if (session.equals("ok") && !t.session.equals("ok")) {
        session = t.session;
      }
      accepted += t.accepted;
      notAccepted += t.notAccepted;
      delivered += t.delivered;
      duplicates += t.duplicates;
      receipts += t.receipts;
      notices += t.notices;
      quarantined += t.quarantined;
      epochChanged |= t.epochChanged;
      boolean ok = open.containsKey(lane);
      if (ok) {
        pulledAll &= lane.inbox.caughtUp;
        if (waitOffer == 0) {
          waitOffer = lane.session.relayPullWait;
        }
      }
      Optional<HostStore.Position> p = store.position(lane.url);
      relays.add(new TickReport.Relay(lane.url, t.session, t.epochChanged,
          p.map(HostStore.Position::receivedThrough).orElse(-1L), p.map(HostStore.Position::ackedThrough).orElse(-1L),
          ok ? lane.session.relayPullWait : 0, ok && lane.inbox.caughtUp));
    }
    long received = relays.isEmpty() ? -1 : relays.get(0).receivedThrough();
    long acked = relays.isEmpty() ? -1 : relays.get(0).ackedThrough();
    return new TickReport(session, epochChanged, accepted, notAccepted, delivered, duplicates, receipts, notices,
        quarantined, received, acked, notes, waitOffer, pulledAll, relays);
  }

  /**
   * This host's X25519 encryption key, base64 (32 bytes), generated with Google Tink and kept in the owner-only host
   * store on first use ({@link HostEncKey}). Peers seal envelopes for it; the relay advertises it (docs/protocol.md
   * §4.2).
   *
   * @return the base64 public key
   * @throws SQLException when the store fails
   */
  public String encPublicKey() throws SQLException {
    return HostEncKey.loadOrCreate(store).publicKeyB64();
  }

  /** Closes the relays' transports (the store stays open). */
  @Override
  public void close() {
    lanes.forEach(RelayLane::close);
  }
}
