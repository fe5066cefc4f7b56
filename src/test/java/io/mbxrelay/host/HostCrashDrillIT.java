package io.mbxrelay.host;

import static org.assertj.core.api.Assertions.assertThat;

import io.mbxrelay.crypto.Ed25519KeyPair;
import io.mbxrelay.crypto.Fingerprint;
import io.mbxrelay.crypto.RelayKeys;
import io.mbxrelay.testing.Envelopes;
import io.mbxrelay.testing.RelayHarness;
import io.mbxrelay.testing.TestHost;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Receiver crash windows of docs/protocol.md §7.5 with the HOST as a real child process halted at a named point
 * ({@link HostDrillMain}, {@code MBX_HOST_TEST_CRASH}) against a real relay.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class HostCrashDrillIT {

  @TempDir Path dir;
  RelayHarness relay;
  Ed25519KeyPair bKey;
  Path keyFile;
  Path storeFile;
  Path appLog;
  TestHost sender;

  @BeforeEach
  void start() throws Exception {
    relay = RelayHarness.start(dir.resolve("relay"));
    bKey = Ed25519KeyPair.generate();
    keyFile = dir.resolve("b.key");
    Files.writeString(keyFile, RelayKeys.toFileJson(bKey));
    storeFile = dir.resolve("b.db");
    appLog = dir.resolve("app.log");
    sender = new TestHost(relay.url(), "alpha").enrol();
    try (HostStore s = HostStore.open(storeFile)) {
      HostAgent.pin(s, relay.url(), relay.relayKey.publicKeyB64(), Fingerprint.ofB64(relay.relayKey.publicKeyB64()),
          false, System.currentTimeMillis());
      try (HostAgent a = new HostAgent(s, bKey, relay.url(), HostAgent.Options.of("beta"), (u, n, k) -> {
        throw new IllegalStateException("no network here");
      }, d -> new HostApplication.Verdict.Accepted(null))) {
        a.addPeer(sender.pub(), "alpha");
      }
    }
    assertThat(runHost(null).exit).isZero(); // enrol
  }

  @AfterEach
  void stop() {
    relay.close();
  }

  record Result(int exit, String out) {}

  Result runHost(String crash) throws Exception {
    io.mbxrelay.testing.ChildTmp tmp = io.mbxrelay.testing.ChildTmp.create(); // a halted host leaves its copies
    List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString()));
    cmd.addAll(tmp.jvmArgs());
    cmd.addAll(List.of("-cp", System.getProperty("java.class.path"), HostDrillMain.class.getName(), keyFile.toString(),
        storeFile.toString(), relay.url(), "beta", appLog.toString()));
    ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
    pb.environment().remove("MBX_HOST_TEST_CRASH");
    if (crash != null) {
      pb.environment().put("MBX_HOST_TEST_CRASH", crash);
    }
    try {
      Process p = pb.start();
      String out = new String(p.getInputStream().readAllBytes());
      assertThat(p.waitFor(120, TimeUnit.SECONDS)).isTrue();
      return new Result(p.exitValue(), out);
    } finally {
      tmp.delete();
    }
  }

  String push() throws Exception {
    String id = Envelopes.newId();
    assertThat(sender.pushEnvelope(new TestHost(relay.url(), "beta", bKey), id, Envelopes.sealed(id)).status())
        .isEqualTo(200);
    return id;
  }

  HostStore.Position position() throws Exception {
    try (HostStore s = HostStore.open(storeFile)) {
      return s.position(relay.url()).orElseThrow();
    }
  }

  @Test
  void receiverCommitsButTheCheckpointIsNotWrittenThenTheItemIsADuplicateAtReceiveAndTheCheckpointAdvances()
      throws Exception {
    String id = push();
    Result crashed = runHost("receive-before-commit");
    assertThat(crashed.exit).as(crashed.out).isEqualTo(137);
    assertThat(Files.readString(appLog)).isEqualTo(id + "\n"); // the application's own effect is durable
    assertThat(position().receivedThrough()).isZero(); // the checkpoint is not

    Result again = runHost(null);
    assertThat(again.exit).as(again.out).isZero();
    assertThat(again.out).contains("delivered=0 duplicates=1");
    assertThat(Files.readString(appLog)).isEqualTo(id + "\n"); // once
    assertThat(position().receivedThrough()).isPositive();
    assertThat(position().ackedThrough()).isEqualTo(position().receivedThrough());
  }

  @Test
  void checkpointWrittenButAckLostThenTheNextAckCoversIt() throws Exception {
    String id = push();
    Result crashed = runHost("checkpoint-before-ack");
    assertThat(crashed.exit).as(crashed.out).isEqualTo(137);
    HostStore.Position p = position();
    assertThat(p.receivedThrough()).isPositive();
    assertThat(p.ackedThrough()).isZero();
    TestHost raw = new TestHost(relay.url(), "beta", bKey);
    assertThat(raw.pull(0, null, null).json().get("items")).hasSize(1); // still held by the relay

    Result again = runHost(null);
    assertThat(again.exit).as(again.out).isZero();
    assertThat(again.out).contains("delivered=0 duplicates=0");
    assertThat(position().ackedThrough()).isEqualTo(p.receivedThrough());
    assertThat(raw.pull(0, null, null).json().get("items")).isEmpty();
    assertThat(Files.readString(appLog)).isEqualTo(id + "\n");
  }
}
