package io.mbxrelay.bench;

import io.mbxrelay.bench.BenchHosts.Host;
import io.vertx.core.http.HttpMethod;
import java.io.IOException;
import java.net.HttpURLConnection;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;

/**
 * Issue 9 goal 4, long-poll pulls: every target host runs a receive loop that holds a {@code wait=--wait} pull open,
 * acks what a pull brought and pulls again at once (after an error it waits 1 s). The loops start at 2,000 hosts a
 * second; then open-loop single-item pushes at {@code --push-rate} from the senders to random hosts, a warm-up and the
 * measured phase. The figure that matters is per item: push answered (200, accepted) → the pull answer that carried it,
 * ms. Once a second the relay's {@code mbxrelay_pull_waiting} gauge (admin {@code /metrics}) and the generator's own
 * count of pulls in flight are sampled.
 */
final class LongPollWorkload {
  private static final long PUSH_TIMEOUT_MS = 30_000;
  private static final int PULL_LIMIT = 500;
  private static final double RAMP_PER_SECOND = 2000;

  private final HostedRelayBench.Setup s;
  private final List<Host> targets;
  private final List<Host> senders;
  private final long[] cursor;
  private final int waitSeconds;
  private final Deliveries deliveries = new Deliveries();
  private final AtomicInteger pullsInFlight = new AtomicInteger();
  private final AtomicInteger pushesInFlight = new AtomicInteger();
  private volatile boolean stopping;
  private volatile Phase phase;

  /** Counters of one phase. */
  private static final class Phase {
    final BenchStats stats;
    final BenchStats.Op push;
    final BenchStats.Op ack;
    final LongAdder pagesWithItems = new LongAdder();
    final LongAdder emptyAnswers = new LongAdder();
    final LongAdder pullErrors = new LongAdder();

    Phase(long t0, int seconds) {
      stats = new BenchStats(t0, seconds);
      push = stats.new Op("push");
      ack = stats.new Op("ack");
    }
  }

  LongPollWorkload(HostedRelayBench.Setup s) {
    this.s = s;
    this.targets = s.hosts().targets;
    this.senders = s.hosts().senders;
    this.cursor = new long[targets.size()];
    int max = s.pullWaitMax();
    if (max <= 0) {
      System.out.println("longpoll: WARNING the relay does not advertise features.pull_wait_max_seconds");
    }
    this.waitSeconds = max > 0 ? Math.min(s.o().waitSeconds, max) : s.o().waitSeconds;
  }

