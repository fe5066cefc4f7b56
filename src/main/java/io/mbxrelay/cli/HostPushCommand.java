package io.mbxrelay.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.mbxrelay.crypto.Ed25519KeyPair;
import io.mbxrelay.crypto.Fingerprint;
import io.mbxrelay.host.BlockingRelayClient;
import io.mbxrelay.host.ItemOutcome;
import io.mbxrelay.host.PushItem;
import io.mbxrelay.host.PushResult;
import io.mbxrelay.wire.B64;
import io.mbxrelay.wire.Json;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code mbxrelay host push} (docs/protocol.md §3 push v2, §4.5): pushes one envelope to one or more target hosts and verifies
 * the accept receipt against the pinned relay key. Stdout: {@code {item_id, status, targets:[{host_pubkey, seq}],
 * epoch, at, accept, sig}} (or {@code {item_id, status:"rejected:<why>"}}).
 */
@Command(name = "push", mixinStandardHelpOptions = true,
    description = {"Push one envelope to target hosts through the relay and verify the accept receipt.",
        "The wire bytes come from --file or --stdin as is (an already sealed v3 envelope; its id is the item id).",
        "To seal and send a message to a peer, use `mbxrelay host send`."},
    exitCodeListHeading = "Exit codes:%n",
    exitCodeList = {"0:accepted or duplicate, receipt verified",
        "1:rejected, receipt not verified, relay refused, relay key mismatch or relay unreachable",
        "2:usage or local configuration error"})
public final class HostPushCommand implements Callable<Integer> {

  @Spec CommandSpec spec;

  @Mixin RelayConnectionOptions connection;

  @Option(names = "--name", paramLabel = "NAME", description = "This host's name (x-mbx-host).")
  String name;

  @Option(names = "--to", required = true, paramLabel = "PUBKEY",
      description = "Target host public key (base64); repeat for several targets.")
  List<String> to;

  static final class Source {
    @Option(names = "--file", paramLabel = "PATH", description = "Read the envelope wire bytes from a file.")
    Path file;

    @Option(names = "--stdin", description = "Read the envelope wire bytes from standard input.")
    boolean stdin;
  }

  @ArgGroup(exclusive = true, multiplicity = "1")
  Source source;

  @Override
  public Integer call() {
    PrintWriter out = spec.commandLine().getOut();
    PrintWriter err = spec.commandLine().getErr();
    try {
      for (String t : to) {
        if (!B64.isPubkey(t)) {
          throw new HostSupport.Failure(HostSupport.USAGE, "--to must be a base64 32-byte host public key");
        }
      }
      Path file = connection.keyFile();
      String relayUrl = connection.relay(file);
      Ed25519KeyPair key = HostSupport.loadKey(file);
      HostSupport.Pinning pinning = HostSupport.pinning(relayUrl, file, connection.relayKey, false);
      byte[] wire = readWire();
      String id = envelopeId(wire);
      List<PushItem.Target> targets = new ArrayList<>();
      for (String t : to) {
        targets.add(new PushItem.Target(t, wire));
      }
      PushResult r;
      try (BlockingRelayClient client = new BlockingRelayClient(relayUrl, name, key, pinning.pin(),
          HostSupport.REQUEST_TIMEOUT_MS)) {
        r = client.push(List.of(new PushItem("envelope", id, targets)));
        if (!(r instanceof PushResult.Pushed)) {
          throw HostSupport.failureOf(r, "the push");
        }
        HostSupport.savePin(pinning, relayUrl, client.relayKey(), err);
      } catch (BlockingRelayClient.RelayUnreachable e) {
        throw new HostSupport.Failure(HostSupport.REFUSED, "relay unreachable (outcome unknown; push the same bytes "
            + "again): " + e.getMessage());
      } catch (IllegalArgumentException e) {
        throw new HostSupport.Failure(HostSupport.USAGE, e.getMessage());
      }
      return report(((PushResult.Pushed) r).items().get(0), out, err);
    } catch (HostSupport.Failure f) {
      return HostSupport.fail(err, f);
    }
  }

  private static int report(ItemOutcome outcome, PrintWriter out, PrintWriter err) throws HostSupport.Failure {
    if (outcome instanceof ItemOutcome.Accepted a) {
      ObjectNode o = Json.MAPPER.createObjectNode().put("item_id", a.itemId())
          .put("status", a.duplicate() ? "duplicate" : "accepted");
      ArrayNode ts = o.putArray("targets");
      for (ItemOutcome.TargetSeq t : a.targets()) {
        ts.addObject().put("host_pubkey", t.hostPubkey()).put("seq", t.seq());
        err.println("[mbxrelay] " + (a.duplicate() ? "duplicate" : "accepted") + " " + a.itemId() + " for "
            + Fingerprint.ofB64(t.hostPubkey()) + " as seq " + t.seq() + " (epoch " + a.epoch() + ", receipt verified)");
      }
      o.put("epoch", a.epoch()).put("at", a.at());
      o.set("accept", a.accept());
      o.put("sig", a.sig());
      HostSupport.printJson(out, o);
      err.flush();
      return HostSupport.OK;
    }
    if (outcome instanceof ItemOutcome.Rejected rj) {
      HostSupport.printJson(out, Json.MAPPER.createObjectNode().put("item_id", rj.itemId())
          .put("status", "rejected:" + rj.reason()));
      throw new HostSupport.Failure(HostSupport.REFUSED, "relay rejected " + rj.itemId() + ": " + rj.reason());
    }
    ItemOutcome.Unverified u = (ItemOutcome.Unverified) outcome;
    throw new HostSupport.Failure(HostSupport.REFUSED, "no valid accept receipt for " + u.itemId() + " (" + u.why()
        + "); the item is not confirmed: push the same bytes again");
  }

  private byte[] readWire() throws HostSupport.Failure {
    try {
      return source.stdin ? System.in.readAllBytes() : Files.readAllBytes(source.file);
    } catch (IOException e) {
      throw new HostSupport.Failure(HostSupport.USAGE, "cannot read " + (source.stdin ? "standard input"
          : source.file) + ": " + e.getClass().getSimpleName());
    }
  }

  private static String envelopeId(byte[] wire) throws HostSupport.Failure {
    JsonNode e;
    try {
      e = Json.parse(new String(wire, StandardCharsets.UTF_8));
    } catch (IllegalArgumentException ex) {
      e = null;
    }
    if (e == null || !e.path("id").isTextual()) {
      throw new HostSupport.Failure(HostSupport.USAGE, "the wire bytes are not a JSON envelope with a string id");
    }
    return e.get("id").textValue();
  }
}
