package io.mbxrelay.cli;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.mbxrelay.store.model.DenyKey;
import io.mbxrelay.store.model.DenyOutcome;
import io.mbxrelay.store.StoreException;
import io.mbxrelay.store.sqlite.DenyListFile;
import io.mbxrelay.wire.IsoTime;
import io.mbxrelay.wire.Json;
import java.nio.file.Path;
import java.time.Clock;
import java.util.Optional;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code mbxrelay deny add|list|remove} (docs/protocol.md §7.8 "Revocation"; {@code docs/deny-list.md}): the operator's deny
 * list, keyed by host fingerprint ({@code host_fp}) or account-token {@code client_id}. Adding an entry revokes every
 * live enrolment it matches, permanently; removing one lets new keys and clients enrol again but never un-revokes.
 * Receipts are 2-space JSON on stdout, human lines on stderr. Exit 0 ok, 1 store failure, 2 usage.
 */
@Command(name = "deny", mixinStandardHelpOptions = true, description = "Manage the relay's deny list.",
    subcommands = {DenyCommand.Add.class, DenyCommand.ListEntries.class, DenyCommand.Remove.class})
public final class DenyCommand implements Runnable {
  @Override
  public void run() {
    picocli.CommandLine.usage(this, System.err);
  }

  /** Options every subcommand shares. */
  static class StoreOption {
    @Option(names = "--store-dir", description = "Store directory (default: $MBX_RELAY_DIR or ~/.local/share/mbxrelay).")
    Path storeDir;

    Path dir() {
      return ServeCommand.resolveStoreDir(storeDir, System.getenv());
    }
  }

  static Optional<DenyKey> key(String kind, String value) {
    Optional<DenyKey> k = DenyKey.of(kind, value);
    if (k.isEmpty()) {
      System.err.println("[mbxrelay] bad deny entry: " + DenyKey.problem(kind, value).orElse("invalid"));
    }
    return k;
  }

  static void print(ObjectNode receipt) {
    System.out.println(receipt.toPrettyString());
    System.out.flush();
  }

  /** {@code deny add <kind> <value> [--note TEXT]}. */
  @Command(name = "add", mixinStandardHelpOptions = true,
      description = "Add an entry and revoke every live enrolment it matches.")
  static final class Add extends StoreOption implements Callable<Integer> {
    @Parameters(index = "0", description = "host_fp or client_id") String kind;
    @Parameters(index = "1", description = "the fingerprint (or full host key) or the client id") String value;
    @Option(names = "--note", description = "Operator note (at most 200 characters).") String note;

    @Override
    public Integer call() {
      Optional<DenyKey> k = key(kind, value);
      if (k.isEmpty()) {
        return 2;
      }
      if (note != null && note.length() > 200) {
        System.err.println("[mbxrelay] bad deny entry: --note must be at most 200 characters (is " + note.length()
            + ")");
        return 2;
      }
      try {
        Clock clock = Clock.systemUTC();
        DenyOutcome d = DenyListFile.add(dir(), k.get().kind(), k.get().value(), note, clock);
        ObjectNode r = Json.MAPPER.createObjectNode().put("v", 1).put("type", "relay-deny")
            .put("at", IsoTime.format(clock.millis())).put("store", dir().toAbsolutePath().toString())
            .put("kind", k.get().kind()).put("value", k.get().value()).put("added", d.added())
            .put("revoked", d.revoked());
        print(r);
        System.err.println("[mbxrelay] deny entry " + (d.added() ? "added" : "already present") + "; "
            + d.revoked() + " enrolment(s) revoked");
        return 0;
      } catch (StoreException e) {
        System.err.println("[mbxrelay] " + e.getMessage());
        return 1;
      }
    }
  }

  /** {@code deny list}. */
  @Command(name = "list", mixinStandardHelpOptions = true, description = "List the deny entries.")
  static final class ListEntries extends StoreOption implements Callable<Integer> {
    @Override
    public Integer call() {
      try {
        ObjectNode r = Json.MAPPER.createObjectNode();
        ArrayNode arr = r.putArray("entries");
        for (DenyListFile.Entry e : DenyListFile.list(dir())) {
          arr.addObject().put("kind", e.kind()).put("value", e.value()).put("note", e.note())
              .put("added_at", e.addedAt());
        }
        print(r);
        return 0;
      } catch (StoreException e) {
        System.err.println("[mbxrelay] " + e.getMessage());
        return 1;
      }
    }
  }

  /** {@code deny remove <kind> <value>}. */
  @Command(name = "remove", mixinStandardHelpOptions = true,
      description = "Remove an entry (revoked enrolments stay revoked).")
  static final class Remove extends StoreOption implements Callable<Integer> {
    @Parameters(index = "0", description = "host_fp or client_id") String kind;
    @Parameters(index = "1", description = "the fingerprint (or full host key) or the client id") String value;

    @Override
    public Integer call() {
      Optional<DenyKey> k = key(kind, value);
      if (k.isEmpty()) {
        return 2;
      }
      try {
        boolean removed = DenyListFile.remove(dir(), k.get().kind(), k.get().value(), Clock.systemUTC());
        print(Json.MAPPER.createObjectNode().put("kind", k.get().kind()).put("value", k.get().value())
            .put("removed", removed));
        return 0;
      } catch (StoreException e) {
        System.err.println("[mbxrelay] " + e.getMessage());
        return 1;
      }
    }
  }
}
