package io.mbxrelay.docs;

import static org.assertj.core.api.Assertions.assertThat;

import io.mbxrelay.crypto.Ed25519KeyPair;
import io.mbxrelay.crypto.Fingerprint;
import io.mbxrelay.host.BlockingRelayClient;
import io.mbxrelay.host.EnrolResult;
import io.mbxrelay.host.HostAgent;
import io.mbxrelay.host.HostApplication;
import io.mbxrelay.host.HostEncKey;
import io.mbxrelay.host.HostKeys;
import io.mbxrelay.host.HostStore;
import io.mbxrelay.host.RelayPin;
import io.mbxrelay.host.SealedInbox;
import io.mbxrelay.host.StandaloneTransports;
import io.mbxrelay.host.seal.SealedEnvelope;
import io.mbxrelay.testing.RelayHarness;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Clock;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * docs/host-library.md's "Complete example" cannot rot (issue 21 part 2, the example): the Java block under that
 * heading is exactly {@link HostLibraryExample} (this package line aside), which compiles with the test sources
 * against the library's public API only, and runs here as host alpha against two real relays, with host beta (the
 * library again) on the other side.
 */
@Timeout(value = 150, unit = TimeUnit.SECONDS)
class HostLibraryExampleTest {

  @TempDir Path dir;

  /** The fenced {@code java} block under the "Complete example" heading of docs/host-library.md. */
  static String documentedExample() throws Exception {
    List<String> lines = Files.readAllLines(Path.of("docs/host-library.md"));
    int heading = lines.indexOf("## Complete example");
    assertThat(heading).as("heading in docs/host-library.md").isNotNegative();
    int open = lines.subList(heading, lines.size()).indexOf("```java") + heading;
    int close = lines.subList(open + 1, lines.size()).indexOf("```") + open + 1;
    assertThat(open).isGreaterThan(heading);
    return String.join("\n", lines.subList(open + 1, close)) + "\n";
  }

  @Test
  void theDocumentedExampleIsExactlyTheCompiledOne() throws Exception {
    String source = Files.readString(Path.of("src/test/java/io/mbxrelay/docs/HostLibraryExample.java"));
    assertThat("package io.mbxrelay.docs;\n\n" + documentedExample()).isEqualTo(source);
  }

  @Test
  void theExampleSendsThroughTwoRelaysReceivesAndEndsWhenItsMessageIsSettled() throws Exception {
    try (RelayHarness r1 = RelayHarness.start(dir.resolve("relay1"));
        RelayHarness r2 = RelayHarness.start(dir.resolve("relay2"))) {
      Path alphaDir = dir.resolve("alpha");
      Files.createDirectories(alphaDir);
      // alpha's key and encryption key exist already (as after an earlier run), so beta can pin and seal at once,
      // and alpha is enrolled on both relays, so beta's message is waiting for it there when the example starts
      Ed25519KeyPair alpha = HostKeys.loadOrCreate(alphaDir.resolve("host.key")).key();
      String alphaEnc;
      try (HostStore s = HostStore.open(alphaDir.resolve("host.db"))) {
        alphaEnc = HostEncKey.loadOrCreate(s).publicKeyB64();
      }
      for (RelayHarness r : List.of(r1, r2)) {
        try (BlockingRelayClient c = new BlockingRelayClient(r.url(), "alpha", alpha,
            new RelayPin.Key(r.relayKey.publicKeyB64()), 10_000)) {
          assertThat(c.enrol("")).isInstanceOf(EnrolResult.Enrolled.class);
        }
      }

      Ed25519KeyPair beta = Ed25519KeyPair.generate();
      List<String> betaGot = new CopyOnWriteArrayList<>();
      try (HostStore bs = HostStore.open(dir.resolve("beta.db"));
          StandaloneTransports bt = new StandaloneTransports(beta, Clock.systemUTC())) {
        List<String> urls = new ArrayList<>();
        for (RelayHarness r : List.of(r1, r2)) {
          HostAgent.pin(bs, r.url(), r.relayKey.publicKeyB64(), Fingerprint.ofB64(r.relayKey.publicKeyB64()), false,
              System.currentTimeMillis());
          urls.add(r.url());
        }
        try (HostAgent b = new HostAgent(bs, beta, urls, HostAgent.Options.of("beta"), bt, new SealedInbox(bs, m -> {
          betaGot.add(m.envelope().body());
          return new HostApplication.Verdict.Accepted(null);
        }, false, Clock.systemUTC()))) {
          b.addPeer(alpha.publicKeyB64(), "alpha", alphaEnc);
          b.sendMessage(SealedEnvelope.Draft.message("owner@beta", "owner@alpha", "hi", "hello alpha"),
              alpha.publicKeyB64());
          assertThat(b.tick().accepted()).as("to both relays").isEqualTo(2);

          CompletableFuture<Void> example = CompletableFuture.runAsync(() -> {
            try {
              HostLibraryExample.main(new String[] {alphaDir.toString(), beta.publicKeyB64(),
                  r1.url() + "=" + Fingerprint.ofB64(r1.relayKey.publicKeyB64()),
                  r2.url() + "=" + Fingerprint.ofB64(r2.relayKey.publicKeyB64())});
            } catch (Exception e) {
              throw new IllegalStateException(e);
            }
          });
          long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(100);
          while (!example.isDone() && System.nanoTime() < end) {
            b.tick();
            Thread.sleep(200);
          }
          example.get(5, TimeUnit.SECONDS); // ended by itself, without an exception
        }
      }
      assertThat(betaGot).as("handed to beta once, though both relays carried it").containsExactly(
          "the build is green");
      try (HostStore as = HostStore.open(alphaDir.resolve("host.db"))) {
        assertThat(as.outbox()).filteredOn(r -> r.kind().equals("envelope")).extracting(HostStore.OutboxRow::state)
            .containsOnly("settled").hasSize(2);
        assertThat(as.relayUrls()).isEmpty(); // the library uses the list it is given; it writes no CLI setting
      }
      try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + alphaDir.resolve("host.db"));
          Statement st = c.createStatement();
          ResultSet rs = st.executeQuery("SELECT sender, body FROM my_messages")) {
        assertThat(rs.next()).isTrue();
        assertThat(rs.getString(1)).isEqualTo("beta");
        assertThat(rs.getString(2)).isEqualTo("hello alpha");
        assertThat(rs.next()).as("once").isFalse();
      }
    }
  }
}
