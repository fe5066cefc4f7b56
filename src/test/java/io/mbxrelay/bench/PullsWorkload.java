package io.mbxrelay.bench;

import com.fasterxml.jackson.databind.JsonNode;
import io.mbxrelay.bench.BenchClient.Answer;
import io.mbxrelay.bench.BenchHosts.Host;
import io.vertx.core.http.HttpMethod;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicIntegerArray;
import org.HdrHistogram.ConcurrentHistogram;
import org.HdrHistogram.Histogram;

/**
 * Issue 9 goal 3, many pulling hosts: open-loop single-item pushes at {@code --push-rate} from the senders to random
 * targets, and open-loop signed pulls ({@code limit=500}) of random targets at {@code --pull-rate}, each pull that
 * brought items followed by its ack; a target has at most one pull or ack in flight (a pull whose 16 random picks are
 * all busy is not sent and counted as an error). Push and pull latency run from the scheduled start (a stalled relay
 * or generator shows as latency); ack latency from the moment the pull's answer arrived. A warm-up phase runs the same
 * load uncounted.
 */
final class PullsWorkload {
  private static final long TIMEOUT_MS = 30_000;
  private static final int PULL_LIMIT = 500;

  private final HostedRelayBench.Setup s;
  private final List<Host> targets;
  private final List<Host> senders;
  private final long[] cursor;
  private final AtomicIntegerArray busy;
  private final AtomicInteger inflight = new AtomicInteger();
  private final Deliveries deliveries = new Deliveries();
  private volatile Phase phase;

  /** Counters of one phase. */
  private static final class Phase {
    final BenchStats stats;
    final BenchStats.Op push;
    final BenchStats.Op pull;
    final BenchStats.Op ack;
    final Histogram lag = new ConcurrentHistogram(BenchStats.HIGHEST_US, 3);
    final java.util.concurrent.atomic.LongAdder emptyPulls = new java.util.concurrent.atomic.LongAdder();
    final java.util.concurrent.atomic.LongAdder fullPages = new java.util.concurrent.atomic.LongAdder();

    Phase(long t0, int seconds) {
      stats = new BenchStats(t0, seconds);
      push = stats.new Op("push");
      pull = stats.new Op("pull");
      ack = stats.new Op("ack");
    }
  }

  PullsWorkload(HostedRelayBench.Setup s) {
    this.s = s;
    this.targets = s.hosts().targets;
    this.senders = s.hosts().senders;
    this.cursor = new long[targets.size()];
    this.busy = new AtomicIntegerArray(targets.size());
  }

  void run() throws Exception {
    HostedRelayBench.Options o = s.o();
    System.out.printf(Locale.ROOT, "pulls: push %.0f/s (1 item of %d B), pull %.0f/s (limit %d) + ack, %d targets,"
            + " %d senders; warm-up %d s, measured %d s%n", o.pushRate(), s.items().wireBytes(), o.pullRate, PULL_LIMIT,
        targets.size(), senders.size(), o.warmup, o.seconds);
    if (o.warmup > 0) {
      Phase w = phase(o.warmup);
      System.out.printf(Locale.ROOT, "warm-up (not counted): pushes %d ok, pulls %d ok, acks %d ok, %s%n",
          w.push.ok.getTotalCount(), w.pull.ok.getTotalCount(), w.ack.ok.getTotalCount(), w.stats.errorCounts());
    }
    double relayCpu0 = s.relay() == null ? 0 : s.relay().cpuSeconds();
    long cpu0 = HostedRelayBench.generatorCpuNanos();
    long wall0 = System.nanoTime();
    Phase p = phase(o.seconds);
    double wall = (System.nanoTime() - wall0) / 1e9;
    double genCores = (HostedRelayBench.generatorCpuNanos() - cpu0) / 1e9 / wall;
    long pulls = p.pull.ok.getTotalCount();
    System.out.printf(Locale.ROOT, "== pulls: %d targets, push %.0f/s, pull %.0f/s, %d s measured%n", targets.size(),
        o.pushRate(), o.pullRate, o.seconds);
    System.out.println(p.push.summary());
    System.out.println(p.pull.summary() + String.format(Locale.ROOT, "; %.0f%% empty, %d full pages",
        pulls == 0 ? 0.0 : 100.0 * p.emptyPulls.sum() / pulls, p.fullPages.sum()));
    System.out.println(p.ack.summary());
    System.out.println(p.stats.errorSummary());
    System.out.println(deliveries.summary("e2e, push answer → pull answer"));
    System.out.printf(Locale.ROOT, "generator: lag p50 %s p99 %s max %s ms; CPU %.2f cores over %.0f s (incl. drain)%n",
        BenchStats.ms(p.lag, 50), BenchStats.ms(p.lag, 99), BenchStats.fmt(p.lag.getMaxValue() / 1000.0), genCores,
        wall);
    System.out.println(HostedRelayBench.relayLine(s.relay(), relayCpu0, wall));
  }

