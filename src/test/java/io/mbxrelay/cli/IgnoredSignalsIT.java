package io.mbxrelay.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.mbxrelay.testing.ChildRelay;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 22 item 4 with the real jar: a relay started with SIGHUP and SIGINT ignored (as under {@code nohup} and as a
 * background job of a script) cannot handle them, because the JVM keeps an ignored shutdown signal ignored. It used
 * to say nothing, so {@code kill -HUP} silently did nothing; now it warns at start for each such signal and names
 * what to use instead, and SIGTERM, which was not ignored, still drains it to exit 0.
 */
class IgnoredSignalsIT {
  @Test
  void a_relay_started_with_hup_and_int_ignored_says_so_at_start_and_stops_on_sigterm(@TempDir Path dir)
      throws Exception {
    List<String> launcher = List.of("sh", "-c", "trap '' HUP INT; exec \"$@\"", "sh");
    try (ChildRelay relay = ChildRelay.start(launcher, List.of(), dir.resolve("store"), Map.of())) {
      String out = String.join("\n", relay.output);
      assertThat(out).contains("SIGHUP was ignored when the relay was started, and the JVM keeps it ignored: kill -HUP"
          + " does not reload the configuration")
          .contains("SIGINT was ignored when the relay was started, and the JVM keeps it ignored: Ctrl-C and kill -INT"
          + " do not stop it").contains("Stop it with SIGTERM (kill PID)")
          .doesNotContain("SIGTERM was ignored").doesNotContain("signal handlers not installed");
      relay.stop();
      assertThat(relay.process.exitValue()).as(String.join("\n", relay.output)).isZero();
    }
  }

  @Test
  void a_relay_started_normally_warns_about_no_signal(@TempDir Path dir) throws Exception {
    try (ChildRelay relay = ChildRelay.start(dir.resolve("store"), Map.of())) {
      assertThat(String.join("\n", relay.output)).doesNotContain("was ignored when the relay was started");
      relay.stop();
      assertThat(relay.process.exitValue()).isZero();
    }
  }
}
