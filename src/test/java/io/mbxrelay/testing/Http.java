package io.mbxrelay.testing;

import com.fasterxml.jackson.databind.JsonNode;
import io.mbxrelay.crypto.Ed25519KeyPair;
import io.mbxrelay.crypto.HopText;
import io.mbxrelay.wire.Json;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

/** Real HTTP requests (JDK client) with signed hops built exactly as docs/protocol.md §2 says. */
public final class Http {
  private static final HttpClient CLIENT = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

  private Http() {}

  /** A response: status, raw body and parsed JSON. */
  public record Resp(int status, String raw, JsonNode json) {
    public String error() {
      return json == null ? null : json.path("error").asText(null);
    }
  }

  /** Unsigned request. */
  public static Resp send(String base, String method, String pathAndQuery, String body) throws Exception {
    return send(base, method, pathAndQuery, body, null, null, null, null);
  }

  /** v2 signed request (x-mbx-key), signed now. */
  public static Resp signed(String base, Ed25519KeyPair key, String method, String pathAndQuery, String body)
      throws Exception {
    return signed(base, key, method, pathAndQuery, body, System.currentTimeMillis());
  }

  /** v2 signed request with an explicit hop time (for relays on a test clock). */
  public static Resp signed(String base, Ed25519KeyPair key, String method, String pathAndQuery, String body,
      long nowMs) throws Exception {
    String ts = Long.toString(nowMs);
    return send(base, method, pathAndQuery, body, key.publicKeyB64(), null, ts, sign(key, method, pathAndQuery, ts, body));
  }

  /** The hop signature over a request. */
  public static String sign(Ed25519KeyPair key, String method, String pathAndQuery, String ts, String body) {
    int q = pathAndQuery.indexOf('?');
    String path = q < 0 ? pathAndQuery : pathAndQuery.substring(0, q);
    String query = q < 0 ? null : pathAndQuery.substring(q + 1);
    String text = HopText.signedText(method, HopText.signedPath(path, query), ts, body == null ? "" : body);
    return key.signB64(text.getBytes(StandardCharsets.UTF_8));
  }

  /** Unsigned request with extra headers. */
  public static Resp sendHeaders(String base, String method, String pathAndQuery, String body,
      java.util.Map<String, String> headers) throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(base + pathAndQuery)).timeout(Duration.ofSeconds(30))
        .header("content-type", "application/json")
        .method(method, body == null ? HttpRequest.BodyPublishers.noBody()
            : HttpRequest.BodyPublishers.ofString(body, StandardCharsets.UTF_8));
    headers.forEach(b::header);
    HttpResponse<String> r = CLIENT.send(b.build(), HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
    JsonNode json = null;
    try {
      json = Json.parse(r.body());
    } catch (RuntimeException ignored) {
      // not JSON
    }
    return new Resp(r.statusCode(), r.body(), json);
  }

  /** Fully controlled request. Null headers are not sent. */
  public static Resp send(String base, String method, String pathAndQuery, String body, String key, String host,
      String ts, String sig) throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(base + pathAndQuery)).timeout(Duration.ofSeconds(30))
        .header("content-type", "application/json")
        .method(method, body == null ? HttpRequest.BodyPublishers.noBody()
            : HttpRequest.BodyPublishers.ofString(body, StandardCharsets.UTF_8));
    if (key != null) {
      b.header("x-mbx-key", key);
    }
    if (host != null) {
      b.header("x-mbx-host", host);
    }
    if (ts != null) {
      b.header("x-mbx-ts", ts);
    }
    if (sig != null) {
      b.header("x-mbx-sig", sig);
    }
    HttpResponse<String> r = CLIENT.send(b.build(), HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
    JsonNode json = null;
    try {
      json = Json.parse(r.body());
    } catch (RuntimeException ignored) {
      // not JSON
    }
    return new Resp(r.statusCode(), r.body(), json);
  }
}
