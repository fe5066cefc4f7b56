package io.mbxrelay.bench;

import com.fasterxml.jackson.databind.JsonNode;
import io.mbxrelay.bench.BenchClient.Answer;
import io.mbxrelay.bench.BenchHosts.Host;
import io.vertx.core.http.HttpMethod;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.stream.IntStream;
import org.HdrHistogram.ConcurrentHistogram;
import org.HdrHistogram.Histogram;

/**
 * Issue 9 goal 3 and issue 18 goal 5, many pulling hosts: open-loop single-item pushes at {@code --push-rate} from the
 * senders to random targets, and open-loop signed pulls ({@code limit=500}) of random targets at {@code --pull-rate},
 * each pull that brought items followed by its ack; a target has at most one pull or ack in flight (a pull whose 16
 * next prepared pulls all have a busy target is not sent and counted as an error). Push and pull latency run from the
 * scheduled start (a stalled relay or generator shows as latency); ack latency from the moment the pull's answer
 * arrived. A warm-up phase runs the same load uncounted.
 *
 * <p>As in the side-by-side generator (the team's {@code peers.sh}), every push and every pull of a phase is
 * built and signed before that phase's timer starts ({@link BenchClient#prepare}, the same hop text and signing code a
 * sent request uses, with {@code x-mbx-ts} = the time of preparation), so the timed phase spends the generator's CPU on
 * HTTP only; warm-up and measured phase are prepared separately, each right before it runs. The relay refuses a hop ts
 * more than 300 s old, so a phase refuses to start more than {@link #MAX_PREPARED_AGE_MS} after its preparation began
 * and lasts at most {@link #MAX_PHASE_SECONDS}. A prepared pull carries the cursor its target had at preparation; a
 * target pulled again in the same phase therefore asks from an older {@code after}, which gives the same page (an ack
 * deletes what it covers, and the next pull of a target waits for its ack; after a failed ack the page repeats items,
 * counted as errors). Acks depend on the pull's answer and are signed when sent.
 */
final class PullsWorkload {
  private static final long TIMEOUT_MS = 30_000;
  private static final int PULL_LIMIT = 500;
  /** A phase must start this soon after its first request was signed (the relay refuses a hop ts older than 300 s). */
  static final long MAX_PREPARED_AGE_MS = 60_000;
  /** Longest warm-up or measured phase: its last request goes out at most 60 + 230 s after it was signed. */
  static final int MAX_PHASE_SECONDS = 230;

  private final HostedRelayBench.Setup s;
  private final List<Host> targets;
  private final List<Host> senders;
  private final long[] cursor;
  private final AtomicIntegerArray busy;
  private final AtomicInteger inflight = new AtomicInteger();
  private final Deliveries deliveries = new Deliveries();
  private volatile Phase phase;

  /** A push built and signed before the phase: its item id (for the delivery tracker) and the request. */
  private record PreparedPush(String itemId, BenchClient.Prepared request) {}

  /** A pull built and signed before the phase: the target's index and the request. */
  private record PreparedPull(int target, BenchClient.Prepared request) {}

  /** Counters of one phase, and its prepared requests. */
  private static final class Phase {
    final BenchStats stats;
    final BenchStats.Op push;
    final BenchStats.Op pull;
    final BenchStats.Op ack;
    final Histogram lag = new ConcurrentHistogram(BenchStats.HIGHEST_US, 3);
    final java.util.concurrent.atomic.LongAdder emptyPulls = new java.util.concurrent.atomic.LongAdder();
    final java.util.concurrent.atomic.LongAdder fullPages = new java.util.concurrent.atomic.LongAdder();
    final PreparedPush[] pushes;
    final AtomicInteger nextPush = new AtomicInteger();
    /** Pulls not sent yet; one whose target is busy goes back to the tail. */
    final ConcurrentLinkedQueue<PreparedPull> pulls;
    /** Generator and relay CPU (s) and wall clock (ns) at the timer's start and after the drain. */
    double genCpu0;
    double genCpu1;
    double relayCpu0;
    double relayCpu1;
    /** The relay's CPU per thread group at the timer's start and the drain's end ({@code cpuByThreadGroup}). */
    Map<String, Double> relayThreads0 = Map.of();
    Map<String, Double> relayThreads1 = Map.of();
    /** The relay's pull pages (all, and answered from memory) at the phase's start and end, from admin /metrics. */
    long[] pages0 = {-1, -1};
    long[] pages1 = {-1, -1};
    long wall0;
    long wall1;

