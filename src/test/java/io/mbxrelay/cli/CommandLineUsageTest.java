package io.mbxrelay.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.mbxrelay.wire.Json;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;
import picocli.CommandLine.Model.ArgSpec;

/**
 * The command line as a user meets it (issue 12 item 5): help that does not split values, usage errors as one plain
 * line and exit 2 everywhere, shell completion, {@code serve --print-config} and a validated log level.
 */
class CommandLineUsageTest {

  /** Exit code, stdout and stderr of one in-process run through {@link Main#commandLine()}. */
  private record Run(int code, String out, String err) {}

  private static Run run(String... args) {
    CommandLine cl = Main.commandLine();
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    cl.setOut(new PrintWriter(out, true));
    cl.setErr(new PrintWriter(err, true));
    PrintStream sysErr = System.err;
    ByteArrayOutputStream errBuf = new ByteArrayOutputStream();
    System.setErr(new PrintStream(errBuf, true, StandardCharsets.UTF_8));
    int code;
    try {
      code = cl.execute(args);
    } finally {
      System.setErr(sysErr);
    }
    return new Run(code, out.toString(), err + errBuf.toString(StandardCharsets.UTF_8));
  }

  /** {@code serve} in-process with its environment replaced; System.out and System.err captured. */
  private static Run serve(Map<String, String> env, String... args) {
    ServeCommand cmd = new ServeCommand();
    cmd.env = env;
    PrintStream sysOut = System.out;
    PrintStream sysErr = System.err;
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
    System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
    int code;
    try {
      code = new CommandLine(cmd).execute(args);
    } finally {
      System.setOut(sysOut);
      System.setErr(sysErr);
    }
    return new Run(code, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
  }

  private static void collect(CommandLine cl, List<CommandLine> into) {
    into.add(cl);
    cl.getSubcommands().values().forEach(sub -> collect(sub, into));
  }

  @Test
  void every_help_text_keeps_each_word_of_every_description_whole() {
    // `~/. local/share` and `(relay.` / `lock` came out of picocli's line breaking after dots and hyphens
    List<CommandLine> all = new ArrayList<>();
    collect(Main.commandLine(), all);
    int words = 0;
    for (CommandLine c : all) {
      String joined = c.getUsageMessage(CommandLine.Help.Ansi.OFF).replaceAll("\\s+", " ");
      List<ArgSpec> args = new ArrayList<>(c.getCommandSpec().options());
      args.addAll(c.getCommandSpec().positionalParameters());
      for (ArgSpec a : args) {
        for (String line : a.description()) {
          for (String word : line.split("\\s+")) {
            if (word.length() > 1 && word.length() < 40) {
              assertThat(joined).as("%s help, %s", c.getCommandSpec().qualifiedName(), a).contains(word);
              words++;
            }
          }
        }
      }
    }
    assertThat(words).isGreaterThan(500);
    assertThat(Main.commandLine().getSubcommands().get("serve").getUsageMessage(CommandLine.Help.Ansi.OFF))
        .contains("~/.local/share/mbxrelay").contains("(relay.lock,");
  }

  @Test
  void usage_errors_exit_2_with_one_plain_line_in_every_command() {
    String[][] cases = {
        {"serve", "--bogus"},
        {"servr"},
        {"backup"},
        {"deny", "add", "host_fp"},
        {"host", "relay", "set", "notaurl"},
        {"host", "push", "--relay", "ftp://relay.example", "--to", "k", "--stdin"},
        {"host", "pull", "--relay", "relay.example"},
        {"host", "enrol", "--relay", "http://", "--name", "a"},
        {"host", "run", "--interval-ms", "soon"},
        {"host", "run", "--interval-ms", "-1"},
        {"host", "run", "--exec", "cat", "--exec-timeout-ms", "0"},
        {"log", "--limit", "many"},
    };
    for (String[] c : cases) {
      Run r = run(c);
      assertThat(r.code()).as(String.join(" ", c)).isEqualTo(2);
      assertThat(r.err()).as(String.join(" ", c)).startsWith("[mbxrelay] ").contains("--help' for the options")
          .doesNotContain("Exception").doesNotContain("\tat ");
      assertThat(r.err().lines().count()).as("no full usage dump: %s", r.err()).isLessThan(8);
    }
    assertThat(run("host", "relay", "set", "notaurl").err())
        .contains("a relay URL is http(s)://host[:port][/path], e.g. https://relay.example or http://127.0.0.1:7374"
            + " (is 'notaurl')");
    assertThat(run("host", "run", "--interval-ms", "-1").err()).contains("--interval-ms must be at least 1 (is -1)");
  }

  @Test
  void completion_prints_a_bash_script_that_knows_every_command_and_option() {
    Run r = run("completion");
    assertThat(r.code()).isZero();
    assertThat(r.out()).startsWith("#!/usr/bin/env bash").contains("complete -F _complete_mbxrelay")
        .contains("serve").contains("healthcheck").contains("--print-config").contains("--accept-lost-commits")
        .contains("deny").contains("quarantine");
  }

  @Test
  void print_config_shows_the_effective_configuration_with_secrets_masked_and_touches_nothing(@TempDir Path dir)
      throws Exception {
    Path conf = Files.writeString(dir.resolve("relay.json"), "{\"limits\":{\"maxBatch\":50}}");
    String token = "s3cret-admin-token-0123456789abcdefghij";
    String seed = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
    Path store = dir.resolve("store");
    Run r = serve(Map.of("MBX_RELAY_CONFIG", conf.toString(), "MBX_RELAY_HTTP_INSTANCES", "3",
        "MBX_RELAY_ADMIN_TOKEN", token, "MBX_RELAY_KEY", seed), "--print-config", "--port", "8000",
        "--store-dir", store.toString());
    assertThat(r.code()).isZero();
    assertThat(r.out()).doesNotContain(token).doesNotContain(seed);
    JsonNode c = Json.parse(r.out());
    assertThat(c.at("/serve/port").asInt()).isEqualTo(8000);
    assertThat(c.at("/serve/bind").asText()).as("loopback unless --bind says otherwise (issue 22 item 9)")
        .isEqualTo("127.0.0.1");
    assertThat(c.at("/serve/store_dir").asText()).isEqualTo(store.toAbsolutePath().toString());
    assertThat(c.at("/serve/config_file").asText()).isEqualTo(conf.toAbsolutePath().toString());
    assertThat(c.at("/serve/relay_key").asText()).isEqualTo("from MBX_RELAY_KEY (set, not shown)");
    assertThat(c.at("/http/instances").asInt()).as("environment").isEqualTo(3);
    assertThat(c.at("/limits/maxBatch").asInt()).as("file").isEqualTo(50);
    assertThat(c.at("/limits/maxPull").asInt()).as("default").isEqualTo(500);
    assertThat(c.at("/admin/token").asText()).isEqualTo("(set, not shown)");
    assertThat(c.at("/log/level").asText()).isEqualTo("INFO");
    assertThat(Files.exists(store)).as("the store is not touched").isFalse();
  }

  @Test
  void print_config_of_a_postgresql_store_hides_its_password_and_url_parameters(@TempDir Path dir) {
    Run r = serve(Map.of("MBX_RELAY_STORE_BACKEND", "postgresql",
        "MBX_RELAY_STORE_URL", "jdbc:postgresql://db:5432/relay?password=in-url-secret",
        "MBX_RELAY_STORE_USER", "relay", "MBX_RELAY_STORE_PASSWORD", "pg-secret-password"), "--print-config",
        "--store-dir", dir.resolve("store").toString());
    assertThat(r.code()).isZero();
    assertThat(r.out()).doesNotContain("pg-secret-password").doesNotContain("in-url-secret");
    JsonNode c = Json.parse(r.out());
    assertThat(c.at("/store/backend").asText()).isEqualTo("postgresql");
    assertThat(c.at("/store/password").asText()).isEqualTo("(set, not shown)");
    assertThat(c.at("/store/url").asText()).isEqualTo("jdbc:postgresql://db:5432/relay?(parameters not shown)");
    assertThat(c.at("/store/user").asText()).isEqualTo("relay");
    // issue 22 item 8: neither the store dir nor a relay.key path, which PostgreSQL does not use
    assertThat(r.out()).doesNotContain(dir.toString()).doesNotContain("relay.key");
    assertThat(c.at("/serve/store_dir").asText()).isEqualTo("(not used: store.backend is postgresql)");
    assertThat(c.at("/serve/relay_key").asText()).isEqualTo("in the PostgreSQL database");
  }

  @Test
  void serve_refuses_a_bogus_log_level_and_an_admin_port_equal_to_the_relay_port_with_exit_2(@TempDir Path dir) {
    Path store = dir.resolve("store");
    Run level = serve(Map.of("MBX_RELAY_LOG_LEVEL", "bogus"), "--port", "0", "--store-dir", store.toString());
    assertThat(level.code()).isEqualTo(2);
    assertThat(level.err()).contains("invalid configuration:")
        .contains("log.level (MBX_RELAY_LOG_LEVEL) must be one of TRACE, DEBUG, INFO, WARN, ERROR, OFF (is bogus)");
    Run ports = serve(Map.of("MBX_RELAY_ADMIN_PORT", "7390"), "--port", "7390", "--store-dir", store.toString());
    assertThat(ports.code()).isEqualTo(2);
    assertThat(ports.err()).contains("admin.port (MBX_RELAY_ADMIN_PORT) must differ from the relay port");
    Run port = serve(Map.of("PORT", "http"), "--store-dir", store.toString());
    assertThat(port.code()).isEqualTo(2);
    assertThat(port.err()).contains("PORT must be a number (is http)");
    assertThat(Files.exists(store)).isFalse();
  }

  @Test
  void the_log_level_setter_refuses_what_logback_would_read_as_debug() {
    String was = LogSetup.level();
    try {
      assertThat(LogSetup.level("bogus")).isFalse();
      assertThat(LogSetup.level()).isEqualTo(was);
      assertThat(LogSetup.level("warn")).isTrue();
      assertThat(LogSetup.level()).isEqualTo("WARN");
    } finally {
      LogSetup.level(was);
    }
  }
}
