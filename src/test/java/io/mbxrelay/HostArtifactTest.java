package io.mbxrelay;

import static org.assertj.core.api.Assertions.assertThat;

import io.mbxrelay.host.HostAgent;
import io.mbxrelay.server.RelayServer;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The host library is its own artifact, io.mbxrelay:mbxrelay-host, holding only the packages a host needs (issue 21
 * part 2; docs/architecture.md "Modules"): checked on what this module is built against, which under {@code mvn
 * verify} is the host module's packaged jar (its classes directory under {@code mvn test}). Its dependencies are
 * checked in that module (LibraryClassPathTest, and the enforcer's ban in mbxrelay-host/pom.xml).
 */
class HostArtifactTest {
  private static final List<String> HOST_PACKAGES = List.of("io/mbxrelay/host/", "io/mbxrelay/wire/",
      "io/mbxrelay/crypto/");

  /** Every file in the jar or directory the class was loaded from, as jar entry names. */
  private static List<String> entries(Class<?> c) throws Exception {
    Path where = Path.of(c.getProtectionDomain().getCodeSource().getLocation().toURI());
    List<String> out = new ArrayList<>();
    if (Files.isDirectory(where)) {
      try (Stream<Path> s = Files.walk(where)) {
        s.filter(Files::isRegularFile).forEach(p -> out.add(where.relativize(p).toString().replace('\\', '/')));
      }
    } else {
      try (JarFile jar = new JarFile(where.toFile())) {
        for (JarEntry e : Collections.list(jar.entries())) {
          if (!e.isDirectory()) {
            out.add(e.getName());
          }
        }
      }
    }
    return out;
  }

  @Test
  void theHostArtifactHoldsOnlyTheHostWireAndCryptoPackages() throws Exception {
    Path host = Path.of(HostAgent.class.getProtectionDomain().getCodeSource().getLocation().toURI());
    Path relay = Path.of(RelayServer.class.getProtectionDomain().getCodeSource().getLocation().toURI());
    assertThat(host).as("the host classes come from their own artifact").isNotEqualTo(relay);
    assertThat(host.toString()).contains("mbxrelay-host");

    List<String> files = entries(HostAgent.class);
    for (String p : HOST_PACKAGES) {
      assertThat(files).as(p).anyMatch(f -> f.startsWith(p) && f.endsWith(".class"));
    }
    assertThat(files).as("files of mbxrelay-host outside its packages")
        .filteredOn(f -> HOST_PACKAGES.stream().noneMatch(f::startsWith))
        .allMatch(f -> f.equals("META-INF/MANIFEST.MF") || f.startsWith("META-INF/maven/io.mbxrelay/mbxrelay-host/"));
  }

  @Test
  void theRelaySourcesHoldNoneOfTheHostPackages() throws IOException {
    // a class of the host packages in the relay's tree would be a split package, shipped in the shaded jar only
    for (String p : HOST_PACKAGES) {
      assertThat(Path.of("src/main/java", p)).as("relay sources").doesNotExist();
      assertThat(Path.of("target/classes", p)).as("relay classes").doesNotExist();
    }
    assertThat(Path.of("mbxrelay-host/src/main/java/io/mbxrelay/host/HostAgent.java")).exists();
  }

  @Test
  void docsHostLibraryGivesTheArtifactsCoordinatesAtTheProjectsVersion() throws IOException {
    Matcher version = Pattern.compile("<artifactId>mbxrelay</artifactId>\\s*<version>([^<]+)</version>")
        .matcher(Files.readString(Path.of("pom.xml")));
    assertThat(version.find()).isTrue();
    assertThat(Files.readString(Path.of("docs/host-library.md")))
        .contains("<groupId>io.mbxrelay</groupId>\n  <artifactId>mbxrelay-host</artifactId>\n  <version>"
            + version.group(1) + "</version>");
  }
}
