package io.mbxrelay.http;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.mbxrelay.crypto.Ed25519;
import io.mbxrelay.store.model.DenyKey;
import io.mbxrelay.store.model.Enrolment;
import io.mbxrelay.store.model.RotateOutcome;
import io.mbxrelay.store.model.SendersOutcome;
import io.mbxrelay.store.StoreCommand;
import io.mbxrelay.wire.B64;
import io.mbxrelay.wire.CanonicalJson;
import io.mbxrelay.wire.IsoTime;
import io.mbxrelay.wire.Json;
import io.mbxrelay.wire.KeySpelling;
import io.vertx.core.Future;
import io.vertx.core.http.HttpMethod;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * The trust endpoints (issue 3), mounted by {@link RelayRoutes} at their places in the routing order (docs/protocol.md §3):
 * before hop auth the unsigned, self-authenticating {@code POST /v2/relay/rotate} (§4.4, per-address window, 8 KiB)
 * and the admin deny list ({@code /admin/deny}, bearer token; without a valid token the request falls through to hop
 * auth and is answered exactly like any unknown path: 401 {@code bad relay hop}); after hop auth
 * {@code POST /v2/relay/senders} (§4.3) and the enc-key ads v1/v2 (§4.2). Safe on any event loop.
 *
 * <p>Keys are compared, stored and looked up in their canonical spelling ({@link KeySpelling}; issue 11 item 4):
 * allowlist entries, the rotated and the new key, the ad's {@code host_pubkey} and the {@code ?pubkey=} lookup.
 * Signatures are still checked over the records exactly as received.
 */
final class TrustRoutes {
  private static final Pattern ENC_PUB_RE = Pattern.compile("^[A-Za-z0-9+/]{43}=$");
  private static final long FUTURE_SKEW_MS = 5 * 60_000L;
  private static final long MAX_AD_LIFETIME_MS = 90L * 86_400_000L;
  /** Our v2 ad refusal reason beyond docs/protocol.md §4.2 (docs/wire-compatibility.md; issue 11 item 13). */
  static final String AD_NOT_NEWER = "not newer than the stored ad";
  /** A v1 ad whose {@code enc_pub} holds a number JS cannot (our text; docs/wire-compatibility.md). */
  static final RelayError NON_FINITE = RelayError.NON_FINITE;
  private static final RelayError UNKNOWN_HOST = RelayError.UNKNOWN_HOST;

  private final RelayServices s;
  private final EnrolmentRoutes enrolment;

  TrustRoutes(RelayServices services, EnrolmentRoutes enrolment) {
    this.s = Objects.requireNonNull(services);
    this.enrolment = Objects.requireNonNull(enrolment);
  }

  void mountBeforeHop(Router r) {
    r.post("/v2/relay/rotate").handler(this::rotate);
    r.route("/admin/deny").handler(this::admin);
  }

  void mountSigned(Router r) {
    r.post("/v2/relay/senders").handler(this::senders);
    r.post("/v1/relay/enc-key").handler(this::encKeyV1);
    r.post("/v2/relay/enc-key").handler(this::encKeyV2);
    r.get("/v1/relay/enc-key").handler(this::encKeyGet);
    r.get("/v2/relay/enc-key").handler(this::encKeyGet);
  }

  private static ObjectNode okTrue() {
    return Json.MAPPER.createObjectNode().put("ok", true);
  }

  private static String text(JsonNode n) {
    return n != null && n.isTextual() ? n.textValue() : null;
  }

  // ---- sender allowlist (docs/protocol.md §4.3) ----

  private void senders(RoutingContext ctx) {
    Enrolment caller = ctx.get(HopAuthHandler.CALLER);
    ObjectNode body = HttpAnswers.bodyObject(ctx);
    JsonNode list = body.get("list");
    RelayError bad = RelayError.BAD_SENDER_LIST;
    if (list == null || !list.isObject() || !list.path("v").isNumber() || list.path("v").doubleValue() != 1
        || !"relay-senders".equals(text(list.get("type")))
        || !KeySpelling.same(caller.hostPubkey(), text(list.get("host_pubkey")))
        || !list.path("senders").isArray() || list.get("senders").size() > s.config().limits().maxSenders()) {
      throw bad;
    }
    String iat = text(list.get("iat"));
    OptionalLong iatMs = IsoTime.parse(iat);
    if (iatMs.isEmpty() || JsonValues.hasNonFinite(list)) { // a list canonical JSON cannot write is no list
      throw bad;
    }
    Set<String> senders = new LinkedHashSet<>();
    for (JsonNode k : list.get("senders")) {
      if (!k.isTextual() || !B64.isPubkey(k.textValue())) {
        throw bad;
      }
      senders.add(KeySpelling.canonical(k.textValue()).orElseThrow()); // 4 spellings of one key are one sender
    }
    if (iatMs.getAsLong() > s.clock().millis() + FUTURE_SKEW_MS) {
      throw RelayError.SENDER_LIST_IN_FUTURE;
    }
    String sig = text(body.get("sig"));
    byte[] record = CanonicalJson.canonicalBytes(list);
    if (sig == null || !Ed25519.verify(caller.hostPubkey(), record, sig)) {
      throw RelayError.SENDER_LIST_NOT_SIGNED;
    }
    s.writes().send(new StoreCommand.PublishSenders(caller.hostPubkey(), new ArrayList<>(senders), iat,
        iatMs.getAsLong(), CanonicalJson.canonicalize(list), sig)).onSuccess(outcome -> {
          if (outcome == SendersOutcome.STORED) {
            HttpAnswers.ok(ctx, okTrue());
          } else {
            ctx.fail(RelayError.SENDER_LIST_STALE);
          }
        }).onFailure(ctx::fail);
  }

