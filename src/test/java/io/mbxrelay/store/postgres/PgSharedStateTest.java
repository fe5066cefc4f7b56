package io.mbxrelay.store.postgres;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.mbxrelay.crypto.Ed25519KeyPair;
import io.mbxrelay.testing.Envelopes;
import io.mbxrelay.testing.Http;
import io.mbxrelay.testing.RelayHarness;
import io.mbxrelay.testing.TestHost;
import io.mbxrelay.wire.CanonicalJson;
import io.mbxrelay.wire.Json;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Clock;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 20 items 5 to 7 (docs/scale-out.md "What is shared, and what stays per instance"): three relay instances on
 * one PostgreSQL database share enrolment challenges, replay protection and the rate windows.
 */
class PgSharedStateTest {

  /** Three in-process relays on one new database, with the given overrides. */
  private static List<RelayHarness> three(Path dir, Map<String, String> overrides) throws Exception {
    String url = PgTestServer.shared().createDatabase();
    Map<String, String> env = new HashMap<>(Map.of("MBX_RELAY_STORE_BACKEND", "postgresql",
        "MBX_RELAY_STORE_URL", url, "MBX_RELAY_STORE_USER", PgTestServer.SUPERUSER,
        "MBX_RELAY_STORE_POOL_SIZE", "6", "MBX_RELAY_STORE_READ_POOL_SIZE", "2", "MBX_RELAY_HTTP_INSTANCES", "1"));
    env.putAll(overrides);
    Ed25519KeyPair key = Ed25519KeyPair.generate();
    List<RelayHarness> out = new ArrayList<>();
    try {
      for (int i = 0; i < 3; i++) {
        out.add(RelayHarness.start(Files.createDirectories(dir.resolve("i" + i)), env, Clock.systemUTC(), key));
      }
    } catch (Exception | Error e) {
      out.forEach(RelayHarness::close);
      throw e;
    }
    return out;
  }

  private static void closeAll(List<RelayHarness> relays) {
    relays.forEach(RelayHarness::close);
  }

  @Test
  void a_challenge_from_one_instance_enrols_at_another_and_its_answer_replayed_at_a_third_is_refused(@TempDir Path dir)
      throws Exception {
    List<RelayHarness> r = three(dir, Map.of());
    try {
      Ed25519KeyPair hostKey = Ed25519KeyPair.generate();
      String pub = hostKey.publicKeyB64();
      Http.Resp ch = Http.send(r.get(0).url(), "POST", "/v1/relay/challenge",
          Json.stringify(Json.MAPPER.createObjectNode().put("host", "alpha").put("pubkey", pub)));
      assertThat(ch.status()).as(ch.raw()).isEqualTo(200);
      String challenge = ch.json().get("challenge").asText();
      Http.Resp again = Http.send(r.get(2).url(), "POST", "/v1/relay/challenge",
          Json.stringify(Json.MAPPER.createObjectNode().put("host", "alpha").put("pubkey", pub)));
      assertThat(again.json().get("challenge").asText()).as("asking another instance returns the open challenge")
          .isEqualTo(challenge);
      ObjectNode rec = Json.MAPPER.createObjectNode().put("v", 1).put("challenge", challenge).put("host", "alpha")
          .put("pubkey", pub).put("owner_fp", "");
      String answer = Json.stringify(Json.MAPPER.createObjectNode().put("host", "alpha").put("pubkey", pub)
          .put("owner_fp", "").put("sig", hostKey.signB64(CanonicalJson.canonicalBytes(rec))));

      Http.Resp enrolled = Http.send(r.get(1).url(), "POST", "/v1/relay/enrol", answer);
      assertThat(enrolled.status()).as(enrolled.raw()).isEqualTo(200);
      Http.Resp replayed = Http.send(r.get(2).url(), "POST", "/v1/relay/enrol", answer);
      assertThat(replayed.status()).isEqualTo(401);
      assertThat(replayed.raw()).isEqualTo("{\"error\":\"no pending enrolment challenge\"}");
      Http.Resp here = Http.send(r.get(1).url(), "POST", "/v1/relay/enrol", answer);
      assertThat(here.raw()).isEqualTo("{\"error\":\"no pending enrolment challenge\"}");
    } finally {
      closeAll(r);
    }
  }

