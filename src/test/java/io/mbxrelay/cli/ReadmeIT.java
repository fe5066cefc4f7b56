package io.mbxrelay.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.mbxrelay.testing.Http;
import io.mbxrelay.wire.Json;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The README's first command, exactly as written there, brings up a relay that answers info, and the host CLI moves
 * an item between two host keys against it (issue: relay core, Show 5). HOME points at a temp dir so the default
 * store dir is private to the test, and PORT=0 picks a free port; the command text itself is read from README.md.
 */
class ReadmeIT {

  static String readmeRunCommand() throws Exception {
    List<String> lines = Files.readAllLines(Path.of("README.md"));
    int fence = lines.indexOf("```sh");
    String first = lines.get(fence + 1);
    int comment = first.indexOf('#');
    return (comment < 0 ? first : first.substring(0, comment)).trim();
  }

  private static ProcessBuilder bash(String command, Path home) {
    ProcessBuilder pb = new ProcessBuilder("bash", "-c", command).redirectErrorStream(true);
    pb.environment().put("HOME", home.toString());
    pb.environment().remove("MBX_RELAY_DIR");
    pb.environment().remove("MBX_RELAY_KEY");
    return pb;
  }

  private static String run(Path home, String command) throws Exception {
    Process p = bash(command, home).redirectErrorStream(false).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    String err = new String(p.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(p.waitFor(120, TimeUnit.SECONDS)).isTrue();
    assertThat(p.exitValue()).as(command + "\n" + out + "\n" + err).isZero();
    return out;
  }

  @Test
  void the_readme_run_command_serves_info_and_the_host_cli_moves_an_item(@TempDir Path home) throws Exception {
    String command = readmeRunCommand();
    assertThat(command).isEqualTo("scripts/mbxrelay serve");
    ProcessBuilder pb = bash("exec " + command, home);
    pb.environment().put("PORT", "0");
    pb.environment().put("MBX_RELAY_ADMIN_PORT", "0"); // a busy 7375 on the test machine must not fail the test
    Process relay = pb.start();
    try {
      CompletableFuture<Integer> port = new CompletableFuture<>();
      Thread reader = new Thread(() -> {
        try (BufferedReader r = new BufferedReader(new InputStreamReader(relay.getInputStream(), StandardCharsets.UTF_8))) {
          String line;
          Pattern listening = Pattern.compile("listening on :(\\d+)");
          while ((line = r.readLine()) != null) {
            Matcher m = listening.matcher(line);
            if (m.find()) {
              port.complete(Integer.parseInt(m.group(1)));
            }
          }
        } catch (Exception ignored) {
          // gone
        }
        port.completeExceptionally(new IllegalStateException("relay exited"));
      });
      reader.setDaemon(true);
      reader.start();
      String url = "http://127.0.0.1:" + port.get(180, TimeUnit.SECONDS);
      Http.Resp info = Http.send(url, "GET", "/v2/relay/info", null);
      assertThat(info.status()).isEqualTo(200);
      assertThat(info.json().get("v").asInt()).isEqualTo(2);
      assertThat(Files.isRegularFile(home.resolve(".local/share/mbxrelay/relay.db"))).isTrue();

      Path ka = home.resolve("a.key");
      Path kb = home.resolve("b.key");
      run(home, "scripts/mbxrelay host enrol --relay " + url + " --name alpha --key-file " + ka);
      String enrolB = run(home, "scripts/mbxrelay host enrol --relay " + url + " --name beta --key-file " + kb);
      String bPub = Json.parse(enrolB).get("host_pubkey").asText();
      Path item = home.resolve("item.json"); // an already sealed envelope, pushed as is
      Files.write(item, io.mbxrelay.testing.Envelopes.sealed(io.mbxrelay.testing.Envelopes.newId()));
      run(home, "scripts/mbxrelay host push --relay " + url + " --name alpha --key-file " + ka + " --to '" + bPub
          + "' --file " + item);
      String pulled = run(home, "scripts/mbxrelay host pull --relay " + url + " --key-file " + kb + " --ack --json");
      JsonNode page = Json.parse(pulled);
      assertThat(page.toString()).contains("envelope");
      String again = run(home, "scripts/mbxrelay host pull --relay " + url + " --key-file " + kb + " --json");
      assertThat(Json.parse(again).toString()).doesNotContain("\"kind\":\"envelope\"");
    } finally {
      relay.destroy();
      relay.waitFor(30, TimeUnit.SECONDS);
    }
  }
}