  // ---- enc-key ads (docs/protocol.md §4.2) ----

  private void encKeyV1(RoutingContext ctx) {
    Enrolment caller = ctx.get(HopAuthHandler.CALLER);
    ObjectNode body = HttpAnswers.bodyObject(ctx);
    JsonNode encPub = body.get("enc_pub");
    JsonNode sig = body.get("sig");
    if (!JsonValues.truthy(encPub) || !JsonValues.truthy(sig)) {
      throw RelayError.ENC_PUB_AND_SIG_REQUIRED;
    }
    JsonNode host = body.get("host");
    if (host != null && !host.isNull() && !caller.hostName().equals(text(host))) {
      throw RelayError.HOST_MISMATCH;
    }
    if (JsonValues.hasNonFinite(encPub)) {
      throw NON_FINITE; // canonical JSON cannot write it, so no signature can cover it
    }
    ObjectNode rec = Json.MAPPER.createObjectNode();
    rec.put("v", 1);
    rec.put("host", caller.hostName());
    rec.set("enc_pub", encPub);
    if (!sig.isTextual() || !Ed25519.verify(caller.hostPubkey(), CanonicalJson.canonicalBytes(rec), sig.textValue())) {
      throw RelayError.BAD_ENC_KEY_SIGNATURE;
    }
    String enc = encPub.isTextual() ? encPub.textValue() : CanonicalJson.canonicalize(encPub);
    s.writes().send(new StoreCommand.PublishEncAdV1(caller.hostPubkey(), caller.hostName(), enc, sig.textValue()))
        .onSuccess(v -> HttpAnswers.ok(ctx, okTrue())).onFailure(ctx::fail);
  }

  private static RelayError adRefused(String reason) {
    return RelayError.encAdRefused(reason);
  }

  private void encKeyV2(RoutingContext ctx) {
    Enrolment caller = ctx.get(HopAuthHandler.CALLER);
    ObjectNode body = HttpAnswers.bodyObject(ctx);
    String sig = text(body.get("sig"));
    if (sig == null || sig.isEmpty()) {
      throw adRefused("unsigned");
    }
    JsonNode ad = body.get("ad");
    if (ad == null || !ad.isObject() || !ad.path("v").isNumber() || ad.path("v").doubleValue() != 2
        || !"enc-ad".equals(text(ad.get("type")))) {
      throw adRefused("malformed");
    }
    String host = text(ad.get("host"));
    String hostPub = text(ad.get("host_pubkey"));
    String encPub = text(ad.get("enc_pub"));
    String iat = text(ad.get("iat"));
    String exp = text(ad.get("exp"));
    if (host == null || hostPub == null || encPub == null || iat == null || exp == null || host.length() > 255
        || iat.length() > 40 || exp.length() > 40 || !ENC_PUB_RE.matcher(encPub).matches()
        || B64.decodeLenient(encPub).map(b -> b.length != 32).orElse(true)) {
      throw adRefused("malformed");
    }
    if (!KeySpelling.same(hostPub, caller.hostPubkey()) || !host.equals(caller.hostName())) {
      throw adRefused("wrong peer");
    }
    if (JsonValues.hasNonFinite(ad)) {
      throw adRefused("malformed"); // canonical JSON cannot write it, so no signature can cover it
    }
    if (!Ed25519.verify(caller.hostPubkey(), CanonicalJson.canonicalBytes(ad), sig)) {
      throw adRefused("bad signature");
    }
    OptionalLong iatMs = IsoTime.parse(iat);
    OptionalLong expMs = IsoTime.parse(exp);
    if (iatMs.isEmpty() || expMs.isEmpty()) {
      throw adRefused("malformed");
    }
    long now = s.clock().millis();
    if (iatMs.getAsLong() > now + FUTURE_SKEW_MS) {
      throw adRefused("not yet valid");
    }
    if (expMs.getAsLong() <= now) {
      throw adRefused("expired");
    }
    if (expMs.getAsLong() - iatMs.getAsLong() > MAX_AD_LIFETIME_MS) {
      throw adRefused("lifetime over the maximum");
    }
    // The writer refuses (false) an ad not newer than the stored one, atomically with the write (issue 11 item 13):
    // a captured older ad replayed later must not replace a newer key. Re-sending the stored ad itself is fine.
    s.writes().send(new StoreCommand.PublishEncAdV2(caller.hostPubkey(), CanonicalJson.canonicalize(ad), sig))
        .onSuccess(stored -> {
          if (Boolean.TRUE.equals(stored)) {
            HttpAnswers.ok(ctx, okTrue());
          } else {
            ctx.fail(adRefused(AD_NOT_NEWER));
          }
        }).onFailure(ctx::fail);
  }

