package io.mbxrelay.http;

import static org.assertj.core.api.Assertions.assertThat;

import io.mbxrelay.crypto.Ed25519KeyPair;
import io.mbxrelay.testing.Envelopes;
import io.mbxrelay.testing.Http;
import io.mbxrelay.testing.RelayHarness;
import io.mbxrelay.testing.TestHost;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.time.Clock;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Quotas and the push rate over real HTTP (docs/protocol.md §3 "Quota messages", §7.7). */
class QuotaTest {

  private static String push(TestHost from, TestHost to, int bodyBytes) throws Exception {
    String id = Envelopes.newId();
    return from.pushEnvelope(to, id, Envelopes.sealed(id, bodyBytes)).json().get("results").get(0).get("status")
        .asText();
  }

  private static long head(TestHost t) throws Exception {
    return t.pull(0, 1, null).json().get("head_seq").asLong();
  }

  @Test
  void target_depth_and_sender_share_reject_the_whole_item_with_the_target_name(@TempDir Path dir) throws Exception {
    try (RelayHarness r = RelayHarness.start(dir, Map.of("MBX_RELAY_LIMITS_MAX_QUEUE_ITEMS", "4",
        "MBX_RELAY_LIMITS_MAX_SENDER_ITEMS", "2"), Clock.systemUTC(), Ed25519KeyPair.generate())) {
      TestHost a = new TestHost(r.url(), "alpha").enrol();
      TestHost c = new TestHost(r.url(), "gamma").enrol();
      TestHost d = new TestHost(r.url(), "delta").enrol();
      TestHost b = new TestHost(r.url(), "Beta").enrol();
      assertThat(push(a, b, 64)).isEqualTo("accepted");
      assertThat(push(a, b, 64)).isEqualTo("accepted");
      long before = head(b);
      assertThat(push(a, b, 64)).isEqualTo("rejected:quota:sender share exceeded for Beta");
      assertThat(head(b)).isEqualTo(before);
      assertThat(push(c, b, 64)).isEqualTo("accepted");
      assertThat(push(c, b, 64)).isEqualTo("accepted");
      assertThat(push(d, b, 64)).isEqualTo("rejected:quota:queue depth exceeded for Beta");
      assertThat(b.pull(0, null, null).json().get("items")).hasSize(4);
    }
  }

  /**
   * Issue 11 item 8: a few free enrolments filled a target's queue and one address stored 159 MiB; nothing bounded
   * one sender over all targets or the whole store.
   */
  @Test
  void a_sender_is_bounded_over_all_targets_and_the_whole_store_is_bounded(@TempDir Path dir) throws Exception {
    try (RelayHarness r = RelayHarness.start(dir, Map.of("MBX_RELAY_LIMITS_MAX_SENDER_TOTAL_ITEMS", "3",
        "MBX_RELAY_LIMITS_MAX_STORE_ITEMS", "5"), Clock.systemUTC(), Ed25519KeyPair.generate())) {
      TestHost a = new TestHost(r.url(), "alpha").enrol();
      TestHost c = new TestHost(r.url(), "gamma").enrol();
      TestHost b = new TestHost(r.url(), "beta").enrol();
      TestHost d = new TestHost(r.url(), "delta").enrol();
      assertThat(push(a, b, 64)).isEqualTo("accepted");
      assertThat(push(a, c, 64)).isEqualTo("accepted");
      assertThat(push(a, d, 64)).isEqualTo("accepted");
      long before = head(b);
      assertThat(push(a, b, 64)).isEqualTo("rejected:quota:sender total exceeded");
      assertThat(head(b)).isEqualTo(before);
      assertThat(push(c, b, 64)).isEqualTo("accepted");
      assertThat(push(c, d, 64)).isEqualTo("accepted");
      assertThat(push(d, b, 64)).isEqualTo("rejected:quota:relay store full");
      // acking frees room for everyone
      long through = b.pull(0, null, null).json().get("last_seq").asLong();
      assertThat(b.ack(b.pull(0, null, null).json().get("epoch").asText(), through).status()).isEqualTo(200);
      assertThat(push(d, b, 64)).isEqualTo("accepted");
      assertThat(push(a, b, 64)).isEqualTo("accepted");
    }
  }

