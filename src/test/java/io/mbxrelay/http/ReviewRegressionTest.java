package io.mbxrelay.http;

import static org.assertj.core.api.Assertions.assertThat;

import io.mbxrelay.config.ConfigException;
import io.mbxrelay.config.ConfigLoader;
import io.mbxrelay.crypto.Ed25519KeyPair;
import io.mbxrelay.testing.Envelopes;
import io.mbxrelay.testing.Http;
import io.mbxrelay.testing.RelayHarness;
import io.mbxrelay.testing.TestHost;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Regressions for the findings of a fresh-eyes review of the relay core (each test names its case). */
class ReviewRegressionTest {
  @TempDir
  static Path dir;
  static RelayHarness relay;
  static TestHost a;
  static TestHost b;

  @BeforeAll
  static void start() throws Exception {
    relay = RelayHarness.start(dir, Map.of("MBX_RELAY_TRUST_REPLAY_CACHE_MAX_ENTRIES", "50",
        "MBX_RELAY_TRUST_REPLAY_CACHE_MAX_PER_KEY", "10"), Clock.systemUTC(), Ed25519KeyPair.generate());
    a = new TestHost(relay.url(), "alpha").enrol();
    b = new TestHost(relay.url(), "beta").enrol();
  }

  @AfterAll
  static void stop() {
    relay.close();
  }

