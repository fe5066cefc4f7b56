package io.mbxrelay.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.mbxrelay.testing.RelayHarness;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code mbxrelay healthcheck}, the container HEALTHCHECK: 0 against a live admin /health, 1 when nothing answers. */
class HealthcheckCommandTest {
  @TempDir
  Path dir;

  @Test
  void exits_0_when_health_answers_200_and_1_when_nothing_listens() throws Exception {
    try (RelayHarness relay = RelayHarness.start(dir)) {
      assertThat(Main.commandLine().execute("healthcheck", "--url", relay.adminUrl() + "/health")).isZero();
    }
    int closed;
    try (ServerSocket s = new ServerSocket(0)) {
      closed = s.getLocalPort();
    }
    assertThat(Main.commandLine().execute("healthcheck", "--url", "http://127.0.0.1:" + closed + "/health",
        "--timeout-ms", "1000")).isEqualTo(1);
  }

  @Test
  void the_default_url_follows_the_admin_port_variable() {
    assertThat(HealthcheckCommand.defaultUrl(Map.of())).isEqualTo("http://127.0.0.1:7375/health");
    assertThat(HealthcheckCommand.defaultUrl(Map.of("MBX_RELAY_ADMIN_PORT", "9001")))
        .isEqualTo("http://127.0.0.1:9001/health");
  }
}
