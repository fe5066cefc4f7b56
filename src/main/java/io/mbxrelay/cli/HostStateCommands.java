package io.mbxrelay.cli;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.mbxrelay.crypto.Ed25519KeyPair;
import io.mbxrelay.crypto.Fingerprint;
import io.mbxrelay.host.BlockingRelayClient;
import io.mbxrelay.host.DemoEnvelope;
import io.mbxrelay.host.HostAgent;
import io.mbxrelay.host.HostKeyException;
import io.mbxrelay.host.HostKeys;
import io.mbxrelay.host.HostStore;
import io.mbxrelay.host.InboxApplication;
import io.mbxrelay.host.InfoResult;
import io.mbxrelay.host.RelayPin;
import io.mbxrelay.host.RelayPins;
import io.mbxrelay.host.StandaloneTransports;
import io.mbxrelay.host.TickReport;
import io.mbxrelay.wire.B64;
import io.mbxrelay.wire.Json;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.SQLException;
import java.time.Clock;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * The stateful host commands over the durable host store (issue 5 item 7): {@code init}, {@code relay set},
 * {@code peer add}, {@code send}, {@code run}, {@code status}, {@code quarantine}, {@code doctor}. State lives in a
 * host directory ({@code --dir}, default {@code ~/.local/share/mbxrelay-host}): {@code host.key} and {@code host.db}.
 * People read stderr ({@code [mbxrelay]} lines); {@code --json} prints one JSON object on stdout. Exit codes: 0 ok,
 * 1 relay refusal / problems found, 2 usage or local configuration error. Key material is never printed.
 */
final class HostStateCommands {

  private HostStateCommands() {}

  /** Options and helpers every stateful command shares. */
  abstract static class Base implements Callable<Integer> {
    @Spec CommandSpec spec;

    @Option(names = "--dir", paramLabel = "DIR",
        description = "Host directory with host.key and host.db (default: ~/.local/share/mbxrelay-host).")
    Path dir;

    @Option(names = "--json", description = "Print one JSON object on stdout.")
    boolean json;

    PrintWriter out() {
      return spec.commandLine().getOut();
    }

    PrintWriter err() {
      return spec.commandLine().getErr();
    }

    Path dir() {
      return dir != null ? dir : HostKeys.defaultFile().getParent();
    }

    Ed25519KeyPair key() throws HostSupport.Failure {
      return HostSupport.loadKey(dir().resolve(HostKeys.FILE_NAME));
    }

    HostStore store() throws HostSupport.Failure {
      Path f = dir().resolve(HostStore.FILE_NAME);
      if (!Files.exists(f)) {
        throw new HostSupport.Failure(HostSupport.USAGE, "no host store at " + f + ": run `mbxrelay host init` first");
      }
      try {
        return HostStore.open(f);
      } catch (SQLException e) {
        throw new HostSupport.Failure(HostSupport.USAGE, "cannot open host store " + f + ": " + e.getMessage());
      }
    }

    static String setting(HostStore s, String name, String hint) throws SQLException, HostSupport.Failure {
      return s.setting(name).orElseThrow(() -> new HostSupport.Failure(HostSupport.USAGE, hint));
    }

    @Override
    public final Integer call() {
      try {
        return run();
      } catch (HostSupport.Failure f) {
        return HostSupport.fail(err(), f);
      } catch (SQLException e) {
        return HostSupport.fail(err(), new HostSupport.Failure(HostSupport.USAGE, "host store error: "
            + e.getMessage()));
      } catch (Exception e) {
        return HostSupport.fail(err(), new HostSupport.Failure(HostSupport.REFUSED, e.getClass().getSimpleName()
            + (e.getMessage() == null ? "" : ": " + e.getMessage())));
      }
    }

    abstract int run() throws Exception;
  }

  /** {@code mbxrelay host init --name NAME}. */
  @Command(name = "init", mixinStandardHelpOptions = true,
      description = "Create (or load) the host key and the durable host store.")
  static final class Init extends Base {
    @Option(names = "--name", required = true, paramLabel = "NAME", description = "This host's name.")
    String name;

