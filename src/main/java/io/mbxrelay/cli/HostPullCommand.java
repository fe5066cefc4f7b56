package io.mbxrelay.cli;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.mbxrelay.crypto.Ed25519KeyPair;
import io.mbxrelay.crypto.Fingerprint;
import io.mbxrelay.host.AckResult;
import io.mbxrelay.host.BlockingRelayClient;
import io.mbxrelay.host.EpochChanged;
import io.mbxrelay.host.InfoResult;
import io.mbxrelay.host.PullResult;
import io.mbxrelay.wire.B64;
import io.mbxrelay.wire.Json;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code mbxrelay host pull} (docs/protocol.md §3 pull/ack v2, §6 receiver): checks the relay key (signed info), pulls up to
 * 20 pages after {@code --after} and, with {@code --ack}, acks through the last seq. No position is kept (the durable
 * inbox is separate work). Stdout: each item's wire bytes as a UTF-8 line, or with {@code --json} one object
 * {@code {relay, epoch, head_seq, last_seq, more, items:[{seq, kind, item_id, sender_pubkey, wire_b64}]
 * [, acked_through, deleted]}}.
 */
@Command(name = "pull", mixinStandardHelpOptions = true,
    description = {"Pull this host's queued items from the relay; with --ack, let the relay delete them."},
    exitCodeListHeading = "Exit codes:%n",
    exitCodeList = {"0:pulled (and acked)", "1:relay refused, epoch changed, relay key mismatch or relay unreachable",
        "2:usage or local configuration error"})
public final class HostPullCommand implements Callable<Integer> {
  private static final int MAX_PAGES = 20;

  @Spec CommandSpec spec;

  @Mixin RelayConnectionOptions connection;

  /** The relay this run talks to (--relay, or the host store's first relay). */
  private String relayUrl;

  @Option(names = "--name", paramLabel = "NAME", description = "This host's name (sent as x-mbx-host).")
  String name;

  @Option(names = "--after", paramLabel = "SEQ", defaultValue = "0", description = "Pull items after this seq.")
  long after;

  @Option(names = "--limit", paramLabel = "N", defaultValue = "0",
      description = "Items per page, 1-500 (default: the relay's maximum).")
  int limit;

  @Option(names = "--ack", description = "Ack through the last pulled seq (the relay deletes those items).")
  boolean ack;

  @Option(names = "--json", description = "Print one JSON object on stdout instead of the raw items.")
  boolean json;

  @Override
  public Integer call() {
    PrintWriter out = spec.commandLine().getOut();
    PrintWriter err = spec.commandLine().getErr();
    try {
      if (after < 0 || limit < 0 || limit > 500) {
        throw new HostSupport.Failure(HostSupport.USAGE, "--after must be >= 0 and --limit 1-500");
      }
      Path file = connection.keyFile();
      relayUrl = connection.relay(file);
      Ed25519KeyPair key = HostSupport.loadKey(file);
      HostSupport.Pinning pinning = HostSupport.pinning(relayUrl, file, connection.relayKey, false);
      List<PullResult.PulledItem> items = new ArrayList<>();
      PullResult.Page last;
      AckResult acked = null;
      try (BlockingRelayClient client = new BlockingRelayClient(relayUrl, name, key, pinning.pin(),
          HostSupport.REQUEST_TIMEOUT_MS)) {
        InfoResult info = client.info(); // docs/protocol.md §6: the relay key is checked before every session
        if (!(info instanceof InfoResult.Ok)) {
          throw HostSupport.failureOf(info, "info");
        }
        HostSupport.savePin(pinning, relayUrl, client.relayKey(), err);
        String epoch = null;
        long position = after;
        int pages = 0;
        do {
          PullResult r = client.pull(position, limit, epoch);
          if (r instanceof EpochChanged e) {
            throw new HostSupport.Failure(HostSupport.REFUSED, "relay epoch changed to " + e.currentEpoch()
                + " while pulling: pull again from 0");
          }
          if (!(r instanceof PullResult.Page)) {
            throw HostSupport.failureOf(r, "the pull");
          }
          last = (PullResult.Page) r;
          items.addAll(last.items());
          epoch = last.epoch();
          position = last.lastSeq();
          pages++;
        } while (last.more() && pages < MAX_PAGES);
        if (ack && !items.isEmpty()) {
          acked = client.ack(last.epoch(), last.lastSeq());
          if (acked instanceof EpochChanged e) {
            throw new HostSupport.Failure(HostSupport.REFUSED, "relay epoch changed to " + e.currentEpoch()
                + " before the ack: pull again from 0");
          }
          if (acked instanceof AckResult.BadAck b) {
            throw new HostSupport.Failure(HostSupport.REFUSED, "ack beyond the relay's head seq " + b.headSeq()
                + ": treat as an epoch change and pull again from 0");
          }
          if (!(acked instanceof AckResult.Acked)) {
            throw HostSupport.failureOf(acked, "the ack");
          }
        }
      } catch (BlockingRelayClient.RelayUnreachable e) {
        throw new HostSupport.Failure(HostSupport.REFUSED, "relay unreachable: " + e.getMessage());
      } catch (IllegalArgumentException e) {
        throw new HostSupport.Failure(HostSupport.USAGE, e.getMessage());
      }
      print(items, last, (AckResult.Acked) acked, out, err);
      return HostSupport.OK;
    } catch (HostSupport.Failure f) {
      return HostSupport.fail(err, f);
    }
  }

  private void print(List<PullResult.PulledItem> items, PullResult.Page last, AckResult.Acked acked, PrintWriter out,
      PrintWriter err) {
    ObjectNode o = Json.MAPPER.createObjectNode().put("relay", relayUrl).put("epoch", last.epoch())
        .put("head_seq", last.headSeq()).put("last_seq", last.lastSeq()).put("more", last.more());
    ArrayNode arr = o.putArray("items");
    for (PullResult.PulledItem it : items) {
      err.println("[mbxrelay] seq " + it.seq() + " " + it.kind() + " " + it.itemId() + " from "
          + Fingerprint.ofB64(it.senderPubkey()) + " (" + it.wire().length + " bytes)");
      arr.addObject().put("seq", it.seq()).put("kind", it.kind()).put("item_id", it.itemId())
          .put("sender_pubkey", it.senderPubkey()).put("wire_b64", B64.encode(it.wire()));
      if (!json) {
        out.println(new String(it.wire(), StandardCharsets.UTF_8));
      }
    }
    err.println("[mbxrelay] " + items.size() + " item(s), last seq " + last.lastSeq() + ", head seq "
        + last.headSeq() + (last.more() ? ", more waiting" : ""));
    if (acked != null) {
      o.put("acked_through", acked.ackedThrough()).put("deleted", acked.deleted());
      err.println("[mbxrelay] acked through " + acked.ackedThrough() + " (" + acked.deleted() + " deleted)");
    }
    if (json) {
      out.println(Json.stringify(o));
    }
    out.flush();
    err.flush();
  }
}