  private void encKeyGet(RoutingContext ctx) {
    Enrolment caller = ctx.get(HopAuthHandler.CALLER);
    QueryParams q = QueryParams.parse(ctx.request().query());
    String pubkey = q.get("pubkey");
    String host = q.get("host");
    Future<Optional<String>> key;
    if (pubkey != null && !pubkey.isEmpty()) {
      key = Future.succeededFuture(Optional.of(KeySpelling.canonicalOrSelf(pubkey)));
    } else if (host != null && !host.isEmpty()) {
      key = resolveName(host, caller);
    } else {
      key = Future.succeededFuture(Optional.empty());
    }
    key.compose(k -> k.isEmpty() ? Future.succeededFuture(Optional.<io.mbxrelay.store.model.EncAds>empty()) : s.reads().encAds(k.get()))
        .onSuccess(found -> {
          if (found.isEmpty() || (found.get().v1EncPub() == null && found.get().v2Record() == null)) {
            ctx.fail(UNKNOWN_HOST);
            return;
          }
          io.mbxrelay.store.model.EncAds a = found.get();
          JsonNode rec = null;
          if (a.v2Record() != null) {
            try {
              rec = Json.parse(a.v2Record());
            } catch (IllegalArgumentException e) {
              rec = null;
            }
          }
          ObjectNode out = Json.MAPPER.createObjectNode();
          out.put("host", a.hostName());
          out.put("host_pubkey", a.hostPubkey());
          if (a.v1EncPub() != null) {
            out.put("enc_pub", a.v1EncPub());
            out.put("sig", a.v1Sig());
          } else if (rec != null && rec.path("enc_pub").isTextual()) {
            out.put("enc_pub", rec.get("enc_pub").textValue());
          }
          if (rec != null) {
            out.set("ad", rec);
            out.put("ad_sig", a.v2Sig());
          }
          HttpAnswers.ok(ctx, out);
        }).onFailure(ctx::fail);
  }

  /** docs/protocol.md §4.6 v1 name resolution with the caller as viewer; empty when unknown or ambiguous. */
  private Future<Optional<String>> resolveName(String name, Enrolment viewer) {
    return NameResolver.resolve(s.reads(), s.config().limits().maxPerName(), name, viewer)
        .map(r -> r instanceof NameResolver.Found f ? Optional.of(f.enrolment().hostPubkey()) : Optional.empty());
  }

  // ---- rotation (docs/protocol.md §4.4) ----

  private static RelayError badRotation(String text) {
    return RelayError.badRotation(text);
  }

