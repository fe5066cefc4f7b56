package io.mbxrelay.bench;

import io.mbxrelay.bench.BenchHosts.Host;
import java.io.IOException;
import java.net.HttpURLConnection;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;

/**
 * Issue 18 goal 4, as many long-polling hosts as the machine holds, in one run:
 *
 * <ol>
 *   <li>the hosts' receive loops start in stages (5,000, 10,000, then all): each loop holds a freshly signed
 *       {@code wait=} pull, acks what a pull brought and pulls again; after each stage, once the relay holds the waits
 *       ({@code mbxrelay_pull_waiting}), the relay's RSS and its heap after a full collection ({@code jcmd}) are
 *       printed, then the per-host slope between the first and the last stage and the 100,000-host projection;
 *   <li>with every host waiting, open-loop single-item pushes at {@code --push-rate} to random hosts (warm-up, then
 *       measured): push answer → pull answer p50/p99, push latency, relay CPU;
 *   <li>the relay is stopped (SIGTERM, which answers the waits) and started again on the same store and port; every
 *       host then reconnects at once with a freshly signed wait pull (a refused or failed one retries after its
 *       {@code Retry-After}, else 1 s): time until the relay holds every wait again, and the status of every answer.
 * </ol>
 *
 * <p>With {@code --connection close} every request carries {@code connection: close} (a new connection each time, as
 * the AgentMBX Node transport does). Pushes use their own small pool, so they never wait behind the pulls' connections.
 * Prints figures; asserts nothing.
 *
 * <p>The hosts' receive loops ({@link HostLoops}) run in this process when its open-file limit holds them all; else
 * ({@link HostedRelayBench#fileLimitCheck}, or {@code --hosts-per-process}) they are split over child JVMs
 * ({@link HostProcesses}, each a {@link HostsProcess}) that report what their loops see; this process keeps the stages,
 * the memory figures, the pushes, the restart and the report either way.
 */
final class HostsWorkload {
  private static final long PUSH_TIMEOUT_MS = 30_000;
  /** Receive loops started per second in a stage (each a page read and a hop check on the relay). */
  private static final double RAMP_PER_SECOND = 1000;
  static final int[] STAGES = {5_000, 10_000};
  static final int PROJECTED_HOSTS = 100_000;

  /**
   * The hosts' receive loops, wherever they run: hosts are numbered {@code 0 .. --hosts - 1} as in the target list.
   * Methods are called from the workload's main thread.
   */
  interface HostsSide extends AutoCloseable {
    /** Starts the loops of hosts {@code from} (inclusive) to {@code to} (exclusive), {@link #RAMP_PER_SECOND} in all. */
    void start(int from, int to) throws Exception;

    /** From now on a loop whose pull ends parks (the restart). */
    void pause();

    /** Loops parked so far (a child's figure may be up to 200 ms old). */
    int parked();

    /** Every parked loop pulls again at once; returns how many. */
    int resume() throws Exception;

    /** Pulls sent and not yet answered (a child's figure may be up to 200 ms old). */
    int pullsInFlight();

    /** Ends the loops (and the child processes). */
    @Override
    void close() throws Exception;
  }

  private final HostedRelayBench.Setup s;
  private final List<Host> targets;
  private final List<Host> senders;
  private final int waitSeconds;
  private final Deliveries deliveries = new Deliveries();
  private final AtomicInteger pushesInFlight = new AtomicInteger();
  /** While true (the restart), pull errors are the storm's, not the phase's. */
  private volatile boolean paused;
  private volatile Phase phase;
  /** Status of every pull answer during the reconnect storm: "200", "503 retry-after 5", "connect", … */
  private volatile Map<String, LongAdder> stormStatuses;
  private final BenchRelayProcess[] relay;

  private static final class Phase {
    final BenchStats stats;
    final BenchStats.Op push;
    final BenchStats.Op ack;
    final LongAdder pagesWithItems = new LongAdder();
    final LongAdder emptyAnswers = new LongAdder();

    Phase(long t0, int seconds) {
      stats = new BenchStats(t0, seconds);
      push = stats.new Op("push");
      ack = stats.new Op("ack");
    }
  }

  HostsWorkload(HostedRelayBench.Setup s, BenchRelayProcess[] relay) {
    this.s = s;
    this.relay = relay;
    this.targets = s.hosts().targets;
    this.senders = s.hosts().senders;
    int max = s.pullWaitMax();
    this.waitSeconds = max > 0 ? Math.min(s.o().waitSeconds, max) : s.o().waitSeconds;
  }

  private BenchRelayProcess relay() {
    return relay[0];
  }

