package io.mbxrelay.host.seal;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/** Issue 14 "Show": the relay never decrypts anything: no relay source touches the sealing code or its library. */
class RelayIsContentBlindTest {

  @Test
  void noRelaySourceUsesTheSealingClassesOrTink() throws IOException {
    // the relay's own tree and the packages it shares with the host library (wire, crypto), which live in the
    // mbxrelay-host module; not the host package itself, nor cli, whose host commands seal and open
    Path main = Path.of("src/main/java/io/mbxrelay");
    Path shared = Path.of("mbxrelay-host/src/main/java/io/mbxrelay");
    List<Path> relaySources = new ArrayList<>();
    for (Path root : List.of(main, shared.resolve("wire"), shared.resolve("crypto"))) {
      try (Stream<Path> s = Files.walk(root)) {
        relaySources.addAll(s.filter(p -> p.toString().endsWith(".java"))
            .filter(p -> !p.startsWith(main.resolve("cli"))).toList());
      }
    }
    assertThat(relaySources).as("wire and crypto were found").anyMatch(p -> p.startsWith(shared.resolve("wire")))
        .anyMatch(p -> p.startsWith(shared.resolve("crypto")));
    assertThat(relaySources).as("the relay's packages were found").hasSizeGreaterThan(50);
    for (Path p : relaySources) {
      String text = Files.readString(p);
      assertThat(text).as(p.toString()).doesNotContain("io.mbxrelay.host").doesNotContain("com.google.crypto.tink")
          .doesNotContain("BodySeal").doesNotContain("X25519");
    }
  }
}
