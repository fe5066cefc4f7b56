package io.mbxrelay.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.mbxrelay.crypto.Ed25519KeyPair;
import io.mbxrelay.host.RelayPins;
import io.mbxrelay.testing.Envelopes;
import io.mbxrelay.testing.RelayHarness;
import io.mbxrelay.wire.B64;
import io.mbxrelay.wire.Json;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/** {@code mbxrelay host enrol|push|pull} through {@link Main#commandLine()} against a real relay. */
class HostCommandTest {

  @TempDir Path dir;
  RelayHarness relay;

  record Run(int code, String out, String err) {
    JsonNode json() {
      return Json.parse(out.strip());
    }
  }

  @BeforeEach
  void start() throws Exception {
    relay = RelayHarness.start(dir.resolve("relay"));
  }

  @AfterEach
  void stop() {
    relay.close();
  }

  static Run run(String... args) {
    CommandLine cl = Main.commandLine();
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    cl.setOut(new PrintWriter(out, true));
    cl.setErr(new PrintWriter(err, true));
    int code = cl.execute(args);
    return new Run(code, out.toString(), err.toString());
  }

  Path key(String host) {
    return dir.resolve(host).resolve("host.key");
  }

  Run enrol(String host, String... extra) {
    String[] base = {"host", "enrol", "--relay", relay.url(), "--name", host, "--key-file", key(host).toString()};
    String[] all = new String[base.length + extra.length];
    System.arraycopy(base, 0, all, 0, base.length);
    System.arraycopy(extra, 0, all, base.length, extra.length);
    return run(all);
  }

  @Test
  void enrolPushAndPullMoveOneItemFromAlphaToBeta() throws Exception {
    Run a = enrol("alpha");
    assertThat(a.code()).as(a.err()).isZero();
    assertThat(a.err()).contains("created host key").contains("trust on first use");
    assertThat(a.json().get("relay_pubkey").asText()).isEqualTo(relay.relayKey.publicKeyB64());
    Run b = enrol("beta", "--relay-key", relay.relayKey.fingerprint());
    assertThat(b.code()).as(b.err()).isZero();
    assertThat(b.err()).doesNotContain("trust on first use");
    String betaPub = b.json().get("host_pubkey").asText();
    assertThat(RelayPins.load(RelayPins.besideKey(key("beta"))).get(relay.url()))
        .contains(relay.relayKey.publicKeyB64());

    Path file = dir.resolve("item.json");
    Files.write(file, Envelopes.sealed(Envelopes.newId()));
    Run push = run("host", "push", "--relay", relay.url(), "--name", "alpha", "--key-file", key("alpha").toString(),
        "--to", betaPub, "--file", file.toString());
    assertThat(push.code()).as(push.err()).isZero();
    assertThat(push.json().get("status").asText()).isEqualTo("accepted");
    assertThat(push.err()).contains("receipt verified");
    long seq = push.json().get("targets").get(0).get("seq").asLong();

    Run pull = run("host", "pull", "--relay", relay.url(), "--key-file", key("beta").toString(), "--ack", "--json");
    assertThat(pull.code()).as(pull.err()).isZero();
    JsonNode page = pull.json();
    assertThat(page.get("items")).hasSize(1);
    JsonNode item = page.get("items").get(0);
    assertThat(item.get("seq").asLong()).isEqualTo(seq);
    assertThat(item.get("item_id").asText()).isEqualTo(push.json().get("item_id").asText());
    assertThat(item.get("wire_b64").asText()).isEqualTo(B64.encode(Files.readAllBytes(file)));
    assertThat(page.get("acked_through").asLong()).isEqualTo(seq);
    assertThat(page.get("deleted").asLong()).isEqualTo(1);

    Run empty = run("host", "pull", "--relay", relay.url(), "--key-file", key("beta").toString(), "--json");
    assertThat(empty.code()).isZero();
    assertThat(empty.json().get("items")).isEmpty();
  }

