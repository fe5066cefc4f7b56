package io.mbxrelay.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.mbxrelay.crypto.Fingerprint;
import io.mbxrelay.testing.RelayHarness;
import java.util.List;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/** {@code mbxrelay host init|relay set|peer add|send|run|status|quarantine|doctor} against a real relay. */
class HostStateCommandsTest {

  @TempDir Path dir;
  RelayHarness relay;

  record Run(int code, String out, String err) {
    com.fasterxml.jackson.databind.JsonNode json() {
      return io.mbxrelay.wire.Json.parse(out.strip());
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
    return run(new StringWriter(), args);
  }

  /** Runs with stdout going to {@code out} (a writer that fails stands for a closed pipe). */
  static Run run(java.io.Writer out, String... args) {
    CommandLine cl = Main.commandLine();
    StringWriter err = new StringWriter();
    cl.setOut(new PrintWriter(out, true));
    cl.setErr(new PrintWriter(err, true));
    int code = cl.execute(args);
    return new Run(code, out.toString(), err.toString());
  }

  @Test
  void twoHostsExchangeASealedMessageThroughTheCliAndTheSenderRowSettles() throws Exception {
    String a = dir.resolve("a").toString();
    String b = dir.resolve("b").toString();
    String fp = Fingerprint.ofB64(relay.relayKey.publicKeyB64());
    Run ia = run("host", "init", "--dir", a, "--name", "alpha", "--json");
    Run ib = run("host", "init", "--dir", b, "--name", "beta", "--json");
    assertThat(ia.code()).as(ia.err()).isZero();
    String pa = ia.json().get("pubkey").asText();
    String pb = ib.json().get("pubkey").asText();
    assertThat(ia.err()).doesNotContain("privateKey");

    Run bad = run("host", "relay", "set", relay.url(), "--dir", a, "--key", "0000-0000-0000-0000");
    assertThat(bad.code()).isEqualTo(1);
    assertThat(bad.err()).contains("nothing pinned");
    Run set = run("host", "relay", "set", relay.url(), "--dir", a, "--key", fp);
    assertThat(set.code()).as(set.err()).isZero();
    assertThat(set.err()).contains("pinned relay key " + fp);
    assertThat(run("host", "relay", "set", relay.url(), "--dir", b, "--key", fp).code()).isZero();
    assertThat(run("host", "peer", "add", pb, "--name", "beta", "--dir", a).code()).isZero();
    assertThat(run("host", "peer", "add", pa, "--name", "alpha", "--dir", b).code()).isZero();

    Run nobody = run("host", "send", "--dir", a, "--to", "owner@gamma", "--body", "x");
    assertThat(nobody.code()).isEqualTo(2);
    assertThat(nobody.err()).contains("no accepted peer named gamma");
    java.nio.file.Path bodyFile = dir.resolve("body.txt");
    java.nio.file.Files.writeString(bodyFile, "hello beta, sealed\nsecond line\n");
    Run send = run("host", "send", "--dir", a, "--to", "owner@beta", "--body-file", bodyFile.toString(),
        "--subject", "greeting", "--json");
    assertThat(send.code()).as(send.err()).isZero();
    assertThat(send.json().get("sealed").asBoolean()).isFalse();
    String msg = send.json().get("msg_id").asText();
    Run waiting = run("host", "status", "--dir", a, "--json");
    assertThat(waiting.json().get("outbox").get(0).get("state").asText()).isEqualTo("waiting-for-key");

    assertThat(run("host", "run", "--once", "--dir", b).code()).isZero(); // enrol, publish the enc-key ad
    Run ra = run("host", "run", "--once", "--dir", a, "--json");
    assertThat(ra.code()).as(ra.err()).isZero();
    assertThat(ra.json().get("accepted").asInt()).isEqualTo(1);
    Run rb = run("host", "run", "--once", "--dir", b);
    assertThat(rb.code()).as(rb.err()).isZero();
    assertThat(rb.out()).as("the plaintext body on stdout").isEqualTo("hello beta, sealed\nsecond line\n");
    assertThat(rb.err()).contains("message " + msg + " from owner@alpha (peer alpha, signature verified): greeting");
    run("host", "run", "--once", "--dir", b);
    run("host", "run", "--once", "--dir", a);

    Run sb = run("host", "status", "--dir", b, "--json");
    assertThat(sb.json().get("inbox").get(0).get("body").asText()).isEqualTo("hello beta, sealed\nsecond line\n");
    assertThat(sb.err()).contains("inbox " + msg + " from alpha: hello beta, sealed second line");
    Run sa = run("host", "status", "--dir", a, "--json");
    assertThat(sa.json().get("outbox").get(0).get("msg_id").asText()).isEqualTo(msg);
    assertThat(sa.json().get("outbox").get(0).get("state").asText()).isEqualTo("settled");
    assertThat(sa.json().get("sent").get("settled").asInt()).isEqualTo(1);
    assertThat(sa.err()).contains("sent messages: 1 settled");
    Run q = run("host", "quarantine", "--dir", b, "--json");
    assertThat(q.json().get("items")).isEmpty();
    Run d = run("host", "doctor", "--dir", a, "--json");
    assertThat(d.code()).as(d.err()).isZero();
    assertThat(d.json().get("ok").asBoolean()).isTrue();
  }

