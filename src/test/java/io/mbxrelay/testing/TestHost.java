package io.mbxrelay.testing;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.mbxrelay.crypto.Ed25519KeyPair;
import io.mbxrelay.wire.B64;
import io.mbxrelay.wire.CanonicalJson;
import io.mbxrelay.wire.Json;
import java.util.List;

/** A test host: a real key, enrolment through the challenge, and helpers for the v2 calls. */
public final class TestHost {
  public final String name;
  public final Ed25519KeyPair key;
  private final String base;
  /** Hop time source; set it to the relay's test clock when the relay runs on one. */
  public java.util.function.LongSupplier clock = System::currentTimeMillis;

  public TestHost(String base, String name) {
    this(base, name, Ed25519KeyPair.generate());
  }

  public TestHost(String base, String name, Ed25519KeyPair key) {
    this.base = base;
    this.name = name;
    this.key = key;
  }

  public String pub() {
    return key.publicKeyB64();
  }

  /** Challenge + signed enrolment; asserts 200. */
  public TestHost enrol() throws Exception {
    Http.Resp r = tryEnrol();
    assertThat(r.status()).as(r.raw()).isEqualTo(200);
    return this;
  }

  public Http.Resp tryEnrol() throws Exception {
    ObjectNode c = Json.MAPPER.createObjectNode().put("host", name).put("pubkey", pub());
    Http.Resp ch = Http.send(base, "POST", "/v1/relay/challenge", Json.stringify(c));
    assertThat(ch.status()).as(ch.raw()).isEqualTo(200);
    String challenge = ch.json().get("challenge").asText();
    ObjectNode rec = Json.MAPPER.createObjectNode().put("v", 1).put("challenge", challenge).put("host", name)
        .put("pubkey", pub()).put("owner_fp", "");
    String sig = key.signB64(CanonicalJson.canonicalBytes(rec));
    ObjectNode body = Json.MAPPER.createObjectNode().put("host", name).put("pubkey", pub()).put("owner_fp", "")
        .put("sig", sig);
    return Http.send(base, "POST", "/v1/relay/enrol", Json.stringify(body));
  }

  public Http.Resp get(String pathAndQuery) throws Exception {
    return Http.signed(base, key, "GET", pathAndQuery, null, clock.getAsLong());
  }

  public Http.Resp post(String path, String body) throws Exception {
    return Http.signed(base, key, "POST", path, body, clock.getAsLong());
  }

  /** One push item body with one target per (key, wire). */
  public static ObjectNode item(String kind, String itemId, List<String> targetKeys, List<byte[]> wires) {
    ObjectNode item = Json.MAPPER.createObjectNode().put("kind", kind).put("item_id", itemId);
    ArrayNode ts = item.putArray("targets");
    for (int i = 0; i < targetKeys.size(); i++) {
      ts.addObject().put("host_pubkey", targetKeys.get(i)).put("wire_b64", B64.encode(wires.get(i)));
    }
    return item;
  }

  /** Pushes items; returns the response. */
  public Http.Resp push(ObjectNode... items) throws Exception {
    ObjectNode body = Json.MAPPER.createObjectNode();
    ArrayNode arr = body.putArray("items");
    for (ObjectNode i : items) {
      arr.add(i);
    }
    return post("/v2/relay/items", Json.stringify(body));
  }

  /** Pushes one envelope to one target. */
  public Http.Resp pushEnvelope(TestHost target, String id, byte[] wire) throws Exception {
    return push(item("envelope", id, List.of(target.pub()), List.of(wire)));
  }

  public Http.Resp pull(long after, Integer limit, String epoch) throws Exception {
    StringBuilder q = new StringBuilder("/v2/relay/items?after=").append(after);
    if (limit != null) {
      q.append("&limit=").append(limit);
    }
    if (epoch != null) {
      q.append("&epoch=").append(java.net.URLEncoder.encode(epoch, java.nio.charset.StandardCharsets.UTF_8));
    }
    return get(q.toString());
  }

  public Http.Resp ack(String epoch, long through) throws Exception {
    return post("/v2/relay/ack", Json.stringify(Json.MAPPER.createObjectNode().put("epoch", epoch)
        .put("through", through)));
  }
}
