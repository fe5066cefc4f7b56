package io.mbxrelay.docs;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/**
 * Issue 22 item 9: what the README says a newcomer gets is what they get. The first command's comment names the
 * address the relay binds by default (loopback), and the test section says the browser test needs chromium.
 */
class ReadmeFactsTest {
  @Test
  void the_first_command_serves_where_its_comment_says_and_the_browser_test_names_chromium() throws Exception {
    String readme = Files.readString(Path.of("README.md"));
    String first = readme.lines().filter(l -> l.startsWith("scripts/mbxrelay serve")).findFirst().orElseThrow();
    assertThat(first).contains("http://127.0.0.1:7374");
    assertThat(readme).contains("serves on `127.0.0.1:7374`").doesNotContain("serves on `0.0.0.0:7374`")
        .contains("Bind: `--bind` > `127.0.0.1`");
    assertThat(readme).contains("StatusPageBrowserTest").contains("chromium").contains("`.ci/run`");
  }
}
