package io.mbxrelay.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.mbxrelay.testing.ChildRelay;
import io.mbxrelay.testing.Envelopes;
import io.mbxrelay.testing.Http;
import io.mbxrelay.testing.TestHost;
import io.mbxrelay.wire.B64;
import io.mbxrelay.wire.Json;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Push/pull/ack throughput and latency of the real relay (the shaded jar as a child process, real SQLite with
 * {@code synchronous=FULL}, real HTTP, real Ed25519) from a load generator on loopback. Prints figures; asserts
 * nothing. Run with {@code scripts/bench [senders] [itemsPerSender] [itemsPerRequest] [bodyBytes]}.
 *
 * <p>Every request is signed and every accept receipt is checked for presence; the load stays on 127.0.0.1 and
 * stops by itself (bounded counts).
 */
public final class RelayBench {
  private RelayBench() {}

  public static void main(String[] args) throws Exception {
    int senders = args.length > 0 ? Integer.parseInt(args[0]) : 16;
    int perSender = args.length > 1 ? Integer.parseInt(args[1]) : 250;
    int perRequest = args.length > 2 ? Integer.parseInt(args[2]) : 1;
    int bodyBytes = args.length > 3 ? Integer.parseInt(args[3]) : 1024;
    Path dir = Files.createTempDirectory("mbxrelay-bench");
    try {
      run(dir, senders, perSender, perRequest, bodyBytes);
    } finally {
      io.mbxrelay.testing.ChildTmp.deleteTree(dir); // the bench leaves no store behind
    }
  }

  private static void run(Path dir, int senders, int perSender, int perRequest, int bodyBytes) throws Exception {
    System.out.printf("mbxrelay bench: %d senders x %d items, %d item(s) per request, ~%d B sealed body, store %s%n",
        senders, perSender, perRequest, bodyBytes, dir);
    String external = System.getProperty("bench.url");
    try (ChildRelay relay = external != null ? null : ChildRelay.start(dir, Map.of(
        "MBX_RELAY_LIMITS_PUSH_REQUESTS_PER_MINUTE", "1000000",
        "MBX_RELAY_LIMITS_MAX_QUEUE_ITEMS", "1000000", "MBX_RELAY_LIMITS_MAX_SENDER_ITEMS", "1000000",
        "MBX_RELAY_LIMITS_MAX_QUEUE_BYTES", "10000000000", "MBX_RELAY_LIMITS_MAX_SENDER_BYTES", "10000000000"))) {
      // -Dbench.url=http://127.0.0.1:PORT drives a relay started by hand (e.g. under a profiler) instead
      String url = external != null ? external : relay.url();
      TestHost target = new TestHost(url, "target").enrol();
      List<TestHost> hosts = new ArrayList<>();
      for (int i = 0; i < senders; i++) {
        hosts.add(new TestHost(url, "sender" + i).enrol());
      }
      // warm-up
      for (TestHost h : hosts.subList(0, Math.min(4, hosts.size()))) {
        String id = Envelopes.newId();
        h.pushEnvelope(target, id, Envelopes.sealed(id, bodyBytes));
      }
      long[] latencies = new long[senders * ((perSender + perRequest - 1) / perRequest)];
      AtomicLong slot = new AtomicLong();
      AtomicLong accepted = new AtomicLong();
      ExecutorService pool = Executors.newFixedThreadPool(senders);
      long start = System.nanoTime();
      List<Future<?>> fs = new ArrayList<>();
      for (TestHost h : hosts) {
        fs.add(pool.submit(() -> {
          for (int sent = 0; sent < perSender; sent += perRequest) {
            int n = Math.min(perRequest, perSender - sent);
            ObjectNode[] items = new ObjectNode[n];
            for (int k = 0; k < n; k++) {
              String id = Envelopes.newId();
              items[k] = TestHost.item("envelope", id, List.of(target.pub()), List.of(Envelopes.sealed(id, bodyBytes)));
            }
            long t0 = System.nanoTime();
            Http.Resp r = h.push(items);
            latencies[(int) slot.getAndIncrement()] = System.nanoTime() - t0;
            if (r.status() != 200) {
              throw new IllegalStateException("push answered " + r.status() + " " + r.raw());
            }
            for (JsonNode res : r.json().get("results")) {
              if (res.get("status").asText().equals("accepted") && res.has("sig")) {
                accepted.incrementAndGet();
              }
            }
          }
          return null;
        }));
      }
      for (Future<?> f : fs) {
        f.get();
      }
      double pushSecs = (System.nanoTime() - start) / 1e9;
      pool.shutdown();
      long[] lat = Arrays.copyOf(latencies, (int) slot.get());
      Arrays.sort(lat);
      long total = (long) senders * perSender;
      System.out.printf("push: %d items accepted in %.2f s = %.0f items/s (%.0f requests/s); request latency p50 %.1f ms,"
              + " p99 %.1f ms, max %.1f ms%n", accepted.get(), pushSecs, total / pushSecs, lat.length / pushSecs,
          pct(lat, 0.50), pct(lat, 0.99), lat[lat.length - 1] / 1e6);

      long pullStart = System.nanoTime();
      long after = 0;
      long items = 0;
      long bytes = 0;
      int pages = 0;
      String epoch = null;
      while (true) {
        JsonNode page = target.pull(after, null, epoch).json();
        epoch = page.get("epoch").asText();
        ArrayNode arr = (ArrayNode) page.get("items");
        for (JsonNode it : arr) {
          bytes += B64.decodeLenient(it.get("wire_b64").asText()).orElseThrow().length;
        }
        items += arr.size();
        pages++;
        after = page.get("last_seq").asLong();
        Http.Resp ack = target.ack(epoch, after);
        if (ack.status() != 200) {
          throw new IllegalStateException("ack answered " + ack.raw());
        }
        if (!page.get("more").asBoolean()) {
          break;
        }
      }
      double pullSecs = (System.nanoTime() - pullStart) / 1e9;
      System.out.printf("pull+ack: %d items (%d pages, %.1f MB) in %.2f s = %.0f items/s, %.1f MB/s%n", items, pages,
          bytes / 1e6, pullSecs, items / pullSecs, bytes / 1e6 / pullSecs);
      if (external == null) {
        System.out.printf("store: relay.db %.1f MB after acks; relay process RSS %s%n",
            Files.size(dir.resolve("relay.db")) / 1e6, rss(relay.process.pid()));
      }
      if (items < total) {
        throw new IllegalStateException("pulled " + items + " of " + total);
      }
    }
  }

  /** Resident set size of a process from /proc (Linux), or "n/a". */
  private static String rss(long pid) {
    try {
      for (String line : Files.readAllLines(Path.of("/proc/" + pid + "/status"))) {
        if (line.startsWith("VmRSS:")) {
          return String.format("%.0f MB", Long.parseLong(line.replaceAll("[^0-9]", "")) / 1024.0);
        }
      }
    } catch (java.io.IOException | RuntimeException e) {
      // not Linux, or the process is gone
    }
    return "n/a";
  }

  private static double pct(long[] sorted, double p) {
    return sorted[Math.min(sorted.length - 1, (int) Math.floor(p * sorted.length))] / 1e6;
  }
}