    Phase(long t0, int seconds, PreparedPush[] pushes, ConcurrentLinkedQueue<PreparedPull> pulls) {
      stats = new BenchStats(t0, seconds);
      push = stats.new Op("push");
      pull = stats.new Op("pull");
      ack = stats.new Op("ack");
      this.pushes = pushes;
      this.pulls = pulls;
    }

    double wallSeconds() {
      return (wall1 - wall0) / 1e9;
    }

    /** Requests the generator sent in the phase (answered or failed; not the "not sent"). */
    long sent() {
      long n = 0;
      for (BenchStats.Op op : List.of(push, pull, ack)) {
        n += op.ok.getTotalCount() + op.failed.getTotalCount();
      }
      return n;
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
    System.out.printf(Locale.ROOT, "pulls: push %.0f/s (1 item of %d B, %s item ids), pull %.0f/s (limit %d) + ack,"
            + " %d targets, %d senders; warm-up %d s, measured %d s; every push and pull of a phase built and signed"
            + " before its timer starts, acks signed when sent (they carry the pull's last_seq); generator event loops:"
            + " %d; its pooled connections stay open for the run (a relay it starts gets http.idleTimeoutMs 600 s)%n",
        o.pushRate(), s.items().wireBytes(), o.timeOrderedIds ? "time-ordered" : "random", o.pullRate, PULL_LIMIT,
        targets.size(), senders.size(), o.warmup, o.seconds, s.client().loops.size());
    if (o.warmup > 0) {
      Phase w = phase(o.warmup, "warm-up");
      System.out.printf(Locale.ROOT, "warm-up (not counted): pushes %d ok, pulls %d ok, acks %d ok, %s%n",
          w.push.ok.getTotalCount(), w.pull.ok.getTotalCount(), w.ack.ok.getTotalCount(), w.stats.errorCounts());
    }
    Phase p = phase(o.seconds, "measured");
    double wall = p.wallSeconds();
    long pulls = p.pull.ok.getTotalCount();
    System.out.printf(Locale.ROOT, "== pulls: %d targets, push %.0f/s, pull %.0f/s, %d s measured%n", targets.size(),
        o.pushRate(), o.pullRate, o.seconds);
    System.out.println(p.push.summary());
    System.out.println(p.pull.summary() + String.format(Locale.ROOT, "; %.0f%% empty, %d full pages",
        pulls == 0 ? 0.0 : 100.0 * p.emptyPulls.sum() / pulls, p.fullPages.sum()));
    System.out.println(p.ack.summary() + " (acks signed when sent)");
    for (BenchStats.Op op : List.of(p.push, p.pull)) {
      System.out.println("  " + op.name + " from its send (the generator's lag left out): "
          + BenchStats.percentiles(op.okFromSend));
    }
    for (BenchStats.Op op : List.of(p.push, p.pull, p.ack)) {
      String slow = op.slowSeconds();
      if (!slow.isEmpty()) {
        System.out.println("  " + op.name + " tail: " + slow);
      }
    }
    System.out.println(p.stats.errorSummary());
    System.out.println(deliveries.summary("e2e, push answer → pull answer"));
    System.out.printf(Locale.ROOT, "generator: lag p50 %s p99 %s max %s ms%n", BenchStats.ms(p.lag, 50),
        BenchStats.ms(p.lag, 99), BenchStats.fmt(p.lag.getMaxValue() / 1000.0));
    System.out.println(cpuLine(p));
    String threads = BenchRelayProcess.threadGroupCores(p.relayThreads0, p.relayThreads1, wall);
    if (!threads.isEmpty()) {
      // where the relay's cores went: a JIT share well above zero means the warm-up was too short for this machine
      System.out.println("relay threads, cores (/proc/PID/task): " + threads);
    }
    if (p.pages0[0] >= 0 && p.pages1[0] >= 0 && p.pages0[1] >= 0 && p.pages1[1] >= 0) {
      System.out.printf(Locale.ROOT, "relay: %d of %d pull pages in the phase answered from memory (nothing to read)%n",
          p.pages1[1] - p.pages0[1], p.pages1[0] - p.pages0[0]);
    }
    System.out.println(HostedRelayBench.relayLine(s.relay(), p.relayCpu0, wall));
  }

  /** The relay's {@code mbxrelay_pull_pages_total} and {@code _from_memory_total}, -1 where unknown (no admin URL). */
  private long[] relayPages() {
    if (s.adminUrl() == null) {
      return new long[] {-1, -1};
    }
    return new long[] {count(HostedRelayBench.adminValue(s.adminUrl(), "mbxrelay_pull_pages_total")),
        count(HostedRelayBench.adminValue(s.adminUrl(), "mbxrelay_pull_pages_from_memory_total"))};
  }