  /** What the loops see, into this workload's counters (from the event loops, or a child's reader thread). */
  private final HostLoops.Sink sink = new HostLoops.Sink() {
    @Override
    public void pullAnswered(String status, String error, String sample, int items) {
      storm(status);
      Phase p = phase;
      if (error != null) {
        if (!paused) {
          p.stats.error("pull: " + error, sample);
        }
      } else if (items == 0) {
        p.emptyAnswers.increment();
      } else {
        p.pagesWithItems.increment();
      }
    }

    @Override
    public void pulled(String itemId, long atNanos) {
      deliveries.pulled(itemId, atNanos);
    }

    @Override
    public void ackAnswered(long startNanos, long nowNanos, String errorKind, String sample) {
      BenchStats.Op ack = phase.ack;
      if (errorKind == null) {
        ack.ok(nowNanos - startNanos, nowNanos);
      } else {
        ack.failed(errorKind, sample, nowNanos - startNanos);
      }
    }
  };

  private HostsSide side;
  /** The child JVMs when the hosts are split over them, else null. */
  private HostProcesses processes;

  void run() throws Exception {
    HostedRelayBench.Options o = s.o();
    System.out.printf(Locale.ROOT, "hosts: %d hosts each holding a wait=%d pull; %s; push %.0f/s from %d senders;"
            + " warm-up %d s, measured %d s%n", targets.size(), waitSeconds,
        s.client().keepAlive ? "keep-alive" : "connection: close on every request", o.pushRate(), senders.size(),
        o.warmup, o.seconds);
    phase = new Phase(System.nanoTime(), 1);
    if (o.hostProcesses > 0) {
      processes = new HostProcesses(s, o.hostProcesses, waitSeconds, RAMP_PER_SECOND, sink);
      side = processes;
    } else {
      side = new HostLoops(s.client(), targets, s.epoch(), waitSeconds, RAMP_PER_SECOND, sink);
    }
    try {
      runStages();
    } finally {
      side.close();
    }
  }

  private void runStages() throws Exception {
    HostedRelayBench.Options o = s.o();
    List<double[]> marks = new ArrayList<>(); // hosts, rss MiB, heap MiB
    marks.add(memory(0)); // hosts, rss, live heap, outside the heap
    int startedLoops = 0;
    List<Integer> stages = new ArrayList<>();
    for (int st : STAGES) {
      if (st < targets.size()) {
        stages.add(st);
      }
    }
    stages.add(targets.size());
    for (int stage : stages) {
      long t0 = System.nanoTime();
      side.start(startedLoops, stage);
      startedLoops = stage;
      double waiting = awaitWaiting(stage, 120);
      System.out.printf(Locale.ROOT, "stage %,d hosts: loops started and %.0f waits held in %.1f s; %s%n", stage,
          waiting, (System.nanoTime() - t0) / 1e9, phase.stats.errorCounts());
      // the slope is per wait the relay holds (the gauge), not per loop started
      marks.add(memory(waiting >= 0 ? (int) waiting : stage));
    }
    printSlope(marks);

    if (o.warmup > 0) {
      Phase w = pushPhase(o.warmup);
      System.out.printf(Locale.ROOT, "warm-up (not counted): pushes %d ok, acks %d ok, %s%n",
          w.push.ok.getTotalCount(), w.ack.ok.getTotalCount(), w.stats.errorCounts());
    }
    double relayCpu0 = relay() == null ? 0 : relay().cpuSeconds();
    double cpu0 = HostedRelayBench.generatorCpuNanos() / 1e9;
    double childCpu0 = processes == null ? 0 : processes.cpuSeconds();
    long wall0 = System.nanoTime();
    Phase p = pushPhase(o.seconds);
    long until = System.nanoTime() + 5_000_000_000L;
    while (deliveries.undelivered() > 0 && System.nanoTime() < until) {
      Thread.sleep(20);
    }
    double wall = (System.nanoTime() - wall0) / 1e9;
    double ownCpu = HostedRelayBench.generatorCpuNanos() / 1e9 - cpu0;
    double childCpu = processes == null ? 0 : processes.cpuSeconds() - childCpu0;
    System.out.printf(Locale.ROOT, "== hosts: %d hosts waiting, wait=%d s, push %.0f/s, %d s measured, %s%n",
        targets.size(), waitSeconds, o.pushRate(), o.seconds, s.client().keepAlive ? "keep-alive" : "connection: close");
    System.out.println(deliveries.summary("push answer → pull answer"));
    System.out.println(p.push.summary());
    System.out.println(p.ack.summary());
    System.out.printf(Locale.ROOT, "pull answers: %d with items, %d empty (wait ran out); relay holds %.0f waits, %s"
            + " connections open, %s refused%n", p.pagesWithItems.sum(), p.emptyAnswers.sum(),
        metric("mbxrelay_pull_waiting"), fmt(metric("mbxrelay_http_connections_open")),
        fmt(metric("mbxrelay_http_connections_refused_total")));
    System.out.println(p.stats.errorSummary());
    System.out.printf(Locale.ROOT, "generator: CPU %.2f cores over %.0f s%s%n", (ownCpu + childCpu) / wall, wall,
        processes == null ? "" : String.format(Locale.ROOT, " (this process %.2f, its %d hosts processes %.2f)",
            ownCpu / wall, processes.size(), childCpu / wall));
    System.out.println(HostedRelayBench.relayLine(relay(), relayCpu0, wall));

    if (relay() != null && !o.noRestart) {
      restartStorm();
    }
  }

