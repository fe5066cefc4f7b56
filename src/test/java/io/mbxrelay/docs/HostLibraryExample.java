package io.mbxrelay.docs;

import io.mbxrelay.crypto.Ed25519KeyPair;
import io.mbxrelay.host.BlockingRelayClient;
import io.mbxrelay.host.HostAgent;
import io.mbxrelay.host.HostApplication;
import io.mbxrelay.host.HostKeys;
import io.mbxrelay.host.HostStore;
import io.mbxrelay.host.InfoResult;
import io.mbxrelay.host.RelayPin;
import io.mbxrelay.host.SealedInbox;
import io.mbxrelay.host.StandaloneTransports;
import io.mbxrelay.host.TickReport;
import io.mbxrelay.host.seal.SealedEnvelope;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.Statement;
import java.time.Clock;
import java.util.ArrayList;
import java.util.List;

/**
 * Host "alpha": sends beta one message through every relay given, prints what arrives meanwhile, and ends once
 * beta's delivery receipt has settled the message (or after two minutes). A real application keeps ticking.
 * Usage: {@code java HostLibraryExample DIR BETA_HOST_KEY URL=FINGERPRINT [URL=FINGERPRINT ...]}
 */
public final class HostLibraryExample {

  public static void main(String[] args) throws Exception {
    Path dir = Path.of(args[0]);          // this host's directory, e.g. ~/.local/share/myapp
    String betaHostKey = args[1];         // beta's host key (base64), as beta's `host init` printed it
    Files.createDirectories(dir);
    Ed25519KeyPair key = HostKeys.loadOrCreate(dir.resolve("host.key")).key();   // created 0600 on first use
    try (HostStore store = HostStore.open(dir.resolve("host.db"));              // owner-only SQLite file
        StandaloneTransports transports = new StandaloneTransports(key, Clock.systemUTC())) {

      // 1. Pin each relay's key by the fingerprint its operator gave (`mbxrelay serve` prints it): no trust on
      //    first use. Once pinned, a relay presenting another key is not used until the owner confirms.
      List<String> relays = new ArrayList<>();
      for (String arg : List.of(args).subList(2, args.length)) {
        String url = arg.substring(0, arg.lastIndexOf('='));
        String fingerprint = arg.substring(arg.lastIndexOf('=') + 1);
        try (BlockingRelayClient relay = new BlockingRelayClient(url, "alpha", key,
            new RelayPin.Fingerprint(fingerprint), 30_000)) {
          if (!(relay.info() instanceof InfoResult.Ok info)) {
            throw new IllegalStateException(url + " is not the relay with key " + fingerprint);
          }
          HostAgent.PinOutcome pin = HostAgent.pin(store, url, info.info().relayPubkey(), fingerprint, false,
              System.currentTimeMillis());
          if (!(pin instanceof HostAgent.PinOutcome.Pinned || pin instanceof HostAgent.PinOutcome.Unchanged)) {
            throw new IllegalStateException("relay key not as expected: " + pin);
          }
        }
        relays.add(url);
      }

      // 2. The application's own table lives in host.db too; create it before the first tick.
      try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + store.file());
          Statement s = c.createStatement()) {
        s.execute("CREATE TABLE IF NOT EXISTS my_messages(id TEXT PRIMARY KEY, sender TEXT, body TEXT)");
      }

      // 3. Each message arrives opened and verified, inside the store transaction of its item: the row below
      //    commits with the receive checkpoint, once per message whichever relay brought it first.
      SealedInbox inbox = new SealedInbox(store, m -> {
        try (PreparedStatement ps = m.connection().prepareStatement(
            "INSERT INTO my_messages(id, sender, body) VALUES(?, ?, ?)")) {
          ps.setString(1, m.envelope().id());
          ps.setString(2, m.senderName());          // the peer whose host key signed it
          ps.setString(3, m.envelope().body());     // plaintext
          ps.executeUpdate();
        }
        System.out.println(m.senderName() + ": " + m.envelope().body());
        return new HostApplication.Verdict.Accepted(null);   // a delivery receipt goes back to the sender
      }, false, Clock.systemUTC());

      // 4. The agent: every message goes to every relay; each relay is pulled; one that is down holds up nothing.
      try (HostAgent agent = new HostAgent(store, key, relays, HostAgent.Options.of("alpha"), transports, inbox)) {
        agent.addPeer(betaHostKey, "beta");         // its mail is accepted, its receipts verified
        HostAgent.Queued q = agent.sendMessage(      // durable once it returns; sealed for beta's key
            SealedEnvelope.Draft.message("owner@alpha", "bob@beta", "status", "the build is green"), betaHostKey);
        long end = System.currentTimeMillis() + 120_000;
        while (!settled(store, q.msgId()) && System.currentTimeMillis() < end) {
          TickReport r = agent.tick(5);             // push, pull, receive, ack on every relay; first waits up to
          r.notes().forEach(System.err::println);   // 5 s on a relay that offers long-poll pulls
          if (r.relayPullWaitSeconds() == 0 || !r.pulledAll()) {
            Thread.sleep(1_000);                    // no long-poll to wait on (other relays, or all down): a timer
          }
        }
        store.alerts().forEach(a -> System.err.println(a.text()));   // unconfirmed, undelivered, waiting-for-key …
      }
    }
  }

  /** Whether beta's delivery receipt for the message came back (through any relay). */
  static boolean settled(HostStore store, String msgId) throws Exception {
    return store.outboxFor(msgId).stream().anyMatch(r -> r.state().equals("settled"));
  }
}