  void run() throws Exception {
    HostedRelayBench.Options o = s.o();
    System.out.printf(Locale.ROOT, "longpoll: %d hosts each holding a wait=%d pull (relay max %d s); push %.0f/s (1 item"
            + " of %d B) from %d senders; warm-up %d s, measured %d s%n", targets.size(), waitSeconds, s.pullWaitMax(),
        o.pushRate(), s.items().wireBytes(), senders.size(), o.warmup, o.seconds);
    phase = new Phase(System.nanoTime(), 1);
    long rampStart = System.nanoTime();
    AtomicInteger started = new AtomicInteger();
    long rampEnd = rampStart + (long) (targets.size() / RAMP_PER_SECOND * 1e9) + 1_000_000;
    s.client().openLoop(RAMP_PER_SECOND, rampStart, rampEnd, due -> {
      int t = started.getAndIncrement();
      if (t < targets.size()) {
        pull(t);
      }
    }).await(600, TimeUnit.SECONDS);
    // until the relay holds (nearly) every wait, or 30 s
    long deadline = System.nanoTime() + 30_000_000_000L;
    double waiting = -1;
    while (System.nanoTime() < deadline) {
      waiting = waitingGauge();
      if (waiting < 0 || waiting >= targets.size() * 0.99) {
        break;
      }
      Thread.sleep(200);
    }
    System.out.printf(Locale.ROOT, "ramp: %d receive loops started in %.1f s; relay holds %s waiting pulls; generator"
            + " has %d pulls in flight; %s%n", started.get(), (System.nanoTime() - rampStart) / 1e9,
        waiting < 0 ? "n/a (no admin URL)" : String.format(Locale.ROOT, "%.0f", waiting), pullsInFlight.get(),
        phase.stats.errorCounts());
    if (o.warmup > 0) {
      Phase w = phase(o.warmup, null);
      System.out.printf(Locale.ROOT, "warm-up (not counted): pushes %d ok, acks %d ok, %s%n",
          w.push.ok.getTotalCount(), w.ack.ok.getTotalCount(), w.stats.errorCounts());
    }
    double relayCpu0 = s.relay() == null ? 0 : s.relay().cpuSeconds();
    long cpu0 = HostedRelayBench.generatorCpuNanos();
    long wall0 = System.nanoTime();
    List<double[]> samples = Collections.synchronizedList(new ArrayList<>());
    Phase p = phase(o.seconds, samples);
    // let the last pushes arrive (bounded), then stop the loops
    long until = System.nanoTime() + 5_000_000_000L;
    while (deliveries.undelivered() > 0 && System.nanoTime() < until) {
      Thread.sleep(20);
    }
    double wall = (System.nanoTime() - wall0) / 1e9;
    double genCores = (HostedRelayBench.generatorCpuNanos() - cpu0) / 1e9 / wall;
    stopping = true;

    System.out.printf(Locale.ROOT, "== longpoll: %d hosts, wait=%d s, push %.0f/s, %d s measured%n", targets.size(),
        waitSeconds, o.pushRate(), o.seconds);
    System.out.println(deliveries.summary("push answer → pull answer"));
    System.out.println(p.push.summary());
    System.out.println(p.ack.summary());
    System.out.printf(Locale.ROOT, "pull answers: %d with items, %d empty (wait ran out)%n", p.pagesWithItems.sum(),
        p.emptyAnswers.sum());
    System.out.println("waiting pulls, sampled each second: " + sampleLine(samples));
    System.out.println(p.stats.errorSummary());
    System.out.printf(Locale.ROOT, "generator: CPU %.2f cores over %.0f s%n", genCores, wall);
    System.out.println(HostedRelayBench.relayLine(s.relay(), relayCpu0, wall));
  }

  private Phase phase(int seconds, List<double[]> samples) throws Exception {
    long t0 = System.nanoTime() + 50_000_000L;
    long end = t0 + seconds * 1_000_000_000L;
    Phase p = new Phase(t0, seconds);
    phase = p;
    deliveries.newPhase(t0);
    var pushes = s.client().openLoop(s.o().pushRate(), t0, end, this::push);
    for (int k = 1; System.nanoTime() < end; k++) {
      long at = t0 + k * 1_000_000_000L;
      while (System.nanoTime() < at) {
        Thread.sleep(Math.max(1, (at - System.nanoTime()) / 1_000_000));
      }
      if (samples != null) {
        samples.add(new double[] {waitingGauge(), pullsInFlight.get()});
      }
      if (k % 10 == 0 && k < seconds) {
        System.out.printf(Locale.ROOT, "  [%3d s] pushes %d, pages with items %d, empty %d, pulls in flight %d,"
                + " errors %d%n", k, p.push.ok.getTotalCount(), p.pagesWithItems.sum(), p.emptyAnswers.sum(),
            pullsInFlight.get(), p.stats.errorCount());
      }
    }
    pushes.await(seconds + 60L, TimeUnit.SECONDS);
    long drain = System.nanoTime() + PUSH_TIMEOUT_MS * 1_000_000L + 5_000_000_000L;
    while (pushesInFlight.get() > 0 && System.nanoTime() < drain) {
      Thread.sleep(10);
    }
    return p;
  }

