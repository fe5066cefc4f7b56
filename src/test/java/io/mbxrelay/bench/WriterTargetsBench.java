package io.mbxrelay.bench;

import io.mbxrelay.config.ConfigLoader;
import io.mbxrelay.config.RelayConfig;
import io.mbxrelay.crypto.Ed25519KeyPair;
import io.mbxrelay.store.StoreCommand;
import io.mbxrelay.store.model.PushOutcome;
import io.mbxrelay.store.sqlite.SqliteRelayStore;
import io.mbxrelay.testing.Envelopes;
import io.mbxrelay.wire.Hashes;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Random;

/**
 * The writer alone under issue 18 goal 5's shape: many targets, each command a single-item push from one of four
 * senders to a random target or an ack of a random target's queue, a fixed number of commands per transaction (no
 * HTTP, no event bus, one thread). Prints the writer's wall time and the bytes the process wrote per command
 * ({@code /proc/self/io} {@code wchar}: WAL frames and checkpoint copies), so two versions of the store compare without
 * the network's and the generator's noise. Uses only the store's public API, so the same class runs against an older
 * jar on the class path. Usage: {@code java -cp JAR:test-classes io.mbxrelay.bench.WriterTargetsBench [targets=100000]
 * [commandsPerTransaction=150] [transactions=400] [warmupTransactions=200]}.
 */
public final class WriterTargetsBench {
  private WriterTargetsBench() {}

  public static void main(String[] args) throws Exception {
    int targets = args.length > 0 ? Integer.parseInt(args[0]) : 100_000;
    int perTx = args.length > 1 ? Integer.parseInt(args[1]) : 150;
    int transactions = args.length > 2 ? Integer.parseInt(args[2]) : 400;
    int warmup = args.length > 3 ? Integer.parseInt(args[3]) : 200;
    RelayConfig.Limits limits = ConfigLoader.load(null, Map.of("MBX_RELAY_LIMITS_MAX_QUEUE_ITEMS", "10000000",
        "MBX_RELAY_LIMITS_MAX_SENDER_ITEMS", "10000000", "MBX_RELAY_LIMITS_MAX_QUEUE_BYTES", "100000000000",
        "MBX_RELAY_LIMITS_MAX_SENDER_BYTES", "100000000000", "MBX_RELAY_LIMITS_MAX_SENDER_TOTAL_ITEMS", "100000000",
        "MBX_RELAY_LIMITS_MAX_SENDER_TOTAL_BYTES", "1000000000000", "MBX_RELAY_LIMITS_MAX_STORE_ITEMS", "100000000",
        "MBX_RELAY_LIMITS_MAX_ENROLMENTS", "10000000")).limits();
    Path dir = Files.createTempDirectory("mbxrelay-writertargets");
    try (SqliteRelayStore store = SqliteRelayStore.open(dir, Ed25519KeyPair.generate().publicKeyB64(),
        Clock.systemUTC(), limits, 5000, 0)) {
      store.walAutocheckpoint(4000); // the relay's default (store.walAutocheckpointPages)
      List<String> keys = new ArrayList<>(targets);
      List<StoreCommand<?>> enrol = new ArrayList<>();
      for (int i = 0; i < targets + 4; i++) {
        String key = Ed25519KeyPair.generate().publicKeyB64();
        keys.add(key);
        enrol.add(new StoreCommand.Enrol("h" + i, key, "", null, null));
        if (enrol.size() == 2000) {
          store.execute(enrol);
          enrol.clear();
        }
      }
      store.execute(enrol);
      List<String> senders = keys.subList(targets, targets + 4);
      byte[] wire = Envelopes.sealed(Envelopes.newId(), 1024);
      String hash = Hashes.sha256Hex(wire);
      Map<String, Long> heads = new HashMap<>();
      Random random = new Random(18);
      long id = 0;
      for (int phase = 0; phase < 2; phase++) {
        int n = phase == 0 ? warmup : transactions;
        long commands = 0;
        long wchar0 = wchar();
        long start = System.nanoTime();
        for (int t = 0; t < n; t++) {
          List<StoreCommand<?>> tx = new ArrayList<>(perTx);
          List<String> pushedTo = new ArrayList<>();
          for (int c = 0; c < perTx; c++) {
            String target = keys.get(random.nextInt(targets));
            if (random.nextInt(3) < 2 || !heads.containsKey(target)) {
              tx.add(new StoreCommand.Push(senders.get(random.nextInt(4)), "s", "envelope", "id" + (id++),
                  List.of(new StoreCommand.Target(target, wire, hash, null))));
              pushedTo.add(target);
            } else {
              tx.add(new StoreCommand.Ack(target, store.epoch(), OptionalLong.of(heads.remove(target))));
              pushedTo.add(null);
            }
          }
          var results = store.execute(tx);
          for (int c = 0; c < results.size(); c++) {
            if (results.get(c).value() instanceof PushOutcome.Stored s) {
              heads.put(pushedTo.get(c), s.targets().get(0).seq());
            }
          }
          commands += tx.size();
        }
        double secs = (System.nanoTime() - start) / 1e9;
        long written = wchar() - wchar0;
        System.out.printf("%s: %d targets, %d transactions of %d commands: %.1f µs of writer time and %.1f KB written"
            + " per command (%.0f commands/s)%n", phase == 0 ? "warm-up" : "measured", targets, n, perTx,
            secs * 1e6 / commands, written / 1e3 / commands, commands / secs);
      }
    } finally {
      io.mbxrelay.testing.ChildTmp.deleteTree(dir);
    }
  }

  private static long wchar() throws Exception {
    for (String line : Files.readAllLines(Path.of("/proc/self/io"))) {
      if (line.startsWith("wchar:")) {
        return Long.parseLong(line.substring(6).trim());
      }
    }
    return 0;
  }
}
