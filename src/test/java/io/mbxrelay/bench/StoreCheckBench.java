package io.mbxrelay.bench;

import io.mbxrelay.config.ConfigLoader;
import io.mbxrelay.config.RelayConfig;
import io.mbxrelay.crypto.Ed25519KeyPair;
import io.mbxrelay.store.sqlite.SqliteRelayStore;
import io.mbxrelay.store.sqlite.StoreIntegrity;
import io.mbxrelay.wire.Hashes;
import io.mbxrelay.wire.IsoTime;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.Statement;
import java.time.Clock;
import java.util.List;
import java.util.Map;
import java.util.Random;

/**
 * How long the start-up {@code quick_check} and the operator checks take on a large store (issue 10 item 2): builds a
 * store of about {@code mb} MiB in {@code dir} (items of 0.5–8 KiB for 1,000 targets with their dedup rows, written
 * straight through JDBC with {@code synchronous=OFF}: a generated store, not a durability test), checkpoints it, then
 * times {@code quick_check}, {@code integrity_check}, the wire-hash pass and a full {@link SqliteRelayStore#open}.
 * Prints figures. Usage: {@code scripts/check-bench DIR [mb=1024] [--drop-caches]} (the flag, as root, empties the
 * page cache before the last step); never commit the store it makes.
 */
public final class StoreCheckBench {
  private StoreCheckBench() {}

  public static void main(String[] args) throws Exception {
    Path dir = Path.of(args[0]);
    long mb = args.length > 1 ? Long.parseLong(args[1]) : 1024;
    String relayKey = Ed25519KeyPair.generate().publicKeyB64();
    RelayConfig.Limits limits = ConfigLoader.load(null, Map.of()).limits();
    Path db = dir.resolve("relay.db");
    if (!Files.exists(db)) {
      SqliteRelayStore.open(dir, relayKey, Clock.systemUTC(), limits, 5000, 0).close();
      fill(db, mb << 20);
    } else {
      try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + db); Statement st = c.createStatement();
          var rs = st.executeQuery("SELECT v FROM meta WHERE k='relay_pubkey'")) {
        relayKey = rs.next() ? rs.getString(1) : relayKey;
      }
    }
    System.out.printf("store: %s, %.1f MiB%n", db, Files.size(db) / 1048576.0);
    try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + db)) {
      time("quick_check (as found: cold after drop_caches)", () -> StoreIntegrity.quickCheck(c).size() + " problems");
      time("sequential prefetch", () -> {
        StoreIntegrity.prefetch(db);
        return "read once";
      });
      time("quick_check", () -> StoreIntegrity.quickCheck(c).size() + " problems");
      time("integrity_check", () -> StoreIntegrity.integrityCheck(c).size() + " problems");
      time("wire hashes", () -> {
        StoreIntegrity.HashReport r = StoreIntegrity.verifyHashes(c, 10);
        return r.items() + " items, " + r.bytes() / 1048576 + " MiB, " + r.mismatched() + " mismatched";
      });
    }
    String key = relayKey;
    if (args.length > 2 && args[2].equals("--drop-caches")) {
      new ProcessBuilder("sh", "-c", "sync; echo 3 > /proc/sys/vm/drop_caches").inheritIO().start().waitFor();
    }
    time("SqliteRelayStore.open (prefetch + quick_check + initialise)", () -> {
      SqliteRelayStore.open(dir, key, Clock.systemUTC(), limits, 5000, 0).close();
      return "ok";
    });
  }

  private interface Step {
    String run() throws Exception;
  }

  private static void time(String what, Step step) throws Exception {
    long start = System.nanoTime();
    String result = step.run();
    System.out.printf("%-50s %8.2f s  (%s)%n", what, (System.nanoTime() - start) / 1e9, result);
  }

  private static void fill(Path db, long bytes) throws Exception {
    Random random = new Random(42);
    List<String> targets = new java.util.ArrayList<>();
    for (int i = 0; i < 1000; i++) {
      targets.add(Ed25519KeyPair.generate().publicKeyB64());
    }
    String sender = Ed25519KeyPair.generate().publicKeyB64();
    long written = 0;
    long seq = 1_700_000_000_000L;
    String now = IsoTime.format(System.currentTimeMillis());
    String expires = IsoTime.format(System.currentTimeMillis() + 14 * 86_400_000L);
    try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + db)) {
      try (Statement st = c.createStatement()) {
        st.execute("PRAGMA synchronous=OFF");
      }
      c.setAutoCommit(false);
      try (PreparedStatement item = c.prepareStatement("INSERT INTO items(target_pubkey, seq, kind, item_id,"
          + " sender_pubkey, sender_host, wire, wire_hash, bytes, accepted_at, expires_at)"
          + " VALUES(?, ?, 'envelope', ?, ?, 'gen', ?, ?, ?, ?, ?)");
          PreparedStatement dedup = c.prepareStatement("INSERT INTO dedup(sender_pubkey, item_id, target_pubkey,"
              + " wire_hash, seq, accepted_at) VALUES(?, ?, ?, ?, ?, ?)")) {
        int n = 0;
        while (written < bytes) {
          byte[] wire = new byte[512 + random.nextInt(7680)];
          random.nextBytes(wire);
          String target = targets.get(n % targets.size());
          String id = "gen-" + n;
          String hash = Hashes.sha256Hex(wire);
          seq++;
          item.setString(1, target);
          item.setLong(2, seq);
          item.setString(3, id);
          item.setString(4, sender);
          item.setBytes(5, wire);
          item.setString(6, hash);
          item.setLong(7, wire.length);
          item.setString(8, now);
          item.setString(9, expires);
          item.executeUpdate();
          dedup.setString(1, sender);
          dedup.setString(2, id);
          dedup.setString(3, target);
          dedup.setString(4, hash);
          dedup.setLong(5, seq);
          dedup.setString(6, now);
          dedup.executeUpdate();
          written += wire.length + 400;
          if (++n % 10_000 == 0) {
            c.commit();
          }
        }
        c.commit();
      }
      c.setAutoCommit(true);
      try (Statement st = c.createStatement()) {
        st.execute("PRAGMA wal_checkpoint(TRUNCATE)");
      }
    }
  }
}