  @Test
  void target_bytes_and_sender_bytes_are_charged_in_stored_bytes(@TempDir Path dir) throws Exception {
    try (RelayHarness r = RelayHarness.start(dir, Map.of("MBX_RELAY_LIMITS_MAX_QUEUE_BYTES", "3000",
        "MBX_RELAY_LIMITS_MAX_SENDER_BYTES", "2000"), Clock.systemUTC(), Ed25519KeyPair.generate())) {
      TestHost a = new TestHost(r.url(), "alpha").enrol();
      TestHost c = new TestHost(r.url(), "gamma").enrol();
      TestHost b = new TestHost(r.url(), "beta").enrol();
      assertThat(push(a, b, 400)).isEqualTo("accepted"); // ~1 KB stored
      assertThat(push(a, b, 800)).isEqualTo("rejected:quota:sender share exceeded for beta");
      assertThat(push(c, b, 400)).isEqualTo("accepted");
      assertThat(push(c, b, 800)).isEqualTo("rejected:quota:queue bytes exceeded for beta");
    }
  }

  @Test
  void a_proven_account_is_charged_across_its_hosts_and_a_claimed_owner_fp_never_is(@TempDir Path dir)
      throws Exception {
    try (RelayHarness r = RelayHarness.start(dir, Map.of("MBX_RELAY_LIMITS_MAX_OWNER_ITEMS", "3"), Clock.systemUTC(),
        Ed25519KeyPair.generate())) {
      TestHost a = new TestHost(r.url(), "alpha").enrol();
      TestHost b1 = new TestHost(r.url(), "b1").enrol();
      TestHost b2 = new TestHost(r.url(), "b2").enrol();
      TestHost x1 = new TestHost(r.url(), "x1").enrol();
      TestHost x2 = new TestHost(r.url(), "x2").enrol();
      // b1 and b2 belong to one proven account (set as the account-token authority would record it)
      try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + dir.resolve("relay.db"));
          PreparedStatement ps = c.prepareStatement(
              "UPDATE enrolments SET account='acct-b', authorized_by='account-token' WHERE host_pubkey IN (?, ?)")) {
        c.createStatement().execute("PRAGMA busy_timeout=5000");
        ps.setString(1, b1.pub());
        ps.setString(2, b2.pub());
        assertThat(ps.executeUpdate()).isEqualTo(2);
      }
      assertThat(push(a, b1, 64)).isEqualTo("accepted");
      assertThat(push(a, b2, 64)).isEqualTo("accepted");
      assertThat(push(a, b1, 64)).isEqualTo("accepted");
      assertThat(push(a, b2, 64)).isEqualTo("rejected:quota:owner queue depth exceeded for b2");
      // x1 and x2 only claim the same owner_fp: each keeps its own full quota
      for (int i = 0; i < 4; i++) {
        assertThat(push(a, x1, 64)).isEqualTo("accepted");
        assertThat(push(a, x2, 64)).isEqualTo("accepted");
      }
    }
  }

  @Test
  void the_push_rate_counts_requests_per_sender_key(@TempDir Path dir) throws Exception {
    try (RelayHarness r = RelayHarness.start(dir, Map.of("MBX_RELAY_LIMITS_PUSH_REQUESTS_PER_MINUTE", "3"),
        Clock.systemUTC(), Ed25519KeyPair.generate())) {
      TestHost a = new TestHost(r.url(), "alpha").enrol();
      TestHost c = new TestHost(r.url(), "gamma").enrol();
      TestHost b = new TestHost(r.url(), "beta").enrol();
      for (int i = 0; i < 3; i++) {
        assertThat(push(a, b, 64)).isEqualTo("accepted");
      }
      long before = head(b);
      // read from the headers since issue 11 item 2: refused before the items are read (429), not item by item
      Http.Resp over = a.pushEnvelope(b, Envelopes.newId(), Envelopes.sealed(Envelopes.newId()));
      assertThat(over.status()).isEqualTo(429);
      assertThat(over.raw()).isEqualTo("{\"error\":\"push rate exceeded (3/min)\"}");
      assertThat(head(b)).isEqualTo(before);
      assertThat(push(c, b, 64)).as("another sender key has its own window").isEqualTo("accepted");
    }
  }
}
