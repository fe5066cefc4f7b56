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
}