  /** Runs both open-loop streams for {@code seconds}, then waits (bounded) for what is in flight. */
  private Phase phase(int seconds) throws Exception {
    long t0 = System.nanoTime() + 50_000_000L;
    long end = t0 + seconds * 1_000_000_000L;
    Phase p = new Phase(t0, seconds);
    phase = p;
    deliveries.newPhase(t0);
    var pushes = s.client().openLoop(s.o().pushRate(), t0, end, this::push);
    var pullsDone = s.client().openLoop(s.o().pullRate, t0, end, this::pull);
    for (int k = 10; k < seconds; k += 10) {
      long at = t0 + k * 1_000_000_000L;
      while (System.nanoTime() < at) {
        Thread.sleep(Math.max(1, (at - System.nanoTime()) / 1_000_000));
      }
      System.out.printf(Locale.ROOT, "  [%3d s] pushes %d, pulls %d, acks %d, in flight %d, errors %d%n", k,
          p.push.ok.getTotalCount(), p.pull.ok.getTotalCount(), p.ack.ok.getTotalCount(), inflight.get(),
          p.stats.errorCount());
    }
    pushes.await(seconds + 60L, TimeUnit.SECONDS);
    pullsDone.await(seconds + 60L, TimeUnit.SECONDS);
    long drain = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(2 * TIMEOUT_MS + 5_000);
    while (inflight.get() > 0 && System.nanoTime() < drain) {
      Thread.sleep(10);
    }
    if (inflight.get() > 0) {
      p.stats.error("generator: still in flight after the drain", inflight.get() + " requests");
    }
    return p;
  }

  private void push(long due) {
    Phase p = phase;
    if (inflight.get() >= s.o().maxInflight) {
      p.push.notSent("generator at " + s.o().maxInflight + " in flight");
      return;
    }
    ThreadLocalRandom r = ThreadLocalRandom.current();
    Host sender = senders.get(r.nextInt(senders.size()));
    Host target = targets.get(r.nextInt(targets.size()));
    String id = BenchItems.newId();
    byte[] body = s.items().pushBody(List.of(new BenchItems.Target(id, target.pub())));
    deliveries.sent(id, due);
    inflight.incrementAndGet();
    p.lag.recordValue(BenchStats.us(System.nanoTime() - due));
    s.client().send(HttpMethod.POST, "/v2/relay/items", body, sender, TIMEOUT_MS).onComplete(ar -> {
      inflight.decrementAndGet();
      long now = System.nanoTime();
      if (ar.failed()) {
        deliveries.failed(id);
        p.push.failed(BenchClient.failureKind(ar.cause()), String.valueOf(ar.cause()), now - due);
        return;
      }
      Answer a = ar.result();
      if (!a.ok()) {
        deliveries.failed(id);
        p.push.failed(BenchClient.statusKind(a), a.text(), now - due);
        return;
      }
      String status;
      try {
        JsonNode res = a.json().path("results").path(0);
        status = res.path("status").asText("no status");
        if (status.equals("accepted") && !(res.hasNonNull("accept") && res.hasNonNull("sig"))) {
          status = "accepted without accept receipt";
        }
      } catch (RuntimeException e) {
        status = "unreadable answer";
      }
      if (status.equals("accepted")) {
        p.push.ok(now - due, now);
        deliveries.answered(id, now);
      } else {
        deliveries.failed(id);
        p.push.failed(status.replaceAll(" for bh\\d+$", ""), a.text(), now - due);
      }
    });
  }

