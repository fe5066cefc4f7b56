package io.mbxrelay.http;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Issue 19 item 5: {@link RelayError} is the one catalogue of the relay's error bodies. No other main source builds an
 * {@code {"error":…}} body, either as a JSON node ({@code put("error", …)}) or as a string literal
 * ({@code "{\"error\":…"}), and the 503 bodies carry their {@code outcome} after the unchanged {@code error} text.
 */
class RelayErrorCatalogueTest {
  private static final List<Path> MAIN = List.of(Path.of("src/main/java"), Path.of("mbxrelay-host/src/main/java"));
  private static final Path CATALOGUE = Path.of("src/main/java/io/mbxrelay/http/RelayError.java");
  /** {@code put("error"}, {@code set("error"}, or a literal holding {@code \"error\"}. */
  private static final Pattern INLINE_ERROR = Pattern.compile("\\b(put|set|putPOJO|with)\\(\\s*\"error\"|\\\\\"error\\\\\"");

  @Test
  void the_scan_recognises_an_inline_error_body() {
    assertThat(INLINE_ERROR.matcher("n.put(\"error\", text)").find()).isTrue();
    assertThat(INLINE_ERROR.matcher("end(\"{\\\"error\\\":\\\"status not available\\\"}\")").find()).isTrue();
    assertThat(INLINE_ERROR.matcher("json.get(\"error\")").find()).isFalse(); // reading an answer is fine
  }

  @Test
  void no_main_source_but_the_catalogue_builds_an_error_body() throws IOException {
    assertThat(Files.isRegularFile(CATALOGUE)).as("run from the repository root").isTrue();
    List<String> inline = new ArrayList<>();
    for (Path root : MAIN) {
      if (!Files.isDirectory(root)) {
        continue;
      }
      try (Stream<Path> files = Files.walk(root)) {
        for (Path f : files.filter(p -> p.toString().endsWith(".java")).sorted().toList()) {
          if (f.equals(CATALOGUE)) {
            continue;
          }
          List<String> lines = Files.readAllLines(f, StandardCharsets.UTF_8);
          for (int i = 0; i < lines.size(); i++) {
            String line = lines.get(i);
            String code = line.trim();
            if (code.startsWith("*") || code.startsWith("//") || code.startsWith("/*")) {
              continue; // Javadoc and comments may show a body
            }
            Matcher m = INLINE_ERROR.matcher(line);
            if (m.find()) {
              inline.add(f + ":" + (i + 1) + ": " + code);
            }
          }
        }
      }
    }
    assertThat(inline).as("error bodies built outside RelayError").isEmpty();
  }

  @Test
  void a_503_to_a_state_changing_request_says_what_the_client_may_conclude_after_the_unchanged_text() {
    assertThat(RelayError.storeUnavailable(null).body()).isEqualTo("{\"error\":\"store unavailable; retry later\"}");
    assertThat(RelayError.storeUnavailable(RelayError.Outcome.NOT_STORED).body())
        .isEqualTo("{\"error\":\"store unavailable; retry later\",\"outcome\":\"not_stored\"}");
    assertThat(RelayError.storeUnavailable(RelayError.Outcome.UNKNOWN).body())
        .isEqualTo("{\"error\":\"store unavailable; retry later\",\"outcome\":\"unknown\"}");
    assertThat(RelayError.busy(false).body()).isEqualTo("{\"error\":\"relay busy; retry later\"}");
    assertThat(RelayError.busy(true).body())
        .isEqualTo("{\"error\":\"relay busy; retry later\",\"outcome\":\"not_stored\"}");
    assertThat(RelayError.storeUnavailable(RelayError.Outcome.UNKNOWN).status()).isEqualTo(503);
  }

  @Test
  void answers_that_carry_a_value_keep_the_reference_texts_and_key_order() {
    assertThat(RelayError.batchTooLong(200).body())
        .isEqualTo("{\"error\":\"batch must be an array of at most 200\"}");
    assertThat(RelayError.ackEpochChanged("e1", 7).body()).isEqualTo(
        "{\"error\":\"relay epoch changed: pull again from 0\",\"code\":\"EPOCH\",\"epoch\":\"e1\",\"head_seq\":7}");
    assertThat(RelayError.pullEpochChanged("e1").body())
        .isEqualTo("{\"error\":\"relay epoch changed: pull again from 0\",\"epoch\":\"e1\"}");
    assertThat(RelayError.nameTaken("alice").body()).isEqualTo("{\"error\":\"host name alice is already enrolled in"
        + " this account with another key\",\"code\":\"NAME_TAKEN\"}");
    assertThat(RelayError.v1PushAnswer(0, RelayError.pushRateText(120)))
        .isEqualTo("{\"stored\":0,\"error\":\"push rate exceeded (120/min)\"}");
    assertThat(RelayError.v1PushAnswer(3, null)).isEqualTo("{\"stored\":3}");
  }
}
