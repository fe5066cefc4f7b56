package io.mbxrelay.host.seal;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/** Issue 14 "Show": the relay never decrypts anything: no relay source touches the sealing code or its library. */
class RelayIsContentBlindTest {

  @Test
  void noRelaySourceUsesTheSealingClassesOrTink() throws IOException {
    Path main = Path.of("src/main/java/io/mbxrelay");
    List<Path> relaySources;
    try (Stream<Path> s = Files.walk(main)) {
      relaySources = s.filter(p -> p.toString().endsWith(".java"))
          .filter(p -> !p.startsWith(main.resolve("host")) && !p.startsWith(main.resolve("cli"))).toList();
    }
    assertThat(relaySources).as("the relay's packages were found").hasSizeGreaterThan(50);
    for (Path p : relaySources) {
      String text = Files.readString(p);
      assertThat(text).as(p.toString()).doesNotContain("io.mbxrelay.host").doesNotContain("com.google.crypto.tink")
          .doesNotContain("BodySeal").doesNotContain("X25519");
    }
  }
}
