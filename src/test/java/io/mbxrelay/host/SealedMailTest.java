package io.mbxrelay.host;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.mbxrelay.crypto.Ed25519KeyPair;
import io.mbxrelay.host.seal.EncKeyPair;
import io.mbxrelay.host.seal.SealedEnvelope;
import io.mbxrelay.testing.Envelopes;
import io.mbxrelay.testing.MutableClock;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Clock;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * Issue 14 "Show": two Java hosts exchange a sealed message and its delivery receipt through a real relay, and the
 * relay's stored wire holds no piece of the plaintext; keys come from the relay's verified ad or a pin; mail that
 * does not open is quarantined with its reason.
 */
class SealedMailTest extends RealRelayTest {
  /** Alerts these tests provoke on purpose (issue 22 item 7): kept out of the build output, asserted where provoked. */
  @org.junit.jupiter.api.extension.RegisterExtension
  static final io.mbxrelay.testing.ExpectedLog LOGS = io.mbxrelay.testing.ExpectedLog.forClass()
      .and("io.mbxrelay.host.HostAgent", ch.qos.logback.classic.Level.WARN, "host alert [kind: undelivered]")
      .and("io.mbxrelay.host.HostAgent", ch.qos.logback.classic.Level.WARN, "host alert [kind: waiting-for-key]");


  static final String BODY = "The launch window opens at 04:17 UTC — ünïcödé, 日本語, and a very particular phrase"
      + " nobody else writes: purple-otter-42.";

  final class Host {
    final String name;
    final Ed25519KeyPair key = Ed25519KeyPair.generate();
    final MutableClock clock = new MutableClock(Instant.now());
    final HostStore store;
    final HostAgent agent;
    final List<SealedInbox.Message> received = new ArrayList<>();

    Host(String name) throws Exception {
      this.name = name;
      store = HostStore.open(dir.resolve(name + ".db"));
      closing.add(store);
      agent = new HostAgent(store, key, relay.url(), new HostAgent.Options(name, "", clock, new Random(3), null),
          (u, n, rp) -> new VertxRelayTransport(vertx, u, n, key, rp, 10_000, 15_000, Clock.systemUTC()),
          new SealedInbox(store, m -> {
            received.add(m);
            return new HostApplication.Verdict.Accepted(null);
          }, true, clock));
      closing.add(agent);
      pinRelay(store, clock.millis());
    }

    String pub() {
      return key.publicKeyB64();
    }

    HostStore.OutboxRow row(String msgId) throws Exception {
      return envelopeRow(store, msgId);
    }
  }

  Host[] pair() throws Exception {
    Host a = new Host("alpha");
    Host b = new Host("beta");
    pairUp(a.agent, a.pub(), "alpha", b.agent, b.pub(), "beta"); // b enrols and publishes its enc-key ad
    return new Host[] {a, b};
  }

