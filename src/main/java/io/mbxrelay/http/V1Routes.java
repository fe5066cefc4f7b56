package io.mbxrelay.http;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.mbxrelay.store.model.Enrolment;
import io.mbxrelay.store.StoreCommand;
import io.mbxrelay.wire.EnvelopeCheck;
import io.mbxrelay.wire.Hashes;
import io.mbxrelay.wire.Json;
import io.mbxrelay.wire.JsNumber;
import io.mbxrelay.wire.Utf8;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;

/**
 * The v1 message endpoints, kept so AgentMBX hosts that predate v2 keep working (docs/protocol.md §3
 * "v1 endpoints", §7.11): {@code POST /v1/relay/messages}, {@code GET /v1/relay/messages?after=},
 * {@code POST /v1/relay/ack}. All behind the signed hop (v1 paths sign the path without the query). v1 items are
 * durable and deduplicated like v2 items, routed by v1 name resolution (§4.6), and never expire. Safe on any event
 * loop.
 */
final class V1Routes {
  private static final String AMBIGUOUS = " (several hosts use that name here; upgrade to address hosts by key)";

  private final RelayServices s;

  V1Routes(RelayServices services) {
    this.s = Objects.requireNonNull(services);
  }

  void mountSigned(Router r) {
    r.post("/v1/relay/messages").handler(this::push);
    r.get("/v1/relay/messages").handler(this::pull);
    r.post("/v1/relay/ack").handler(this::ack);
  }

  // ---- push ----

  private void push(RoutingContext ctx) {
    Enrolment caller = ctx.get(HopAuthHandler.CALLER);
    ObjectNode body = HttpAnswers.bodyObject(ctx);
    JsonNode envelopes = body.get("envelopes");
    if (envelopes == null || !envelopes.isArray()) {
      throw RelayError.BAD_BATCH_V1;
    }
    int maxBatch = s.config().limits().maxBatch();
    if (envelopes.size() > maxBatch) {
      answer(ctx, 0, RelayError.v1BatchOverLimit(maxBatch));
      return;
    }
    int rate = s.config().limits().pushRequestsPerMinute();
    if (!s.pushRate().tryAcquire(caller.hostPubkey(), s.clock().millis())) {
      answer(ctx, 0, RelayError.pushRateText(rate));
      return;
    }
    Promise<String> done = Promise.promise();
    int[] stored = {0};
    next(caller, envelopes, 0, stored, done);
    done.future().onSuccess(error -> answer(ctx, stored[0], error)).onFailure(e -> {
      if (stored[0] > 0) {
        ctx.put(FailureHandler.PARTLY_STORED, Boolean.TRUE); // earlier envelopes committed: not "not_stored"
      }
      ctx.fail(e);
    });
  }

  /** Envelopes one after the other; the first error stops the batch (docs/protocol.md §3). */
  private void next(Enrolment caller, JsonNode envelopes, int i, int[] stored, Promise<String> done) {
    if (i == envelopes.size()) {
      done.complete(null);
      return;
    }
    Future<String> one;
    try {
      one = pushOne(caller, envelopes.get(i));
    } catch (RuntimeException e) {
      one = Future.failedFuture(e); // never thrown into a callback: the request must get its answer
    }
    one.onSuccess(error -> {
      if (error != null) {
        done.complete(error);
      } else {
        stored[0]++;
        next(caller, envelopes, i + 1, stored, done);
      }
    }).onFailure(done::fail);
  }