    @Override
    int run() throws Exception {
      if (!io.mbxrelay.wire.ReceiptCheck.HOST_RE.matcher(name).matches()) {
        throw new HostSupport.Failure(HostSupport.USAGE, "--name must match [A-Za-z0-9][A-Za-z0-9._-]{0,62}");
      }
      Path db = dir().resolve(HostStore.FILE_NAME);
      if (Files.exists(db)) {
        // a host keeps its name (issue 12 item 6): peers and relays know it by it; init again only loads
        try (HostStore s = HostStore.open(db)) {
          java.util.Optional<String> was = s.setting("host_name");
          if (was.isPresent() && !was.get().equals(name)) {
            throw new HostSupport.Failure(HostSupport.USAGE, "the host in " + dir() + " is already initialised as "
                + was.get() + "; a host keeps its name (use another --dir for another host)");
          }
        }
      }
      HostKeys.Loaded k;
      try {
        k = HostKeys.loadOrCreate(dir().resolve(HostKeys.FILE_NAME));
      } catch (HostKeyException | IOException e) {
        throw new HostSupport.Failure(HostSupport.USAGE, e.getMessage());
      }
      try (HostStore s = HostStore.open(db)) {
        s.putSetting("host_name", name);
        s.putSetting("host_pubkey", k.key().publicKeyB64());
      }
      err().println("[mbxrelay] host " + name + " ready in " + dir() + " (key " + Fingerprint.ofB64(
          k.key().publicKeyB64()) + (k.created() ? ", new" : "") + ")");
      err().println("[mbxrelay] public key (give it to peers): " + k.key().publicKeyB64());
      if (json) {
        HostSupport.printJson(out(), Json.MAPPER.createObjectNode().put("host", name)
            .put("pubkey", k.key().publicKeyB64()).put("fingerprint", Fingerprint.ofB64(k.key().publicKeyB64()))
            .put("created", k.created()));
      }
      return HostSupport.OK;
    }
  }

  /** {@code mbxrelay host relay set URL [--key FP] [--confirm]}. */
  @Command(name = "relay", mixinStandardHelpOptions = true, description = "Relay settings.",
      subcommands = {RelaySet.class})
  static final class Relay implements Runnable {
    @Override
    public void run() {
      picocli.CommandLine.usage(this, System.err);
    }
  }

  /** Pins the relay key (docs/protocol.md §7.1). */
  @Command(name = "set", mixinStandardHelpOptions = true,
      description = {"Use this relay: show its key fingerprint and pin it.",
          "With --key the fingerprint must match (no trust on first use). A changed key needs --key NEW or --confirm."})
  static final class RelaySet extends Base {
    @Parameters(index = "0", paramLabel = "URL", converter = RelayUrl.class, description = "Relay base URL.")
    String url;

    @Option(names = "--key", paramLabel = "FINGERPRINT", description = "Expected relay key fingerprint.")
    String expected;

    @Option(names = "--confirm", description = "Confirm the relay's new key after a key change.")
    boolean confirm;

    @Override
    int run() throws Exception {
      Ed25519KeyPair key = key();
      if (expected != null && Fingerprint.normalize(expected).isEmpty()) {
        throw new HostSupport.Failure(HostSupport.USAGE, "--key must be a relay key fingerprint");
      }
      try (HostStore s = store()) {
        String name = setting(s, "host_name", "run `mbxrelay host init` first");
        String presented;
        try (BlockingRelayClient c = new BlockingRelayClient(url, name, key, new RelayPin.TrustOnFirstUse(),
            HostSupport.REQUEST_TIMEOUT_MS)) {
          InfoResult r = c.info();
          if (!(r instanceof InfoResult.Ok ok)) {
            throw HostSupport.failureOf(r, "info");
          }
          presented = ok.info().relayPubkey();
        } catch (BlockingRelayClient.RelayUnreachable e) {
          throw new HostSupport.Failure(HostSupport.REFUSED, "relay unreachable: " + e.getMessage());
        }
        HostAgent.PinOutcome p = HostAgent.pin(s, url, presented, expected, confirm, System.currentTimeMillis());
        String u = RelayPins.normalizeUrl(url);
        ObjectNode o = Json.MAPPER.createObjectNode().put("relay", u).put("fingerprint", Fingerprint.ofB64(presented));
        int code = HostSupport.OK;
        if (p instanceof HostAgent.PinOutcome.Pinned pin) {
          s.putSetting("relay_url", u);
          err().println("[mbxrelay] pinned relay key " + pin.fingerprint() + " for " + u
              + (pin.replaced() != null ? " (replaces " + pin.replaced() + ")" : "")
              + (pin.trustOnFirstUse() ? " (trust on first use: compare it with the operator's fingerprint)" : ""));
          o.put("outcome", "pinned");
        } else if (p instanceof HostAgent.PinOutcome.Unchanged) {
          s.putSetting("relay_url", u);
          err().println("[mbxrelay] relay key " + Fingerprint.ofB64(presented) + " already pinned for " + u);
          o.put("outcome", "unchanged");
        } else if (p instanceof HostAgent.PinOutcome.Mismatch m) {
          err().println("[mbxrelay] relay key fingerprint is " + m.presented() + ", not " + m.expected()
              + "; nothing pinned");
          o.put("outcome", "mismatch");
          code = HostSupport.REFUSED;
        } else if (p instanceof HostAgent.PinOutcome.Changed ch) {
          err().println("[mbxrelay] relay key CHANGED: pinned " + ch.pinned() + ", the relay presents "
              + ch.presented() + "; the relay is not used until you confirm with --key " + ch.presented()
              + " or --confirm");
          o.put("outcome", "changed");
          code = HostSupport.REFUSED;
        }
        if (json) {
          HostSupport.printJson(out(), o);
        }
        return code;
      }
    }
  }

