package io.mbxrelay.host;

import com.fasterxml.jackson.databind.JsonNode;
import io.mbxrelay.crypto.Ed25519;
import io.mbxrelay.host.seal.EncKeyPair;
import io.mbxrelay.wire.CanonicalJson;
import io.mbxrelay.wire.IsoTime;
import java.sql.SQLException;
import java.util.OptionalLong;

/**
 * Which X25519 key to seal for a peer (docs/host-library.md "Peer encryption keys", docs/protocol.md §4.2, §6
 * "Sender"): the key pinned for that peer, else the relay's signed v2 ad verified against the peer's pinned host key
 * and name, inside its {@code iat}/{@code exp} window, and not older than (nor, at the same {@code iat}, naming
 * another key than) the newest ad already accepted for that peer. A key the relay alone vouches for (an unsigned or v1
 * answer) is never used. The reasons are the reference's ({@code unsigned}, {@code malformed}, {@code wrong peer},
 * {@code bad signature}, {@code not yet valid}, {@code expired}, {@code lifetime over the maximum}) plus the replay
 * guard's. Stateless; callers hold the store lock.
 */
final class PeerEncKeys {

  static final long SKEW_MS = 5 * 60_000L;
  static final long MAX_LIFETIME_MS = 90L * 86_400_000L;

  private PeerEncKeys() {}

  /**
   * A key to seal for, or why there is none.
   *
   * @param encPub the key (base64) or null
   * @param source {@code pinned} or {@code relay ad}, or null
   * @param why the reason when {@code encPub} is null
   */
  record Resolution(String encPub, String source, String why) {
    static Resolution of(String encPub, String source) {
      return new Resolution(encPub, source, null);
    }

    static Resolution none(String why) {
      return new Resolution(null, null, why);
    }
  }

  /** The pinned key, if any: it needs no relay. */
  static Resolution pinned(HostStore.Peer p) {
    return p.encPub() != null ? Resolution.of(p.encPub(), "pinned") : Resolution.none("no encryption key pinned");
  }

  /** The newest accepted ad's key while it is unexpired. */
  static Resolution cached(HostStore.Peer p, long nowMs) {
    if (p.adEncPub() == null) {
      return Resolution.none("no encryption key: no verified ad from the relay yet");
    }
    OptionalLong exp = IsoTime.parse(p.adExp());
    if (exp.isEmpty() || exp.getAsLong() <= nowMs) {
      return Resolution.none("no encryption key: the peer's ad expired at " + p.adExp());
    }
    return Resolution.of(p.adEncPub(), "relay ad");
  }

  /**
   * Verifies a relay's enc-key answer for a peer and, when it passes, records the ad as the newest seen.
   *
   * @param store the host store (lock held)
   * @param p the peer
   * @param answer the answer as served
   * @param nowMs now
   * @return the key, or why the answer is refused (prefixed {@code relay ad refused: })
   */
  static Resolution fromRelay(HostStore store, HostStore.Peer p, JsonNode answer, long nowMs) throws SQLException {
    String bad = check(answer, p, nowMs);
    if (bad != null) {
      return Resolution.none("relay ad refused: " + bad);
    }
    JsonNode ad = answer.get("ad");
    String encPub = ad.get("enc_pub").textValue();
    store.putPeerAd(p.hostPubkey(), encPub, ad.get("iat").textValue(), ad.get("exp").textValue());
    return Resolution.of(encPub, "relay ad");
  }