  private static long count(String value) {
    try {
      return (long) Double.parseDouble(value);
    } catch (NumberFormatException e) {
      return -1; // "n/a": a relay without the series
    }
  }

  /**
   * Who used the machine in a phase, from {@code /proc/PID/stat} of both processes over the same window (timer start
   * to the end of the drain): cores each, and CPU per request the generator sent (pushes, pulls and acks).
   */
  private String cpuLine(Phase p) {
    double wall = p.wallSeconds();
    double gen = p.genCpu1 - p.genCpu0;
    long sent = p.sent();
    String relay = s.relay() == null ? "relay n/a (--url)" : String.format(Locale.ROOT, "relay %.2f cores (%.0f µs"
        + " per request)", (p.relayCpu1 - p.relayCpu0) / wall, sent == 0 ? 0.0 : (p.relayCpu1 - p.relayCpu0) * 1e6 / sent);
    return String.format(Locale.ROOT, "CPU over the measured %.1f s (timer start to drain end, /proc/PID/stat):"
        + " generator %.2f cores (%.0f µs per request, %d requests sent), %s", wall, gen / wall,
        sent == 0 ? 0.0 : gen * 1e6 / sent, sent, relay);
  }

  /**
   * Builds and signs every push and pull of a phase, then (at most {@link #MAX_PREPARED_AGE_MS} after the first
   * signature) runs both open-loop streams for {@code seconds} and waits (bounded) for what is in flight.
   */
  private Phase phase(int seconds, String label) throws Exception {
    HostedRelayBench.Options o = s.o();
    long prep0 = System.nanoTime();
    long preparedAtMs = System.currentTimeMillis();
    double prepCpu0 = HostedRelayBench.generatorCpuNanos() / 1e9;
    long span = seconds * 1_000_000_000L;
    PreparedPush[] pushes = new PreparedPush[BenchClient.openLoopCount(o.pushRate(), span)];
    IntStream.range(0, pushes.length).parallel().forEach(i -> {
      ThreadLocalRandom r = ThreadLocalRandom.current();
      Host sender = senders.get(r.nextInt(senders.size()));
      Host target = targets.get(r.nextInt(targets.size()));
      // as a host makes it when it sends: the timestamp of the push's planned send time (open loop, in index order)
      String id = o.timeOrderedIds ? BenchItems.ulidAt(preparedAtMs + (long) (i * 1000.0 / o.pushRate()))
          : BenchItems.newId();
      byte[] body = s.items().pushBody(List.of(new BenchItems.Target(id, target.pub())));
      pushes[i] = new PreparedPush(id, BenchClient.prepare(HttpMethod.POST, "/v2/relay/items", body, sender));
    });
    PreparedPull[] pullArray = new PreparedPull[BenchClient.openLoopCount(o.pullRate, span)];
    IntStream.range(0, pullArray.length).parallel().forEach(i -> {
      int t = ThreadLocalRandom.current().nextInt(targets.size());
      String path = "/v2/relay/items?after=" + cursor[t] + "&limit=" + PULL_LIMIT + "&epoch=" + s.epoch();
      pullArray[i] = new PreparedPull(t, BenchClient.prepare(HttpMethod.GET, path, null, targets.get(t)));
    });
    ConcurrentLinkedQueue<PreparedPull> pulls = new ConcurrentLinkedQueue<>(List.of(pullArray));
    double prepSeconds = (System.nanoTime() - prep0) / 1e9;
    double prepCpu = HostedRelayBench.generatorCpuNanos() / 1e9 - prepCpu0;
    System.gc(); // the preparation's garbage is not the timed phase's
    double settled = HostedRelayBench.settleJit(); // nor the JIT's work on the preparation's code
    long age = System.currentTimeMillis() - preparedAtMs;
    System.out.printf(Locale.ROOT, "%s: prepared %d pushes and %d pulls (built and signed) in %.1f s (%.1f CPU-s),"
            + " JIT settled in %.1f s; the timer starts %.1f s after the first signature%n", label, pushes.length,
        pullArray.length, prepSeconds, prepCpu, settled, age / 1000.0);
    if (age > MAX_PREPARED_AGE_MS) {
      throw new IllegalStateException(String.format(Locale.ROOT, "%s: the prepared hops are %d s old when the timer"
          + " would start (at most %d s: the relay refuses a hop ts older than 300 s); a shorter phase or a less loaded"
          + " machine", label, age / 1000, MAX_PREPARED_AGE_MS / 1000));
    }

    long t0 = System.nanoTime() + 50_000_000L;
    long end = t0 + span;
    Phase p = new Phase(t0, seconds, pushes, pulls);
    phase = p;
    deliveries.newPhase(t0);
    // read before the timer (a few ms for ~100 threads), so the first second's sends are not held up
    p.relayThreads0 = s.relay() == null ? Map.of() : s.relay().cpuByThreadGroup();
    p.pages0 = relayPages();
    while (System.nanoTime() < t0) {
      Thread.sleep(1);
    }
    p.relayCpu0 = s.relay() == null ? 0 : s.relay().cpuSeconds();
    p.genCpu0 = HostedRelayBench.generatorCpuNanos() / 1e9;
    p.wall0 = System.nanoTime();
    var pushesDone = s.client().openLoop(o.pushRate(), t0, end, this::push);
    var pullsDone = s.client().openLoop(o.pullRate, t0, end, this::pull);
    for (int k = 10; k < seconds; k += 10) {
      long at = t0 + k * 1_000_000_000L;
      while (System.nanoTime() < at) {
        Thread.sleep(Math.max(1, (at - System.nanoTime()) / 1_000_000));
      }
      System.out.printf(Locale.ROOT, "  [%3d s] pushes %d, pulls %d, acks %d, in flight %d, errors %d%n", k,
          p.push.ok.getTotalCount(), p.pull.ok.getTotalCount(), p.ack.ok.getTotalCount(), inflight.get(),
          p.stats.errorCount());
    }
    pushesDone.await(seconds + 60L, TimeUnit.SECONDS);
    pullsDone.await(seconds + 60L, TimeUnit.SECONDS);
    long drain = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(2 * TIMEOUT_MS + 5_000);
    while (inflight.get() > 0 && System.nanoTime() < drain) {
      Thread.sleep(10);
    }
    p.wall1 = System.nanoTime();
    p.genCpu1 = HostedRelayBench.generatorCpuNanos() / 1e9;
    p.relayCpu1 = s.relay() == null ? 0 : s.relay().cpuSeconds();
    p.relayThreads1 = s.relay() == null ? Map.of() : s.relay().cpuByThreadGroup();
    p.pages1 = relayPages();
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
    int k = p.nextPush.getAndIncrement();
    if (k >= p.pushes.length) {
      p.push.notSent("no prepared push left");
      return;
    }
    PreparedPush pp = p.pushes[k];
    p.pushes[k] = null; // sent once; let it go
    String id = pp.itemId();
    deliveries.sent(id, due);
    inflight.incrementAndGet();
    long sent = System.nanoTime();
    p.lag.recordValue(BenchStats.us(sent - due));
    s.client().send(pp.request(), TIMEOUT_MS).onComplete(ar -> {
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
        p.push.ok(now - due, now, now - sent);
        deliveries.answered(id, now);
      } else {
        deliveries.failed(id);
        p.push.failed(status.replaceAll(" for bh\\d+$", ""), a.text(), now - due);
      }
    });
  }