  /** {@code mbxrelay host peer add PUBKEY --name NAME}. */
  @Command(name = "peer", mixinStandardHelpOptions = true, description = "Accepted peers.", subcommands = PeerAdd.class)
  static final class Peer implements Runnable {
    @Override
    public void run() {
      picocli.CommandLine.usage(this, System.err);
    }
  }

  /** Adds an accepted peer. */
  @Command(name = "add", mixinStandardHelpOptions = true,
      description = "Accept a peer host key (its mail is received, its receipts verified, it goes on the allowlist).")
  static final class PeerAdd extends Base {
    @Parameters(index = "0", paramLabel = "PUBKEY", description = "The peer's base64 host key.")
    String pubkey;

    @Option(names = "--name", required = true, paramLabel = "NAME", description = "A label for the peer.")
    String name;

    @Override
    int run() throws Exception {
      if (!B64.isPubkey(pubkey)) {
        throw new HostSupport.Failure(HostSupport.USAGE, "PUBKEY must be a base64 32-byte key");
      }
      try (HostStore s = store(); HostAgent a = agent(this, s, key(), null)) {
        a.addPeer(pubkey, name);
      }
      err().println("[mbxrelay] peer " + name + " (" + Fingerprint.ofB64(pubkey) + ") accepted");
      return HostSupport.OK;
    }
  }

  static HostAgent agent(Base b, HostStore s, Ed25519KeyPair key, StandaloneTransports t) throws Exception {
    String name = Base.setting(s, "host_name", "run `mbxrelay host init` first");
    String url = s.setting("relay_url").orElse("http://relay.invalid");
    HostAgent.Options o = new HostAgent.Options(name, "", Clock.systemUTC(), new java.security.SecureRandom(), null);
    RelayTransportFactoryHolder h = new RelayTransportFactoryHolder(t);
    return new HostAgent(s, key, url, o, h::open, new InboxApplication(Clock.systemUTC()));
  }

  /** Refuses network use for commands that must not touch the relay. */
  private record RelayTransportFactoryHolder(StandaloneTransports t) {
    io.mbxrelay.host.RelayTransport open(String u, String n, String k) {
      if (t == null) {
        throw new IllegalStateException("this command does not talk to the relay");
      }
      return t.open(u, n, k);
    }
  }

  /** {@code mbxrelay host send --to PUBKEY --text TEXT}. */
  @Command(name = "send", mixinStandardHelpOptions = true,
      description = {"Queue a message durably for a peer and return (pushed by `run`).",
          "DEMO: the body is NOT encrypted (DemoEnvelope); real hosts seal it for the peer's key."})
  static final class Send extends Base {
    @Option(names = "--to", required = true, paramLabel = "PUBKEY", description = "The target peer's host key.")
    String to;

    @Option(names = "--text", required = true, paramLabel = "TEXT", description = "The demo text.")
    String text;

    @Override
    int run() throws Exception {
      try (HostStore s = store(); HostAgent a = agent(this, s, key(), null)) {
        String name = setting(s, "host_name", "run `mbxrelay host init` first");
        String peer = s.peers().get(to);
        if (peer == null) {
          throw new HostSupport.Failure(HostSupport.USAGE, "not an accepted peer: run `mbxrelay host peer add` first");
        }
        long now = System.currentTimeMillis();
        String id = DemoEnvelope.newUlid(now);
        byte[] wire = DemoEnvelope.wire(id, "owner@" + name, "owner@" + peer, text, now);
        HostAgent.SendOutcome r = a.send(id, to, wire);
        err().println("[mbxrelay] queued message " + id + " for " + peer + " (" + r.name().toLowerCase()
            + "; demo envelope, NOT encrypted)");
        if (json) {
          HostSupport.printJson(out(), Json.MAPPER.createObjectNode().put("msg_id", id).put("outcome",
              r.name().toLowerCase()).put("demo", true));
        }
        return HostSupport.OK;
      }
    }
  }

