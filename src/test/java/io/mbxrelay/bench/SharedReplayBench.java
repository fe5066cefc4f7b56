package io.mbxrelay.bench;

import io.mbxrelay.auth.HopReplayCache;
import io.mbxrelay.crypto.Ed25519KeyPair;
import io.mbxrelay.store.postgres.PgTestServer;
import io.mbxrelay.testing.Envelopes;
import io.mbxrelay.testing.Http;
import io.mbxrelay.testing.RelayHarness;
import io.mbxrelay.testing.TestHost;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The cost of the shared replay record on a push (docs/scale-out.md "What is shared"): one relay on PostgreSQL (fsync
 * on), {@code threads} senders each pushing one 1 KiB envelope per request back to back for {@code seconds}, with the
 * shared record on (one {@code INSERT … ON CONFLICT} into {@code hop_replays} per push) and off (the instance's
 * memory only), alternating twice. Prints pushes/s and the mean, p50 and p99 push latency of each run.
 *
 * <p>Run like {@link SeqAllocationBench}; arguments {@code threads seconds rounds}.
 */
public final class SharedReplayBench {
  private SharedReplayBench() {}

  public static void main(String[] args) throws Exception {
    int threads = args.length > 0 ? Integer.parseInt(args[0]) : 8;
    int seconds = args.length > 1 ? Integer.parseInt(args[1]) : 8;
    Path dir = Files.createTempDirectory("shared-replay-bench");
    try (PgTestServer pg = PgTestServer.start(true)) {
      Map<String, String> env = Map.of("MBX_RELAY_STORE_BACKEND", "postgresql", "MBX_RELAY_STORE_URL",
          pg.createDatabase(), "MBX_RELAY_STORE_USER", PgTestServer.SUPERUSER);
      try (RelayHarness r = RelayHarness.start(dir, env, Clock.systemUTC(), Ed25519KeyPair.generate())) {
        TestHost target = new TestHost(r.url(), "target").enrol();
        List<TestHost> senders = new ArrayList<>();
        for (int i = 0; i < threads; i++) {
          senders.add(new TestHost(r.url(), "sender" + i).enrol());
        }
        HopReplayCache replay = r.server.trust().replay();
        java.lang.reflect.Field shared = HopReplayCache.class.getDeclaredField("shared");
        shared.setAccessible(true);
        Object record = shared.get(replay);
        run("warm-up", senders, target, 2);
        int rounds = args.length > 2 ? Integer.parseInt(args[2]) : 2;
        for (int round = 0; round < rounds; round++) {
          shared.set(replay, record);
          run("shared on ", senders, target, seconds);
          shared.set(replay, null);
          run("shared off", senders, target, seconds);
        }
      }
    }
  }

  private static void run(String label, List<TestHost> senders, TestHost target, int seconds) throws Exception {
    long end = System.nanoTime() + seconds * 1_000_000_000L;
    List<long[]> latencies = new java.util.concurrent.CopyOnWriteArrayList<>();
    AtomicInteger failures = new AtomicInteger();
    List<Thread> ts = new ArrayList<>();
    for (TestHost s : senders) {
      Thread t = new Thread(() -> {
        long[] mine = new long[1 << 20];
        int n = 0;
        while (System.nanoTime() < end && n < mine.length) {
          String id = Envelopes.newId();
          long t0 = System.nanoTime();
          try {
            Http.Resp p = s.pushEnvelope(target, id, Envelopes.sealed(id, 1024));
            if (p.status() != 200) {
              failures.incrementAndGet();
            }
          } catch (Exception e) {
            failures.incrementAndGet();
          }
          mine[n++] = System.nanoTime() - t0;
        }
        latencies.add(Arrays.copyOf(mine, n));
      });
      ts.add(t);
      t.start();
    }
    for (Thread t : ts) {
      t.join();
    }
    long[] all = latencies.stream().flatMapToLong(Arrays::stream).sorted().toArray();
    double mean = Arrays.stream(all).average().orElse(0) / 1e6;
    System.out.printf("%s: %d pushes/s, latency mean %.2f ms, p50 %.2f ms, p99 %.2f ms, failures %d%n", label,
        all.length / seconds, mean, all[all.length / 2] / 1e6, all[(int) (all.length * 0.99)] / 1e6, failures.get());
  }
}
