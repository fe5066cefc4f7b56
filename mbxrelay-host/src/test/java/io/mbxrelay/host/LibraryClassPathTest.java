package io.mbxrelay.host;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * mbxrelay-host is a small library with only the host's dependencies (issue 21 part 2; docs/architecture.md
 * "Modules"). This module's test class path is the library's own dependency closure (compile and runtime, direct and
 * transitive) plus JUnit, AssertJ and a logging backend, so a relay library that reaches the library's dependencies
 * by any path becomes loadable here and fails this test. The server module's {@code HostArtifactTest} checks what the
 * jar itself holds.
 */
class LibraryClassPathTest {

  /** One class of each library the relay uses and a host must not get, by what it is. */
  private static final Map<String, String> RELAY_ONLY = Map.of(
      "io.vertx.ext.web.Router", "vertx-web (the HTTP server's router)",
      "io.vertx.jdbcclient.JDBCPool", "vertx-jdbc-client",
      "io.vertx.sqlclient.Pool", "vertx-sql-client",
      "io.vertx.micrometer.MicrometerMetricsOptions", "vertx-micrometer-metrics",
      "io.micrometer.core.instrument.MeterRegistry", "micrometer",
      "io.agroal.api.AgroalDataSource", "agroal",
      "org.postgresql.Driver", "postgresql",
      "com.nimbusds.jose.JWSObject", "nimbus-jose-jwt",
      "picocli.CommandLine", "picocli",
      "io.mbxrelay.server.RelayServer", "the relay itself");

  @Test
  void noneOfTheRelaysLibrariesIsOnTheLibrarysClassPath() {
    List<String> found = new ArrayList<>();
    for (Map.Entry<String, String> e : RELAY_ONLY.entrySet()) {
      try {
        Class.forName(e.getKey(), false, getClass().getClassLoader());
        found.add(e.getValue() + " (" + e.getKey() + ")");
      } catch (ClassNotFoundException expected) {
        // not a dependency of the library
      }
    }
    assertThat(found).as("relay libraries reachable from mbxrelay-host's dependencies").isEmpty();
  }

  @Test
  void whatTheLibraryUsesIsThere() throws Exception {
    // the check above sees the test class path at all: the host's own libraries load
    for (String c : List.of("io.vertx.core.Vertx", "io.vertx.ext.web.client.WebClient",
        "com.fasterxml.jackson.databind.ObjectMapper", "org.sqlite.JDBC",
        "org.bouncycastle.math.ec.rfc8032.Ed25519", "com.google.crypto.tink.subtle.X25519",
        "com.amazon.corretto.crypto.provider.AmazonCorrettoCryptoProvider")) {
      assertThat(Class.forName(c, false, getClass().getClassLoader())).as(c).isNotNull();
    }
  }
}
