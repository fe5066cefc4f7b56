package io.mbxrelay.cli;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.mbxrelay.crypto.Fingerprint;
import io.mbxrelay.host.BlockingRelayClient;
import io.mbxrelay.host.EnrolResult;
import io.mbxrelay.host.HostKeyException;
import io.mbxrelay.host.HostKeys;
import io.mbxrelay.wire.Json;
import io.mbxrelay.wire.ReceiptCheck;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import java.util.regex.Pattern;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code mbxrelay host enrol} (docs/protocol.md §4.1, §6 session open): creates the host key if missing, checks or pins the
 * relay key, and enrols through the challenge. Stdout: one JSON object {@code {host, host_pubkey, host_fingerprint,
 * relay, relay_pubkey, relay_fingerprint, epoch}}.
 */
@Command(name = "enrol", mixinStandardHelpOptions = true,
    description = {"Enrol this host on a relay (creates the host key file if missing).",
        "Without --relay-key and without a stored pin, the relay key is trusted on first use and pinned in "
            + "relays.json next to the key file."},
    exitCodeListHeading = "Exit codes:%n",
    exitCodeList = {"0:enrolled", "1:relay refused, relay key mismatch or relay unreachable",
        "2:usage or local configuration error"})
public final class HostEnrolCommand implements Callable<Integer> {
  private static final Pattern OWNER_FP_RE = Pattern.compile("[A-Za-z0-9._-]{0,64}");

  @Spec CommandSpec spec;

  @Option(names = "--relay", required = true, paramLabel = "URL", converter = RelayUrl.class,
      description = "Relay base URL.")
  String relay;

  @Option(names = "--name", required = true, paramLabel = "NAME", description = "Host name to enrol under.")
  String name;

  @Option(names = "--key-file", paramLabel = "FILE",
      description = "Host key file (default: ~/.local/share/mbxrelay-host/host.key); created 0600 if missing.")
  Path keyFile;

  @Option(names = "--owner-fp", paramLabel = "FP", defaultValue = "", description = "Owner key fingerprint (optional).")
  String ownerFp;

  @Option(names = "--relay-key", paramLabel = "FINGERPRINT",
      description = "Expected relay key fingerprint: pins it without trust on first use; a mismatch is refused.")
  String relayKey;

  @Override
  public Integer call() {
    PrintWriter out = spec.commandLine().getOut();
    PrintWriter err = spec.commandLine().getErr();
    try {
      if (!ReceiptCheck.HOST_RE.matcher(name).matches()) {
        throw new HostSupport.Failure(HostSupport.USAGE, "--name must match [A-Za-z0-9][A-Za-z0-9._-]{0,62}");
      }
      if (!OWNER_FP_RE.matcher(ownerFp).matches()) {
        throw new HostSupport.Failure(HostSupport.USAGE, "--owner-fp must match [A-Za-z0-9._-]{0,64}");
      }
      Path file = HostSupport.keyFile(keyFile);
      HostSupport.Pinning pinning = HostSupport.pinning(relay, file, relayKey, true);
      HostKeys.Loaded loaded;
      try {
        loaded = HostKeys.loadOrCreate(file);
      } catch (HostKeyException e) {
        throw new HostSupport.Failure(HostSupport.USAGE, e.getMessage());
      } catch (IOException e) {
        throw new HostSupport.Failure(HostSupport.USAGE, "cannot read or create host key " + file + ": "
            + e.getClass().getSimpleName());
      }
      if (loaded.created()) {
        err.println("[mbxrelay] created host key " + file + " (fingerprint " + loaded.key().fingerprint() + ")");
      }
      EnrolResult r;
      try (BlockingRelayClient client = new BlockingRelayClient(relay, name, loaded.key(), pinning.pin(),
          HostSupport.REQUEST_TIMEOUT_MS)) {
        r = client.enrol(ownerFp);
        if (!(r instanceof EnrolResult.Enrolled)) {
          throw HostSupport.failureOf(r, "the enrolment");
        }
        HostSupport.savePin(pinning, relay, client.relayKey(), err);
      } catch (BlockingRelayClient.RelayUnreachable e) {
        throw new HostSupport.Failure(HostSupport.REFUSED, "relay unreachable: " + e.getMessage());
      } catch (IllegalArgumentException e) {
        throw new HostSupport.Failure(HostSupport.USAGE, e.getMessage());
      }
      EnrolResult.Enrolled ok = (EnrolResult.Enrolled) r;
      ObjectNode o = Json.MAPPER.createObjectNode().put("host", ok.host()).put("host_pubkey", ok.hostPubkey())
          .put("host_fingerprint", loaded.key().fingerprint()).put("relay", relay)
          .put("relay_pubkey", ok.relayPubkey()).put("relay_fingerprint", Fingerprint.ofB64(ok.relayPubkey()))
          .put("epoch", ok.epoch());
      HostSupport.printJson(out, o);
      err.println("[mbxrelay] enrolled " + ok.host() + " (" + loaded.key().fingerprint() + ") at " + relay
          + "; relay key " + Fingerprint.ofB64(ok.relayPubkey()));
      err.flush();
      return HostSupport.OK;
    } catch (HostSupport.Failure f) {
      return HostSupport.fail(err, f);
    }
  }
}