  @Test
  void a_signed_push_accepted_at_one_instance_and_replayed_byte_for_byte_at_another_is_refused_as_a_replay(
      @TempDir Path dir) throws Exception {
    List<RelayHarness> r = three(dir, Map.of());
    try {
      TestHost sender = new TestHost(r.get(0).url(), "sender").enrol();
      TestHost target = new TestHost(r.get(1).url(), "target").enrol();
      String id = Envelopes.newId();
      String body = Json.stringify(Json.MAPPER.createObjectNode().set("items", Json.MAPPER.createArrayNode()
          .add(TestHost.item("envelope", id, List.of(target.pub()), List.of(Envelopes.sealed(id))))));
      String ts = Long.toString(System.currentTimeMillis());
      String sig = Http.sign(sender.key, "POST", "/v2/relay/items", ts, body);

      Http.Resp first = Http.send(r.get(0).url(), "POST", "/v2/relay/items", body, sender.pub(), null, ts, sig);
      assertThat(first.status()).as(first.raw()).isEqualTo(200);
      assertThat(first.json().get("results").get(0).get("status").asText()).isEqualTo("accepted");
      for (int i = 1; i < 3; i++) {
        Http.Resp replay = Http.send(r.get(i).url(), "POST", "/v2/relay/items", body, sender.pub(), null, ts, sig);
        assertThat(replay.status()).as("instance " + i).isEqualTo(401);
        assertThat(replay.raw()).isEqualTo("{\"error\":\"bad relay hop\"}");
      }
      // the same answer as a replay on the accepting instance itself (its own memory answers)
      Http.Resp local = Http.send(r.get(0).url(), "POST", "/v2/relay/items", body, sender.pub(), null, ts, sig);
      assertThat(local.raw()).isEqualTo("{\"error\":\"bad relay hop\"}");
      // a retry re-signed with a fresh ts is a new hop: the store's dedup answers it
      Http.Resp retry = sender.post("/v2/relay/items", body);
      assertThat(retry.status()).as(retry.raw()).isEqualTo(200);
      assertThat(retry.json().get("results").get(0).get("status").asText()).isEqualTo("duplicate");
      assertThat(rows(r.get(0).config.store().url(), "SELECT count(*) FROM hop_replays")).isGreaterThanOrEqualTo(2);
    } finally {
      closeAll(r);
    }
  }

  @Test
  void a_sender_pushing_round_robin_over_three_instances_is_limited_at_about_the_configured_total(@TempDir Path dir)
      throws Exception {
    int limit = 60;
    long paceMs = 50;
    int requests = 150;
    List<RelayHarness> r = three(dir, Map.of("MBX_RELAY_LIMITS_PUSH_REQUESTS_PER_MINUTE", Integer.toString(limit)));
    try {
      TestHost target = new TestHost(r.get(0).url(), "target").enrol();
      List<TestHost> via = new ArrayList<>();
      Ed25519KeyPair key = Ed25519KeyPair.generate();
      new TestHost(r.get(0).url(), "sender", key).enrol();
      for (RelayHarness h : r) {
        via.add(new TestHost(h.url(), "sender", key));
      }
      int accepted = 0;
      int refused = 0;
      long start = System.currentTimeMillis();
      for (int i = 0; i < requests; i++) {
        long due = start + i * paceMs;
        long wait = due - System.currentTimeMillis();
        if (wait > 0) {
          Thread.sleep(wait); // the sender's pace, not a wait for a timer
        }
        String id = Envelopes.newId();
        Http.Resp p = via.get(i % 3).pushEnvelope(target, id, Envelopes.sealed(id));
        if (p.status() == 200 && "accepted".equals(p.json().get("results").get(0).get("status").asText())) {
          accepted++;
        } else {
          assertThat(p.status()).as(p.raw()).isIn(200, 429);
          refused++;
        }
      }
      long elapsed = System.currentTimeMillis() - start;
      System.out.printf("shared push window: limit %d/min, %d requests round robin over 3 instances every %d ms"
          + " (%d ms): %d accepted, %d refused%n", limit, requests, paceMs, elapsed, accepted, refused);
      assertThat(elapsed).as("the whole run stays inside one window").isLessThan(60_000);
      // exact when every instance has seen the others' counts; over by at most what the other instances accepted
      // since their last sync round reached this one (two rounds of 250 ms plus the round trips on an idle machine;
      // up to ~1.3 s measured on the loaded 2-core test machine, so 2 s of requests are allowed here); unshared it
      // would be 3 x the limit
      assertThat(accepted).isGreaterThanOrEqualTo(limit).isLessThanOrEqualTo(limit + (int) (2000 / paceMs));
    } finally {
      closeAll(r);
    }
  }