  /** A GET sent over a raw socket (the JDK client refuses malformed escapes), signed by {@code h} when not null. */
  private static String rawGet(TestHost h, String pathAndQuery) throws Exception {
    StringBuilder req = new StringBuilder("GET " + pathAndQuery + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n");
    if (h != null) {
      String ts = Long.toString(System.currentTimeMillis());
      req.append("x-mbx-key: ").append(h.pub()).append("\r\nx-mbx-ts: ").append(ts).append("\r\nx-mbx-sig: ")
          .append(Http.sign(h.key, "GET", pathAndQuery, ts, null)).append("\r\n");
    }
    try (Socket s = new Socket("127.0.0.1", relay.server.port())) {
      s.setSoTimeout(10_000);
      s.getOutputStream().write(req.append("\r\n").toString().getBytes(StandardCharsets.US_ASCII));
      return new String(s.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    }
  }

  @Test
  void a_malformed_percent_escape_in_a_query_is_decoded_leniently_and_never_answers_500() throws Exception {
    assertThat(rawGet(b, "/v2/relay/items?epoch=%ZZ")).startsWith("HTTP/1.1 409");
    assertThat(rawGet(b, "/v2/relay/items?after=%")).startsWith("HTTP/1.1 200");
    assertThat(rawGet(b, "/v2/relay/enc-key?host=%ZZ")).startsWith("HTTP/1.1 404");
    assertThat(rawGet(b, "/v1/relay/enc-key?pubkey=%E0%A4%A")).startsWith("HTTP/1.1 404");
  }

  @Test
  void a_malformed_percent_escape_in_the_path_is_a_json_401_like_any_unknown_path() throws Exception {
    String r = rawGet(null, "/v2/relay/%ZZ");
    assertThat(r).startsWith("HTTP/1.1 401");
    assertThat(r).endsWith("{\"error\":\"bad relay hop\"}");
  }

  /** Since issue 11 item 9 a trailing slash is refused before routing (401, body never read), so the cap holds. */
  @Test
  void a_trailing_slash_does_not_escape_the_8_kib_enrolment_body_cap() throws Exception {
    try (Socket s = new Socket("127.0.0.1", relay.server.port())) {
      s.setSoTimeout(10_000);
      OutputStream out = s.getOutputStream();
      out.write(("POST /v1/relay/challenge/ HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
          + "Content-Length: 100000\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
      out.flush();
      InputStream in = s.getInputStream();
      byte[] buf = new byte[2048];
      int n = in.read(buf);
      assertThat(new String(buf, 0, n, StandardCharsets.US_ASCII)).startsWith("HTTP/1.1 401");
    }
  }

  @Test
  void one_host_flooding_state_changing_requests_cannot_lock_another_host_out() throws Exception {
    String epoch = relay.server.epoch();
    long t = System.currentTimeMillis();
    for (int i = 0; i < 80; i++) { // far beyond both the per-key share (10) and the whole cache (50)
      Http.Resp r = Http.signed(relay.url(), a.key, "POST", "/v2/relay/ack",
          "{\"epoch\":\"" + epoch + "\",\"through\":0}", t - i);
      assertThat(r.status()).isEqualTo(200);
    }
    String id = Envelopes.newId();
    Http.Resp push = b.pushEnvelope(a, id, Envelopes.sealed(id));
    assertThat(push.status()).isEqualTo(200);
    assertThat(push.json().get("results").get(0).get("status").asText()).isEqualTo("accepted");
    // unknown paths are never remembered, and b's own exact replay is still refused
    String ts = Long.toString(System.currentTimeMillis());
    String body = "{\"epoch\":\"" + epoch + "\",\"through\":0}";
    String sig = Http.sign(b.key, "POST", "/v2/relay/ack", ts, body);
    assertThat(Http.send(relay.url(), "POST", "/v2/relay/ack", body, b.pub(), null, ts, sig).status()).isEqualTo(200);
    assertThat(Http.send(relay.url(), "POST", "/v2/relay/ack", body, b.pub(), null, ts, sig).status()).isEqualTo(401);
  }

  @Test
  void a_body_that_is_json_but_not_an_object_reads_as_an_empty_object_like_javascript() throws Exception {
    Http.Resp push = a.post("/v2/relay/items", "[]");
    assertThat(push.raw()).isEqualTo("{\"error\":\"batch must be an array of at most 200\"}");
    assertThat(Http.send(relay.url(), "POST", "/v1/relay/challenge", "5").raw())
        .isEqualTo("{\"error\":\"host and pubkey required\"}");
    assertThat(a.post("/v2/relay/ack", "\"x\"").status()).isEqualTo(409);
    assertThat(a.post("/v2/relay/ack", "null").status()).isEqualTo(400);
    assertThat(a.post("/v2/relay/ack", "{\"epoch\":[\"" + relay.server.epoch() + "\"],\"through\":0}").status())
        .as("String([epoch]) is the epoch").isEqualTo(200);
  }

  @Test
  void repeated_hop_headers_are_joined_like_node_so_two_keys_verify_as_neither() throws Exception {
    String ts = Long.toString(System.currentTimeMillis());
    HttpRequest req = HttpRequest.newBuilder(URI.create(relay.url() + "/v2/relay/items"))
        .header("x-mbx-key", a.pub()).header("x-mbx-key", b.pub()).header("x-mbx-ts", ts)
        .header("x-mbx-sig", Http.sign(a.key, "GET", "/v2/relay/items", ts, null)).GET().build();
    HttpResponse<String> r = HttpClient.newHttpClient().send(req, HttpResponse.BodyHandlers.ofString());
    assertThat(r.statusCode()).isEqualTo(401);
  }

  @Test
  void type_and_range_violations_are_all_listed_together(@TempDir Path tmp) throws Exception {
    Path f = tmp.resolve("relay.json");
    Files.writeString(f, "{\"http\":{\"instances\":-1,\"bogus\":1},\"limits\":{\"maxBatch\":\"abc\",\"maxPull\":0},"
        + "\"nosuch\":{}}");
    try {
      ConfigLoader.load(f, Map.of("MBX_RELAY_LIMITS_MAX_BATCH", "xyz"));
    } catch (ConfigException e) {
      assertThat(e.violations()).anyMatch(v -> v.startsWith("http.instances must be between"))
          .anyMatch(v -> v.startsWith("limits.maxPull must be between"))
          .contains("unknown setting http.bogus", "unknown setting nosuch", "limits.maxBatch must be an integer",
              "MBX_RELAY_LIMITS_MAX_BATCH must be an integer");
      return;
    }
    throw new AssertionError("expected a ConfigException");
  }
}
