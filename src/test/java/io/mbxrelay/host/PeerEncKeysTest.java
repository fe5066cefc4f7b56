package io.mbxrelay.host;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.mbxrelay.crypto.Ed25519KeyPair;
import io.mbxrelay.host.seal.EncKeyPair;
import io.mbxrelay.wire.CanonicalJson;
import io.mbxrelay.wire.IsoTime;
import io.mbxrelay.wire.Json;
import java.nio.file.Path;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Which relay-served enc keys a sender accepts (docs/host-library.md "Peer encryption keys"). */
class PeerEncKeysTest {

  static final long NOW = 1_780_000_000_000L;
  static final long DAY = 86_400_000L;

  @TempDir Path dir;
  HostStore store;
  final Ed25519KeyPair peerKey = Ed25519KeyPair.generate();
  final String encA = EncKeyPair.generate().publicKeyB64();
  final String encB = EncKeyPair.generate().publicKeyB64();

  @BeforeEach
  void open() throws Exception {
    store = HostStore.open(dir.resolve("h.db"));
    synchronized (store) {
      store.tx(c -> store.update("INSERT INTO peers(host_pubkey, name, added_at) VALUES(?, 'beta', 0)",
          peerKey.publicKeyB64()));
    }
  }

  @AfterEach
  void close() throws Exception {
    store.close();
  }

  HostStore.Peer peer() throws Exception {
    return store.peer(peerKey.publicKeyB64()).orElseThrow();
  }

  ObjectNode answer(Ed25519KeyPair signer, String host, String enc, long iat, long exp) {
    ObjectNode ad = Json.MAPPER.createObjectNode().put("v", 2).put("type", "enc-ad").put("host", host)
        .put("host_pubkey", peerKey.publicKeyB64()).put("enc_pub", enc).put("iat", IsoTime.format(iat))
        .put("exp", IsoTime.format(exp));
    ObjectNode a = Json.MAPPER.createObjectNode().put("host", host).put("host_pubkey", peerKey.publicKeyB64());
    a.set("ad", ad);
    a.put("ad_sig", signer.signB64(CanonicalJson.canonicalBytes(ad)));
    return a;
  }

  String take(ObjectNode answer) throws Exception {
    HostStore.Peer p = peer();
    synchronized (store) {
      PeerEncKeys.Resolution r = store.tx(c -> PeerEncKeys.fromRelay(store, p, answer, NOW));
      return r.encPub() != null ? "key " + r.encPub() : r.why();
    }
  }

  @Test
  void aCurrentAdSignedByThePinnedHostKeyIsUsedAndRemembered() throws Exception {
    assertThat(take(answer(peerKey, "beta", encA, NOW - DAY, NOW + 29 * DAY))).isEqualTo("key " + encA);
    assertThat(PeerEncKeys.cached(peer(), NOW).encPub()).isEqualTo(encA);
    assertThat(PeerEncKeys.cached(peer(), NOW + 30 * DAY).why()).contains("expired");
  }

  @Test
  void adsTheRelayAloneVouchesForOrThatAreStaleAreRefused() throws Exception {
    assertThat(take(answer(Ed25519KeyPair.generate(), "beta", encA, NOW, NOW + DAY)))
        .isEqualTo("relay ad refused: bad signature");
    assertThat(take(answer(peerKey, "gamma", encA, NOW, NOW + DAY))).isEqualTo("relay ad refused: wrong peer");
    assertThat(take(answer(peerKey, "beta", encA, NOW - 31 * DAY, NOW - DAY))).isEqualTo("relay ad refused: expired");
    assertThat(take(answer(peerKey, "beta", encA, NOW + DAY, NOW + 2 * DAY)))
        .isEqualTo("relay ad refused: not yet valid");
    assertThat(take(answer(peerKey, "beta", encA, NOW - DAY, NOW + 90 * DAY)))
        .isEqualTo("relay ad refused: lifetime over the maximum");
    ObjectNode tampered = answer(peerKey, "beta", encA, NOW, NOW + DAY).put("enc_pub", encB);
    assertThat(take(tampered)).startsWith("relay ad refused: tampered");
    ObjectNode v1 = Json.MAPPER.createObjectNode().put("host", "beta").put("enc_pub", encA).put("sig", "x");
    assertThat(take(v1)).startsWith("relay ad refused: unexpiring v1 advertisement");
    assertThat(take(Json.MAPPER.createObjectNode().put("enc_pub", encA))).isEqualTo("relay ad refused: unsigned");
    ObjectNode extra = answer(peerKey, "beta", encA, NOW, NOW + DAY);
    ((ObjectNode) extra.get("ad")).put("note", "added after signing");
    assertThat(take(extra)).isEqualTo("relay ad refused: bad signature");
    assertThat(peer().adEncPub()).as("nothing refused was remembered").isNull();
  }

  /**
   * Issue 21 bug 2: a relay that still serves the peer's old v1 ad beside its newer v2 ad made the answer look
   * tampered. A v1 key the peer itself signed is stale, not a second key the relay made up: the v2 record decides.
   */
  @Test
  void aStaleV1AdThePeerSignedBesideANewerV2AdIsHarmlessButAnUnsignedSecondKeyIsNot() throws Exception {
    ObjectNode v1 = Json.MAPPER.createObjectNode().put("v", 1).put("host", "beta").put("enc_pub", encB);
    ObjectNode stale = answer(peerKey, "beta", encA, NOW - DAY, NOW + 29 * DAY).put("enc_pub", encB)
        .put("sig", peerKey.signB64(CanonicalJson.canonicalBytes(v1)));
    assertThat(take(stale)).isEqualTo("key " + encA);
    ObjectNode forged = answer(peerKey, "beta", encA, NOW, NOW + 30 * DAY).put("enc_pub", encB)
        .put("sig", Ed25519KeyPair.generate().signB64(CanonicalJson.canonicalBytes(v1)));
    assertThat(take(forged)).startsWith("relay ad refused: tampered");
  }

  @Test
  void aSignedAdNamingALowOrderPointIsRefusedAndNotRemembered() throws Exception {
    String zero = java.util.Base64.getEncoder().encodeToString(new byte[32]); // a point no key can be sealed to
    assertThat(take(answer(peerKey, "beta", zero, NOW - DAY, NOW + 29 * DAY)))
        .isEqualTo("relay ad refused: unusable encryption key (a low-order X25519 point)");
    assertThat(peer().adEncPub()).isNull();
  }

  @Test
  void anAdOlderThanOneAlreadySeenOrReplayedUnderAnotherKeyIsRefused() throws Exception {
    assertThat(take(answer(peerKey, "beta", encB, NOW - DAY, NOW + 29 * DAY))).isEqualTo("key " + encB);
    assertThat(take(answer(peerKey, "beta", encA, NOW - 2 * DAY, NOW + 28 * DAY)))
        .startsWith("relay ad refused: older than the ad already seen");
    assertThat(take(answer(peerKey, "beta", encA, NOW - DAY, NOW + 29 * DAY)))
        .isEqualTo("relay ad refused: not newer than the ad already seen but naming another key");
    assertThat(take(answer(peerKey, "beta", encB, NOW - DAY, NOW + 29 * DAY))).as("the same ad again")
        .isEqualTo("key " + encB);
    assertThat(take(answer(peerKey, "beta", encA, NOW, NOW + 30 * DAY))).as("a newer ad: the peer rotated")
        .isEqualTo("key " + encA);
  }
}