  @Test
  void enrolment_calls_from_one_address_over_three_instances_are_limited_at_about_the_configured_total(
      @TempDir Path dir) throws Exception {
    int limit = 30;
    long paceMs = 100;
    int calls = 90;
    List<RelayHarness> r = three(dir, Map.of("MBX_RELAY_LIMITS_ENROL_CALLS_PER_MINUTE", Integer.toString(limit)));
    try {
      int allowed = 0;
      long start = System.currentTimeMillis();
      for (int i = 0; i < calls; i++) {
        long wait = start + i * paceMs - System.currentTimeMillis();
        if (wait > 0) {
          Thread.sleep(wait); // the caller's pace
        }
        Http.Resp c = Http.send(r.get(i % 3).url(), "POST", "/v1/relay/challenge", Json.stringify(
            Json.MAPPER.createObjectNode().put("host", "h" + i).put("pubkey",
                Ed25519KeyPair.generate().publicKeyB64())));
        if (c.status() == 200) {
          allowed++;
        } else {
          assertThat(c.status()).as(c.raw()).isEqualTo(429);
        }
      }
      System.out.printf("shared enrolment window: limit %d/min, %d calls round robin every %d ms: %d allowed%n", limit,
          calls, paceMs, allowed);
      assertThat(allowed).isGreaterThanOrEqualTo(limit).isLessThanOrEqualTo(limit + (int) (2000 / paceMs));
    } finally {
      closeAll(r);
    }
  }

  @Test
  void a_version_1_database_is_migrated_to_version_2_with_the_shared_tables_and_nothing_else_changes()
      throws Exception {
    String url = PgTestServer.shared().createDatabase();
    Properties p = new Properties();
    p.setProperty("user", PgTestServer.SUPERUSER);
    try (Connection c = DriverManager.getConnection(url, p)) {
      try (Statement st = c.createStatement()) {
        for (String ddl : PgSchema.V1) {
          st.execute(ddl);
        }
        st.execute("INSERT INTO meta(k, v) VALUES('schema_version', '1'), ('epoch', 'e1')");
      }
      assertThat(PgSchema.migrate(c)).isEqualTo(1);
      assertThat(PgSchema.version(c)).isEqualTo(2);
      assertThat(rows(url, "SELECT count(*) FROM hop_replays")).isZero();
      assertThat(rows(url, "SELECT count(*) FROM rate_windows")).isZero();
      assertThat(rows(url, "SELECT count(*) FROM meta WHERE k = 'epoch' AND v = 'e1'")).isEqualTo(1);
      assertThat(PgSchema.migrate(c)).as("a second open migrates nothing").isEqualTo(2);
    }
  }

  // ---- helpers ----

  private static long rows(String url, String sql) throws Exception {
    Properties p = new Properties();
    p.setProperty("user", PgTestServer.SUPERUSER);
    try (Connection c = DriverManager.getConnection(url, p); Statement st = c.createStatement();
        ResultSet rs = st.executeQuery(sql)) {
      rs.next();
      return rs.getLong(1);
    }
  }
}
