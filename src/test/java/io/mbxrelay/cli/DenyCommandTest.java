package io.mbxrelay.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.mbxrelay.crypto.Ed25519KeyPair;
import io.mbxrelay.testing.Http;
import io.mbxrelay.testing.RelayHarness;
import io.mbxrelay.testing.TestHost;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Clock;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code mbxrelay deny add|list|remove} over a store directory (docs/protocol.md §7.8 "Revocation"). */
class DenyCommandTest {

  private static String run(String... args) {
    PrintStream out = System.out;
    ByteArrayOutputStream buf = new ByteArrayOutputStream();
    System.setOut(new PrintStream(buf, true, StandardCharsets.UTF_8));
    try {
      int code = Main.commandLine().execute(args);
      return code + "\n" + buf.toString(StandardCharsets.UTF_8);
    } finally {
      System.setOut(out);
    }
  }

  @Test
  void deny_add_revokes_the_host_even_while_the_relay_runs_and_list_and_remove_show_the_entry(@TempDir Path dir)
      throws Exception {
    Ed25519KeyPair relayKey = Ed25519KeyPair.generate();
    try (RelayHarness r = RelayHarness.start(dir, Map.of(), Clock.systemUTC(), relayKey)) {
      TestHost h = new TestHost(r.url(), "laptop").enrol();
      String added = run("deny", "add", "host_fp", h.key.fingerprint().replace("-", "").toUpperCase(), "--note",
          "lost laptop", "--store-dir", dir.toString());
      assertThat(added).startsWith("0\n").contains("\"type\" : \"relay-deny\"").contains("\"revoked\" : 1")
          .contains("\"value\" : \"" + h.key.fingerprint() + "\"");
      // the running relay notices the change another process committed within a second (data_version poll)
      long deadline = System.nanoTime() + 3_000_000_000L;
      Http.Resp hop = h.get("/v2/relay/items?after=0");
      while (hop.status() == 200 && System.nanoTime() < deadline) {
        Thread.sleep(50);
        hop = h.get("/v2/relay/items?after=0");
      }
      assertThat(hop.raw()).isEqualTo("{\"error\":\"bad relay hop\"}");
      assertThat(run("deny", "list", "--store-dir", dir.toString())).contains("\"note\" : \"lost laptop\"");
      assertThat(run("deny", "remove", "host_fp", h.pub(), "--store-dir", dir.toString()))
          .contains("\"removed\" : true");
      assertThat(h.tryEnrol().status()).as("revocation is permanent").isEqualTo(403);
    }
    assertThat(run("deny", "add", "bogus", "x", "--store-dir", dir.toString())).startsWith("2\n");
    assertThat(run("deny", "list", "--store-dir", dir.resolve("none").toString())).startsWith("1\n");
  }

  private static String runErr(String... args) {
    PrintStream err = System.err;
    ByteArrayOutputStream buf = new ByteArrayOutputStream();
    System.setErr(new PrintStream(buf, true, StandardCharsets.UTF_8));
    try {
      int code = Main.commandLine().execute(args);
      return code + "\n" + buf.toString(StandardCharsets.UTF_8);
    } finally {
      System.setErr(err);
    }
  }

  @Test
  void a_bad_value_is_reported_as_a_bad_value_and_a_bad_kind_as_a_bad_kind(@TempDir Path dir) {
    // issue 12 item 6: a mistyped fingerprint used to be reported as "kind must be host_fp … or client_id"
    assertThat(runErr("deny", "add", "host_fp", "3f9a-0c11-7d2e", "--store-dir", dir.toString()))
        .startsWith("2\n").contains("bad deny entry: host_fp value '3f9a-0c11-7d2e' is not a host fingerprint")
        .doesNotContain("kind must be");
    assertThat(runErr("deny", "add", "client_id", "", "--store-dir", dir.toString()))
        .startsWith("2\n").contains("client_id value must be 1 to 200 characters without control characters (is"
            + " empty)");
    assertThat(runErr("deny", "remove", "host", "3f9a-0c11-7d2e-b845", "--store-dir", dir.toString()))
        .startsWith("2\n").contains("bad deny entry: kind must be host_fp or client_id (is 'host')");
  }

  @Test
  void deny_changes_by_the_cli_and_by_the_admin_endpoint_appear_in_the_ops_log(@TempDir Path dir) throws Exception {
    String token = "t".repeat(40);
    try (RelayHarness r = RelayHarness.start(dir, Map.of("MBX_RELAY_ADMIN_TOKEN", token), Clock.systemUTC(),
        Ed25519KeyPair.generate())) {
      String fp = Ed25519KeyPair.generate().fingerprint();
      assertThat(run("deny", "add", "host_fp", fp, "--note", "lost laptop", "--store-dir", dir.toString()))
          .startsWith("0\n");
      assertThat(run("deny", "remove", "host_fp", fp, "--store-dir", dir.toString())).startsWith("0\n");
      assertThat(Http.sendHeaders(r.url(), "POST", "/admin/deny", "{\"kind\":\"client_id\",\"value\":\"cli-123\"}",
          Map.of("authorization", "Bearer " + token)).status()).isEqualTo(200);
    }
    String log = run("log", "--json", "--store-dir", dir.toString());
    com.fasterxml.jackson.databind.JsonNode entries = io.mbxrelay.wire.Json.parse(log.substring(log.indexOf('\n')));
    java.util.List<String> deny = new java.util.ArrayList<>();
    for (com.fasterxml.jackson.databind.JsonNode e : entries) {
      if (e.get("op").asText().startsWith("deny-")) {
        com.fasterxml.jackson.databind.JsonNode rc = e.get("receipt");
        deny.add(e.get("op").asText() + " " + rc.get("kind").asText() + " " + rc.get("value").asText() + " "
            + rc.get("via").asText());
      }
    }
    String fpLine = deny.get(0).split(" ")[2];
    assertThat(deny).containsExactly("deny-add host_fp " + fpLine + " mbxrelay deny",
        "deny-remove host_fp " + fpLine + " mbxrelay deny", "deny-add client_id cli-123 /admin/deny");
  }
}