  /** Hosts alpha and beta (their dirs), each the other's peer, on this relay; beta has run once (enc-key ad). */
  String[] pairedHosts() {
    String a = dir.resolve("a").toString();
    String b = dir.resolve("b").toString();
    String pa = run("host", "init", "--dir", a, "--name", "alpha", "--json").json().get("pubkey").asText();
    String pb = run("host", "init", "--dir", b, "--name", "beta", "--json").json().get("pubkey").asText();
    String fp = Fingerprint.ofB64(relay.relayKey.publicKeyB64());
    run("host", "relay", "set", relay.url(), "--dir", a, "--key", fp);
    run("host", "relay", "set", relay.url(), "--dir", b, "--key", fp);
    run("host", "peer", "add", pb, "--name", "beta", "--dir", a);
    run("host", "peer", "add", pa, "--name", "alpha", "--dir", b);
    assertThat(run("host", "run", "--once", "--dir", b).code()).isZero();
    return new String[] {a, b};
  }

  /** Issue 21 bug 6: `peer add` with a key already known under another name renamed it silently. */
  @Test
  void peerAddWithAKnownKeyAndAnotherNameIsRefusedUnlessRenameIsGiven() throws Exception {
    String a = dir.resolve("a").toString();
    run("host", "init", "--dir", a, "--name", "alpha");
    String pb = io.mbxrelay.crypto.Ed25519KeyPair.generate().publicKeyB64();
    assertThat(run("host", "peer", "add", pb, "--name", "beta", "--dir", a).code()).isZero();
    Run again = run("host", "peer", "add", pb, "--name", "beta", "--dir", a);
    assertThat(again.code()).isZero();
    assertThat(again.err()).contains("already accepted");
    Run other = run("host", "peer", "add", pb, "--name", "gamma", "--dir", a);
    assertThat(other.code()).isEqualTo(2);
    assertThat(other.err()).contains("is already accepted as beta; nothing changed (pass --rename");
    try (io.mbxrelay.host.HostStore s = io.mbxrelay.host.HostStore.open(dir.resolve("a").resolve("host.db"))) {
      assertThat(s.peer(pb).orElseThrow().name()).isEqualTo("beta");
    }
    Run renamed = run("host", "peer", "add", pb, "--name", "gamma", "--rename", "--dir", a);
    assertThat(renamed.code()).as(renamed.err()).isZero();
    assertThat(renamed.err()).contains("peer gamma (").contains("renamed from beta");
    try (io.mbxrelay.host.HostStore s = io.mbxrelay.host.HostStore.open(dir.resolve("a").resolve("host.db"))) {
      assertThat(s.peer(pb).orElseThrow().name()).isEqualTo("gamma");
    }
  }

  /**
   * Issue 21 bug 7: `host push --key-file F` ignored the pin `host relay set` stored in that host's directory and
   * asked for --relay-key (and then the fingerprint by hand). Now it uses that pin, and `--dir` works as for the
   * other host commands (key, pins, and the host's relay when --relay is left out).
   */
  @Test
  void pushAndPullUseTheRelayPinnedInTheHostDirectory() throws Exception {
    String[] ab = pairedHosts();
    String pb = run("host", "init", "--dir", ab[1], "--name", "beta", "--json").json().get("pubkey").asText();
    java.nio.file.Path file = dir.resolve("env.json");
    String id = io.mbxrelay.testing.Envelopes.newId();
    java.nio.file.Files.write(file, io.mbxrelay.testing.Envelopes.sealed(id));
    assertThat(run("host", "run", "--once", "--dir", ab[0]).code()).isZero(); // alpha enrols
    Run push = run("host", "push", "--relay", relay.url(), "--key-file", dir.resolve("a").resolve("host.key")
        .toString(), "--to", pb, "--file", file.toString());
    assertThat(push.code()).as(push.err()).isZero();
    assertThat(push.json().get("status").asText()).isEqualTo("accepted");
    assertThat(push.err()).contains("receipt verified").doesNotContain("pinned relay key");
    assertThat(java.nio.file.Files.exists(dir.resolve("a").resolve("relays.json"))).isFalse();
    Run again = run("host", "push", "--dir", ab[0], "--to", pb, "--file", file.toString());
    assertThat(again.code()).as(again.err()).isZero();
    assertThat(again.json().get("status").asText()).isEqualTo("duplicate");
    Run pull = run("host", "pull", "--dir", ab[1], "--json");
    assertThat(pull.code()).as(pull.err()).isZero();
    assertThat(pull.json().get("items")).anySatisfy(i -> assertThat(i.get("item_id").asText()).isEqualTo(id));
  }

