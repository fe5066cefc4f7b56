package io.mbxrelay.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.net.httpserver.HttpServer;
import io.mbxrelay.testing.RelayHarness;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * {@code mbxrelay healthcheck}, the container HEALTHCHECK: 0 against a live admin /health, 1 when nothing answers, with
 * the admin address taken from the relay's own configuration (issue 12 item 6).
 */
class HealthcheckCommandTest {
  @TempDir
  Path dir;

  /** Runs {@code healthcheck args} in-process with {@code env}; returns the exit code and stderr. */
  private static String[] run(Map<String, String> env, String... args) {
    HealthcheckCommand cmd = new HealthcheckCommand();
    cmd.env = env;
    PrintStream err = System.err;
    ByteArrayOutputStream buf = new ByteArrayOutputStream();
    System.setErr(new PrintStream(buf, true, StandardCharsets.UTF_8));
    int code;
    try {
      code = new CommandLine(cmd).execute(args);
    } finally {
      System.setErr(err);
    }
    return new String[] {Integer.toString(code), buf.toString(StandardCharsets.UTF_8)};
  }

  /** A stand-in admin server on 127.0.0.1 that answers {@code /health} 200. */
  private static HttpServer health() throws Exception {
    HttpServer s = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    s.createContext("/health", ex -> {
      byte[] b = "{\"status\":\"up\"}".getBytes(StandardCharsets.UTF_8);
      ex.sendResponseHeaders(200, b.length);
      ex.getResponseBody().write(b);
      ex.close();
    });
    s.start();
    return s;
  }

  @Test
  void exits_0_when_health_answers_200_and_1_with_the_reason_in_words_when_nothing_listens() throws Exception {
    try (RelayHarness relay = RelayHarness.start(dir)) {
      assertThat(Main.commandLine().execute("healthcheck", "--url", relay.adminUrl() + "/health")).isZero();
    }
    int closed;
    try (ServerSocket s = new ServerSocket(0)) {
      closed = s.getLocalPort();
    }
    String[] r = run(Map.of(), "--url", "http://127.0.0.1:" + closed + "/health", "--timeout-ms", "1000");
    assertThat(r[0]).isEqualTo("1");
    assertThat(r[1]).contains("health check failed: http://127.0.0.1:" + closed + "/health: connection refused")
        .doesNotContain("ConnectException");
  }

  @Test
  void a_wildcard_admin_bind_and_the_admin_port_from_the_config_file_are_reached_on_loopback() throws Exception {
    HttpServer admin = health();
    try {
      Path conf = Files.writeString(dir.resolve("relay.json"),
          "{\"admin\":{\"bind\":\"0.0.0.0\",\"port\":" + admin.getAddress().getPort() + "}}");
      assertThat(run(Map.of(), "--config", conf.toString())[0]).isEqualTo("0");
      assertThat(run(Map.of("MBX_RELAY_CONFIG", conf.toString()))[0]).as("$MBX_RELAY_CONFIG").isEqualTo("0");
      // the environment overrides the file, as for serve
      assertThat(run(Map.of("MBX_RELAY_ADMIN_PORT", Integer.toString(admin.getAddress().getPort()),
          "MBX_RELAY_ADMIN_BIND", "0.0.0.0"))[0]).isEqualTo("0");
      String[] bad = run(Map.of("MBX_RELAY_ADMIN_BIND", "0.0.0.0", "MBX_RELAY_ADMIN_PORT", "1"), "--timeout-ms",
          "1000");
      assertThat(bad[0]).isEqualTo("1");
      assertThat(bad[1]).contains("http://127.0.0.1:1/health");
    } finally {
      admin.stop(0);
    }
  }

  @Test
  void an_invalid_configuration_is_a_usage_error_that_lists_the_violation() throws Exception {
    Path conf = Files.writeString(dir.resolve("bad.json"), "{\"admin\":{\"port\":\"x\"}}");
    String[] r = run(Map.of(), "--config", conf.toString());
    assertThat(r[0]).isEqualTo("2");
    assertThat(r[1]).contains("admin.port must be an integer");
  }

  @Test
  void wildcard_binds_connect_to_loopback_and_ipv6_literals_get_brackets() {
    assertThat(AdminUrl.connectHost("0.0.0.0")).isEqualTo("127.0.0.1");
    assertThat(AdminUrl.connectHost("::")).isEqualTo("[::1]");
    assertThat(AdminUrl.connectHost("0:0:0:0:0:0:0:0")).isEqualTo("[::1]");
    assertThat(AdminUrl.connectHost("::1")).isEqualTo("[::1]");
    assertThat(AdminUrl.connectHost("fd00::5")).isEqualTo("[fd00::5]");
    assertThat(AdminUrl.connectHost("10.1.2.3")).isEqualTo("10.1.2.3");
    assertThat(AdminUrl.connectHost("localhost")).isEqualTo("localhost");
  }
}
