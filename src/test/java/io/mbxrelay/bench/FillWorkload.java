package io.mbxrelay.bench;

import com.fasterxml.jackson.databind.JsonNode;
import io.mbxrelay.bench.BenchClient.Answer;
import io.mbxrelay.bench.BenchHosts.Host;
import io.vertx.core.Promise;
import io.vertx.core.http.HttpMethod;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;

/**
 * Issue 9 goal 5, preparing a big store: pushes {@code --items} items of {@code --item-bytes} spread evenly over the
 * targets (item k goes to target k mod hosts) in requests of {@code --batch} items, one request in flight per sender
 * (closed loop: as fast as the relay answers). Counts accepted items, rejected items by reason and failed requests;
 * gives up after 50 failed requests in a row.
 */
final class FillWorkload {
  private static final long TIMEOUT_MS = 120_000;
  private static final int MAX_FAILURES_IN_A_ROW = 50;

  private final HostedRelayBench.Setup s;

  FillWorkload(HostedRelayBench.Setup s) {
    this.s = s;
  }

  void run() throws Exception {
    HostedRelayBench.Options o = s.o();
    List<Host> targets = s.hosts().targets;
    List<Host> senders = s.hosts().senders;
    long total = o.items;
    System.out.printf(Locale.ROOT, "fill: %d items of %d B over %d targets, %d per request, %d senders in parallel%n",
        total, s.items().wireBytes(), targets.size(), o.batch, senders.size());
    long t0 = System.nanoTime();
    BenchStats stats = new BenchStats(t0, 24 * 3600);
    BenchStats.Op push = stats.new Op("push request");
    AtomicLong next = new AtomicLong();
    LongAdder accepted = new LongAdder();
    AtomicInteger failuresInARow = new AtomicInteger();
    AtomicInteger running = new AtomicInteger(senders.size());
    Promise<Void> done = Promise.promise();
    double relayCpu0 = s.relay() == null ? 0 : s.relay().cpuSeconds();
    long cpu0 = HostedRelayBench.generatorCpuNanos();
    for (Host sender : senders) {
      s.client().loop().runOnContext(v -> new Object() {
        void step() {
          long from = next.getAndAdd(o.batch);
          if (from >= total || failuresInARow.get() >= MAX_FAILURES_IN_A_ROW) {
            if (running.decrementAndGet() == 0) {
              done.tryComplete();
            }
            return;
          }
          int n = (int) Math.min(o.batch, total - from);
          List<BenchItems.Target> batch = new ArrayList<>(n);
          for (int k = 0; k < n; k++) {
            batch.add(new BenchItems.Target(BenchItems.newId(), targets.get((int) ((from + k) % targets.size())).pub()));
          }
          byte[] body = s.items().pushBody(batch);
          long start = System.nanoTime();
          s.client().send(HttpMethod.POST, "/v2/relay/items", body, sender, TIMEOUT_MS).onComplete(ar -> {
            long now = System.nanoTime();
            if (ar.failed()) {
              failuresInARow.incrementAndGet();
              push.failed(BenchClient.failureKind(ar.cause()), String.valueOf(ar.cause()), now - start);
            } else if (!ar.result().ok()) {
              failuresInARow.incrementAndGet();
              push.failed(BenchClient.statusKind(ar.result()), ar.result().text(), now - start);
            } else {
              failuresInARow.set(0);
              push.ok(now - start, now);
              count(ar.result(), n, accepted, stats);
            }
            step();
          });
        }
      }.step());
    }
    for (int k = 10; !done.future().isComplete(); k += 10) {
      long at = t0 + k * 1_000_000_000L;
      while (!done.future().isComplete() && System.nanoTime() < at) {
        Thread.sleep(50);
      }
      if (!done.future().isComplete()) {
        System.out.printf(Locale.ROOT, "  [%4d s] %d items accepted (%.0f/s), errors %d%n", k, accepted.sum(),
            accepted.sum() / ((System.nanoTime() - t0) / 1e9), stats.errorCount());
      }
    }
    done.future().await(1, TimeUnit.MINUTES);
    double secs = (System.nanoTime() - t0) / 1e9;
    double genCores = (HostedRelayBench.generatorCpuNanos() - cpu0) / 1e9 / secs;
    System.out.printf(Locale.ROOT, "== fill: %d of %d items accepted in %.1f s = %.0f items/s (%.1f MB/s of wire bytes)%n",
        accepted.sum(), total, secs, accepted.sum() / secs, accepted.sum() * (double) s.items().wireBytes() / secs / 1e6);
    System.out.printf(Locale.ROOT, "push requests: %d ok (%.1f/s), latency %s%s%n", push.ok.getTotalCount(),
        push.ok.getTotalCount() / secs, BenchStats.percentiles(push.ok),
        push.failed.getTotalCount() == 0 ? "" : "; " + push.failed.getTotalCount() + " FAILED");
    System.out.println(stats.errorSummary());
    System.out.printf(Locale.ROOT, "generator: CPU %.2f cores%n", genCores);
    System.out.println(HostedRelayBench.relayLine(s.relay(), relayCpu0, secs));
    if (failuresInARow.get() >= MAX_FAILURES_IN_A_ROW) {
      System.out.println("fill: gave up after " + MAX_FAILURES_IN_A_ROW + " failed requests in a row");
    }
  }

  /** Counts a push answer's results: accepted items, the rest as errors by status. */
  private static void count(Answer a, int sent, LongAdder accepted, BenchStats stats) {
    JsonNode results;
    try {
      results = a.json().path("results");
    } catch (RuntimeException e) {
      stats.error("push: unreadable answer", a.text());
      return;
    }
    if (results.size() != sent) {
      stats.error("push: " + results.size() + " results for " + sent + " items", "");
    }
    for (JsonNode r : results) {
      String st = r.path("status").asText("no status");
      if (st.equals("accepted") && r.hasNonNull("sig")) {
        accepted.increment();
      } else {
        stats.error("push item: " + st.replaceAll(" for bh\\d+$", ""), r.toString());
      }
    }
  }
}