  private Future<String> pushOne(Enrolment caller, JsonNode env) {
    var shape = EnvelopeCheck.check(env);
    if (shape.isPresent()) {
      return Future.succeededFuture("bad envelope: " + shape.get());
    }
    // JSON.stringify as the reference stores it: a number JS reads as Infinity (1e999) is written null
    byte[] wire = Json.stringify(JsonValues.withJsNulls(env)).getBytes(StandardCharsets.UTF_8);
    if (wire.length > s.config().limits().maxItemBytes()) {
      return Future.succeededFuture("envelope over size limit");
    }
    Set<String> hosts = new LinkedHashSet<>();
    for (JsonNode to : env.get("to")) {
      String addr = to.asText();
      hosts.add(addr.substring(addr.indexOf('@') + 1));
    }
    return resolve(caller, new ArrayList<>(hosts), 0, new ArrayList<>()).compose(r -> s.writes().send(
        new StoreCommand.PushV1(caller.hostPubkey(), caller.hostName(), env.get("id").asText(), wire,
            Hashes.sha256Hex(wire), r.targets, r.failure))).map(o -> o.orElse(null));
  }

  private record Resolved(List<StoreCommand.V1Target> targets, String failure) {}

  private Future<Resolved> resolve(Enrolment caller, List<String> hosts, int i, List<StoreCommand.V1Target> acc) {
    if (i == hosts.size()) {
      return Future.succeededFuture(new Resolved(acc, null));
    }
    String h = hosts.get(i);
    return NameResolver.resolve(s.reads(), s.config().limits().maxPerName(), h, caller).compose(r -> {
      if (r instanceof NameResolver.Found f) {
        if (acc.stream().noneMatch(t -> t.hostPubkey().equals(f.enrolment().hostPubkey()))) {
          acc.add(new StoreCommand.V1Target(f.enrolment().hostPubkey(), h));
        }
        return resolve(caller, hosts, i + 1, acc);
      }
      String failure = r instanceof NameResolver.Ambiguous ? "recipient host ambiguous: " + h + AMBIGUOUS
          : "recipient host not enrolled: " + h;
      return Future.succeededFuture(new Resolved(acc, failure));
    });
  }

  /** {@code {stored[,error]}}: 413 when there is an error and nothing was stored, else 200 (docs/protocol.md §3). */
  private static void answer(RoutingContext ctx, int stored, String error) {
    HttpAnswers.answer(ctx, error != null && stored == 0 ? 413 : 200, RelayError.v1PushAnswer(stored, error));
  }

  // ---- pull ----

  private void pull(RoutingContext ctx) {
    Enrolment caller = ctx.get(HopAuthHandler.CALLER);
    double afterN = Math.floor(JsNumber.ofString(QueryParams.parse(ctx.request().query()).get("after")));
    long after = Double.isNaN(afterN) || afterN < 0 ? 0 : (long) Math.min(afterN, JsNumber.MAX_SAFE);
    s.reads().pull(caller.hostPubkey(), after, s.config().limits().maxPull(), s.config().limits().maxPullBytes())
        .onSuccess(page -> {
          ObjectNode out = Json.MAPPER.createObjectNode();
          ArrayNode items = out.putArray("items");
          long last = after;
          for (io.mbxrelay.store.model.PulledItem it : page.items()) {
            last = it.seq();
            if (!it.kind().equals("envelope")) {
              continue; // receipts and notices are v2 only; the cursor still covers them
            }
            JsonNode envelope;
            try {
              envelope = Json.parse(Utf8.decode(it.wire()));
            } catch (IllegalArgumentException e) {
              continue; // a v2 wire a v1 host cannot read; covered by the cursor
            }
            ObjectNode n = items.addObject();
            n.put("seq", it.seq());
            n.set("envelope", envelope);
            n.put("from", it.senderHost());
          }
          out.put("cursor", page.more() ? last : page.headSeq());
          HttpAnswers.ok(ctx, out);
        }).onFailure(ctx::fail);
  }

  // ---- ack ----

  private void ack(RoutingContext ctx) {
    Enrolment caller = ctx.get(HopAuthHandler.CALLER);
    ObjectNode body = HttpAnswers.bodyObject(ctx);
    s.writes().send(new StoreCommand.AckV1(caller.hostPubkey(), JsNumber.safeFloor(JsNumber.of(body.get("cursor")))))
        .onSuccess(c -> HttpAnswers.ok(ctx, Json.MAPPER.createObjectNode().put("ok", true)))
        .onFailure(ctx::fail);
  }
}
