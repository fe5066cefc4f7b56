package io.mbxrelay.bench;

import io.mbxrelay.config.ConfigLoader;
import io.mbxrelay.config.RelayConfig;
import io.mbxrelay.crypto.Ed25519KeyPair;
import io.mbxrelay.store.StoreCommand;
import io.mbxrelay.store.sqlite.SqliteRelayStore;
import io.mbxrelay.testing.Envelopes;
import io.mbxrelay.wire.Hashes;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The writer alone: push commands straight into {@link SqliteRelayStore} (no HTTP, no event bus), one transaction
 * per batch of {@code batch} commands, to show the cost per item and the effect of group commit. Prints figures.
 * Usage: {@code java ... io.mbxrelay.bench.StoreBench [items=5000] [batch=1,8,64] [watermark=none]}, where
 * {@code watermark} is {@code none} (the store alone), {@code sync} (the commit watermark written and fsynced on the
 * writer thread after every transaction: the naive design) or a number (the relay's background writer with that
 * {@code store.watermarkIntervalMs}).
 */
public final class StoreBench {
  private StoreBench() {}

  public static void main(String[] args) throws Exception {
    int items = args.length > 0 ? Integer.parseInt(args[0]) : 5000;
    String[] batches = (args.length > 1 ? args[1] : "1,8,64").split(",");
    String watermark = args.length > 2 ? args[2] : "none";
    RelayConfig.Limits limits = ConfigLoader.load(null, Map.of("MBX_RELAY_LIMITS_MAX_QUEUE_ITEMS", "10000000",
        "MBX_RELAY_LIMITS_MAX_SENDER_ITEMS", "10000000", "MBX_RELAY_LIMITS_MAX_QUEUE_BYTES", "100000000000",
        "MBX_RELAY_LIMITS_MAX_SENDER_BYTES", "100000000000")).limits();
    for (String b : batches) {
      int batch = Integer.parseInt(b.trim());
      Path dir = Files.createTempDirectory("mbxrelay-storebench");
      try {
        try (SqliteRelayStore store = SqliteRelayStore.open(dir, Ed25519KeyPair.generate().publicKeyB64(),
            Clock.systemUTC(), limits, 5000, 0)) {
          String sender = Ed25519KeyPair.generate().publicKeyB64();
          String target = Ed25519KeyPair.generate().publicKeyB64();
          store.execute(new StoreCommand.Enrol("s", sender, "", null, null));
          store.execute(new StoreCommand.Enrol("t", target, "", null, null));
          io.mbxrelay.store.sqlite.CommitWatermark wm = watermark.equals("none") ? null
              : io.mbxrelay.store.sqlite.CommitWatermark.start(dir, store.epoch(), store.commits(),
                  watermark.equals("sync") ? 0 : Long.parseLong(watermark), Clock.systemUTC(), (n, ok) -> {});
          if (wm != null && !watermark.equals("sync")) {
            store.onCommit(wm::committed);
          }
          byte[] wire = Envelopes.sealed(Envelopes.newId(), 1024);
          String hash = Hashes.sha256Hex(wire);
          long start = System.nanoTime();
          int done = 0;
          int txs = 0;
          while (done < items) {
            List<StoreCommand<?>> cmds = new ArrayList<>();
            for (int i = 0; i < batch && done < items; i++, done++) {
              cmds.add(new StoreCommand.Push(sender, "s", "envelope", "id" + done,
                  List.of(new StoreCommand.Target(target, wire, hash, null))));
            }
            store.execute(cmds);
            if (wm != null && watermark.equals("sync")) {
              wm.committed(store.commits());
              wm.flush(); // fsync on the writer thread before the replies could go out
            }
            txs++;
          }
          double secs = (System.nanoTime() - start) / 1e9;
          if (wm != null) {
            wm.close();
          }
          System.out.printf("store push: %d items, %d per transaction (%d transactions), watermark %s: %.2f s ="
              + " %.0f items/s, %.3f ms per item%n", items, batch, txs, watermark, secs, items / secs, secs * 1000 / items);
        }
      } finally {
        io.mbxrelay.testing.ChildTmp.deleteTree(dir); // the bench leaves no store behind
      }
    }
  }
}
