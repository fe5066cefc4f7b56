package io.mbxrelay.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.mbxrelay.testing.Envelopes;
import io.mbxrelay.testing.Http;
import io.mbxrelay.testing.RelayHarness;
import io.mbxrelay.testing.TestHost;
import io.mbxrelay.wire.Json;
import java.nio.file.Path;
import java.time.Clock;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 22 item 10: {@code conf/hosted.json}, the profile for a hosted relay ({@code serve --config conf/hosted.json},
 * docs/configuration.md "Hosted profile"). With the defaults five free sender keys fill a target's queue (5 × 2,000 =
 * 10,000 items; by bytes 3 × 20 MiB > 50 MiB) and about 103 fill the 20 GiB store (103 × 200 MiB). The profile makes
 * every key cost an account (account tokens) and lowers the per-key shares so that the same fills take 25 and 1,024
 * keys. Each bound is checked as arithmetic and against a real relay.
 */
class HostedProfileTest {
  private static final Path PROFILE = Path.of("conf/hosted.json");
  private static final Map<String, String> ISSUER = Map.of(
      "MBX_RELAY_ENROLMENT_RELAY_URL", "https://relay.example",
      "MBX_RELAY_ENROLMENT_TOKEN_ISSUER", "https://accounts.example",
      "MBX_RELAY_ENROLMENT_JWKS_URL", "https://accounts.example/.well-known/jwks.json");

  private static RelayConfig profile() throws Exception {
    return ConfigLoader.load(PROFILE, ISSUER);
  }

  @Test
  void the_profile_needs_an_accounts_issuer_and_then_enrols_by_account_token_only() throws Exception {
    assertThatThrownBy(() -> ConfigLoader.load(PROFILE, Map.of())).isInstanceOfSatisfying(ConfigException.class,
        e -> assertThat(e.violations()).containsExactlyInAnyOrder(
            "enrolment.relayUrl is required with enrolment.authority account-token",
            "enrolment.tokenIssuer is required with enrolment.authority account-token",
            "enrolment.jwksUrl is required with enrolment.authority account-token"));
    assertThat(profile().enrolment().authority()).isEqualTo("account-token");
  }

  @Test
  void filling_one_target_queue_takes_25_sender_keys_instead_of_5() throws Exception {
    RelayConfig.Limits d = ConfigLoader.load(null, Map.of()).limits();
    RelayConfig.Limits h = profile().limits();
    assertThat(keys(d.maxQueueItems(), d.maxSenderItems())).as("defaults, by items").isEqualTo(5);
    assertThat(keys(d.maxQueueBytes(), d.maxSenderBytes())).as("defaults, by bytes").isEqualTo(3);
    assertThat(Math.min(keys(h.maxQueueItems(), h.maxSenderItems()), keys(h.maxQueueBytes(), h.maxSenderBytes())))
        .as("hosted").isEqualTo(25);
  }

  @Test
  void filling_the_store_takes_1024_sender_keys_instead_of_103() throws Exception {
    RelayConfig.Limits d = ConfigLoader.load(null, Map.of()).limits();
    RelayConfig.Limits h = profile().limits();
    assertThat(keys(d.maxStoreBytes(), d.maxSenderTotalBytes())).as("defaults").isEqualTo(103);
    assertThat(Math.min(keys(h.maxStoreBytes(), h.maxSenderTotalBytes()),
        keys(h.maxStoreItems(), h.maxSenderTotalItems()))).as("hosted").isEqualTo(1024);
    assertThat(profile().store().minFreeBytes()).isEqualTo(1L << 30);
  }

  private static long keys(long bound, long perKey) {
    return (bound + perKey - 1) / perKey;
  }

  /** The profile's limits on a real relay; enrolment by challenge here only because the test has no issuer. */
  private static RelayHarness relay(Path dir) throws Exception {
    Map<String, String> env = new HashMap<>();
    RelayConfig.Limits h = profile().limits();
    env.put("MBX_RELAY_LIMITS_MAX_SENDER_ITEMS", Long.toString(h.maxSenderItems()));
    env.put("MBX_RELAY_LIMITS_MAX_SENDER_BYTES", Long.toString(h.maxSenderBytes()));
    env.put("MBX_RELAY_LIMITS_MAX_SENDER_TOTAL_ITEMS", Long.toString(h.maxSenderTotalItems()));
    env.put("MBX_RELAY_LIMITS_MAX_SENDER_TOTAL_BYTES", Long.toString(h.maxSenderTotalBytes()));
    env.put("MBX_RELAY_STORE_MIN_FREE_BYTES", "0"); // the test's disk, not the profile's floor
    return RelayHarness.start(dir, env, Clock.systemUTC(), io.mbxrelay.crypto.Ed25519KeyPair.generate());
  }

  /** Pushes {@code n} small envelopes from {@code from} to {@code to}; returns each item's status. */
  private static List<String> push(TestHost from, TestHost to, int n) throws Exception {
    List<String> statuses = new ArrayList<>();
    for (int done = 0; done < n; ) {
      int batch = Math.min(200, n - done);
      ObjectNode body = Json.MAPPER.createObjectNode();
      ArrayNode items = body.putArray("items");
      for (int i = 0; i < batch; i++) {
        String id = Envelopes.newId();
        items.add(TestHost.item("envelope", id, List.of(to.pub()), List.of(Envelopes.sealed(id))));
      }
      Http.Resp r = from.post("/v2/relay/items", Json.stringify(body));
      assertThat(r.status()).as(r.raw()).isEqualTo(200);
      r.json().get("results").forEach(x -> statuses.add(x.get("status").asText()));
      done += batch;
    }
    return statuses;
  }

  @Test
  void five_sender_keys_stop_at_their_share_and_leave_the_queue_open_to_others(@TempDir Path dir) throws Exception {
    try (RelayHarness r = relay(dir)) {
      TestHost target = new TestHost(r.url(), "target").enrol();
      for (int k = 0; k < 5; k++) {
        TestHost s = new TestHost(r.url(), "s" + k).enrol();
        List<String> st = push(s, target, 251);
        assertThat(st.subList(0, 250)).containsOnly("accepted");
        assertThat(st.get(250)).isEqualTo("rejected:quota:sender share exceeded for target");
      }
      TestHost honest = new TestHost(r.url(), "honest").enrol();
      assertThat(push(honest, target, 1)).containsExactly("accepted");
    }
  }

  @Test
  void one_sender_key_stops_at_its_total_over_all_targets(@TempDir Path dir) throws Exception {
    try (RelayHarness r = relay(dir)) {
      TestHost s = new TestHost(r.url(), "sender").enrol();
      for (int t = 0; t < 8; t++) { // 8 × 250 = 2,000 = the total
        assertThat(push(s, new TestHost(r.url(), "t" + t).enrol(), 250)).containsOnly("accepted");
      }
      TestHost ninth = new TestHost(r.url(), "t8").enrol();
      assertThat(push(s, ninth, 1)).containsExactly("rejected:quota:sender total exceeded");
      assertThat(push(new TestHost(r.url(), "other").enrol(), ninth, 1)).containsExactly("accepted");
    }
  }
}
