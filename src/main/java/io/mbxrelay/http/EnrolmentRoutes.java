package io.mbxrelay.http;

import static io.mbxrelay.http.HttpAnswers.bodyObject;
import static io.mbxrelay.http.HttpAnswers.ok;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.mbxrelay.auth.EnrolmentAuthority;
import io.mbxrelay.crypto.Ed25519;
import io.mbxrelay.metrics.Outcome;
import io.mbxrelay.store.StoreCommand;
import io.mbxrelay.wire.B64;
import io.mbxrelay.wire.CanonicalJson;
import io.mbxrelay.wire.Json;
import io.mbxrelay.wire.KeySpelling;
import io.vertx.core.Future;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.ext.web.RoutingContext;
import java.util.Objects;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * The unsigned enrolment calls (docs/protocol.md §4.1): {@code POST /v1/relay/challenge} and {@code /v1/relay/enrol},
 * each under the per-address window, the signature over the challenge record, the enrolment authority's decision and
 * the writer's {@link StoreCommand.Enrol}. Safe on any event loop.
 */
public final class EnrolmentRoutes {

  private final RelayServices s;

  EnrolmentRoutes(RelayServices services) {
    this.s = Objects.requireNonNull(services);
  }

  private long now() {
    return s.clock().millis();
  }

  /** docs/protocol.md §3 "Other constants" HOST_RE. */
  public static final Pattern HOST_RE = Pattern.compile("^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$");

  /** docs/protocol.md §3 "Other constants" OWNER_FP_RE. */
  public static final Pattern OWNER_FP_RE = Pattern.compile("^[A-Za-z0-9._-]{0,64}$");

  boolean rateLimited(RoutingContext ctx) {
    HttpServerRequest req = ctx.request();
    String socket = req.remoteAddress() == null ? "unknown" : req.remoteAddress().hostAddress();
    String addr = s.clientAddress().resolve(socket, req.getHeader("x-forwarded-for"),
        req.getHeader("cf-connecting-ip"));
    if (!s.enrolRate().tryAcquire(addr, now())) {
      ctx.fail(RelayError.RATE);
      return true;
    }
    return false;
  }

  void challenge(RoutingContext ctx) {
    if (rateLimited(ctx)) {
      return;
    }
    ObjectNode body = bodyObject(ctx);
    JsonNode host = body.get("host");
    JsonNode pubkey = body.get("pubkey");
    if (!JsonValues.truthy(host) || !JsonValues.truthy(pubkey)) {
      throw RelayError.HOST_AND_PUBKEY_REQUIRED;
    }
    if (!host.isTextual() || !HOST_RE.matcher(host.textValue()).matches()) {
      throw RelayError.BAD_HOST_NAME;
    }
    if (!pubkey.isTextual() || !B64.isPubkey(pubkey.textValue())) {
      throw RelayError.BAD_HOST_KEY;
    }
    s.challenges().issue(pubkey.textValue(), now()).onComplete(ar -> {
      if (ar.failed()) {
        ctx.fail(RelayError.STORE_UNAVAILABLE);
        return;
      }
      Optional<String> nonce = ar.result();
      if (nonce.isEmpty()) {
        // the reference's challenge errors carry no code (only enrol's do)
        ctx.fail(RelayError.CHALLENGES_FULL);
        return;
      }
      ObjectNode out = Json.MAPPER.createObjectNode();
      out.put("challenge", nonce.get());
      ok(ctx, out);
    });
  }

  void enrol(RoutingContext ctx) {
    if (rateLimited(ctx)) {
      return;
    }
    ObjectNode body = bodyObject(ctx);
    JsonNode host = body.get("host");
    JsonNode pubkey = body.get("pubkey");
    JsonNode ownerFp = body.get("owner_fp");
    JsonNode sig = body.get("sig");
    if (!JsonValues.truthy(host) || !JsonValues.truthy(pubkey) || !JsonValues.truthy(sig) || ownerFp == null) {
      // no code: the reference answers this one before its enrolment core, as {"error"} alone (issue 12 item 11)
      throw RelayError.INCOMPLETE_ENROLMENT;
    }
    if (!host.isTextual() || !HOST_RE.matcher(host.textValue()).matches() || !pubkey.isTextual()
        || !B64.isPubkey(pubkey.textValue()) || !ownerFp.isTextual()
        || !OWNER_FP_RE.matcher(ownerFp.textValue()).matches()) {
      // sig is not a field here: the reference checks its type with the signature, after the challenge lookup
      throw RelayError.BAD_ENROLMENT_FIELDS;
    }
    String sent = pubkey.textValue();
    // stored, compared, revoked and denied in the canonical spelling (issue 11 item 4): another spelling of a
    // revoked key is the revoked key; the signature is over the record as the client built it
    String key = KeySpelling.canonical(sent).orElseThrow();
    // the challenge store may be the database (several instances): its answers come back on this context
    s.challenges().pending(key, now()).onComplete(ar -> {
      if (ar.failed()) {
        ctx.fail(RelayError.STORE_UNAVAILABLE);
        return;
      }
      try {
        answered(ctx, body, host.textValue(), key, sent, ownerFp.textValue(), sig, ar.result());
      } catch (RuntimeException e) {
        ctx.fail(e);
      }
    });
  }

