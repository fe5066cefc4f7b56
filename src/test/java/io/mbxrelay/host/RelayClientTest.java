package io.mbxrelay.host;

import static org.assertj.core.api.Assertions.assertThat;

import io.mbxrelay.crypto.Ed25519KeyPair;
import io.mbxrelay.testing.Envelopes;
import io.mbxrelay.testing.RelayHarness;
import io.mbxrelay.wire.Hashes;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.junit5.Timeout;
import io.vertx.junit5.VertxExtension;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link RelayClient} against a real relay over real HTTP. The flows are sequential, so each step is awaited on the
 * test thread (never an event loop) instead of chaining {@code VertxTestContext} callbacks.
 */
@ExtendWith(VertxExtension.class)
@Timeout(value = 60, timeUnit = TimeUnit.SECONDS)
class RelayClientTest {

  @TempDir Path dir;
  RelayHarness relay;
  Vertx vertx;

  @BeforeEach
  void start(Vertx vertx) throws Exception {
    this.vertx = vertx;
    relay = RelayHarness.start(dir);
  }

  @AfterEach
  void stop() {
    relay.close();
  }

  static <T> T await(Future<T> f) throws Exception {
    return f.toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
  }

  RelayClient client(String name, Ed25519KeyPair key, RelayPin pin) {
    return new RelayClient(vertx, relay.url() + "/", name, key, pin);
  }

  RelayClient enrolled(String name) throws Exception {
    RelayClient c = client(name, Ed25519KeyPair.generate(), new RelayPin.TrustOnFirstUse());
    EnrolResult r = await(c.enrol(""));
    assertThat(r).isInstanceOf(EnrolResult.Enrolled.class);
    return c;
  }

  @Test
  void twoHostsEnrolAndMoveOneEnvelopeWithAVerifiedReceiptThenPullExactBytesAndAck() throws Exception {
    RelayClient a = enrolled("alpha");
    RelayClient b = enrolled("beta");
    assertThat(a.relayKey()).contains(relay.relayKey.publicKeyB64());

    InfoResult info = await(b.info());
    assertThat(info).isInstanceOf(InfoResult.Ok.class);
    RelayInfo ri = ((InfoResult.Ok) info).info();
    assertThat(ri.you()).get().extracting(RelayInfo.You::host).isEqualTo("beta");
    assertThat(ri.limits().maxBatch()).isEqualTo(200);

    String id = Envelopes.newId();
    byte[] wire = Envelopes.sealed(id);
    PushItem item = PushItem.envelope(id, b.hostPubkey(), wire);

    PushResult first = await(a.push(List.of(item)));
    assertThat(first).isInstanceOf(PushResult.Pushed.class);
    ItemOutcome o1 = ((PushResult.Pushed) first).items().get(0);
    assertThat(o1).isInstanceOf(ItemOutcome.Accepted.class);
    ItemOutcome.Accepted acc = (ItemOutcome.Accepted) o1;
    assertThat(acc.duplicate()).isFalse();
    assertThat(acc.epoch()).isEqualTo(ri.epoch());
    assertThat(acc.targets()).hasSize(1);
    assertThat(acc.accept().path("targets").get(0).path("wire_hash").asText()).isEqualTo(Hashes.sha256Hex(wire));

    PushResult again = await(a.push(List.of(item)));
    ItemOutcome.Accepted dup = (ItemOutcome.Accepted) ((PushResult.Pushed) again).items().get(0);
    assertThat(dup.duplicate()).isTrue();
    assertThat(dup.targets()).isEqualTo(acc.targets());
    assertThat(dup.at()).isEqualTo(acc.at());

    PullResult pr = await(b.pull(0, 0, null));
    assertThat(pr).isInstanceOf(PullResult.Page.class);
    PullResult.Page page = (PullResult.Page) pr;
    assertThat(page.items()).hasSize(1);
    PullResult.PulledItem got = page.items().get(0);
    assertThat(got.wire()).isEqualTo(wire);
    assertThat(got.itemId()).isEqualTo(id);
    assertThat(got.kind()).isEqualTo("envelope");
    assertThat(got.senderPubkey()).isEqualTo(a.hostPubkey());
    assertThat(got.seq()).isEqualTo(acc.targets().get(0).seq());
    assertThat(page.lastSeq()).isEqualTo(got.seq());
    assertThat(page.more()).isFalse();

    AckResult ack = await(b.ack(page.epoch(), page.lastSeq()));
    assertThat(ack).isEqualTo(new AckResult.Acked(got.seq(), 1, got.seq()));
    PullResult after = await(b.pull(page.lastSeq(), 10, page.epoch()));
    assertThat(((PullResult.Page) after).items()).isEmpty();
  }