  /** The wire bytes the relay stores for a target, read from its SQLite file. */
  List<byte[]> storedWires(String targetPubkey) throws Exception {
    List<byte[]> out = new ArrayList<>();
    try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + dir.resolve("relay").resolve("relay.db"));
        PreparedStatement ps = c.prepareStatement("SELECT wire FROM items WHERE target_pubkey=? AND kind='envelope'")) {
      ps.setString(1, targetPubkey);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          out.add(rs.getBytes(1));
        }
      }
    }
    return out;
  }

  static boolean containsWindow(byte[] haystack, byte[] needle, int window) {
    String h = new String(haystack, StandardCharsets.ISO_8859_1);
    for (int i = 0; i + window <= needle.length; i++) {
      if (h.contains(new String(needle, i, window, StandardCharsets.ISO_8859_1))) {
        return true;
      }
    }
    return false;
  }

  @Test
  void twoHostsExchangeASealedMessageAndItsDeliveryReceiptThroughARealRelay() throws Exception {
    Host[] h = pair();
    Host a = h[0];
    Host b = h[1];
    HostAgent.Queued q = a.agent.sendMessage(SealedEnvelope.Draft.message("owner@alpha", "owner@beta", "hello",
        BODY), b.pub());
    assertThat(q.sealed()).as("no key pinned: sealed once the relay's ad is verified").isFalse();
    assertThat(a.store.drafts()).hasSize(1);

    TickReport ta = a.agent.tick();
    assertThat(ta.notes()).anyMatch(n -> n.contains("sealed for their peer's key"));
    assertThat(ta.accepted()).isEqualTo(1);
    assertThat(a.store.drafts()).isEmpty();
    assertThat(a.store.peer(b.pub()).orElseThrow().adEncPub()).isEqualTo(b.agent.encPublicKey());

    List<byte[]> stored = storedWires(b.pub());
    assertThat(stored).hasSize(1);
    byte[] plain = BODY.getBytes(StandardCharsets.UTF_8);
    assertThat(containsWindow(("{\"body\":\"" + BODY.substring(40)).getBytes(StandardCharsets.UTF_8), plain, 8))
        .as("the check finds a plaintext run when there is one").isTrue();
    assertThat(containsWindow(stored.get(0), plain, 8)).as("no 8-byte run of the body on the relay").isFalse();
    byte[] b64 = Base64.getEncoder().encode(plain);
    assertThat(containsWindow(stored.get(0), b64, 12)).as("nor of its base64").isFalse();
    assertThat(stored.get(0)).isEqualTo(a.store.outboxWire(a.row(q.msgId()).id()).orElseThrow());

    TickReport tb = b.agent.tick();
    assertThat(tb.delivered()).isEqualTo(1);
    assertThat(b.received).hasSize(1);
    SealedInbox.Message m = b.received.get(0);
    assertThat(m.envelope().body()).isEqualTo(BODY);
    assertThat(m.envelope().id()).isEqualTo(q.msgId());
    assertThat(m.envelope().from()).isEqualTo("owner@alpha");
    assertThat(m.senderPubkey()).isEqualTo(a.pub());
    assertThat(m.senderName()).isEqualTo("alpha");
    assertThat(b.store.inbox()).singleElement().satisfies(i -> assertThat(i.body()).isEqualTo(BODY));

    HostStore.OutboxRow receipt = b.store.outboxFor(q.msgId()).stream().filter(r -> r.kind().equals("receipt"))
        .findFirst().orElseThrow();
    assertThat(receipt.itemId()).startsWith("receipt:" + q.msgId() + ":owner@beta:");
    assertThat(b.agent.tick().accepted()).as("the delivery receipt pushed").isEqualTo(1);
    TickReport ta2 = a.agent.tick();
    assertThat(ta2.receipts()).isEqualTo(1);
    assertThat(a.row(q.msgId()).state()).isEqualTo("settled");
    assertThat(a.agent.doctor()).isEmpty();
    assertThat(b.store.quarantine()).isEmpty();
  }

  @Test
  void aReceiptFromAPeerTheMessageWasNotSentToIsQuarantinedAndSettlesNothing() throws Exception {
    Host[] h = pair();
    Host a = h[0];
    Host b = h[1];
    Host c = new Host("gamma");
    a.clock.advance(java.time.Duration.ofSeconds(1)); // the new allowlist's iat must be newer than the stored one's
    pairUp(a.agent, a.pub(), "alpha", c.agent, c.pub(), "gamma");
    HostAgent.Queued q = a.agent.sendMessage(SealedEnvelope.Draft.message("owner@alpha", "owner@beta", "s", "x"),
        b.pub());
    assertThat(a.agent.tick().accepted()).isEqualTo(1);
    for (String msg : List.of(q.msgId(), io.mbxrelay.host.seal.Ulid.next(c.clock.millis()))) {
      com.fasterxml.jackson.databind.node.ObjectNode rec = io.mbxrelay.wire.Json.MAPPER.createObjectNode().put("v", 1)
          .put("type", "receipt").put("msg", msg).put("recipient", "owner@gamma").put("state", "delivered")
          .put("at", io.mbxrelay.wire.IsoTime.format(c.clock.millis())).put("seq", 1);
      com.fasterxml.jackson.databind.node.ObjectNode w = io.mbxrelay.wire.Json.MAPPER.createObjectNode();
      w.set("rec", rec);
      w.put("sig", c.key.signB64(io.mbxrelay.wire.CanonicalJson.canonicalBytes(rec)));
      PushResult r = new VertxRelayTransport(vertx, relay.url(), "gamma", c.key, relay.relayKey.publicKeyB64(),
          10_000, 15_000, Clock.systemUTC()).push(List.of(new PushItem("receipt",
              io.mbxrelay.wire.ReceiptCheck.itemIdFor(rec), List.of(new PushItem.Target(a.pub(),
                  io.mbxrelay.wire.CanonicalJson.canonicalBytes(w))))));
      assertThat(r).isInstanceOf(PushResult.Pushed.class);
      assertThat(((PushResult.Pushed) r).items().get(0)).as(r.toString()).isInstanceOf(ItemOutcome.Accepted.class);
    }
    TickReport t = a.agent.tick();
    assertThat(t.receipts()).isZero();
    assertThat(t.quarantined()).isEqualTo(2);
    assertThat(a.store.quarantine()).extracting(HostStore.QuarantineRow::reason)
        .containsOnly("receipt for a message this host did not send to that host");
    assertThat(a.row(q.msgId()).state()).isEqualTo("relay-accepted");
  }

  /** Issue 21 bug 2 end to end: the relay serves beta's old v1 ad beside its current v2 ad; mail still goes out. */
  @Test
  void aRelayServingAStaleV1AdBesideTheCurrentV2AdStillGetsMailSealedForTheV2Key() throws Exception {
    Host[] h = pair();
    Host a = h[0];
    Host b = h[1];
    try (RelayTransport raw = new VertxRelayTransport(vertx, relay.url(), "beta", b.key,
        relay.relayKey.publicKeyB64(), 10_000, 15_000, Clock.systemUTC())) {
      assertThat(raw.publishEncAdV1("beta", EncKeyPair.generate().publicKeyB64())) // beta's key of long ago
          .isInstanceOf(EncAdResult.Published.class);
    }
    HostAgent.Queued q = a.agent.sendMessage(SealedEnvelope.Draft.message("owner@alpha", "owner@beta", "s", BODY),
        b.pub());
    TickReport ta = a.agent.tick();
    assertThat(ta.notes()).noneMatch(n -> n.contains("tampered"));
    assertThat(ta.accepted()).isEqualTo(1);
    assertThat(a.store.peer(b.pub()).orElseThrow().adEncPub()).isEqualTo(b.agent.encPublicKey());
    b.agent.tick();
    assertThat(b.received).singleElement().satisfies(m -> {
      assertThat(m.envelope().id()).isEqualTo(q.msgId());
      assertThat(m.envelope().body()).isEqualTo(BODY);
    });
  }

  /**
   * Issue 21 bug 3: the sealed-size check used 524,288 bytes whatever the relay announced. It now uses the relay's
   * {@code max_item_bytes} from its info; mail queued before that was known and over it is not pushed for ever: it
   * becomes undelivered with an alert.
   */
  @Test
  void theSealedSizeCheckUsesTheRelaysAnnouncedItemLimit() throws Exception {
    relay.close();
    relay = io.mbxrelay.testing.RelayHarness.start(dir.resolve("small-relay"),
        java.util.Map.of("MBX_RELAY_LIMITS_MAX_ITEM_BYTES", "65536"), Clock.systemUTC(), Ed25519KeyPair.generate());
    Host a = new Host("alpha");
    Host b = new Host("beta");
    a.agent.addPeer(b.pub(), "beta", b.agent.encPublicKey());
    b.agent.addPeer(a.pub(), "alpha");
    HostAgent.Queued early = a.agent.sendMessage(SealedEnvelope.Draft.message("owner@alpha", "owner@beta", "s",
        "x".repeat(40_000)), b.pub()); // the limit is not known before the first session
    assertThat(b.agent.tick().session()).isEqualTo("ok");
    TickReport t = a.agent.tick();
    assertThat(t.accepted()).isZero();
    assertThat(a.row(early.msgId()).state()).isEqualTo("undelivered");
    LOGS.assertSeen("host alert [kind: undelivered]");
    assertThat(a.store.alerts()).singleElement().satisfies(al -> assertThat(al.text())
        .startsWith("Undelivered to beta: message " + early.msgId() + " is ")
        .contains("over the relay's item limit of 65536 bytes"));

    assertThatThrownBy(() -> a.agent.sendMessage(SealedEnvelope.Draft.message("owner@alpha", "owner@beta", "s",
        "x".repeat(40_000)), b.pub())).hasMessageStartingWith("body too large: sealed, the envelope is")
        .hasMessageContaining("over the relay item limit of 65536 bytes");
    HostAgent.Queued fits = a.agent.sendMessage(SealedEnvelope.Draft.message("owner@alpha", "owner@beta", "s",
        "x".repeat(20_000)), b.pub());
    assertThat(a.agent.tick().accepted()).isEqualTo(1);
    b.agent.tick();
    assertThat(b.received).singleElement().satisfies(m -> assertThat(m.envelope().id()).isEqualTo(fits.msgId()));
  }

  /**
   * Issue 21 bug 4: mail sealed for a peer's old encryption key was not resealed after the peer's key changed, so
   * the peer quarantined it ("body does not open"). A pending row the relay never stored is now resealed for the key
   * pinned since.
   */
  @Test
  void mailNotYetStoredByTheRelayIsResealedWhenThePeersPinnedKeyChanges() throws Exception {
    Host a = new Host("alpha");
    Host b = new Host("beta");
    a.agent.addPeer(b.pub(), "beta", EncKeyPair.generate().publicKeyB64()); // the key beta had before
    b.agent.addPeer(a.pub(), "alpha");
    HostAgent.Queued q = a.agent.sendMessage(SealedEnvelope.Draft.message("owner@alpha", "owner@beta", "s", BODY),
        b.pub());
    a.agent.tick(); // beta is not enrolled yet: refused, the relay stored nothing
    assertThat(a.row(q.msgId()).lastError()).isEqualTo("rejected:target not enrolled");
    a.agent.addPeer(b.pub(), "beta", b.agent.encPublicKey()); // beta rotated; its owner pins the new key
    assertThat(b.agent.tick().session()).isEqualTo("ok");
    a.clock.advance(java.time.Duration.ofHours(1));
    TickReport t = a.agent.tick();
    assertThat(t.notes()).contains("1 queued message(s) resealed for their peer's new encryption key");
    assertThat(t.accepted()).isEqualTo(1);
    TickReport tb = b.agent.tick();
    assertThat(tb.quarantined()).isZero();
    assertThat(b.received).singleElement().satisfies(m -> assertThat(m.envelope().body()).isEqualTo(BODY));
  }

  /** Issue 21 bug 4, the relay-ad way: beta advertises a new key while alpha's row waits; it is resealed for it. */
  @Test
  void mailNotYetStoredByTheRelayIsResealedWhenThePeerAdvertisesANewKey() throws Exception {
    Host a = new Host("alpha");
    Host b = new Host("beta");
    b.agent.addPeer(Ed25519KeyPair.generate().publicKeyB64(), "gamma"); // beta's allowlist does not name alpha yet
    assertThat(b.agent.tick().session()).isEqualTo("ok");
    a.agent.addPeer(b.pub(), "beta");
    String oldKey = b.agent.encPublicKey();
    HostAgent.Queued q = a.agent.sendMessage(SealedEnvelope.Draft.message("owner@alpha", "owner@beta", "s", BODY),
        b.pub());
    a.agent.tick(); // sealed for beta's advertised key, refused by beta's allowlist
    assertThat(a.row(q.msgId()).lastError()).isEqualTo("rejected:sender not accepted by target");
    assertThat(a.store.peer(b.pub()).orElseThrow().adEncPub()).isEqualTo(oldKey);

    EncKeyPair fresh = EncKeyPair.generate(); // beta rotates its encryption key and advertises the new one
    b.store.putSetting("enc_priv", fresh.privateKeyB64());
    b.store.putSetting("enc_pub", fresh.publicKeyB64());
    b.clock.advance(java.time.Duration.ofMinutes(1));
    b.agent.addPeer(a.pub(), "alpha");
    assertThat(b.agent.tick().notes()).anyMatch(n -> n.startsWith("enc-key ad published"));

    a.clock.advance(java.time.Duration.ofHours(1));
    TickReport t = a.agent.tick();
    assertThat(t.notes()).contains("1 queued message(s) resealed for their peer's new encryption key");
    assertThat(t.accepted()).isEqualTo(1);
    assertThat(b.agent.tick().quarantined()).isZero();
    assertThat(b.received).singleElement().satisfies(m -> assertThat(m.envelope().body()).isEqualTo(BODY));
  }

  @Test
  void aPinnedEncryptionKeySealsAtOnceWithoutAskingTheRelay() throws Exception {
    Host[] h = pair();
    Host a = h[0];
    Host b = h[1];
    a.agent.addPeer(b.pub(), "beta", b.agent.encPublicKey());
    HostAgent.Queued q = a.agent.sendMessage(SealedEnvelope.Draft.message("owner@alpha", "ops@beta", "s", "pinned"),
        b.pub());
    assertThat(q.sealed()).isTrue();
    assertThat(a.store.drafts()).isEmpty();
    assertThat(a.row(q.msgId()).state()).isEqualTo("pending");
    a.agent.tick();
    b.agent.tick();
    assertThat(b.received).singleElement().satisfies(m -> assertThat(m.envelope().body()).isEqualTo("pinned"));
    assertThat(b.store.outboxFor(q.msgId())).anyMatch(r -> r.itemId().startsWith("receipt:" + q.msgId()
        + ":ops@beta:"));
  }

  @Test
  void aPeerWithoutAUsableKeyKeepsTheMessageWaitingWithAClearStatusAndNothingGoesOut() throws Exception {
    Host a = new Host("alpha");
    Host b = new Host("beta");
    a.agent.addPeer(b.pub(), "beta");
    b.agent.addPeer(a.pub(), "alpha");
    HostAgent.Queued q = a.agent.sendMessage(SealedEnvelope.Draft.message("owner@alpha", "owner@beta", "s", BODY),
        b.pub());
    TickReport t = a.agent.tick(); // b never ran: the relay has no ad for it
    assertThat(t.accepted()).isZero();
    assertThat(t.notes()).anyMatch(n -> n.contains("still waiting: no encryption key: the relay has no ad"));
    assertThat(a.store.outboxFor(q.msgId())).isEmpty();
    assertThat(a.store.drafts()).singleElement().satisfies(d -> assertThat(d.lastError())
        .startsWith("no encryption key: the relay has no ad for that host"));
    assertThat(a.agent.doctor()).anyMatch(l -> l.startsWith("1 message(s) to beta waiting for its encryption key"));

    assertThat(b.agent.tick().session()).isEqualTo("ok"); // b publishes its ad
    a.clock.advance(java.time.Duration.ofMinutes(1)); // past the draft's backoff
    TickReport t2 = a.agent.tick();
    assertThat(t2.accepted()).isEqualTo(1);
    b.agent.tick();
    assertThat(b.received).singleElement().satisfies(m -> assertThat(m.envelope().body()).isEqualTo(BODY));
  }

  /**
   * Issue 21 bug 5: a message waiting for its peer's key had no deadline. After {@code keyWaitAlertMs} (24 h by
   * default) it raises one alert, and keeps waiting.
   */
  @Test
  void aMessageWaitingTooLongForItsPeersKeyRaisesOneAlertAndKeepsWaiting() throws Exception {
    Host a = new Host("alpha");
    Host b = new Host("beta");
    a.agent.addPeer(b.pub(), "beta"); // beta never runs: no ad
    HostAgent.Queued q = a.agent.sendMessage(SealedEnvelope.Draft.message("owner@alpha", "owner@beta", "s", "x"),
        b.pub());
    a.agent.tick();
    a.clock.advance(java.time.Duration.ofHours(23));
    a.agent.tick();
    assertThat(a.store.alerts()).isEmpty();
    a.clock.advance(java.time.Duration.ofHours(2));
    TickReport t = a.agent.tick();
    assertThat(t.notes()).anyMatch(n -> n.startsWith("Not sent yet to beta: message " + q.msgId() + " has waited 25 h"
        + " for beta's encryption key (no encryption key: the relay has no ad"));
    a.clock.advance(java.time.Duration.ofHours(1));
    a.agent.tick();
    assertThat(a.store.alerts()).singleElement().satisfies(al -> {
      assertThat(al.kind()).isEqualTo("waiting-for-key");
      LOGS.assertSeen("host alert [kind: waiting-for-key]");
      assertThat(al.itemId()).isEqualTo(q.msgId());
    });
    assertThat(a.store.drafts()).singleElement().satisfies(d -> assertThat(d.msgId()).isEqualTo(q.msgId()));

    HostAgent.Options soon = new HostAgent.Options("alpha", "", a.clock, new Random(5), null).withKeyWaitAlertMs(
        600_000);
    try (HostAgent quick = new HostAgent(a.store, a.key, relay.url(), soon, (u, n, rp) -> new VertxRelayTransport(
        vertx, u, n, a.key, rp, 10_000, 15_000, Clock.systemUTC()), d -> new HostApplication.Verdict.Accepted(null))) {
      HostAgent.Queued q2 = quick.sendMessage(SealedEnvelope.Draft.message("owner@alpha", "owner@beta", "s", "y"),
          b.pub());
      a.clock.advance(java.time.Duration.ofMinutes(11));
      quick.tick();
      assertThat(a.store.alerts()).hasSize(2).last().satisfies(al -> assertThat(al.itemId()).isEqualTo(q2.msgId()));
    }
  }

  @Test
  void mailThatDoesNotOpenIsQuarantinedWithItsReasonAndNeverReachesTheApplication() throws Exception {
    Host[] h = pair();
    Host a = h[0];
    Host b = h[1];
    a.agent.addPeer(b.pub(), "beta", EncKeyPair.generate().publicKeyB64()); // a wrong pinned key
    HostAgent.Queued q = a.agent.sendMessage(SealedEnvelope.Draft.message("owner@alpha", "owner@beta", "s", "x"),
        b.pub());
    String unsigned = Envelopes.newId();
    a.agent.send(unsigned, b.pub(), Envelopes.sealed(unsigned)); // shaped like an envelope, but not signed
    assertThat(a.agent.tick().accepted()).isEqualTo(2);
    TickReport tb = b.agent.tick();
    assertThat(tb.quarantined()).isEqualTo(2);
    assertThat(b.received).isEmpty();
    assertThat(b.store.quarantine()).extracting(HostStore.QuarantineRow::itemId, HostStore.QuarantineRow::reason)
        .containsExactlyInAnyOrder(
            org.assertj.core.groups.Tuple.tuple(q.msgId(), "refused by the application: body does not open"),
            org.assertj.core.groups.Tuple.tuple(unsigned, "refused by the application: unsigned"));
    assertThat(b.store.outbox()).as("no delivery receipt for mail that did not open").isEmpty();
  }

  @Test
  void sendingRefusesANonPeerAndABadDraftBeforeAnythingIsStored() throws Exception {
    Host a = new Host("alpha");
    assertThatThrownBy(() -> a.agent.sendMessage(SealedEnvelope.Draft.message("owner@alpha", "owner@x", "s", "b"),
        Ed25519KeyPair.generate().publicKeyB64())).hasMessageContaining("not an accepted peer");
    Ed25519KeyPair peer = Ed25519KeyPair.generate();
    a.agent.addPeer(peer.publicKeyB64(), "x");
    assertThatThrownBy(() -> a.agent.sendMessage(SealedEnvelope.Draft.message("owner@alpha", "owner@x", "", "b"),
        peer.publicKeyB64())).hasMessage("subject is required");
    assertThatThrownBy(() -> a.agent.addPeer(peer.publicKeyB64(), "x", "not-a-key"))
        .hasMessageContaining("X25519");
    assertThatThrownBy(() -> a.agent.addPeer(peer.publicKeyB64(), "y")) // issue 21 bug 6: no silent rename
        .hasMessage("that key is already the accepted peer x; rename it with renamePeer (CLI: peer add --rename)");
    assertThat(a.store.peer(peer.publicKeyB64()).orElseThrow().name()).isEqualTo("x");
    a.agent.renamePeer(peer.publicKeyB64(), "y");
    a.agent.renamePeer(peer.publicKeyB64(), "x");
    String lowOrder = Base64.getEncoder().encodeToString(new byte[32]);
    assertThatThrownBy(() -> a.agent.addPeer(peer.publicKeyB64(), "x", lowOrder)).hasMessageContaining("low-order");
    assertThatThrownBy(() -> a.agent.sendMessage(SealedEnvelope.Draft.message("owner@alpha", "owner@x", "s",
        "x".repeat(200_000)), peer.publicKeyB64())).hasMessageStartingWith("body too large: sealed, the envelope is");
    a.agent.sendMessage(SealedEnvelope.Draft.message("owner@alpha", "owner@x", "s", "x".repeat(190_000)),
        peer.publicKeyB64()); // fits
    a.store.update("DELETE FROM drafts");
    String id = io.mbxrelay.host.seal.Ulid.next(a.clock.millis());
    byte[] plaintext = io.mbxrelay.wire.Json.stringify(SealedEnvelope.build(SealedEnvelope.Draft.message("owner@alpha",
        "owner@x", "s", "readable"), id, a.clock.millis())).getBytes(StandardCharsets.UTF_8);
    assertThatThrownBy(() -> a.agent.send(id, peer.publicKeyB64(), plaintext))
        .hasMessageStartingWith("a plaintext envelope (enc: null) is never sent");
    assertThat(a.store.drafts()).isEmpty();
    assertThat(a.store.outbox()).isEmpty();
  }
}