  /** @return the refusal reason, or null when the answer's v2 ad is usable for {@code p} */
  static String check(JsonNode answer, HostStore.Peer p, long nowMs) {
    JsonNode ad = answer == null ? null : answer.get("ad");
    if (ad == null) {
      return answer != null && answer.path("enc_pub").isTextual() && answer.path("sig").isTextual()
          ? "unexpiring v1 advertisement (the peer's AgentMBX predates signed expiring ads, or the relay withheld the"
              + " current one)"
          : "unsigned";
    }
    String bad = checkAd(ad, answer.get("ad_sig"), p.name(), p.hostPubkey(), nowMs);
    if (bad != null) {
      return bad;
    }
    String encPub = ad.get("enc_pub").textValue();
    if (!EncKeyPair.isSealable(encPub)) {
      return "unusable encryption key (a low-order X25519 point)";
    }
    JsonNode served = answer.get("enc_pub");
    if (served != null && !served.isNull() && !encPub.equals(served.asText()) && !isPeersV1Ad(answer, p)) {
      // a relay keeps a host's v1 ad beside its v2 one (publishers tolerate v1 failures once v2 succeeded, and
      // older relays never drop v1 ads), so a stale v1 key the peer itself signed is harmless: the signed,
      // expiring v2 record decides. Any other second key is the relay answering two keys.
      return "tampered: the served key differs from the signed advertisement";
    }
    if (p.adIat() != null) {
      long seen = IsoTime.parse(p.adIat()).orElse(Long.MIN_VALUE);
      long iat = IsoTime.parse(ad.get("iat").textValue()).orElseThrow();
      if (iat < seen) {
        return "older than the ad already seen (iat " + ad.get("iat").textValue() + " < " + p.adIat() + ")";
      }
      if (iat == seen && !encPub.equals(p.adEncPub())) {
        return "not newer than the ad already seen but naming another key";
      }
    }
    return null;
  }

  /**
   * Whether the answer's v1 fields ({@code enc_pub}, {@code sig}) are a v1 ad the peer signed (docs/protocol.md §4.2:
   * {@code sig} over canonical {@code {v:1, host, enc_pub}}, {@code host} the peer's name or the name served).
   */
  static boolean isPeersV1Ad(JsonNode answer, HostStore.Peer p) {
    JsonNode encPub = answer.get("enc_pub");
    JsonNode sig = answer.get("sig");
    if (encPub == null || !encPub.isTextual() || sig == null || !sig.isTextual()) {
      return false;
    }
    java.util.Set<String> names = new java.util.LinkedHashSet<>();
    names.add(p.name());
    if (answer.path("host").isTextual()) {
      names.add(answer.get("host").textValue());
    }
    for (String host : names) {
      com.fasterxml.jackson.databind.node.ObjectNode rec = io.mbxrelay.wire.Json.MAPPER.createObjectNode().put("v", 1)
          .put("host", host).put("enc_pub", encPub.textValue());
      if (Ed25519.verify(p.hostPubkey(), CanonicalJson.canonicalBytes(rec), sig.textValue())) {
        return true;
      }
    }
    return false;
  }

  /** The v2 ad check: null when {@code ad}, signed {@code sig}, is current and by that host key and name. */
  static String checkAd(JsonNode ad, JsonNode sig, String host, String hostPubkey, long nowMs) {
    if (sig == null || !sig.isTextual() || sig.textValue().isEmpty()) {
      return "unsigned";
    }
    if (!ad.isObject() || !ad.path("v").isNumber() || ad.get("v").doubleValue() != 2
        || !"enc-ad".equals(ad.path("type").asText(null)) || !ad.path("host").isTextual()
        || !ad.path("host_pubkey").isTextual() || !ad.path("iat").isTextual() || !ad.path("exp").isTextual()
        || !EncKeyPair.isPublicKey(ad.path("enc_pub").asText(null)) || !ad.path("enc_pub").isTextual()
        || ad.get("host").textValue().length() > 255 || ad.get("iat").textValue().length() > 40
        || ad.get("exp").textValue().length() > 40) {
      return "malformed";
    }
    if (!ad.get("host_pubkey").textValue().equals(hostPubkey) || !ad.get("host").textValue().equals(host)) {
      return "wrong peer";
    }
    if (!Ed25519.verify(hostPubkey, CanonicalJson.canonicalBytes(ad), sig.textValue())) {
      return "bad signature";
    }
    OptionalLong iat = IsoTime.parse(ad.get("iat").textValue());
    OptionalLong exp = IsoTime.parse(ad.get("exp").textValue());
    if (iat.isEmpty() || exp.isEmpty()) {
      return "malformed";
    }
    if (iat.getAsLong() > nowMs + SKEW_MS) {
      return "not yet valid";
    }
    if (exp.getAsLong() <= nowMs) {
      return "expired";
    }
    if (exp.getAsLong() - iat.getAsLong() > MAX_LIFETIME_MS) {
      return "lifetime over the maximum";
    }
    return null;
  }
}