  @Test
  void aSealedEnvelopeFileIsPushedAsIsAndPulledAsRawBytes() throws Exception {
    assertThat(enrol("alpha").code()).isZero();
    String betaPub = enrol("beta").json().get("host_pubkey").asText();
    String id = Envelopes.newId();
    byte[] wire = Envelopes.sealed(id);
    Path file = dir.resolve("env.json");
    Files.write(file, wire);

    Run push = run("host", "push", "--relay", relay.url(), "--key-file", key("alpha").toString(), "--to", betaPub,
        "--file", file.toString());
    Run again = run("host", "push", "--relay", relay.url(), "--key-file", key("alpha").toString(), "--to", betaPub,
        "--file", file.toString());
    Run pull = run("host", "pull", "--relay", relay.url(), "--key-file", key("beta").toString());

    assertThat(push.json().get("item_id").asText()).isEqualTo(id);
    assertThat(again.code()).isZero();
    assertThat(again.json().get("status").asText()).isEqualTo("duplicate");
    assertThat(again.json().get("targets")).isEqualTo(push.json().get("targets"));
    assertThat(pull.code()).as(pull.err()).isZero();
    assertThat(pull.out()).isEqualTo(new String(wire, StandardCharsets.UTF_8) + System.lineSeparator());
  }

  @Test
  void aRejectedPushExitsOneWithTheWireReason() {
    assertThat(enrol("alpha").code()).isZero();
    Path file = dir.resolve("item.json");
    try {
      Files.write(file, Envelopes.sealed(Envelopes.newId()));
    } catch (java.io.IOException e) {
      throw new IllegalStateException(e);
    }
    Run push = run("host", "push", "--relay", relay.url(), "--key-file", key("alpha").toString(), "--to",
        Ed25519KeyPair.generate().publicKeyB64(), "--file", file.toString());
    assertThat(push.code()).isEqualTo(1);
    assertThat(push.json().get("status").asText()).isEqualTo("rejected:target not enrolled");
  }

  @Test
  void aMismatchedRelayKeyIsRefusedOnEnrolAndAgainstAStoredPin() {
    Run wrong = enrol("alpha", "--relay-key", Ed25519KeyPair.generate().fingerprint());
    assertThat(wrong.code()).isEqualTo(1);
    assertThat(wrong.err()).contains("relay key changed");
    assertThat(wrong.out()).isEmpty();

    assertThat(enrol("beta").code()).isZero();
    Run conflicting = enrol("beta", "--relay-key", Ed25519KeyPair.generate().fingerprint());
    assertThat(conflicting.code()).isEqualTo(1);
    assertThat(conflicting.err()).contains("is pinned as " + relay.relayKey.fingerprint());
  }

  @Test
  void usageErrorsExitTwo() {
    assertThat(run("host", "push", "--relay", relay.url(), "--to", "x").code()).isEqualTo(2); // no source
    assertThat(run("host", "enrol", "--relay", relay.url(), "--name", "bad name!", "--key-file",
        key("a").toString()).code()).isEqualTo(2);
    Run noKey = run("host", "pull", "--relay", relay.url(), "--key-file", key("none").toString());
    assertThat(noKey.code()).isEqualTo(2);
    assertThat(noKey.err()).contains("run `mbxrelay host enrol` first");
    assertThat(enrol("alpha").code()).isZero();
    Run unpinned = run("host", "pull", "--relay", "http://127.0.0.1:1", "--key-file", key("alpha").toString());
    assertThat(unpinned.code()).isEqualTo(2);
    assertThat(unpinned.err()).contains("no relay key pinned");
  }

  @Test
  void everyHostSubcommandHasHelp() {
    for (String sub : new String[] {"enrol", "push", "pull"}) {
      Run r = run("host", sub, "--help");
      assertThat(r.code()).isZero();
      assertThat(r.out()).contains("--relay");
    }
    assertThat(run("host", "push", "--help").out()).contains("already sealed").doesNotContain("demo");
  }

  @Test
  void keyMaterialNeverReachesTheOutput() throws Exception {
    Run a = enrol("alpha");
    String seed = Json.parse(Files.readString(key("alpha"))).get("privateKey").asText();
    assertThat(a.out() + a.err()).doesNotContain(seed);
  }
}
