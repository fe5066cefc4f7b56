package io.mbxrelay.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.mbxrelay.testing.ChildRelay;
import io.mbxrelay.testing.Envelopes;
import io.mbxrelay.testing.Http;
import io.mbxrelay.testing.TestHost;
import io.mbxrelay.wire.B64;
import io.mbxrelay.wire.CanonicalJson;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The shaded jar's {@code serve} names its Ed25519 engine in one INFO line (issue 18): AWS-LC on linux-x86_64,
 * BouncyCastle with the reason when forced off; either way the accept receipts it signs verify with BouncyCastle.
 */
class ServeEd25519EngineIT {

  private static boolean linuxX8664() {
    String arch = System.getProperty("os.arch", "").toLowerCase(Locale.ROOT);
    return System.getProperty("os.name", "").toLowerCase(Locale.ROOT).startsWith("linux")
        && (arch.equals("amd64") || arch.equals("x86_64"));
  }

  private static List<String> engineLines(ChildRelay relay) {
    return relay.output.stream().filter(l -> l.contains("ed25519 engine [")).toList();
  }

  /** Pushes one item and checks its accept receipt's signature with BouncyCastle directly. */
  private static void acceptReceiptVerifiesWithBouncyCastle(ChildRelay relay) throws Exception {
    TestHost a = new TestHost(relay.url(), "engine-a").enrol();
    TestHost b = new TestHost(relay.url(), "engine-b").enrol();
    String id = Envelopes.newId();
    Http.Resp r = a.pushEnvelope(b, id, Envelopes.sealed(id));
    JsonNode result = r.json().get("results").get(0);
    assertThat(result.get("status").asText()).as(r.raw()).isEqualTo("accepted");
    byte[] signed = CanonicalJson.canonicalBytes(result.get("accept"));
    byte[] sig = B64.decodeLenient(result.get("sig").asText()).orElseThrow();
    byte[] relayKey = B64.decodeLenient(result.get("accept").get("relay_pubkey").asText()).orElseThrow();
    assertThat(org.bouncycastle.math.ec.rfc8032.Ed25519.verify(sig, 0, relayKey, 0, signed, 0, signed.length))
        .isTrue();
  }

  @Test
  void serve_logs_the_engine_in_use_and_its_receipts_verify(@TempDir Path dir) throws Exception {
    try (ChildRelay relay = ChildRelay.start(dir, Map.of())) {
      List<String> lines = engineLines(relay);
      assertThat(lines).hasSize(1);
      assertThat(lines.get(0)).contains(" INFO ");
      if (linuxX8664()) {
        assertThat(lines.get(0)).contains("ed25519 engine [engine: aws-lc] [library: AWS-LC v");
      } else {
        assertThat(lines.get(0)).contains("[engine: bouncycastle]").contains("[fallback: ");
      }
      acceptReceiptVerifiesWithBouncyCastle(relay);
      relay.stop();
    }
  }

  @Test
  void forced_off_serve_logs_bouncycastle_and_why(@TempDir Path dir) throws Exception {
    try (ChildRelay relay = ChildRelay.start(dir, Map.of("JAVA_TOOL_OPTIONS", "-Dmbxrelay.crypto=bouncycastle"))) {
      assertThat(engineLines(relay)).singleElement().asString().contains("ed25519 engine [engine: bouncycastle]"
          + " [library: BouncyCastle (pure Java)] [fallback: forced by -Dmbxrelay.crypto=bouncycastle]");
      acceptReceiptVerifiesWithBouncyCastle(relay);
      relay.stop();
    }
  }
}