  /** {@code relay min/median/max, generator in flight min/max}. */
  private static String sampleLine(List<double[]> samples) {
    if (samples.isEmpty()) {
      return "none";
    }
    double[] relay = samples.stream().mapToDouble(a -> a[0]).sorted().toArray();
    double[] gen = samples.stream().mapToDouble(a -> a[1]).sorted().toArray();
    String r = relay[0] < 0 ? "relay gauge n/a (pass --admin)" : String.format(Locale.ROOT,
        "relay mbxrelay_pull_waiting min %.0f median %.0f max %.0f", relay[0], relay[relay.length / 2],
        relay[relay.length - 1]);
    return r + String.format(Locale.ROOT, "; generator pulls in flight min %.0f max %.0f (%d samples)", gen[0],
        gen[gen.length - 1], samples.size());
  }

  /** The relay's {@code mbxrelay_pull_waiting} gauge, or -1 without an admin URL or on failure. */
  private double waitingGauge() {
    if (s.adminUrl() == null) {
      return -1;
    }
    try {
      HttpURLConnection c = (HttpURLConnection) URI.create(s.adminUrl() + "/metrics").toURL().openConnection();
      c.setConnectTimeout(2000);
      c.setReadTimeout(5000);
      String text = new String(c.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      c.disconnect();
      double sum = -1;
      for (String line : text.split("\n")) {
        if (line.startsWith("mbxrelay_pull_waiting")) {
          sum = Math.max(sum, 0) + Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
        }
      }
      return sum;
    } catch (IOException | RuntimeException e) {
      return -1;
    }
  }

  /** One receive-loop step of target {@code t}: a waiting pull; then ack (if items) and pull again. */
  private void pull(int t) {
    if (stopping) {
      return;
    }
    long after = cursor[t];
    pullsInFlight.incrementAndGet();
    String path = "/v2/relay/items?after=" + after + "&limit=" + PULL_LIMIT + "&epoch=" + s.epoch() + "&wait="
        + waitSeconds;
    long timeout = (waitSeconds + 15) * 1000L;
    s.client().send(HttpMethod.GET, path, null, targets.get(t), timeout).onComplete(ar -> {
      pullsInFlight.decrementAndGet();
      long now = System.nanoTime();
      if (stopping) {
        return;
      }
      Phase p = phase;
      String error = null;
      PullPage page = null;
      if (ar.failed()) {
        error = BenchClient.failureKind(ar.cause());
        p.stats.error("pull: " + error, String.valueOf(ar.cause()));
      } else if (!ar.result().ok()) {
        error = BenchClient.statusKind(ar.result());
        p.stats.error("pull: " + error, ar.result().text());
      } else {
        try {
          page = PullPage.parse(ar.result().body());
        } catch (IOException | RuntimeException e) {
          error = "unreadable page";
          p.stats.error("pull: unreadable page", e + " " + ar.result().text());
        }
      }
      if (error != null) {
        p.pullErrors.increment();
        s.client().vertx.setTimer(1000, id -> pull(t)); // on this event loop
        return;
      }
      int n = page.itemIds().size();
      for (int i = 0; i < n; i++) {
        deliveries.pulled(page.itemIds().get(i), now);
      }
      cursor[t] = Math.max(after, page.lastSeq());
      if (n == 0) {
        p.emptyAnswers.increment();
        pull(t);
      } else {
        p.pagesWithItems.increment();
        ack(p, t, page.lastSeq(), now);
      }
    });
  }

  private void ack(Phase p, int t, long through, long start) {
    byte[] body = ("{\"epoch\":\"" + s.epoch() + "\",\"through\":" + through + "}").getBytes(StandardCharsets.UTF_8);
    s.client().send(HttpMethod.POST, "/v2/relay/ack", body, targets.get(t), PUSH_TIMEOUT_MS).onComplete(ar -> {
      PushAckAnswers.ack(p.ack, start, ar);
      pull(t);
    });
  }

  private void push(long due) {
    PushAckAnswers.sendOne(s, senders, targets, deliveries, phase.push, pushesInFlight, due, PUSH_TIMEOUT_MS);
  }
}