  @Test
  void aReceiptFromAnotherRelayKeyThanThePinnedOneIsUnverified() throws Exception {
    RelayClient b = enrolled("beta");
    Ed25519KeyPair key = Ed25519KeyPair.generate();
    RelayClient a = client("alpha", key, new RelayPin.TrustOnFirstUse());
    assertThat(await(a.enrol(""))).isInstanceOf(EnrolResult.Enrolled.class);
    RelayClient fake = client("alpha", key, new RelayPin.Key(Ed25519KeyPair.generate().publicKeyB64()));

    String id = Envelopes.newId();
    PushResult r = await(fake.push(List.of(PushItem.envelope(id, b.hostPubkey(), Envelopes.sealed(id)))));

    assertThat(((PushResult.Pushed) r).items()).containsExactly(
        new ItemOutcome.Unverified(id, "receipt names another relay key"));
  }

  @Test
  void aRelayPresentingAnotherKeyThanThePinnedFingerprintIsRefusedBeforeEnrolling() throws Exception {
    RelayClient c = client("alpha", Ed25519KeyPair.generate(),
        new RelayPin.Fingerprint(Ed25519KeyPair.generate().fingerprint()));

    EnrolResult r = await(c.enrol(""));

    assertThat(r).isInstanceOf(RelayKeyChanged.class);
    assertThat(((RelayKeyChanged) r).presentedPubkey()).isEqualTo(relay.relayKey.publicKeyB64());
    assertThat(c.relayKey()).isEmpty();
  }

  @Test
  void theMatchingFingerprintPinResolvesToTheRelayKey() throws Exception {
    RelayClient c = client("alpha", Ed25519KeyPair.generate(), new RelayPin.Fingerprint(relay.relayKey.fingerprint()));
    assertThat(await(c.enrol("owner-1"))).isInstanceOf(EnrolResult.Enrolled.class);
    assertThat(c.relayKey()).contains(relay.relayKey.publicKeyB64());
  }

  @Test
  void aStaleEpochIsAnEpochChangeOnPullAndAck() throws Exception {
    RelayClient b = enrolled("beta");
    String current = ((InfoResult.Ok) await(b.info())).info().epoch();

    assertThat(await(b.pull(0, 10, "stale-epoch"))).isEqualTo(new EpochChanged(current));
    assertThat(await(b.ack("stale-epoch", 0))).isEqualTo(new EpochChanged(current));
  }

  @Test
  void aQueryWithBase64CharactersIsSentExactlyAsSigned() throws Exception {
    // "+/=" must travel as %2B%2F%3D: a re-encoded or decoded query would fail the hop (401), not reach the epoch
    // check (409).
    RelayClient b = enrolled("beta");
    String current = ((InfoResult.Ok) await(b.info())).info().epoch();

    assertThat(await(b.pull(0, 10, "a+b/c=d e"))).isEqualTo(new EpochChanged(current));
  }

  @Test
  void anAckBeyondTheHeadIsBadAck() throws Exception {
    RelayClient b = enrolled("beta");
    String current = ((InfoResult.Ok) await(b.info())).info().epoch();

    assertThat(await(b.ack(current, 5))).isEqualTo(new AckResult.BadAck(0));
  }

  @Test
  void anUnenrolledHostIsRefusedWithBadRelayHop() throws Exception {
    RelayClient c = client("ghost", Ed25519KeyPair.generate(), new RelayPin.Key(relay.relayKey.publicKeyB64()));

    assertThat(await(c.pull(0, 0, null))).isEqualTo(new Refused(401, "bad relay hop", null));
    InfoResult info = await(c.info());
    assertThat(((InfoResult.Ok) info).info().you()).isEmpty();
  }

  @Test
  void aRejectedItemCarriesTheWireReason() throws Exception {
    RelayClient a = enrolled("alpha");
    String id = Envelopes.newId();

    PushResult r = await(a.push(List.of(PushItem.envelope(id, Ed25519KeyPair.generate().publicKeyB64(),
        Envelopes.sealed(id)))));

    assertThat(((PushResult.Pushed) r).items()).containsExactly(new ItemOutcome.Rejected(id, "target not enrolled"));
  }

  @Test
  void anUnreachableRelayFailsTheFuture() throws Exception {
    RelayClient c = new RelayClient(vertx, "http://127.0.0.1:1", "alpha", Ed25519KeyPair.generate(),
        new RelayPin.TrustOnFirstUse(), new RelayClient.Options(2_000, java.time.Clock.systemUTC()));
    assertThat(c.info().toCompletionStage().toCompletableFuture()).failsWithin(10, TimeUnit.SECONDS);
  }
}