  private void rotate(RoutingContext ctx) {
    if (enrolment.rateLimited(ctx)) {
      return;
    }
    ObjectNode body = HttpAnswers.bodyObject(ctx);
    JsonNode rotation = body.get("rotation");
    JsonNode rec = rotation != null && rotation.isObject() ? rotation.get("rec") : null;
    String oldPub = rec != null && rec.isObject() ? text(rec.get("old_pub")) : null;
    Future<Optional<Enrolment>> old = oldPub == null ? Future.succeededFuture(Optional.empty())
        : s.reads().enrolment(KeySpelling.canonicalOrSelf(oldPub));
    old.onSuccess(HttpAnswers.guarded(ctx, o -> {
      if (o.isEmpty() || !o.get().live()) {
        ctx.fail(RelayError.ROTATED_KEY_NOT_ENROLLED);
        return;
      }
      Enrolment e = o.get();
      String oldSig = text(rotation.get("old_sig"));
      String newSig = text(rotation.get("new_sig"));
      String newPub = text(rec.get("new_pub"));
      String host = text(rec.get("host"));
      if (!rec.path("v").isNumber() || rec.path("v").doubleValue() != 1
          || !"host-rotation".equals(text(rec.get("type"))) || host == null || newPub == null
          || text(rec.get("iat")) == null || oldSig == null || newSig == null || JsonValues.hasNonFinite(rec)) {
        ctx.fail(badRotation("not a rotation record"));
        return;
      }
      if (!e.hostPubkey().equals(oldPub) && !KeySpelling.same(e.hostPubkey(), oldPub)) {
        ctx.fail(badRotation("rotation does not start from the pinned host key"));
        return;
      }
      if (newPub.equals(oldPub) || KeySpelling.same(newPub, oldPub)) { // another spelling is the same key
        ctx.fail(badRotation("rotation keeps the same host key"));
        return;
      }
      byte[] signed = CanonicalJson.canonicalBytes(rec);
      if (!Ed25519.verify(oldPub, signed, oldSig)) {
        ctx.fail(badRotation("rotation is not signed by the pinned host key"));
        return;
      }
      if (!Ed25519.verify(newPub, signed, newSig)) {
        ctx.fail(badRotation("rotation is not signed by the new host key"));
        return;
      }
      if (!host.equals(e.hostName()) || !B64.isPubkey(newPub)) {
        ctx.fail(badRotation("rotation names another host"));
        return;
      }
      // The store checks the new key against revocations (every spelling) and the deny list (issue 11 item 3).
      s.writes().send(new StoreCommand.Rotate(e.hostPubkey(), KeySpelling.canonical(newPub).orElseThrow(), host))
          .onSuccess(outcome -> {
            if (outcome instanceof RotateOutcome.Moved m) {
              s.metrics().revocations(io.mbxrelay.metrics.RelayMetrics.RevocationCause.ROTATION, 1);
              HttpAnswers.ok(ctx, Json.MAPPER.createObjectNode().put("moved", m.moved()));
            } else if (outcome instanceof RotateOutcome.NotEnrolled) {
              ctx.fail(RelayError.ROTATED_KEY_NOT_ENROLLED);
            } else if (outcome instanceof RotateOutcome.NamesAnotherHost) {
              ctx.fail(badRotation("rotation names another host"));
            } else {
              // revoked here, or on the deny list (which revokes): one answer, docs/protocol.md §4.4 409
              ctx.fail(RelayError.NEW_KEY_REVOKED);
            }
          }).onFailure(ctx::fail);
    })).onFailure(ctx::fail);
  }

  // ---- admin deny list (docs/protocol.md §7.8 "Revocation"; docs/deny-list.md) ----

  private void admin(RoutingContext ctx) {
    if (!s.trust().adminAuthorized(ctx.request().getHeader("authorization"))) {
      ctx.next(); // indistinguishable from an unknown path: hop auth answers 401 bad relay hop
      return;
    }
    HttpMethod m = ctx.request().method();
    if (m == HttpMethod.GET) {
      s.reads().denyList().onSuccess(list -> {
        ObjectNode out = Json.MAPPER.createObjectNode();
        var arr = out.putArray("entries");
        for (io.mbxrelay.store.model.DenyEntry d : list) {
          arr.addObject().put("kind", d.kind()).put("value", d.value()).put("note", d.note())
              .put("added_at", d.addedAt());
        }
        HttpAnswers.ok(ctx, out);
      }).onFailure(ctx::fail);
      return;
    }
    if (m != HttpMethod.POST && m != HttpMethod.DELETE) {
      throw RelayError.METHOD_NOT_ALLOWED;
    }
    ObjectNode body = HttpAnswers.bodyObject(ctx);
    Optional<DenyKey> entry = DenyKey.of(text(body.get("kind")), text(body.get("value")));
    if (entry.isEmpty()) {
      throw RelayError.badDenyEntry(DenyKey.problem(text(body.get("kind")),
          text(body.get("value"))).orElse("invalid"));
    }
    String note = text(body.get("note"));
    if (note != null && note.length() > 200) {
      throw RelayError.DENY_NOTE_TOO_LONG;
    }
    String kind = entry.get().kind();
    String value = entry.get().value();
    if (m == HttpMethod.POST) {
      s.writes().send(new StoreCommand.Deny(kind, value, note)).onSuccess(d -> {
        s.metrics().revocations(io.mbxrelay.metrics.RelayMetrics.RevocationCause.DENY, d.revoked());
        HttpAnswers.ok(ctx, okTrue().put("kind", kind).put("value", value).put("added", d.added())
            .put("revoked", d.revoked()));
      }).onFailure(ctx::fail);
    } else {
      s.writes().send(new StoreCommand.Undeny(kind, value)).onSuccess(removed -> HttpAnswers.ok(ctx,
          okTrue().put("kind", kind).put("value", value).put("removed", removed))).onFailure(ctx::fail);
    }
  }
}
