package io.mbxrelay.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.mbxrelay.testing.ChildRelay;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The README's two-host walkthrough, exactly as written there (issue 12 item 9): the fenced block under "Two hosts, one
 * message, its receipt" is read from README.md and run line by line in one bash (errexit, so any failing line fails
 * the test) against a real relay child process, with {@code RELAY} pointing at it and {@code HOME} at a temp dir.
 * Then what the walkthrough promises is checked in what its last two lines printed: the message in beta's inbox, and
 * alpha's row settled by beta's delivery receipt.
 */
class ReadmeWalkthroughIT {

  static String walkthrough() throws Exception {
    List<String> lines = Files.readAllLines(Path.of("README.md"));
    int heading = lines.indexOf("## Two hosts, one message, its receipt");
    assertThat(heading).as("walkthrough heading in README.md").isNotNegative();
    int open = lines.subList(heading, lines.size()).indexOf("```sh") + heading;
    int close = lines.subList(open + 1, lines.size()).indexOf("```") + open + 1;
    assertThat(close).isGreaterThan(open + 1);
    return String.join("\n", lines.subList(open + 1, close)) + "\n";
  }

  @Test
  void the_readme_walkthrough_delivers_a_message_from_alpha_to_beta_and_settles_it_with_the_receipt(
      @TempDir Path home) throws Exception {
    String block = walkthrough();
    assertThat(block).contains("host init", "host peer add", "host send", "host run", "host status");
    try (ChildRelay relay = ChildRelay.start(home.resolve("relay"), Map.of())) {
      Path script = home.resolve("walkthrough.sh");
      Files.writeString(script, "set -euo pipefail\nset -x\n" + block);
      ProcessBuilder pb = new ProcessBuilder("bash", script.toString());
      pb.environment().put("HOME", home.toString());
      pb.environment().put("RELAY", relay.url());
      pb.environment().remove("MBX_RELAY_DIR");
      pb.environment().remove("MBX_RELAY_KEY");
      Path out = home.resolve("out.txt");
      Path err = home.resolve("err.txt");
      Process p = pb.redirectOutput(out.toFile()).redirectError(err.toFile()).start();
      assertThat(p.waitFor(300, TimeUnit.SECONDS)).as("walkthrough finished").isTrue();
      String stderr = Files.readString(err, StandardCharsets.UTF_8);
      assertThat(p.exitValue()).as(stderr).isZero();

      // the last two lines of the block (bash -x echoes each command with ~ expanded): beta's status, then alpha's
      int beta = stderr.lastIndexOf("+ scripts/mbxrelay host status --dir " + home.resolve("mbx-beta"));
      int alpha = stderr.lastIndexOf("+ scripts/mbxrelay host status --dir " + home.resolve("mbx-alpha"));
      assertThat(beta).as(stderr).isPositive();
      assertThat(alpha).as(stderr).isGreaterThan(beta);
      assertThat(stderr.substring(beta, alpha)).containsPattern("inbox \\S+ from alpha: hello from alpha");
      assertThat(stderr.substring(alpha)).containsPattern(" \\S+ -> beta: settled");
      // the delivery receipt came back through the relay: alpha's last tick counted it
      assertThat(stderr).containsPattern("receipts 1");
      assertThat(Files.isRegularFile(home.resolve("mbx-alpha/host.db"))).isTrue();
    }
  }
}
