package io.mbxrelay.cli;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.mbxrelay.crypto.Ed25519KeyPair;
import io.mbxrelay.crypto.Fingerprint;
import io.mbxrelay.host.BlockingRelayClient;
import io.mbxrelay.host.HostApplication;
import io.mbxrelay.host.HostAgent;
import io.mbxrelay.host.HostKeyException;
import io.mbxrelay.host.HostKeys;
import io.mbxrelay.host.HostStore;
import io.mbxrelay.host.InboxApplication;
import io.mbxrelay.host.InfoResult;
import io.mbxrelay.host.SealedInbox;
import io.mbxrelay.host.seal.EncKeyPair;
import io.mbxrelay.host.seal.SealedEnvelope;
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
      String encPub;
      try (HostStore s = HostStore.open(db)) {
        s.putSetting("host_name", name);
        s.putSetting("host_pubkey", k.key().publicKeyB64());
        encPub = io.mbxrelay.host.HostEncKey.loadOrCreate(s).publicKeyB64();
      }
      err().println("[mbxrelay] host " + name + " ready in " + dir() + " (key " + Fingerprint.ofB64(
          k.key().publicKeyB64()) + (k.created() ? ", new" : "") + ")");
      err().println("[mbxrelay] public key (give it to peers): " + k.key().publicKeyB64());
      err().println("[mbxrelay] encryption key (peers may pin it with `peer add --enc-key`): " + encPub);
      if (json) {
        HostSupport.printJson(out(), Json.MAPPER.createObjectNode().put("host", name)
            .put("pubkey", k.key().publicKeyB64()).put("fingerprint", Fingerprint.ofB64(k.key().publicKeyB64()))
            .put("created", k.created()).put("enc_pub", encPub));
      }
      return HostSupport.OK;
    }
  }

  /** {@code mbxrelay host relay set|add|remove|list}. */
  @Command(name = "relay", mixinStandardHelpOptions = true, description = {"The relays this host uses.",
      "`set` makes one relay the host's only one; `add` uses one more (every message goes to every relay); `remove`"
          + " stops using one; `list` shows each with its state."},
      subcommands = {RelaySet.class, RelayAdd.class, RelayRemove.class, RelayList.class})
  static final class Relay implements Runnable {
    @Override
    public void run() {
      picocli.CommandLine.usage(this, System.err);
    }
  }

  /** What {@code relay set} and {@code relay add} share: ask the relay for its key, check and pin it. */
  abstract static class RelayPinning extends Base {
    @Parameters(index = "0", paramLabel = "URL", converter = RelayUrl.class, description = "Relay base URL.")
    String url;

    @Option(names = {"--key", "--fingerprint"}, paramLabel = "FINGERPRINT",
        description = "Expected relay key fingerprint (no trust on first use; a mismatch pins nothing).")
    String expected;

    @Option(names = "--confirm", description = "Confirm the relay's new key after a key change.")
    boolean confirm;

    /** The host's relay list after a successful pin of {@code u}. */
    abstract List<String> relaysAfter(List<String> current, String u);

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
          s.putRelayUrls(relaysAfter(s.relayUrls(), u));
          err().println("[mbxrelay] pinned relay key " + pin.fingerprint() + " for " + u
              + (pin.replaced() != null ? " (replaces " + pin.replaced() + ")" : "")
              + (pin.trustOnFirstUse() ? " (trust on first use: compare it with the operator's fingerprint)" : ""));
          o.put("outcome", "pinned");
        } else if (p instanceof HostAgent.PinOutcome.Unchanged) {
          s.putRelayUrls(relaysAfter(s.relayUrls(), u));
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
        List<String> now = s.relayUrls();
        if (code == HostSupport.OK && now.size() > 1) {
          err().println("[mbxrelay] this host uses " + now.size() + " relays: " + String.join(", ", now));
        }
        ArrayNode list = o.putArray("relays");
        now.forEach(list::add);
        if (json) {
          HostSupport.printJson(out(), o);
        }
        return code;
      }
    }
  }

  /** Pins the relay key and makes it the host's only relay (docs/protocol.md §7.1). */
  @Command(name = "set", mixinStandardHelpOptions = true,
      description = {"Use this relay (only this one): show its key fingerprint and pin it.",
          "With --key the fingerprint must match (no trust on first use). A changed key needs --key NEW or --confirm.",
          "Mail queued for other relays moves to this one on the next `run`."})
  static final class RelaySet extends RelayPinning {
    @Override
    List<String> relaysAfter(List<String> current, String u) {
      return List.of(u);
    }
  }

  /** Pins one more relay (issue 21 part 1): every message then goes to every relay of the host. */
  @Command(name = "add", mixinStandardHelpOptions = true,
      description = {"Use one more relay: show its key fingerprint and pin it.",
          "Every message then goes to every relay of this host, and every relay is pulled; a relay that is down"
              + " does not hold up the others. With --fingerprint it must match (no trust on first use)."})
  static final class RelayAdd extends RelayPinning {
    @Override
    List<String> relaysAfter(List<String> current, String u) {
      List<String> l = new java.util.ArrayList<>(current);
      if (!l.contains(u)) {
        l.add(u);
      }
      return l;
    }
  }

  /** Stops using one relay; its pin stays (re-adding it checks the key again). */
  @Command(name = "remove", mixinStandardHelpOptions = true,
      description = {"Stop using a relay. Its queued mail goes through this host's other relays on the next `run`;"
          + " its pin is kept. A host keeps at least one relay (use `relay set` to move to another)."})
  static final class RelayRemove extends Base {
    @Parameters(index = "0", paramLabel = "URL", converter = RelayUrl.class, description = "Relay base URL.")
    String url;

    @Override
    int run() throws Exception {
      try (HostStore s = store()) {
        String u = RelayPins.normalizeUrl(url);
        List<String> current = s.relayUrls();
        if (!current.contains(u)) {
          throw new HostSupport.Failure(HostSupport.USAGE, u + " is not a relay of this host (`host relay list`)");
        }
        if (current.size() == 1) {
          throw new HostSupport.Failure(HostSupport.USAGE, u + " is this host's only relay; to move to another use"
              + " `host relay set URL`");
        }
        List<String> after = new java.util.ArrayList<>(current);
        after.remove(u);
        s.putRelayUrls(after);
        err().println("[mbxrelay] relay " + u + " no longer used; its queued mail goes through "
            + String.join(", ", after) + " on the next run");
        if (json) {
          ObjectNode o = Json.MAPPER.createObjectNode().put("removed", u);
          ArrayNode list = o.putArray("relays");
          after.forEach(list::add);
          HostSupport.printJson(out(), o);
        }
        return HostSupport.OK;
      }
    }
  }

  /** Lists the host's relays with their state. */
  @Command(name = "list", mixinStandardHelpOptions = true, description = "The relays this host uses, with their state.")
  static final class RelayList extends Base {
    @Override
    int run() throws Exception {
      try (HostStore s = store()) {
        ArrayNode arr = Json.MAPPER.createArrayNode();
        for (String u : s.relayUrls()) {
          ObjectNode r = relayJson(s, u);
          arr.add(r);
          err().println("[mbxrelay] " + relayLine(r));
        }
        if (arr.isEmpty()) {
          err().println("[mbxrelay] no relay set: run `mbxrelay host relay set URL`");
        }
        if (json) {
          ObjectNode o = Json.MAPPER.createObjectNode();
          o.set("relays", arr);
          HostSupport.printJson(out(), o);
        }
        return HostSupport.OK;
      }
    }
  }

  /**
   * One relay of the host as JSON: {@code url, fingerprint, epoch, state, last_error, last_ok_at, received_through,
   * acked_through} ({@code state}: the last run's session state, {@code key-changed} while a changed key waits for
   * confirmation, {@code not-pinned}, or {@code new} before the first run).
   */
  static ObjectNode relayJson(HostStore s, String u) throws SQLException {
    ObjectNode r = Json.MAPPER.createObjectNode().put("url", u);
    java.util.Optional<HostStore.RelayState> st = s.relay(u);
    if (st.isEmpty()) {
      return r.put("state", "not-pinned");
    }
    r.put("fingerprint", Fingerprint.ofB64(st.get().relayPubkey())).put("epoch", st.get().epoch());
    String state = st.get().presentedPubkey() != null ? "key-changed"
        : st.get().lastSession() != null ? st.get().lastSession() : "new";
    r.put("state", state);
    if (st.get().presentedPubkey() != null) {
      r.put("presented_fingerprint", Fingerprint.ofB64(st.get().presentedPubkey()));
    }
    r.put("last_error", st.get().lastError());
    if (st.get().lastOkAt() != null) {
      r.put("last_ok_at", st.get().lastOkAt());
    }
    s.position(u).filter(p -> p.receivedThrough() >= 0 && p.ackedThrough() >= 0)
        .ifPresent(p -> r.put("received_through", p.receivedThrough()).put("acked_through", p.ackedThrough()));
    return r;
  }

  /** One relay for people: {@code URL (key FP, epoch E): STATE[, received through N][; last problem: …]}. */
  static String relayLine(ObjectNode r) {
    if (!r.has("fingerprint")) {
      return "relay " + r.get("url").asText() + ": no key pinned (run `mbxrelay host relay add "
          + r.get("url").asText() + "`)";
    }
    return "relay " + r.get("url").asText() + " (key " + r.get("fingerprint").asText() + ", epoch "
        + r.path("epoch").asText("-") + "): " + r.get("state").asText()
        + (r.has("presented_fingerprint") ? " (presents " + r.get("presented_fingerprint").asText()
            + "; not used until confirmed)" : "")
        + (r.has("received_through") ? ", received through " + r.get("received_through").asLong() + ", acked through "
            + r.get("acked_through").asLong() : ", nothing received yet")
        + (r.path("last_error").isTextual() ? "; last problem: " + r.get("last_error").asText() : "");
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

    @Option(names = "--name", required = true, paramLabel = "NAME",
        description = "The peer's host name (as it named itself at `host init`; mail to NAME@HOST goes to it).")
    String name;

    @Option(names = "--enc-key", paramLabel = "ENC_PUB", description = "Pin the peer's X25519 encryption key (base64;"
        + " its `host init` prints it). Without it, mail is sealed for the key the peer advertises on the relay,"
        + " checked against PUBKEY.")
    String encKey;

    @Option(names = "--rename", description = "PUBKEY is already a peer under another name: rename it to NAME.")
    boolean rename;

    @Override
    int run() throws Exception {
      if (!B64.isPubkey(pubkey)) {
        throw new HostSupport.Failure(HostSupport.USAGE, "PUBKEY must be a base64 32-byte key");
      }
      if (!io.mbxrelay.wire.ReceiptCheck.HOST_RE.matcher(name).matches()) {
        throw new HostSupport.Failure(HostSupport.USAGE,
            "--name must be a host name ([A-Za-z0-9][A-Za-z0-9._-]{0,62})");
      }
      if (encKey != null && !EncKeyPair.isSealable(encKey)) {
        throw new HostSupport.Failure(HostSupport.USAGE,
            "--enc-key must be a base64 32-byte X25519 key (not a low-order point)");
      }
      String was;
      try (HostStore s = store(); HostAgent a = agent(this, s, key(), null)) {
        was = s.peer(pubkey).map(HostStore.Peer::name).orElse(null);
        if (was != null && !was.equals(name)) {
          if (!rename) {
            throw new HostSupport.Failure(HostSupport.USAGE, "peer " + Fingerprint.ofB64(pubkey) + " is already"
                + " accepted as " + was + "; nothing changed (pass --rename to rename it to " + name + ")");
          }
          a.renamePeer(pubkey, name);
        }
        a.addPeer(pubkey, name, encKey);
      }
      err().println("[mbxrelay] peer " + name + " (" + Fingerprint.ofB64(pubkey) + ") "
          + (was == null ? "accepted" : !was.equals(name) ? "renamed from " + was : "already accepted")
          + (encKey != null ? ", encryption key pinned" : ""));
      return HostSupport.OK;
    }
  }

  static HostAgent agent(Base b, HostStore s, Ed25519KeyPair key, StandaloneTransports t) throws Exception {
    return agent(b, s, key, t, m -> {
      throw new IllegalStateException("this command does not receive mail");
    });
  }

  static HostAgent agent(Base b, HostStore s, Ed25519KeyPair key, StandaloneTransports t, SealedInbox.Handler h)
      throws Exception {
    return agent(b, s, key, t, h, HostAgent.Options.DEFAULT_KEY_WAIT_ALERT_MS);
  }

  static HostAgent agent(Base b, HostStore s, Ed25519KeyPair key, StandaloneTransports t, SealedInbox.Handler h,
      long keyWaitAlertMs) throws Exception {
    String name = Base.setting(s, "host_name", "run `mbxrelay host init` first");
    HostAgent.Options o = new HostAgent.Options(name, "", Clock.systemUTC(), new java.security.SecureRandom(), null,
        keyWaitAlertMs);
    RelayTransportFactoryHolder f = new RelayTransportFactoryHolder(t);
    return new HostAgent(s, key, s.relayUrls(), o, f::open, new SealedInbox(s, h, true, Clock.systemUTC()));
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

  /** {@code mbxrelay host send --to NAME@HOST --body TEXT | --body-file F}. */
  @Command(name = "send", mixinStandardHelpOptions = true,
      description = {"Seal a message for a peer host and queue it durably (pushed by `run`).",
          "The body is sealed for the peer's encryption key (pinned with `peer add --enc-key`, else the key the peer"
              + " advertises on the relay, verified against its host key); until a key is known the message waits"
              + " on this host (`status`, `doctor`). The subject, addresses and kind are NOT encrypted."})
  static final class Send extends Base {
    @Option(names = "--to", required = true, paramLabel = "NAME@HOST",
        description = "Recipient address; HOST is the name of an accepted peer (`peer add --name HOST`).")
    String to;

    static final class Body {
      @Option(names = "--body", paramLabel = "TEXT", description = "The message text.")
      String text;

      @Option(names = "--body-file", paramLabel = "FILE", description = "Read the message (UTF-8) from FILE; - is"
          + " standard input.")
      Path file;
    }

    @picocli.CommandLine.ArgGroup(exclusive = true, multiplicity = "1")
    Body body;

    @Option(names = "--subject", defaultValue = "message", paramLabel = "TEXT",
        description = "Subject, one line (default: ${DEFAULT-VALUE}); NOT encrypted.")
    String subject;

    @Option(names = "--kind", defaultValue = "message", paramLabel = "KIND",
        description = "message, request, reply, status, decision, alert or task (default: ${DEFAULT-VALUE}).")
    String kind;

    @Option(names = "--from", defaultValue = "owner", paramLabel = "NAME",
        description = "Sender name at this host (default: ${DEFAULT-VALUE}).")
    String from;

    @Override
    int run() throws Exception {
      int at = to.indexOf('@');
      if (at <= 0 || at != to.lastIndexOf('@') || at == to.length() - 1) {
        throw new HostSupport.Failure(HostSupport.USAGE, "--to must be NAME@HOST");
      }
      String text = bodyText();
      try (HostStore s = store(); HostAgent a = agent(this, s, key(), null)) {
        String host = setting(s, "host_name", "run `mbxrelay host init` first");
        if (s.relayUrls().isEmpty()) {
          throw new HostSupport.Failure(HostSupport.USAGE, "no relay set: run `mbxrelay host relay set URL` first");
        }
        String peerName = to.substring(at + 1);
        List<HostStore.Peer> peers = s.peersNamed(peerName);
        if (peers.isEmpty()) {
          throw new HostSupport.Failure(HostSupport.USAGE, "no accepted peer named " + peerName
              + ": run `mbxrelay host peer add PUBKEY --name " + peerName + "` first");
        }
        if (peers.size() > 1) {
          throw new HostSupport.Failure(HostSupport.USAGE, peers.size() + " accepted peers are named " + peerName
              + "; names must be unique to address mail");
        }
        HostAgent.Queued q;
        try {
          q = a.sendMessage(new SealedEnvelope.Draft(from + "@" + host, List.of(to), kind, subject, text, null, null,
              false, null), peers.get(0).hostPubkey());
        } catch (IllegalArgumentException e) {
          throw new HostSupport.Failure(HostSupport.USAGE, e.getMessage());
        }
        err().println("[mbxrelay] queued message " + q.msgId() + " for " + to + (q.sealed()
            ? " (sealed for its pinned encryption key)"
            : " (sealed once its encryption key is looked up on the relay by `run`)"));
        if (json) {
          HostSupport.printJson(out(), Json.MAPPER.createObjectNode().put("msg_id", q.msgId()).put("to", to)
              .put("sealed", q.sealed()));
        }
        return HostSupport.OK;
      }
    }

    private String bodyText() throws IOException, HostSupport.Failure {
      if (body.text != null) {
        return body.text;
      }
      byte[] b = body.file.toString().equals("-") ? readStdin() : readFile(body.file);
      if (!io.mbxrelay.wire.Utf8.isValid(b)) {
        throw new HostSupport.Failure(HostSupport.USAGE, "--body-file is not UTF-8 text");
      }
      return new String(b, java.nio.charset.StandardCharsets.UTF_8);
    }

    private static byte[] readStdin() throws IOException, HostSupport.Failure {
      byte[] b = System.in.readNBytes(io.mbxrelay.wire.EnvelopeCheck.MAX_BODY + 1); // bounded: never more than that
      if (b.length > io.mbxrelay.wire.EnvelopeCheck.MAX_BODY) {
        throw new HostSupport.Failure(HostSupport.USAGE, "the body on stdin is over 256 KB ("
            + io.mbxrelay.wire.EnvelopeCheck.MAX_BODY + " bytes)");
      }
      return b;
    }

    private static byte[] readFile(Path f) throws HostSupport.Failure {
      try {
        if (Files.size(f) > io.mbxrelay.wire.EnvelopeCheck.MAX_BODY) {
          throw new HostSupport.Failure(HostSupport.USAGE, "--body-file is over 256 KB ("
              + io.mbxrelay.wire.EnvelopeCheck.MAX_BODY + " bytes)");
        }
        return Files.readAllBytes(f);
      } catch (IOException e) {
        throw new HostSupport.Failure(HostSupport.USAGE, "cannot read --body-file " + f + ": " + e.getMessage());
      }
    }
  }

  /** {@code mbxrelay host run [--once] [--exec CMD]}. */
  @Command(name = "run", mixinStandardHelpOptions = true,
      description = {"Tick against the relay: seal waiting mail, push the outbox, pull, open, receive, ack; loop until"
          + " stopped (--once: one tick).",
          "Each received message is opened (sealed for this host, signed by the peer's host key) and its plaintext"
              + " body written to stdout (--json: one JSON object per message), or given to --exec; a line about it"
              + " goes to stderr. Mail that does not open is quarantined (`host quarantine`). A message is handed"
              + " over at least once: after a crash before its commit it is handed over again."})
  static final class Run extends Base {
    @Option(names = "--once", description = "One tick, then exit.")
    boolean once;

    @Option(names = "--exec", paramLabel = "CMD", description = "Run CMD (with sh -c) once per received message,"
        + " body on its stdin, MBX_MSG_ID, MBX_FROM, MBX_PEER, MBX_SUBJECT, MBX_KIND in its environment. Exit 0"
        + " accepts the message (a delivery receipt goes back); any other exit, or running over --exec-timeout-ms,"
        + " leaves it to be offered again on the next tick.")
    String exec;

    @Option(names = "--exec-timeout-ms", defaultValue = "60000", paramLabel = "MS",
        description = "Longest run of one --exec (default: ${DEFAULT-VALUE}).")
    void execTimeoutMs(long ms) {
      execTimeoutMs = atLeastOne("--exec-timeout-ms", ms);
    }

    long execTimeoutMs = 60000;

    /**
     * A message was not handed over (--exec failed, or stdout is closed); the agent rolls the item back and offers it
     * again. {@code stop}: handing over cannot work in this process (stdout closed), so {@code run} ends.
     */
    static final class ExecFailed extends Exception {
      private static final long serialVersionUID = 1L;

      final boolean stop;

      ExecFailed(String why, boolean stop) {
        super(why, null, false, false);
        this.stop = stop;
      }
    }

    private HostApplication.Verdict deliver(SealedInbox.Message m) throws Exception {
      SealedEnvelope.Opened e = m.envelope();
      err().println("[mbxrelay] message " + e.id() + " from " + e.from() + " (peer " + m.senderName()
          + ", signature verified): " + e.subject());
      if (exec != null) {
        execute(m);
      } else if (json) {
        HostSupport.printJson(out(), Json.MAPPER.createObjectNode().put("msg_id", e.id()).put("from", e.from())
            .put("peer", m.senderName()).put("kind", e.kind()).put("subject", e.subject()).put("body", e.body()));
      } else {
        out().print(e.body());
        if (!e.body().endsWith("\n")) {
          out().println();
        }
        out().flush();
      }
      if (exec == null && out().checkError()) { // e.g. `host run | head -1` after head exited: nobody got it
        throw new ExecFailed("stdout is closed: message " + e.id() + " was not handed over", true);
      }
      err().flush();
      return new HostApplication.Verdict.Accepted(null);
    }

    private void execute(SealedInbox.Message m) throws Exception {
      SealedEnvelope.Opened e = m.envelope();
      ProcessBuilder pb = new ProcessBuilder("sh", "-c", exec).redirectOutput(ProcessBuilder.Redirect.INHERIT)
          .redirectError(ProcessBuilder.Redirect.INHERIT);
      pb.environment().put("MBX_MSG_ID", e.id());
      pb.environment().put("MBX_FROM", e.from());
      pb.environment().put("MBX_PEER", m.senderName());
      pb.environment().put("MBX_SUBJECT", e.subject());
      pb.environment().put("MBX_KIND", e.kind());
      Process p = pb.start();
      // the body is written from its own thread: a command that does not read a body larger than the pipe buffer
      // would otherwise block this write past --exec-timeout-ms (its kill closes the pipe and ends the writer)
      Thread writer = new Thread(() -> {
        try (java.io.OutputStream in = p.getOutputStream()) {
          in.write(e.body().getBytes(java.nio.charset.StandardCharsets.UTF_8));
        } catch (IOException closedEarly) {
          // the command need not read its stdin; its exit status decides
        }
      }, "exec-stdin");
      writer.setDaemon(true);
      writer.start();
      if (!p.waitFor(execTimeoutMs, java.util.concurrent.TimeUnit.MILLISECONDS)) {
        // its children first: one still holding the stdin pipe would keep the body write (and the stream's close
        // inside destroy) blocked until it ends
        p.descendants().forEach(ProcessHandle::destroyForcibly);
        p.destroyForcibly();
        throw new ExecFailed("--exec ran over " + execTimeoutMs + " ms for message " + e.id(), false);
      }
      if (p.exitValue() != 0) {
        throw new ExecFailed("--exec exited " + p.exitValue() + " for message " + e.id(), false);
      }
    }

    private static ExecFailed execFailure(Throwable t) {
      for (Throwable c = t; c != null; c = c.getCause()) {
        if (c instanceof ExecFailed f) {
          return f;
        }
      }
      return null;
    }

    @Option(names = "--interval-ms", defaultValue = "5000", paramLabel = "MS", description = "Pause between ticks."
        + " With a relay that offers long-poll pulls the pause is a wait on the relay that ends as soon as mail"
        + " arrives (at most 25 s).")
    void intervalMs(long ms) {
      intervalMs = atLeastOne("--interval-ms", ms);
    }

    long intervalMs = 5000;

    @Option(names = "--key-wait-alert-ms", defaultValue = "86400000", paramLabel = "MS",
        description = "Alert (status, doctor) about a message still waiting for its peer's encryption key after this"
            + " long; it keeps waiting (default: ${DEFAULT-VALUE}, 24 h).")
    void keyWaitAlertMs(long ms) {
      keyWaitAlertMs = atLeastOne("--key-wait-alert-ms", ms);
    }

    long keyWaitAlertMs = HostAgent.Options.DEFAULT_KEY_WAIT_ALERT_MS;

    /** Each relay's state for the tick line, when there are several: {@code ; relays: URL ok, URL unreachable}. */
    private static String relaysSummary(TickReport r) {
      return "; relays: " + String.join(", ", r.relays().stream().map(x -> x.url() + " " + x.session()).toList());
    }

    /** A duration option below 1 ms is a usage error (exit 2), not a silent 100 ms. */
    private long atLeastOne(String option, long ms) {
      if (ms < 1) {
        throw new picocli.CommandLine.ParameterException(spec.commandLine(), option + " must be at least 1 (is " + ms
            + ")");
      }
      return ms;
    }

    @Override
    int run() throws Exception {
      Ed25519KeyPair key = key();
      try (HostStore s = store(); StandaloneTransports t = new StandaloneTransports(key, Clock.systemUTC());
          HostAgent a = agent(this, s, key, t, this::deliver, keyWaitAlertMs)) {
        if (s.relayUrls().isEmpty()) {
          throw new HostSupport.Failure(HostSupport.USAGE, "no relay set: run `mbxrelay host relay set URL` first");
        }
        int wait = (int) Math.max(1, intervalMs / 1000);
        String lastSession = null;
        if (!once) {
          err().println("[mbxrelay] running against " + String.join(", ", s.relayUrls()) + "; a line per tick that"
              + " moved something or changed the session state (Ctrl-C stops)");
        }
        while (true) {
          TickReport r;
          try {
            r = a.tick(once ? 0 : wait);
          } catch (Exception e) {
            ExecFailed f = execFailure(e);
            if (f == null) {
              throw e;
            }
            err().println("[mbxrelay] " + f.getMessage() + "; the message is offered again on the next "
                + (f.stop ? "run" : "tick"));
            err().flush();
            if (once || f.stop) {
              return HostSupport.REFUSED;
            }
            Thread.sleep(Math.max(100, intervalMs));
            continue;
          }
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
                + (r.relays().size() > 1 ? relaysSummary(r) : r.receivedThrough() < 0 ? ""
                    : ", received through " + r.receivedThrough()));
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
        List<String> urls = s.relayUrls();
        String url = urls.isEmpty() ? null : urls.get(0);
        o.put("relay", url);
        ArrayNode relayArr = o.putArray("relays");
        for (String u : urls) {
          relayArr.add(relayJson(s, u));
        }
        if (url != null) { // the first relay also at the top, as before there were several
          ObjectNode first = (ObjectNode) relayArr.get(0);
          if (first.has("fingerprint")) {
            o.put("relay_fingerprint", first.get("fingerprint").asText()).put("epoch", first.path("epoch").asText(null));
          }
          // a position is never below 0; one that says so has no session behind it and is not shown (issue 12 item 6)
          if (first.has("received_through")) {
            o.put("received_through", first.get("received_through").asLong())
                .put("acked_through", first.get("acked_through").asLong());
          }
        }
        if (urls.size() <= 1) {
          err().println("[mbxrelay] host " + o.get("host").asText() + "; relay " + (url == null ? "not set" : url
              + (o.has("relay_fingerprint") ? " (key " + o.get("relay_fingerprint").asText() + ", epoch "
              + o.path("epoch").asText("-") + ")" : ""))
              + (o.has("received_through") ? "; received through " + o.get("received_through").asLong()
              + ", acked through " + o.get("acked_through").asLong() : url == null ? "" : "; nothing received yet"));
        } else {
          err().println("[mbxrelay] host " + o.get("host").asText() + "; " + urls.size() + " relays (every message"
              + " goes to each)");
          for (com.fasterxml.jackson.databind.JsonNode r : relayArr) {
            err().println("[mbxrelay] " + relayLine((ObjectNode) r));
          }
        }
        ArrayNode rows = o.putArray("outbox");
        java.util.Map<String, Integer> counts = new java.util.TreeMap<>();
        for (HostStore.DraftRow d : s.drafts()) {
          String target = s.peers().getOrDefault(d.targetPubkey(), Fingerprint.ofB64(d.targetPubkey()));
          rows.addObject().put("kind", "envelope").put("msg_id", d.msgId()).put("target", target)
              .put("state", "waiting-for-key").put("attempts", d.attempts()).put("last_error", d.lastError());
          counts.merge("waiting-for-key", 1, Integer::sum);
          err().println("[mbxrelay] envelope " + d.msgId() + " -> " + target + ": waiting-for-key ("
              + d.lastError() + ")");
        }
        // one entry per item and target; with several relays its state is the message's (settled when the receipt
        // came through any relay) and each relay's row is listed under it
        java.util.Map<String, List<HostStore.OutboxRow>> items = new java.util.LinkedHashMap<>();
        for (HostStore.OutboxRow r : s.outbox()) {
          items.computeIfAbsent(r.kind() + "|" + r.itemId() + "|" + r.targetPubkey(), x -> new java.util.ArrayList<>())
              .add(r);
        }
        for (List<HostStore.OutboxRow> group : items.values()) {
          HostStore.OutboxRow r = representative(group);
          String state = r.state();
          if (r.kind().equals("envelope")) {
            counts.merge(state, 1, Integer::sum);
          }
          ObjectNode e = rows.addObject().put("kind", r.kind()).put("msg_id", r.msgId())
              .put("target", s.peers().getOrDefault(r.targetPubkey(), Fingerprint.ofB64(r.targetPubkey())))
              .put("state", state).put("attempts", r.attempts()).put("last_error", r.lastError());
          ArrayNode per = e.putArray("relays");
          StringBuilder detail = new StringBuilder();
          for (HostStore.OutboxRow x : group) {
            per.addObject().put("relay", x.relay()).put("state", x.state()).put("attempts", x.attempts())
                .put("last_error", x.lastError());
            detail.append(detail.length() == 0 ? " [" : ", ").append(x.relay()).append(": ").append(x.state())
                .append(x.lastError() == null ? "" : " (" + x.lastError() + ")");
          }
          err().println("[mbxrelay] " + r.kind() + " " + r.msgId() + " -> " + e.get("target").asText() + ": " + state
              + (group.size() > 1 ? detail + "]" : r.lastError() == null ? "" : " (" + r.lastError() + ")"));
        }
        if (!counts.isEmpty()) {
          ObjectNode c = o.putObject("sent");
          counts.forEach(c::put);
          err().println("[mbxrelay] sent messages: " + String.join(", ", counts.entrySet().stream()
              .map(x -> x.getValue() + " " + x.getKey()).toList())
              + " (settled = the peer's delivery receipt arrived; unconfirmed = none by the deadline)");
        }
        ArrayNode inbox = o.putArray("inbox");
        for (InboxApplication.Message m : s.inbox()) {
          ObjectNode e = inbox.addObject().put("msg_id", m.msgId()).put("from", s.peers().getOrDefault(
              m.senderPubkey(), Fingerprint.ofB64(m.senderPubkey())));
          if (m.body() != null) {
            e.put("from_address", m.from()).put("subject", m.subject()).put("body", m.body());
          }
          String line = m.body() == null ? "" : m.body().strip().replaceAll("[\\p{Cntrl}\\u2028\\u2029]+", " ");
          err().println("[mbxrelay] inbox " + m.msgId() + " from " + e.get("from").asText()
              + (m.body() == null ? " (sealed, not opened)" : ": " + (line.length() > 200 ? line.substring(0, 200)
              + "…" : line)));
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

  /** States in the order a message's own state is read from its rows: the first one any row is in. */
  private static final List<String> STATE_ORDER = List.of("settled", "relay-accepted", "sent", "repush", "pending",
      "unconfirmed", "expired", "undelivered", "dropped");

  /** The row whose state is the item's (settled through any relay, else accepted by one, else still queued, …). */
  static HostStore.OutboxRow representative(List<HostStore.OutboxRow> group) {
    HostStore.OutboxRow best = group.get(0);
    for (HostStore.OutboxRow r : group) {
      int ri = STATE_ORDER.indexOf(r.state());
      int bi = STATE_ORDER.indexOf(best.state());
      if (ri >= 0 && (bi < 0 || ri < bi)) {
        best = r;
      }
    }
    return best;
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
        List<String> urls = s.relayUrls();
        if (urls.isEmpty()) {
          throw new HostSupport.Failure(HostSupport.USAGE, "no relay set: run `mbxrelay host relay set URL` first");
        }
        List<String> lines = HostAgent.doctor(s, urls);
        for (String l : lines) {
          err().println("[mbxrelay] " + l);
        }
        ArrayNode rs = Json.MAPPER.createArrayNode();
        for (String u : urls) {
          boolean ok = HostAgent.relayDoctor(s, u).isEmpty();
          if (ok) {
            err().println("[mbxrelay] relay " + u + ": ok");
          }
          rs.add(relayJson(s, u).put("ok", ok));
        }
        if (json) {
          ObjectNode o = Json.MAPPER.createObjectNode().put("relay", urls.get(0)).put("ok", lines.isEmpty());
          o.set("relays", rs);
          ArrayNode p = o.putArray("problems");
          lines.forEach(p::add);
          HostSupport.printJson(out(), o);
        }
        return lines.isEmpty() ? HostSupport.OK : HostSupport.REFUSED;
      }
    }
  }
}