  /** {@code mbxrelay host run [--once]}. */
  @Command(name = "run", mixinStandardHelpOptions = true,
      description = "Tick against the relay: push the outbox, pull, receive, ack; loop until stopped (--once: one tick).")
  static final class Run extends Base {
    @Option(names = "--once", description = "One tick, then exit.")
    boolean once;

    @Option(names = "--interval-ms", defaultValue = "5000", paramLabel = "MS", description = "Pause between ticks."
        + " With a relay that offers long-poll pulls the pause is a wait on the relay that ends as soon as mail"
        + " arrives (at most 25 s).")
    long intervalMs;

    @Override
    int run() throws Exception {
      Ed25519KeyPair key = key();
      try (HostStore s = store(); StandaloneTransports t = new StandaloneTransports(key, Clock.systemUTC());
          HostAgent a = agent(this, s, key, t)) {
        setting(s, "relay_url", "no relay set: run `mbxrelay host relay set URL` first");
        int wait = (int) Math.max(1, intervalMs / 1000);
        String lastSession = null;
        if (!once) {
          err().println("[mbxrelay] running against " + s.setting("relay_url").orElse("") + "; a line per tick that"
              + " moved something or changed the session state (Ctrl-C stops)");
        }
        while (true) {
          TickReport r = a.tick(once ? 0 : wait);
          for (String n : r.notes()) {
            err().println("[mbxrelay] " + n);
          }
          // an idle tick (nothing moved, same session state) prints nothing (issue 12 item 6)
          boolean idle = r.notes().isEmpty() && r.session().equals(lastSession) && r.accepted() == 0
              && r.notAccepted() == 0 && r.delivered() == 0 && r.duplicates() == 0 && r.receipts() == 0
              && r.notices() == 0 && r.quarantined() == 0 && !r.epochChanged();
          lastSession = r.session();
          if (once || !idle) {
            err().println("[mbxrelay] tick " + r.session() + ": accepted " + r.accepted() + ", pending "
                + r.notAccepted() + ", delivered " + r.delivered() + ", duplicates " + r.duplicates() + ", receipts "
                + r.receipts() + ", quarantined " + r.quarantined()
                + (r.receivedThrough() < 0 ? "" : ", received through " + r.receivedThrough()));
            if (json) {
              HostSupport.printJson(out(), (ObjectNode) Json.MAPPER.valueToTree(r));
            }
          }
          err().flush();
          if (once) {
            return r.session().equals("ok") ? HostSupport.OK : HostSupport.REFUSED;
          }
          if (r.relayPullWaitSeconds() > 0 && r.pulledAll()) {
            continue; // the next tick waits on the relay (long-poll) instead of on a timer
          }
          Thread.sleep(Math.max(100, intervalMs));
        }
      }
    }
  }