  /** The enrolment once its pending challenge is known: the signature over it, then consumed once, then decided. */
  private void answered(RoutingContext ctx, ObjectNode body, String hostName, String key, String sent, String ownerFp,
      JsonNode sig, Optional<String> challenge) {
    if (challenge.isEmpty()) {
      throw RelayError.NO_PENDING_CHALLENGE;
    }
    ObjectNode rec = Json.MAPPER.createObjectNode();
    rec.put("v", 1);
    rec.put("challenge", challenge.get());
    rec.put("host", hostName);
    rec.put("pubkey", sent);
    rec.put("owner_fp", ownerFp);
    if (!sig.isTextual() || !Ed25519.verify(key, CanonicalJson.canonicalBytes(rec), sig.textValue())) {
      throw RelayError.BAD_ENROLMENT_SIGNATURE;
    }
    s.challenges().consume(key, challenge.get()).onComplete(consumed -> {
      if (consumed.failed()) {
        ctx.fail(RelayError.STORE_UNAVAILABLE);
      } else if (!consumed.result()) {
        // another request (here or on another instance) answered this challenge first
        ctx.fail(RelayError.NO_PENDING_CHALLENGE);
      } else {
        decide(ctx, body, hostName, key, ownerFp);
      }
    });
  }

  private void decide(RoutingContext ctx, ObjectNode body, String hostName, String key, String ownerFp) {
    EnrolmentAuthority.Request request = new EnrolmentAuthority.Request(hostName, key, ownerFp, body.get("proof"));
    java.util.concurrent.CompletionStage<EnrolmentAuthority.Decision> decided;
    try {
      decided = s.authority().decide(request);
    } catch (RuntimeException e) {
      decided = java.util.concurrent.CompletableFuture.failedFuture(e);
    }
    Future.fromCompletionStage(decided, ctx.vertx().getOrCreateContext())
        .otherwise(e -> new EnrolmentAuthority.Decision(false, null, null, "the enrolment authority is unavailable"))
        .onSuccess(d -> enrolDecided(ctx, hostName, key, ownerFp, d));
  }

  private void enrolDecided(RoutingContext ctx, String hostName, String key, String ownerFp,
      EnrolmentAuthority.Decision d) {
    if (d == null || !d.ok()) {
      s.metrics().enrolment(Outcome.DENIED);
      String reason = d == null ? null : d.reason();
      ctx.fail(denied(reason));
      return;
    }
    String account = d.account();
    s.writes().send(new StoreCommand.Enrol(hostName, key, ownerFp, account,
        account == null ? null : s.authority().name(), d.clientId(), d.org())).onSuccess(outcome -> {
          s.metrics().enrolment(switch (outcome) {
            case OK -> Outcome.OK;
            case FULL -> Outcome.FULL;
            case REVOKED -> Outcome.REVOKED;
            case NAME_TAKEN -> Outcome.NAME_TAKEN;
            case DENIED -> Outcome.DENIED;
          });
          switch (outcome) {
            case OK -> {
              ObjectNode out = Json.MAPPER.createObjectNode();
              out.put("ok", true);
              ok(ctx, out);
            }
            case FULL -> ctx.fail(RelayError.ENROLMENT_FULL);
            case REVOKED -> ctx.fail(RelayError.REVOKED);
            case NAME_TAKEN -> ctx.fail(RelayError.nameTaken(hostName));
            case DENIED -> ctx.fail(denied("this host is on the relay's deny list"));
            default -> ctx.fail(RelayError.INTERNAL);
          }
        }).onFailure(ctx::fail);
  }

  private static RelayError denied(String reason) {
    return RelayError.enrolmentDenied(reason);
  }
}