  /** A random idle target (16 tries), marked busy; -1 when none found. */
  private int claim() {
    ThreadLocalRandom r = ThreadLocalRandom.current();
    for (int k = 0; k < 16; k++) {
      int t = r.nextInt(targets.size());
      if (busy.compareAndSet(t, 0, 1)) {
        return t;
      }
    }
    return -1;
  }

  private void pull(long due) {
    Phase p = phase;
    if (inflight.get() >= s.o().maxInflight) {
      p.pull.notSent("generator at " + s.o().maxInflight + " in flight");
      return;
    }
    int t = claim();
    if (t < 0) {
      p.pull.notSent("16 random targets busy");
      return;
    }
    long after = cursor[t];
    inflight.incrementAndGet();
    p.lag.recordValue(BenchStats.us(System.nanoTime() - due));
    String path = "/v2/relay/items?after=" + after + "&limit=" + PULL_LIMIT + "&epoch=" + s.epoch();
    s.client().send(HttpMethod.GET, path, null, targets.get(t), TIMEOUT_MS).onComplete(ar -> {
      inflight.decrementAndGet();
      long now = System.nanoTime();
      if (ar.failed()) {
        p.pull.failed(BenchClient.failureKind(ar.cause()), String.valueOf(ar.cause()), now - due);
        busy.set(t, 0);
        return;
      }
      Answer a = ar.result();
      if (!a.ok()) {
        p.pull.failed(BenchClient.statusKind(a), a.text(), now - due);
        busy.set(t, 0);
        return;
      }
      PullPage page;
      try {
        page = PullPage.parse(a.body());
      } catch (java.io.IOException | RuntimeException e) {
        p.pull.failed("unreadable page", e + " " + a.text(), now - due);
        busy.set(t, 0);
        return;
      }
      p.pull.ok(now - due, now);
      int n = page.itemIds().size();
      for (int i = 0; i < n; i++) {
        if (page.seqs()[i] <= after) {
          p.stats.error("pull: item at or below the cursor", page.itemIds().get(i));
        }
        deliveries.pulled(page.itemIds().get(i), now);
      }
      if (n == PULL_LIMIT || page.more()) {
        p.fullPages.increment();
      }
      cursor[t] = Math.max(after, page.lastSeq());
      if (n == 0) {
        p.emptyPulls.increment();
        busy.set(t, 0);
      } else {
        ack(p, t, page.lastSeq(), now);
      }
    });
  }

  private void ack(Phase p, int t, long through, long start) {
    inflight.incrementAndGet();
    byte[] body = ("{\"epoch\":\"" + s.epoch() + "\",\"through\":" + through + "}").getBytes(StandardCharsets.UTF_8);
    s.client().send(HttpMethod.POST, "/v2/relay/ack", body, targets.get(t), TIMEOUT_MS).onComplete(ar -> {
      inflight.decrementAndGet();
      long now = System.nanoTime();
      busy.set(t, 0);
      if (ar.failed()) {
        p.ack.failed(BenchClient.failureKind(ar.cause()), String.valueOf(ar.cause()), now - start);
      } else if (!ar.result().ok()) {
        p.ack.failed(BenchClient.statusKind(ar.result()), ar.result().text(), now - start);
      } else {
        long acked = -1;
        try {
          acked = ar.result().json().path("acked_through").asLong(-1);
        } catch (RuntimeException ignored) {
          // counted below
        }
        if (acked < through) {
          p.ack.failed("acked_through below through", ar.result().text(), now - start);
        } else {
          p.ack.ok(now - start, now);
        }
      }
    });
  }
}
