package io.mbxrelay.http;

import static io.mbxrelay.http.HttpAnswers.ok;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.mbxrelay.config.RelayConfig;
import io.mbxrelay.store.model.Enrolment;
import io.mbxrelay.wire.Json;
import io.vertx.core.Future;
import io.vertx.ext.web.RoutingContext;
import java.util.Objects;

/**
 * {@code GET /v2/relay/info} (docs/protocol.md §4.7): the relay's key, epoch, version and limits for anyone, and the
 * caller's own state ({@code you}) when the request carries a hop that verifies. Safe on any event loop.
 */
final class InfoRoute {
  private final RelayServices s;
  private final RelayConfig.Limits limits;
  private final HopAuthHandler hop;
  private final ItemRoutes items;

  InfoRoute(RelayServices services, HopAuthHandler hop, ItemRoutes items) {
    this.s = Objects.requireNonNull(services);
    this.limits = services.config().limits();
    this.hop = Objects.requireNonNull(hop);
    this.items = Objects.requireNonNull(items);
  }

  void handle(RoutingContext ctx) {
    ObjectNode info = Json.MAPPER.createObjectNode();
    info.put("v", 2);
    info.put("relay_pubkey", s.relayKey().publicKeyB64());
    info.put("epoch", s.epoch());
    info.put("version", s.version());
    ObjectNode l = info.putObject("limits");
    l.put("max_item_bytes", limits.maxItemBytes());
    l.put("max_batch", limits.maxBatch());
    l.put("max_pull", limits.maxPull());
    l.put("max_pull_bytes", limits.maxPullBytes());
    l.put("max_targets", limits.maxTargets());
    l.put("retention_days", limits.retentionDays());
    l.put("max_queue_items", limits.maxQueueItems());
    l.put("max_queue_bytes", limits.maxQueueBytes());
    l.put("max_sender_items", limits.maxSenderItems());
    l.put("max_sender_bytes", limits.maxSenderBytes());
    l.put("max_owner_items", limits.maxOwnerItems());
    l.put("max_owner_bytes", limits.maxOwnerBytes());
    // Beyond the reference (issue 9): what this relay can do that a client may use; clients ignore unknown keys.
    info.putObject("features").put("pull_wait_max_seconds", items.maxWaitSeconds());
    hop.verifyHop(ctx).compose(caller -> {
      if (caller.isEmpty()) {
        return Future.succeededFuture(info);
      }
      Enrolment e = caller.get();
      return s.reads().hostState(e.hostPubkey()).map(y -> {
        ObjectNode you = info.putObject("you");
        you.put("host", e.hostName());
        you.put("pubkey", HopAuthHandler.callerKeyAsSent(ctx, e));
        you.put("head_seq", y.headSeq());
        you.put("acked_through", y.ackedThrough());
        you.set("enc_ad", encAdSummary(y));
        return info;
      });
    }).onSuccess(body -> ok(ctx, body)).onFailure(ctx::fail);
  }

  private static JsonNode encAdSummary(io.mbxrelay.store.model.HostState y) {
    if (y.v1EncPub() == null && y.v2Record() == null) {
      return Json.MAPPER.nullNode();
    }
    ObjectNode ad = Json.MAPPER.createObjectNode();
    JsonNode rec = null;
    if (y.v2Record() != null) {
      try {
        rec = Json.parse(y.v2Record());
      } catch (IllegalArgumentException e) {
        rec = null;
      }
    }
    ad.set("enc_pub", rec != null && rec.path("enc_pub").isTextual() ? rec.get("enc_pub") : Json.MAPPER.nullNode());
    ad.set("exp", rec != null && rec.has("exp") ? rec.get("exp") : Json.MAPPER.nullNode());
    if (y.v1EncPub() == null) {
      ad.putNull("v1");
    } else {
      ad.put("v1", y.v1EncPub());
    }
    return ad;
  }
}