  /**
   * Issue 21 part 1 through the CLI: `relay add` gives a host a second relay, every message goes to both and arrives
   * once; with one relay down `status`, `doctor` and `relay list` say which, mail still flows through the other;
   * `relay remove` stops using one (never the last).
   */
  @Test
  void aHostWithTwoRelaysSendsThroughBothAndSaysWhichOneIsDown() throws Exception {
    RelayHarness relay2 = RelayHarness.start(dir.resolve("relay2"));
    try {
      String a = dir.resolve("a").toString();
      String b = dir.resolve("b").toString();
      String pa = run("host", "init", "--dir", a, "--name", "alpha", "--json").json().get("pubkey").asText();
      String pb = run("host", "init", "--dir", b, "--name", "beta", "--json").json().get("pubkey").asText();
      String fp1 = Fingerprint.ofB64(relay.relayKey.publicKeyB64());
      String fp2 = Fingerprint.ofB64(relay2.relayKey.publicKeyB64());
      for (String d : List.of(a, b)) {
        assertThat(run("host", "relay", "set", relay.url(), "--dir", d, "--key", fp1).code()).isZero();
        Run wrong = run("host", "relay", "add", relay2.url(), "--dir", d, "--fingerprint", fp1);
        assertThat(wrong.code()).isEqualTo(1);
        assertThat(wrong.err()).contains("nothing pinned");
        Run add = run("host", "relay", "add", relay2.url(), "--dir", d, "--fingerprint", fp2, "--json");
        assertThat(add.code()).as(add.err()).isZero();
        assertThat(add.err()).contains("pinned relay key " + fp2, "this host uses 2 relays");
        assertThat(add.json().get("relays")).extracting(com.fasterxml.jackson.databind.JsonNode::asText)
            .containsExactly(relay.url(), relay2.url());
      }
      Run list = run("host", "relay", "list", "--dir", a, "--json");
      assertThat(list.json().get("relays")).hasSize(2);
      assertThat(list.json().get("relays").get(1).get("fingerprint").asText()).isEqualTo(fp2);
      assertThat(list.json().get("relays").get(1).get("state").asText()).isEqualTo("new");
      run("host", "peer", "add", pb, "--name", "beta", "--dir", a);
      run("host", "peer", "add", pa, "--name", "alpha", "--dir", b);
      assertThat(run("host", "run", "--once", "--dir", b).code()).isZero();
      run("host", "send", "--dir", a, "--to", "owner@beta", "--body", "through both");
      Run ra = run("host", "run", "--once", "--dir", a, "--json");
      assertThat(ra.code()).as(ra.err()).isZero();
      assertThat(ra.json().get("accepted").asInt()).as("one row per relay").isEqualTo(2);
      Run rb = run("host", "run", "--once", "--dir", b);
      assertThat(rb.out()).as("handed over once").isEqualTo("through both\n");
      assertThat(rb.err()).contains("delivered 1, duplicates 1");
      run("host", "run", "--once", "--dir", b);
      run("host", "run", "--once", "--dir", a);
      Run sa = run("host", "status", "--dir", a, "--json");
      assertThat(sa.json().get("outbox")).singleElement().satisfies(e -> {
        assertThat(e.get("state").asText()).isEqualTo("settled");
        assertThat(e.get("relays")).hasSize(2);
      });
      assertThat(sa.json().get("sent").get("settled").asInt()).isEqualTo(1);

      relay2.close(); // the second relay goes down
      run("host", "send", "--dir", a, "--to", "owner@beta", "--body", "through one");
      Run down = run("host", "run", "--once", "--dir", a, "--json");
      assertThat(down.code()).as("a relay's session failed").isEqualTo(1);
      assertThat(down.json().get("accepted").asInt()).isEqualTo(1);
      assertThat(down.err()).contains("relays: " + relay.url() + " ok, " + relay2.url() + " unreachable");
      Run got = run("host", "run", "--once", "--dir", b);
      assertThat(got.out()).isEqualTo("through one\n");
      Run st = run("host", "status", "--dir", a, "--json");
      assertThat(st.json().get("relays").get(0).get("state").asText()).isEqualTo("ok");
      assertThat(st.json().get("relays").get(1).get("state").asText()).isEqualTo("unreachable");
      assertThat(st.err()).contains("relay " + relay2.url() + " (key " + fp2).contains("): unreachable");
      Run doc = run("host", "doctor", "--dir", a, "--json");
      assertThat(doc.code()).isEqualTo(1);
      assertThat(doc.err()).contains("relay " + relay.url() + ": ok")
          .contains("relay " + relay2.url() + ": last relay problem: relay unreachable");
      assertThat(doc.json().get("relays").get(0).get("ok").asBoolean()).isTrue();
      assertThat(doc.json().get("relays").get(1).get("ok").asBoolean()).isFalse();

      Run rm = run("host", "relay", "remove", relay2.url(), "--dir", a);
      assertThat(rm.code()).as(rm.err()).isZero();
      assertThat(run("host", "relay", "list", "--dir", a, "--json").json().get("relays")).hasSize(1);
      Run last = run("host", "relay", "remove", relay.url(), "--dir", a);
      assertThat(last.code()).isEqualTo(2);
      assertThat(last.err()).contains("is this host's only relay");
      run("host", "run", "--once", "--dir", b);
      Run after = run("host", "run", "--once", "--dir", a);
      assertThat(after.code()).as(after.err()).isZero();
      assertThat(run("host", "doctor", "--dir", a).code()).isZero();
    } finally {
      relay2.close();
    }
  }

