package io.mbxrelay.server;

import static org.assertj.core.api.Assertions.assertThat;

import io.mbxrelay.testing.ChildRelay;
import io.mbxrelay.testing.Envelopes;
import io.mbxrelay.testing.Http;
import io.mbxrelay.testing.TestHost;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 22 item 1 with the real jar at {@code -Xmx256m -XX:+ExitOnOutOfMemoryError}: 100 connections, spaced out,
 * each send a signed pull of a queue of 32 items of ~340 KB (the largest sealed body an envelope may carry) and never read the answer. Before the fix every page left
 * the page budget when it was handed to the connection, each stalled reader kept ~10 MB of heap, and the relay died of
 * OutOfMemoryError around the 24th. Now the relay stays alive, its live heap (after a full GC) grows by no more than
 * the page budget (an eighth of the heap: 32 MiB) and a little per connection, the held gauge shows the pages held
 * and stays within the budget, stalled pages are cut after {@code http.pageStallMs}, and once the readers are gone
 * the host gets its whole page.
 */
class StalledReadersIT {
  private static final long MIB = 1L << 20;
  private static final long BUDGET = 32 * MIB; // -Xmx256m / 8

  private static double metric(ChildRelay relay, String name) throws Exception {
    double sum = 0;
    boolean found = false;
    for (String line : Http.send(relay.adminUrl(), "GET", "/metrics", null).raw().split("\n")) {
      if (line.startsWith(name + " ") || line.startsWith(name + "{")) {
        sum += Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
        found = true;
      }
    }
    assertThat(found).as("metric %s", name).isTrue();
    return sum;
  }

  /** Live heap after a full GC (jcmd GC.run, then the JVM's own heap gauges), bytes. */
  private static long liveHeap(ChildRelay relay) throws Exception {
    String jcmd = Path.of(System.getProperty("java.home"), "bin", "jcmd").toString();
    Process p = new ProcessBuilder(jcmd, Long.toString(relay.process.pid()), "GC.run").redirectErrorStream(true)
        .start();
    p.getInputStream().readAllBytes();
    assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
    long heap = 0;
    for (String line : Http.send(relay.adminUrl(), "GET", "/metrics", null).raw().split("\n")) {
      if (line.startsWith("jvm_memory_used_bytes{") && line.contains("area=\"heap\"")) {
        heap += (long) Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
      }
    }
    return heap;
  }

  /**
   * A signed pull of everything from {@code local}; the answer is never read. With {@code smallWindow} the socket's
   * receive buffer is 4 KiB, so the kernel takes little of the page and the rest stays in the relay; without it the
   * kernel buffers on loopback take megabytes (outside the relay's heap).
   */
  private static Socket stalledPull(ChildRelay relay, TestHost t, String local, boolean smallWindow)
      throws Exception {
    Socket s = new Socket();
    if (smallWindow) {
      s.setReceiveBufferSize(4096);
    }
    s.bind(new InetSocketAddress(local, 0));
    s.connect(new InetSocketAddress("127.0.0.1", relay.port));
    String path = "/v2/relay/items?after=0&limit=500";
    String ts = Long.toString(System.currentTimeMillis());
    s.getOutputStream().write(("GET " + path + " HTTP/1.1\r\nhost: relay\r\nx-mbx-key: " + t.pub()
        + "\r\nx-mbx-ts: " + ts + "\r\nx-mbx-sig: " + Http.sign(t.key, "GET", path, ts, "") + "\r\n\r\n")
        .getBytes(StandardCharsets.US_ASCII));
    s.getOutputStream().flush();
    return s;
  }

  @Test
  void a_hundred_stalled_readers_leave_the_relay_alive_with_its_heap_bounded_by_the_page_budget(@TempDir Path dir)
      throws Exception {
    Map<String, String> env = Map.of("MBX_RELAY_HTTP_PAGE_STALL_MS", "10000",
        "MBX_RELAY_LIMITS_PUSH_REQUESTS_PER_MINUTE", "100000");
    try (ChildRelay relay = ChildRelay.start(List.of("-Xmx256m", "-XX:+ExitOnOutOfMemoryError"),
        dir.resolve("store"), env)) {
      TestHost s = new TestHost(relay.url(), "sender").enrol();
      TestHost t = new TestHost(relay.url(), "target").enrol();
      for (int i = 0; i < 32; i++) {
        String id = Envelopes.newId();
        Http.Resp r = s.pushEnvelope(t, id, Envelopes.sealed(id, 340_000));
        assertThat(r.status()).isEqualTo(200);
        assertThat(r.json().get("results").get(0).get("status").asText()).as(r.raw()).isEqualTo("accepted");
      }
      long base = liveHeap(relay);
      long peak = base;
      double peakHeld = 0;
      List<Socket> readers = new ArrayList<>();
      try {
        for (int i = 0; i < 100; i++) {
          // four client addresses: each holds at most its share (16 MiB), together they meet the whole budget
          readers.add(stalledPull(relay, t, "127.0.0." + (2 + i % 4), i % 2 == 0));
          Thread.sleep(150); // spaced: each page is written as far as its socket takes before the next comes
          assertThat(relay.process.isAlive()).as("relay alive after %d stalled readers; output: %s", i + 1,
              relay.output).isTrue();
          double held = metric(relay, "mbxrelay_pull_page_held_bytes");
          peakHeld = Math.max(peakHeld, held);
          assertThat(held).as("held after %d stalled readers", i + 1).isLessThanOrEqualTo(BUDGET + 512 * 1024);
          if ((i + 1) % 25 == 0) {
            peak = Math.max(peak, liveHeap(relay));
          }
        }
        assertThat(peakHeld).as("the gauge shows the pages the stalled readers hold").isGreaterThan(8 * MIB);
        assertThat(Http.send(relay.adminUrl(), "GET", "/health", null).status()).isEqualTo(200);
        assertThat(metric(relay, "mbxrelay_pull_pages_cut_total")).as("pages cut after the stall time")
            .isGreaterThan(0);
      } finally {
        for (Socket r : readers) {
          r.close();
        }
      }
      System.out.printf("stalled readers: live heap %d MiB before, %d MiB at most with 100 stalled readers (page"
          + " budget %d MiB), held gauge at most %.1f MiB%n", base / MIB, peak / MIB, BUDGET / MIB, peakHeld / MIB);
      assertThat(peak - base).as("live heap growth (base %d MiB, peak %d MiB)", base / MIB, peak / MIB)
          .isLessThanOrEqualTo(BUDGET + 16 * MIB);
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
      while (metric(relay, "mbxrelay_pull_page_held_bytes") > 0 && System.nanoTime() < deadline) {
        Thread.sleep(100);
      }
      assertThat(metric(relay, "mbxrelay_pull_page_held_bytes")).as("released when the readers went").isZero();
      Http.Resp page = t.pull(0, 500, null);
      assertThat(page.status()).isEqualTo(200);
      assertThat(page.json().get("items").size()).as("a whole page (8 MiB of ~340 KB items)").isGreaterThan(10);
      assertThat(relay.process.isAlive()).isTrue();
    }
  }
}