  /**
   * The next prepared pull whose target is idle (16 tries), its target marked busy; those with a busy target go back to
   * the tail of the queue. Null when none found.
   */
  private PreparedPull claim(Phase p) {
    List<PreparedPull> skipped = new ArrayList<>(0);
    PreparedPull found = null;
    for (int k = 0; k < 16; k++) {
      PreparedPull c = p.pulls.poll();
      if (c == null) {
        break;
      }
      if (busy.compareAndSet(c.target(), 0, 1)) {
        found = c;
        break;
      }
      skipped.add(c);
    }
    p.pulls.addAll(skipped);
    return found;
  }

  private void pull(long due) {
    Phase p = phase;
    if (inflight.get() >= s.o().maxInflight) {
      p.pull.notSent("generator at " + s.o().maxInflight + " in flight");
      return;
    }
    PreparedPull pp = claim(p);
    if (pp == null) {
      p.pull.notSent(p.pulls.isEmpty() ? "no prepared pull left" : "16 random targets busy");
      return;
    }
    int t = pp.target();
    // the target's cursor now; the prepared pull may ask from an older one (the same page: acks delete what they cover)
    long after = cursor[t];
    inflight.incrementAndGet();
    long sent = System.nanoTime();
    p.lag.recordValue(BenchStats.us(sent - due));
    s.client().send(pp.request(), TIMEOUT_MS).onComplete(ar -> {
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
      p.pull.ok(now - due, now, now - sent);
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