  @Test
  void runExecGetsEachBodyOnStdinAndAFailingCommandLeavesTheMessageForTheNextTick() throws Exception {
    String[] ab = pairedHosts();
    String a = ab[0];
    String b = ab[1];
    String msg = run("host", "send", "--dir", a, "--to", "ops@beta", "--body", "run this", "--json").json()
        .get("msg_id").asText();
    assertThat(run("host", "run", "--once", "--dir", a, "--json").json().get("accepted").asInt()).isEqualTo(1);

    java.nio.file.Path got = dir.resolve("got");
    Run failing = run("host", "run", "--once", "--dir", b, "--exec", "cat > " + got + "; exit 3");
    assertThat(failing.code()).isEqualTo(1);
    assertThat(failing.err()).contains("--exec exited 3 for message " + msg + "; the message is offered again");
    java.io.Writer closed = new java.io.Writer() {
      @Override
      public void write(char[] c, int off, int len) throws java.io.IOException {
        throw new java.io.IOException("Broken pipe");
      }

      @Override
      public void flush() throws java.io.IOException {
        throw new java.io.IOException("Broken pipe");
      }

      @Override
      public void close() {}
    };
    Run noReader = run(closed, "host", "run", "--once", "--dir", b);
    assertThat(noReader.code()).isEqualTo(1);
    assertThat(noReader.err()).contains("stdout is closed: message " + msg + " was not handed over");
    Run ok = run("host", "run", "--once", "--dir", b, "--exec", "cat > " + got + "; echo \"$MBX_MSG_ID $MBX_FROM\" >> "
        + got);
    assertThat(ok.code()).as(ok.err()).isZero();
    assertThat(java.nio.file.Files.readString(got)).isEqualTo("run this" + msg + " owner@alpha\n");
    assertThat(run("host", "status", "--dir", b, "--json").json().get("inbox")).hasSize(1);
  }

  @Test
  void anExecThatNeverReadsALargeBodyIsStoppedAtItsTimeoutAndTheMessageStays() throws Exception {
    String[] ab = pairedHosts();
    String a = ab[0];
    String b = ab[1];
    java.nio.file.Path big = dir.resolve("big.txt");
    java.nio.file.Files.writeString(big, "x".repeat(100_000)); // more than a pipe buffer
    String msg = run("host", "send", "--dir", a, "--to", "ops@beta", "--body-file", big.toString(), "--json").json()
        .get("msg_id").asText();
    assertThat(run("host", "run", "--once", "--dir", a, "--json").json().get("accepted").asInt()).isEqualTo(1);

    long t0 = System.nanoTime();
    Run slow = run("host", "run", "--once", "--dir", b, "--exec", "sleep 20", "--exec-timeout-ms", "1500");
    long ms = (System.nanoTime() - t0) / 1_000_000;
    assertThat(slow.code()).as(slow.err() + " after " + ms + " ms").isEqualTo(1);
    assertThat(slow.err()).contains("--exec ran over 1500 ms for message " + msg);
    assertThat(ms).as("stopped at its timeout, not when the command ends").isLessThan(15_000);
    assertThat(run("host", "status", "--dir", b, "--json").json().get("inbox")).isEmpty();
  }
}