  /** Waits until the relay holds {@code n} waits (at least 99.5 %), at most {@code seconds}; returns the gauge. */
  private double awaitWaiting(int n, int seconds) throws InterruptedException {
    long deadline = System.nanoTime() + seconds * 1_000_000_000L;
    double w = metric("mbxrelay_pull_waiting");
    while (System.nanoTime() < deadline && w >= 0 && w < n * 0.995) {
      Thread.sleep(200);
      w = metric("mbxrelay_pull_waiting");
    }
    return w;
  }

  /**
   * {@code {hosts, rss MiB, heap after GC MiB, RSS outside the committed heap MiB}} of the relay now, printed. The RSS
   * outside the heap is what the process holds besides the Java heap (thread stacks, metaspace, code cache, direct
   * buffers, malloc arenas); the committed heap itself follows G1's sizing (allocation rate, not live data), so a slope of
   * the whole RSS mostly measures how G1 grew the heap during the ramp.
   */
  private double[] memory(int hosts) {
    if (relay() == null) {
      return new double[] {hosts, -1, -1, -1};
    }
    double[] heap = relay().heapAfterGcMiB();
    double rss = relay().memoryMiB()[0];
    double outside = heap[1] < 0 ? -1 : rss - heap[1];
    System.out.printf(Locale.ROOT, "  relay memory at %,d waiting hosts: RSS %.0f MiB (heap committed %.0f MiB, outside"
            + " the heap %.0f MiB), heap used after full GC %.1f MiB, connections open %s%n", hosts, rss, heap[1],
        outside, heap[0], fmt(metric("mbxrelay_http_connections_open")));
    return new double[] {hosts, rss, heap[0], outside};
  }

  /**
   * The per-host slopes between the first stage and the last, and the projection to 100,000 hosts: heap (live data
   * after a full GC), RSS outside the heap, and the memory those two make (live heap + outside), beside the raw RSS.
   */
  private static void printSlope(List<double[]> marks) {
    double[] first = marks.get(1);
    double[] last = marks.get(marks.size() - 1);
    if (marks.size() < 3 || last[0] <= first[0]) {
      first = marks.get(0);
    }
    double dh = last[0] - first[0];
    if (dh <= 0 || last[1] < 0) {
      return;
    }
    double more = PROJECTED_HOSTS - last[0];
    double rssPerHost = (last[1] - first[1]) * 1024 / dh;
    double heapPerHost = (last[2] - first[2]) * 1024 / dh;
    double outsidePerHost = (last[3] - first[3]) * 1024 / dh;
    double heapProjected = last[2] + heapPerHost * more / 1024;
    double outsideProjected = last[3] + outsidePerHost * more / 1024;
    double rssProjected = last[1] + rssPerHost * more / 1024;
    System.out.printf(Locale.ROOT, "per waiting host (%,.0f → %,.0f hosts): live heap %.2f KiB, RSS outside the heap"
            + " %.2f KiB, raw RSS %.1f KiB (includes G1 growing the heap)%n", first[0], last[0], heapPerHost,
        outsidePerHost, rssPerHost);
    System.out.printf(Locale.ROOT, "projected at %,d hosts: live heap %.0f MiB + outside the heap %.0f MiB = %.0f MiB"
            + " (%.2f GiB) before G1's headroom; raw RSS slope %.0f MiB (%.2f GiB)%n", PROJECTED_HOSTS, heapProjected,
        outsideProjected, heapProjected + outsideProjected, (heapProjected + outsideProjected) / 1024, rssProjected,
        rssProjected / 1024);
  }

