package io.mbxrelay.http;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.mbxrelay.testing.Envelopes;
import io.mbxrelay.testing.Http;
import io.mbxrelay.testing.RelayHarness;
import io.mbxrelay.testing.TestHost;
import java.nio.file.Path;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The signed hop and the routing order (docs/protocol.md §2, §3 "Routing order"). */
class HopAndRoutingTest {
  @TempDir
  static Path dir;
  static RelayHarness relay;
  static TestHost a;
  static TestHost b;

  @BeforeAll
  static void start() throws Exception {
    relay = RelayHarness.start(dir);
    a = new TestHost(relay.url(), "alpha").enrol();
    b = new TestHost(relay.url(), "beta").enrol();
    String id = Envelopes.newId();
    a.pushEnvelope(b, id, Envelopes.sealed(id));
  }

  @AfterAll
  static void stop() {
    relay.close();
  }

  private static String now() {
    return Long.toString(System.currentTimeMillis());
  }

  @Test
  void info_without_a_hop_has_no_you_and_with_a_valid_hop_describes_the_caller() throws Exception {
    JsonNode anon = Http.send(relay.url(), "GET", "/v2/relay/info", null).json();
    assertThat(anon.get("v").asInt()).isEqualTo(2);
    assertThat(anon.has("you")).isFalse();
    assertThat(anon.get("limits").get("max_batch").asInt()).isEqualTo(200);
    JsonNode you = b.get("/v2/relay/info").json().get("you");
    assertThat(you.fieldNames()).toIterable().containsExactly("host", "pubkey", "head_seq", "acked_through", "enc_ad");
    assertThat(you.get("host").asText()).isEqualTo("beta");
    assertThat(you.get("pubkey").asText()).isEqualTo(b.pub());
    assertThat(you.get("head_seq").asLong()).isPositive();
    assertThat(you.get("enc_ad").isNull()).isTrue();
  }

  @Test
  void info_with_a_bad_signature_is_answered_without_you_not_refused() throws Exception {
    String ts = now();
    Http.Resp r = Http.send(relay.url(), "GET", "/v2/relay/info", null, b.pub(), null, ts,
        Http.sign(a.key, "GET", "/v2/relay/info", ts, null));
    assertThat(r.status()).isEqualTo(200);
    assertThat(r.json().has("you")).isFalse();
  }

  @Test
  void a_tampered_query_fails_the_hop_because_v2_signs_the_raw_query() throws Exception {
    String ts = now();
    String sig = Http.sign(b.key, "GET", "/v2/relay/items?after=0", ts, null);
    Http.Resp ok = Http.send(relay.url(), "GET", "/v2/relay/items?after=0", null, b.pub(), null, ts, sig);
    assertThat(ok.status()).isEqualTo(200);
    Http.Resp tampered = Http.send(relay.url(), "GET", "/v2/relay/items?after=5", null, b.pub(), null, ts, sig);
    assertThat(tampered.status()).isEqualTo(401);
    assertThat(tampered.raw()).isEqualTo("{\"error\":\"bad relay hop\"}");
  }

  @Test
  void a_ts_that_is_not_a_number_or_more_than_five_minutes_off_fails_the_hop() throws Exception {
    for (String ts : new String[] {"NaN", "abc", "", Long.toString(System.currentTimeMillis() - 301_000),
        Long.toString(System.currentTimeMillis() + 301_000)}) {
      Http.Resp r = Http.send(relay.url(), "GET", "/v2/relay/items", null, b.pub(), null, ts,
          Http.sign(b.key, "GET", "/v2/relay/items", ts, null));
      assertThat(r.status()).as("ts=%s", ts).isEqualTo(401);
    }
    String near = Long.toString(System.currentTimeMillis() - 200_000);
    assertThat(Http.send(relay.url(), "GET", "/v2/relay/items", null, b.pub(), null, near,
        Http.sign(b.key, "GET", "/v2/relay/items", near, null)).status()).isEqualTo(200);
  }

  @Test
  void missing_hop_headers_get_401() throws Exception {
    String ts = now();
    String sig = Http.sign(b.key, "GET", "/v2/relay/items", ts, null);
    assertThat(Http.send(relay.url(), "GET", "/v2/relay/items", null, b.pub(), null, null, sig).status()).isEqualTo(401);
    assertThat(Http.send(relay.url(), "GET", "/v2/relay/items", null, b.pub(), null, ts, null).status()).isEqualTo(401);
    assertThat(Http.send(relay.url(), "GET", "/v2/relay/items", null, null, null, ts, sig).status()).isEqualTo(401);
  }

  @Test
  void a_v1_hop_by_name_is_authenticated_by_the_enrolment_whose_key_verifies() throws Exception {
    String ts = now();
    Http.Resp r = Http.send(relay.url(), "GET", "/v2/relay/items", null, null, "BETA", ts,
        Http.sign(b.key, "GET", "/v2/relay/items", ts, null));
    assertThat(r.status()).isEqualTo(200);
    assertThat(r.json().get("items")).hasSize(1);
  }

  @Test
  void v1_paths_sign_the_path_without_the_query() throws Exception {
    String ts = now();
    // a v1 path is signed without its query: a signature over the path alone verifies, routing then answers 404
    Http.Resp r = Http.send(relay.url(), "GET", "/v1/relay/unknown?x=1", null, b.pub(), null, ts,
        Http.sign(b.key, "GET", "/v1/relay/unknown", ts, null));
    assertThat(r.status()).isEqualTo(404);
  }

  @Test
  void an_unknown_path_is_401_without_a_valid_hop_and_404_with_one() throws Exception {
    assertThat(Http.send(relay.url(), "GET", "/nope", null).status()).isEqualTo(401);
    Http.Resp r = b.get("/nope");
    assertThat(r.status()).isEqualTo(404);
    assertThat(r.raw()).isEqualTo("{\"error\":\"not found\"}");
  }

  @Test
  void every_answer_is_json_with_a_date_header() throws Exception {
    java.net.http.HttpResponse<String> r = java.net.http.HttpClient.newHttpClient().send(
        java.net.http.HttpRequest.newBuilder(java.net.URI.create(relay.url() + "/v2/relay/info")).build(),
        java.net.http.HttpResponse.BodyHandlers.ofString());
    assertThat(r.headers().firstValue("content-type")).hasValue("application/json");
    assertThat(r.headers().firstValue("date")).isPresent();
  }
}
