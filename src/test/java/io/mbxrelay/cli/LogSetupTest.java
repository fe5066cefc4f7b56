package io.mbxrelay.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.mbxrelay.wire.Json;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

/** {@code log.json}: the shipped logback.xml switches to one JSON object per line, and back. */
class LogSetupTest {
  @Test
  void log_json_true_writes_one_json_object_per_line_with_the_formatted_message() {
    PrintStream err = System.err;
    ByteArrayOutputStream buf = new ByteArrayOutputStream();
    System.setErr(new PrintStream(buf, true, StandardCharsets.UTF_8));
    try {
      LogSetup.apply(true);
      LoggerFactory.getLogger("io.mbxrelay.test").info("relay started [port: {}]", 7374);
    } finally {
      LogSetup.apply(false);
      System.setErr(err);
    }
    String line = buf.toString(StandardCharsets.UTF_8).lines().filter(l -> l.contains("relay started"))
        .findFirst().orElseThrow();
    JsonNode json = Json.parse(line);
    assertThat(json.get("level").asText()).isEqualTo("INFO");
    assertThat(json.get("loggerName").asText()).isEqualTo("io.mbxrelay.test");
    assertThat(json.get("formattedMessage").asText()).isEqualTo("relay started [port: 7374]");
  }
}