  private Phase pushPhase(int seconds) throws Exception {
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
      if (k % 10 == 0 && k < seconds) {
        System.out.printf(Locale.ROOT, "  [%3d s] pushes %d, pages with items %d, empty %d, pulls in flight %d,"
                + " errors %d%n", k, p.push.ok.getTotalCount(), p.pagesWithItems.sum(), p.emptyAnswers.sum(),
            side.pullsInFlight(), p.stats.errorCount());
      }
    }
    pushes.await(seconds + 60L, TimeUnit.SECONDS);
    long drain = System.nanoTime() + PUSH_TIMEOUT_MS * 1_000_000L + 5_000_000_000L;
    while (pushesInFlight.get() > 0 && System.nanoTime() < drain) {
      Thread.sleep(10);
    }
    return p;
  }

  /**
   * Stops the relay, starts it again on the same store and port, and lets every host reconnect at once. "Served" is
   * the relay holding the host's wait again ({@code mbxrelay_pull_waiting} reaches the host count).
   */
  private void restartStorm() throws Exception {
    paused = true;
    side.pause();
    BenchRelayProcess old = relay();
    int port = old.port;
    double stopped = old.stop();
    System.out.printf(Locale.ROOT, "restart: relay stopped (SIGTERM) in %.2f s; %s%n", stopped, old.problemsLine());
    // every loop's pull has ended (answered early by the stop, or failed): wait until all are parked
    long deadline = System.nanoTime() + 60_000_000_000L;
    while (side.parked() < targets.size() && System.nanoTime() < deadline) {
      Thread.sleep(50);
    }
    relay[0] = HostedRelayBench.startRelay(s.store(), s.o(), s.work(), port,
        "relay restarted on the same store and port");
    Map<String, LongAdder> statuses = new ConcurrentHashMap<>();
    stormStatuses = statuses;
    paused = false;
    long t0 = System.nanoTime();
    // all at once: every parked loop pulls again now, spread over the event loops (of every hosts process)
    int ready = side.resume();
    double held = -1;
    double servedAt = Double.NaN;
    long end = t0 + 120_000_000_000L;
    while (System.nanoTime() < end) {
      held = metric("mbxrelay_pull_waiting");
      if (held >= ready) {
        servedAt = (System.nanoTime() - t0) / 1e9;
        break;
      }
      Thread.sleep(100);
    }
    stormStatuses = null;
    System.out.printf(Locale.ROOT, "== reconnect storm (%s): %d hosts reconnect at once after the restart (%d had"
            + " not come back from the stop within 60 s and reconnect later); %s; relay holds %.0f waits; relay /ready"
            + " %.2f s after its process start%n",
        s.client().keepAlive ? "keep-alive" : "connection: close", ready, targets.size() - ready,
        Double.isNaN(servedAt) ? "NOT all served within 120 s" : String.format(Locale.ROOT,
            "all served (every wait held again) %.1f s after the relay was ready", servedAt), held,
        relay().readySeconds);
    System.out.println("storm answers by status: " + new TreeMap<>(statuses.entrySet().stream().collect(
        java.util.stream.Collectors.toMap(Map.Entry::getKey, e -> e.getValue().sum()))));
    System.out.printf(Locale.ROOT, "relay after the storm: %s connections open, %s refused (cap %s); %s%n",
        fmt(metric("mbxrelay_http_connections_open")), fmt(metric("mbxrelay_http_connections_refused_total")),
        fmt(metric("mbxrelay_http_connections_max")), relay().memoryLine());
  }

  private static String fmt(double v) {
    return v < 0 ? "n/a" : String.format(Locale.ROOT, "%.0f", v);
  }

  /** Sum of an admin {@code /metrics} series over its labels, or -1 without an admin URL or on failure. */
  private double metric(String name) {
    String admin = relay() != null ? relay().adminUrl() : s.adminUrl();
    if (admin == null) {
      return -1;
    }
    try {
      HttpURLConnection c = (HttpURLConnection) URI.create(admin + "/metrics").toURL().openConnection();
      c.setConnectTimeout(2000);
      c.setReadTimeout(5000);
      String text = new String(c.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      c.disconnect();
      double sum = -1;
      for (String line : text.split("\n")) {
        if (line.startsWith(name + " ") || line.startsWith(name + "{")) {
          sum = Math.max(sum, 0) + Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
        }
      }
      return sum;
    } catch (IOException | RuntimeException e) {
      return -1;
    }
  }

  private void storm(String status) {
    Map<String, LongAdder> m = stormStatuses;
    if (m != null) {
      m.computeIfAbsent(status, k -> new LongAdder()).increment();
    }
  }

  private void push(long due) {
    PushAckAnswers.sendOne(s, senders, targets, deliveries, phase.push, pushesInFlight, due, PUSH_TIMEOUT_MS);
  }
}