  /** {@code mbxrelay host status}. */
  @Command(name = "status", mixinStandardHelpOptions = true, description = "Outbox, position, inbox and alerts.")
  static final class Status extends Base {
    @Override
    int run() throws Exception {
      try (HostStore s = store()) {
        ObjectNode o = Json.MAPPER.createObjectNode();
        o.put("host", s.setting("host_name").orElse(""));
        String url = s.setting("relay_url").orElse(null);
        o.put("relay", url);
        s.relays().stream().filter(r -> r.url().equals(url)).findFirst().ifPresent(r ->
            o.put("relay_fingerprint", Fingerprint.ofB64(r.relayPubkey())).put("epoch", r.epoch()));
        if (url != null) {
          // a position is never below 0; one that says so has no session behind it and is not shown (issue 12 item 6)
          s.position(url).filter(p -> p.receivedThrough() >= 0 && p.ackedThrough() >= 0)
              .ifPresent(p -> o.put("received_through", p.receivedThrough()).put("acked_through", p.ackedThrough()));
        }
        err().println("[mbxrelay] host " + o.get("host").asText() + "; relay " + (url == null ? "not set" : url
            + (o.has("relay_fingerprint") ? " (key " + o.get("relay_fingerprint").asText() + ", epoch "
            + o.path("epoch").asText("-") + ")" : ""))
            + (o.has("received_through") ? "; received through " + o.get("received_through").asLong()
            + ", acked through " + o.get("acked_through").asLong() : url == null ? "" : "; nothing received yet"));
        ArrayNode rows = o.putArray("outbox");
        for (HostStore.OutboxRow r : s.outbox()) {
          rows.addObject().put("kind", r.kind()).put("msg_id", r.msgId())
              .put("target", s.peers().getOrDefault(r.targetPubkey(), Fingerprint.ofB64(r.targetPubkey())))
              .put("state", r.state()).put("attempts", r.attempts()).put("last_error", r.lastError());
          err().println("[mbxrelay] " + r.kind() + " " + r.msgId() + " -> " + rows.get(rows.size() - 1)
              .get("target").asText() + ": " + r.state() + (r.lastError() == null ? "" : " (" + r.lastError() + ")"));
        }
        ArrayNode inbox = o.putArray("inbox");
        for (InboxApplication.Message m : s.inbox()) {
          ObjectNode e = inbox.addObject().put("msg_id", m.msgId()).put("from", s.peers().getOrDefault(
              m.senderPubkey(), Fingerprint.ofB64(m.senderPubkey())));
          DemoEnvelope.text(m.wire()).ifPresent(t -> e.put("demo_text", t));
          err().println("[mbxrelay] inbox " + m.msgId() + " from " + e.get("from").asText()
              + DemoEnvelope.text(m.wire()).map(t -> ": " + t).orElse(""));
        }
        ArrayNode alerts = o.putArray("alerts");
        for (HostStore.Alert a : s.alerts()) {
          alerts.addObject().put("kind", a.kind()).put("text", a.text()).put("at", a.at());
          err().println("[mbxrelay] ALERT " + a.text());
        }
        if (rows.isEmpty() && inbox.isEmpty() && alerts.isEmpty()) {
          err().println("[mbxrelay] no outbox rows, no inbox messages, no alerts");
        }
        if (json) {
          HostSupport.printJson(out(), o);
        }
        return HostSupport.OK;
      }
    }
  }

  /** {@code mbxrelay host quarantine}. */
  @Command(name = "quarantine", mixinStandardHelpOptions = true, description = "List quarantined items.")
  static final class Quarantine extends Base {
    @Override
    int run() throws Exception {
      try (HostStore s = store()) {
        List<HostStore.QuarantineRow> q = s.quarantine();
        ArrayNode arr = Json.MAPPER.createArrayNode();
        for (HostStore.QuarantineRow r : q) {
          arr.addObject().put("relay", r.relay()).put("epoch", r.epoch()).put("seq", r.seq()).put("kind", r.kind())
              .put("item_id", r.itemId()).put("sender", Fingerprint.ofB64(r.senderPubkey()))
              .put("reason", r.reason()).put("wire_bytes", r.wireBytes()).put("at", r.at());
          err().println("[mbxrelay] seq " + r.seq() + " " + r.kind() + " " + r.itemId() + " from "
              + Fingerprint.ofB64(r.senderPubkey()) + ": " + r.reason());
        }
        if (q.isEmpty()) {
          err().println("[mbxrelay] no quarantined items");
        }
        if (json) {
          ObjectNode o = Json.MAPPER.createObjectNode();
          o.set("items", arr);
          HostSupport.printJson(out(), o);
        }
        return HostSupport.OK;
      }
    }
  }

  /** {@code mbxrelay host doctor}. */
  @Command(name = "doctor", mixinStandardHelpOptions = true,
      description = "Report problems: relay key change, relay errors, stuck or unconfirmed rows, quarantine.")
  static final class Doctor extends Base {
    @Override
    int run() throws Exception {
      try (HostStore s = store()) {
        String url = setting(s, "relay_url", "no relay set: run `mbxrelay host relay set URL` first");
        List<String> lines = HostAgent.doctor(s, url);
        for (String l : lines) {
          err().println("[mbxrelay] " + l);
        }
        if (lines.isEmpty()) {
          err().println("[mbxrelay] relay " + url + ": ok");
        }
        if (json) {
          ObjectNode o = Json.MAPPER.createObjectNode().put("relay", url).put("ok", lines.isEmpty());
          ArrayNode p = o.putArray("problems");
          lines.forEach(p::add);
          HostSupport.printJson(out(), o);
        }
        return lines.isEmpty() ? HostSupport.OK : HostSupport.REFUSED;
      }
    }
  }
}
