package io.mbxrelay.bench;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.stream.Stream;

/**
 * The hosted-relay benchmark (issue 9 goals 3–5): many enrolled hosts pulling from one relay. Prints figures; asserts
 * nothing. Run with {@code scripts/bench-hosted MODE [options]}; modes:
 *
 * <ul>
 *   <li>{@code pulls} ({@link PullsWorkload}): {@code --hosts} targets and 4 senders; open-loop single-item pushes
 *       at {@code --push-rate} to random targets and signed pulls of random targets at {@code --pull-rate}, each pull
 *       that brought items followed by its ack; every push and pull of a phase built and signed before its timer
 *       starts; push/pull/ack latency percentiles (ms, from the scheduled start), throughput, errors, end-to-end
 *       delivery, generator lag, the generator's and the relay's CPU side by side, the relay's RSS.
 *   <li>{@code longpoll} ({@link LongPollWorkload}): every host holds a {@code wait=25} pull open; pushes at
 *       {@code --push-rate}; latency from the push's answer to the pull answer that carried the item, and how many
 *       pulls the relay held waiting ({@code mbxrelay_pull_waiting}).
 *   <li>{@code hosts} ({@link HostsWorkload}, issue 18 goal 4): long-polling hosts started in stages with the relay's
 *       RSS and heap per waiting host, pushes to random hosts, then a relay restart with every host reconnecting at
 *       once; {@code --connection close} for a new connection per request. Hosts beyond what this process's file
 *       limit holds run in child JVMs ({@link HostProcesses}).
 *   <li>{@code fill} ({@link FillWorkload}): pushes {@code --items} ~1 KiB items over {@code --hosts} hosts into
 *       {@code --store DIR} as fast as it takes them, keeps the store and the hosts' test keys
 *       ({@code DIR/bench-hosts.txt}) for later runs with {@code --store DIR}, then restarts the relay and times it
 *       to {@code /ready}.
 * </ul>
 *
 * <p>Unless {@code --url} names a running relay, the shaded jar is started as a child process with
 * {@code --relay-opts} (default {@code -Xmx512m}), the per-address enrolment, per-sender push, enrolment-count,
 * queue, sender-total and store-wide limits lifted through {@code MBX_RELAY_LIMITS_*} (a benchmark is one address and a
 * few senders), and the admin server on a free port; its time from process start to {@code /ready} is printed. The
 * load generator is one Vert.x instance (an event loop per core, pooled keep-alive connections) sharing the machine
 * with the relay.
 *
 * <p>File limits (issue 18 goal 4): the relay child and this generator are separate processes, each with its own
 * open-file limit ({@code ulimit -n}, 20,000 here). Before a {@code longpoll} or {@code hosts} run the generator reads
 * its own limit and the descriptors it already has open, and holds at most that many less {@link #GENERATOR_RESERVE}
 * connections (pulls plus the push pool); {@code longpoll} cuts more {@code --hosts} than that to it, {@code hosts}
 * splits them over child JVMs ({@link #fileLimitCheck}), and either says so. Running into
 * the limit made the generator fail to open even its own class files (the {@code NoClassDefFoundError}s of a
 * 30,000-host run). The relay's own cap ({@code http.maxConnections}, by default its limit less
 * {@code http.reservedFiles}) is printed from its metrics; hosts over it are answered 503 + {@code Retry-After}.
 */
public final class HostedRelayBench {
  private HostedRelayBench() {}

  /** Descriptors the generator keeps for itself (jars, class files, /proc reads, the admin scrapes), beyond its pools. */
  static final int GENERATOR_RESERVE = 300;
  /** Connections of the push pool in the hosts workload. */
  static final int PUSH_CONNECTIONS = 256;
  /** Most child JVMs the hosts workload splits its hosts over. */
  static final int MAX_HOST_PROCESSES = 8;

  /** Environment for a relay started by the benchmark: limits a benchmark must not hit. */
  static final Map<String, String> RELAY_ENV = Map.ofEntries(
      Map.entry("MBX_RELAY_LIMITS_PUSH_REQUESTS_PER_MINUTE", "1000000"),
      Map.entry("MBX_RELAY_LIMITS_ENROL_CALLS_PER_MINUTE", "1000000"),
      Map.entry("MBX_RELAY_LIMITS_MAX_ENROLMENTS", "1000000"),
      Map.entry("MBX_RELAY_LIMITS_MAX_QUEUE_ITEMS", "1000000"),
      Map.entry("MBX_RELAY_LIMITS_MAX_SENDER_ITEMS", "1000000"),
      Map.entry("MBX_RELAY_LIMITS_MAX_QUEUE_BYTES", "10000000000"),
      Map.entry("MBX_RELAY_LIMITS_MAX_SENDER_BYTES", "10000000000"),
      // a few senders push everything: their totals over all targets, and the store's, must not bind either
      Map.entry("MBX_RELAY_LIMITS_MAX_SENDER_TOTAL_ITEMS", "100000000"),
      Map.entry("MBX_RELAY_LIMITS_MAX_SENDER_TOTAL_BYTES", "1000000000000"),
      Map.entry("MBX_RELAY_LIMITS_MAX_STORE_ITEMS", "100000000"),
      Map.entry("MBX_RELAY_LIMITS_MAX_STORE_BYTES", "1000000000000"));

  /**
   * Environment added for the {@code pulls} workload: the relay keeps an idle connection for 600 s instead of 75, so the
   * generator's pool (which closes none) neither loses nor reopens connections inside a phase.
   */
  static final Map<String, String> PULLS_RELAY_ENV = Map.of("MBX_RELAY_HTTP_IDLE_TIMEOUT_MS", "600000");

  /** Command-line options (see {@link #USAGE}); rates per second, times in seconds, sizes in bytes. */
  static final class Options {
    String mode;
    int hosts = 10_000;
    int seconds = 60;
    int warmup = 30;
    String url;
    String admin;
    String relayOpts = "-Xmx512m";
    Path store;
    Double pushRate;
    double pullRate = 1000;
    long items = 1_000_000;
    int itemBytes = 1024;
    int senders = 4;
    int waitSeconds = 25;
    int enrolConcurrency = 32;
    int batch = 200;
    int maxInflight = 4096;
    boolean keepAlive = true;
    /** pulls mode: push item ids as hosts make them (ULIDs in send order) rather than with no order. */
    boolean timeOrderedIds = true;
    boolean noRestart;
    /** hosts mode: at most this many waiting hosts per generator process ({@code --hosts-per-process}), 0 = the limit. */
    int hostsPerProcess;
    /** hosts mode: child JVMs holding the hosts (set by {@link #fileLimitCheck}); 0 = the hosts run in this process. */
    int hostProcesses;
    /** Extra environment for a started relay ({@code --relay-env K=V}, repeatable), e.g. to try a config knob. */
    final Map<String, String> relayEnv = new LinkedHashMap<>();

    /** Generator event loops ({@code --event-loops}): 1 for pulls, else one per core. */
    Integer eventLoops;

    double pushRate() {
      return pushRate != null ? pushRate : mode.equals("longpoll") ? 200 : mode.equals("hosts") ? 500 : 1000;
    }

    int eventLoops() {
      return eventLoops != null ? eventLoops : mode.equals("pulls") ? 1 : Runtime.getRuntime().availableProcessors();
    }
  }

  static final String USAGE = """
      usage: scripts/bench-hosted pulls|longpoll|hosts|fill [options]
        --hosts N          enrolled target hosts (10000); longpoll/hosts: cut to what the generator's file limit allows
        --seconds S        measured seconds (60)
        --warmup S         warm-up seconds, same load, not counted (30)
        --push-rate R      single-item pushes per second (pulls 1000, longpoll 200, hosts 500)
        --pull-rate R      pulls per second, pulls mode (1000)
        --wait S           long-poll wait per pull, longpoll and hosts modes (25)
        --connection C     keep-alive (default) or close: connection: close on every request (hosts mode)
        --hosts-per-process N  hosts mode: at most N waiting hosts per generator process (default: what its file limit
                           allows); more hosts are split over child JVMs, e.g. to check the split with a small run
        --no-restart true  hosts mode: skip the restart and reconnect storm
        --items N          items to push, fill mode (1000000)
        --item-bytes B     size of one item's wire bytes (1024)
        --batch N          items per push request, fill mode (200)
        --senders N        sender hosts (4)
        --url U            drive a running relay instead of starting target/mbxrelay.jar
        --admin U          its admin server (e.g. http://127.0.0.1:7375), for the longpoll waiting gauge
        --relay-opts OPTS  JVM options of the started relay ("-Xmx512m")
        --relay-env K=V    extra MBX_RELAY_* variable for the started relay (repeatable), e.g. to try a knob
        --enrol-concurrency N  enrolments in flight (32)
        --max-inflight N   pulls mode: requests in flight before the generator counts "not sent" (4096)
        --event-loops N    the generator's Vert.x event loops (pulls 1: less generator CPU per request than one per
                           core; other modes one per core)
        --item-ids time|random  pulls mode: push item ids as hosts make them, ULIDs whose timestamp is the push's
                           planned send time (time, the default), or with no order (random: each lands at a random
                           place in the relay's dedup index, a worst case no ULID-making host produces)
        --store DIR        the relay's store dir (kept; reuses DIR/bench-hosts.txt enrolments); default a temp dir,
                           removed after; required by fill
      pulls: every push and pull of a phase is built and signed before its timer starts (a phase must start within 60 s
      of that, and --seconds/--warmup are at most 230: the relay refuses a hop ts older than 300 s); acks are signed
      when sent. hosts: hosts beyond one process's file limit are split over child JVMs of the generator.
      issue 18 goal 4:  scripts/bench-hosted hosts --hosts 19000 --relay-opts -Xmx1g [--connection close]
      issue 18 goal 5:  scripts/bench-hosted pulls --hosts 100000 --pull-rate 2000 --push-rate 2000 --relay-opts -Xmx1g
      """;

  public static void main(String[] args) throws Exception {
    if (java.util.Arrays.asList(args).contains("--help") || java.util.Arrays.asList(args).contains("-h")) {
      System.out.print(USAGE);
      return;
    }
    Options o;
    try {
      o = parse(args);
    } catch (IllegalArgumentException e) {
      System.err.println("bench-hosted: " + e.getMessage());
      System.err.print(USAGE);
      System.exit(2);
      return;
    }
    System.exit(run(o));
  }

  static Options parse(String[] args) {
    if (args.length == 0 || !java.util.List.of("pulls", "longpoll", "hosts", "fill").contains(args[0])) {
      throw new IllegalArgumentException("first argument must be pulls, longpoll, hosts or fill");
    }
    Options o = new Options();
    o.mode = args[0];
    for (int i = 1; i < args.length; i++) {
      String k = args[i];
      if (i + 1 >= args.length) {
        throw new IllegalArgumentException("missing value for " + k);
      }
      String v = args[++i];
      switch (k) {
        case "--hosts" -> o.hosts = Integer.parseInt(v);
        case "--seconds" -> o.seconds = Integer.parseInt(v);
        case "--warmup" -> o.warmup = Integer.parseInt(v);
        case "--push-rate" -> o.pushRate = Double.parseDouble(v);
        case "--pull-rate" -> o.pullRate = Double.parseDouble(v);
        case "--wait" -> o.waitSeconds = Integer.parseInt(v);
        case "--items" -> o.items = Long.parseLong(v);
        case "--item-bytes" -> o.itemBytes = Integer.parseInt(v);
        case "--batch" -> o.batch = Integer.parseInt(v);
        case "--senders" -> o.senders = Integer.parseInt(v);
        case "--url" -> o.url = v.replaceAll("/+$", "");
        case "--admin" -> o.admin = v.replaceAll("/+$", "");
        case "--relay-opts" -> o.relayOpts = v;
        case "--relay-env" -> {
          int eq = v.indexOf('=');
          if (eq < 1 || !v.startsWith("MBX_RELAY_")) {
            throw new IllegalArgumentException("--relay-env wants MBX_RELAY_NAME=value");
          }
          o.relayEnv.put(v.substring(0, eq), v.substring(eq + 1));
        }
        case "--store" -> o.store = Path.of(v).toAbsolutePath();
        case "--enrol-concurrency" -> o.enrolConcurrency = Integer.parseInt(v);
        case "--max-inflight" -> o.maxInflight = Integer.parseInt(v);
        case "--event-loops" -> o.eventLoops = Integer.parseInt(v);
        case "--connection" -> {
          if (!v.equals("keep-alive") && !v.equals("close")) {
            throw new IllegalArgumentException("--connection wants keep-alive or close");
          }
          o.keepAlive = v.equals("keep-alive");
        }
        case "--item-ids" -> {
          if (!v.equals("time") && !v.equals("random")) {
            throw new IllegalArgumentException("--item-ids wants time or random");
          }
          o.timeOrderedIds = v.equals("time");
        }
        case "--no-restart" -> o.noRestart = Boolean.parseBoolean(v);
        case "--hosts-per-process" -> o.hostsPerProcess = Integer.parseInt(v);
        default -> throw new IllegalArgumentException("unknown option " + k);
      }
    }
    if (o.hosts < 1 || o.seconds < 1 || o.warmup < 0 || o.senders < 1 || o.batch < 1 || o.items < 0
        || o.hostsPerProcess < 0 || (o.eventLoops != null && o.eventLoops < 1)) {
      throw new IllegalArgumentException("--hosts, --seconds, --senders, --batch, --event-loops must be > 0,"
          + " --warmup/--items/--hosts-per-process >= 0");
    }
    if (o.mode.equals("pulls") && Math.max(o.seconds, o.warmup) > PullsWorkload.MAX_PHASE_SECONDS) {
      throw new IllegalArgumentException("pulls: --seconds and --warmup at most " + PullsWorkload.MAX_PHASE_SECONDS
          + " (every request of a phase is signed before it starts; the relay refuses a hop ts older than 300 s)");
    }
    if (o.mode.equals("fill") && o.store == null) {
      throw new IllegalArgumentException("fill needs --store DIR (the store is kept there)");
    }
    return o;
  }

  /** Everything a workload needs: the client, the enrolled hosts, the relay's epoch, the relay process if started. */
  record Setup(Options o, BenchClient client, BenchHosts hosts, BenchItems items, String epoch, int pullWaitMax,
      BenchRelayProcess relay, String adminUrl, Path store, Path work) {}

  static int run(Options o) throws Exception {
    long began = System.nanoTime();
    String workProp = System.getProperty("bench.work");
    Path work = workProp != null ? Path.of(workProp) : Files.createTempDirectory("mbxrelay-hosted-bench");
    boolean tempStore = o.store == null;
    Path store = tempStore ? work.resolve("store") : o.store;
    BenchRelayProcess[] relay = new BenchRelayProcess[1];
    Thread cleanup = new Thread(() -> {
      try {
        if (relay[0] != null) {
          relay[0].stop();
        }
      } catch (InterruptedException ignored) {
        // exiting anyway
      }
      if (tempStore) {
        deleteTree(store);
      }
      if (workProp == null) {
        deleteTree(work);
      }
    }, "bench-cleanup");
    Runtime.getRuntime().addShutdownHook(cleanup);

    boolean holding = o.mode.equals("longpoll") || o.mode.equals("hosts");
    if (holding) {
      fileLimitCheck(o);
    }
    System.out.printf(Locale.ROOT, "hosted-relay bench %s: hosts %d, senders %d, item %d B, %s%n", o.mode, o.hosts,
        o.senders, o.itemBytes, o.url != null ? "relay " + o.url : "relay started from the jar with " + o.relayOpts
            + ", store " + (tempStore ? "temp (removed after)" : store));
    String url = o.url;
    String admin = o.admin;
    if (url == null) {
      Files.createDirectories(store);
      relay[0] = startRelay(store, o, work, "relay");
      url = relay[0].url();
      admin = relay[0].adminUrl();
    }
    int pool = switch (o.mode) {
      case "longpoll" -> o.hosts + PUSH_CONNECTIONS;
      // with hosts processes this process only enrols them
      case "hosts" -> o.hostProcesses > 0 ? o.enrolConcurrency : o.hosts;
      case "fill" -> o.senders * 2 + 16;
      default -> 1024;
    };
    if (holding && relay[0] != null) {
      System.out.printf(Locale.ROOT, "relay (its own process and file limit): connection cap %s"
          + " (mbxrelay_http_connections_max); hosts over it are answered 503 + Retry-After%n",
          adminValue(relay[0].adminUrl(), "mbxrelay_http_connections_max"));
    }
    // pulls: the pool keeps its connections for the whole run (and the relay it starts keeps them too, PULLS_RELAY_ENV).
    // The warm-up starts JIT-cold and its backlog opens the whole pool (1,024) where the steady load keeps ~410-650 busy;
    // with a 60 s idle timeout the surplus was closed all at once inside the measured minute (~580 closes, both JVMs'
    // compilers at work, that second's requests slow; docs/performance.md "Ninth session").
    int idleSeconds = o.mode.equals("pulls") ? 0 : 60;
    try (BenchClient client = new BenchClient(url, pool, o.mode.equals("hosts") ? PUSH_CONNECTIONS : 0,
        o.keepAlive, o.eventLoops(), idleSeconds)) {
      JsonNode info = client.info();
      String epoch = info.get("epoch").asText();
      int waitMax = info.path("features").path("pull_wait_max_seconds").asInt(0);
      BenchHosts hosts = BenchHosts.load(o.store, o.hosts, o.senders);
      if (hosts.targetsFromFile + hosts.sendersFromFile > 0) {
        System.out.printf("hosts: %d targets and %d senders reused from %s%n", hosts.targetsFromFile,
            hosts.sendersFromFile, o.store.resolve(BenchHosts.FILE));
      }
      client.enrolAll(hosts.fresh(), o.enrolConcurrency);
      if (o.store != null && !hosts.fresh().isEmpty()) {
        hosts.saveFresh(o.store);
      }
      BenchItems items = new BenchItems(o.itemBytes);
      Setup s = new Setup(o, client, hosts, items, epoch, waitMax, relay[0], admin, store, work);
      switch (o.mode) {
        case "pulls" -> new PullsWorkload(s).run();
        case "longpoll" -> new LongPollWorkload(s).run();
        case "hosts" -> new HostsWorkload(s, relay).run();
        default -> new FillWorkload(s).run();
      }
    }
    if (o.mode.equals("fill") && relay[0] != null) {
      // goal 5: restart to /ready with the filled store
      System.out.println(relay[0].problemsLine());
      double stopped = relay[0].stop();
      System.out.printf(Locale.ROOT, "relay stopped (SIGTERM) in %.2f s; store %s: %s%n", stopped, store,
          storeSize(store));
      relay[0] = startRelay(store, o, work, "relay restarted on the filled store");
    } else if (o.mode.equals("fill") && Files.isDirectory(store)) {
      System.out.printf("store %s: %s%n", store, storeSize(store));
    }
    if (relay[0] != null) {
      System.out.println(relay[0].problemsLine());
      System.out.printf(Locale.ROOT, "relay stopped (SIGTERM) in %.2f s%n", relay[0].stop());
    }
    System.out.printf(Locale.ROOT, "bench-hosted %s: done in %.0f s%n", o.mode, (System.nanoTime() - began) / 1e9);
    return 0;
  }

  /**
   * The generator's side of the file limits: its own limit less what it has open, {@link #GENERATOR_RESERVE} and the
   * push pool is what this process may hold ({@link HostsProcess#allowed}: with {@code connection: close} a quarter of
   * it is kept back for closing sockets). {@code longpoll} cuts {@code o.hosts} to that. {@code hosts} instead splits
   * the hosts over child JVMs ({@code o.hostProcesses}, {@link HostProcesses}) when they do not fit (or when
   * {@code --hosts-per-process} asks for fewer per process): each child has its own limit and no push pool, and is
   * taken to start with as many files open as this process has now; at most {@link #MAX_HOST_PROCESSES} children.
   * Prints what the limit allows and what it does.
   */
  static void fileLimitCheck(Options o) {
    long[] fileLimit = HostsProcess.fileLimit();
    long limit = fileLimit[0];
    long open = fileLimit[1];
    if (limit <= 0) {
      System.out.println("file limit: unknown (not a Unix JVM); --hosts taken as given, in this process");
      return;
    }
    long allowed = HostsProcess.allowed(limit - PUSH_CONNECTIONS, open, o.keepAlive);
    System.out.printf(Locale.ROOT, "file limit: %d open files per process (ulimit -n; the relay child has its own);"
            + " the generator has %d open, keeps %d back and %d for pushes%s: one process can hold %d long-poll hosts%n",
        limit, open, GENERATOR_RESERVE, PUSH_CONNECTIONS, o.keepAlive ? "" : " and a quarter for closing sockets",
        allowed);
    if (o.mode.equals("hosts")) {
      long perChild = HostsProcess.allowed(limit, open, o.keepAlive);
      if (o.hostsPerProcess > 0) {
        perChild = Math.min(perChild, o.hostsPerProcess);
      }
      if (o.hosts <= allowed && o.hostsPerProcess == 0) {
        System.out.printf(Locale.ROOT, "hosts: all %d in this process%n", o.hosts);
        return;
      }
      perChild = Math.max(1, perChild);
      if (o.hosts > perChild * MAX_HOST_PROCESSES) {
        System.out.printf(Locale.ROOT, "file limit: --hosts %d cut to %d (%d hosts processes of %d)%n", o.hosts,
            perChild * MAX_HOST_PROCESSES, MAX_HOST_PROCESSES, perChild);
        o.hosts = (int) (perChild * MAX_HOST_PROCESSES);
      }
      o.hostProcesses = (int) ((o.hosts + perChild - 1) / perChild);
      System.out.printf(Locale.ROOT, "hosts: split over %d hosts processes (child JVMs, each its own file limit; at most"
              + " %d hosts each%s): %d to %d hosts each; this process keeps the pushes, the stages and the report%n",
          o.hostProcesses, perChild, o.hostsPerProcess > 0 ? ", --hosts-per-process" : " with its reserve"
              + (o.keepAlive ? "" : " and a quarter for closing sockets"), o.hosts / o.hostProcesses,
          (o.hosts + o.hostProcesses - 1) / o.hostProcesses);
      return;
    }
    if (o.hosts > allowed) {
      System.out.printf(Locale.ROOT, "file limit: --hosts %d cut to %d (one connection per waiting host in this one"
          + " generator process)%n", o.hosts, allowed);
      o.hosts = (int) Math.max(1, allowed);
    }
  }

  /** One series of a relay's admin {@code /metrics}, as printed there, or "n/a". */
  static String adminValue(String adminUrl, String name) {
    try {
      java.net.HttpURLConnection c = (java.net.HttpURLConnection) java.net.URI.create(adminUrl + "/metrics").toURL()
          .openConnection();
      String text = new String(c.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
      c.disconnect();
      for (String line : text.split("\n")) {
        if (line.startsWith(name + " ") || line.startsWith(name + "{")) {
          return line.substring(line.lastIndexOf(' ') + 1).replaceAll("\\.0$", "");
        }
      }
    } catch (IOException | RuntimeException e) {
      // fall through
    }
    return "n/a";
  }

  /** Starts the relay child on {@code store} and prints its start-up times. */
  static BenchRelayProcess startRelay(Path store, Options o, Path work, String label) throws Exception {
    return startRelay(store, o, work, 0, label);
  }

  /** As above on a given port (0: any), e.g. a restart on the port the hosts know. */
  static BenchRelayProcess startRelay(Path store, Options o, Path work, int port, String label) throws Exception {
    Map<String, String> env = new LinkedHashMap<>(RELAY_ENV);
    if (o.mode.equals("pulls")) {
      env.putAll(PULLS_RELAY_ENV);
    }
    env.putAll(o.relayEnv);
    if (!o.relayEnv.isEmpty()) {
      System.out.println("relay env overrides: " + o.relayEnv);
    }
    BenchRelayProcess r = BenchRelayProcess.start(jar(), store, o.relayOpts, env,
        work.resolve(port == 0 ? "relay.log" : "relay-restarted.log"), work.resolve("relay.pid"), port);
    System.out.printf(Locale.ROOT, "%s: pid %d on %s, admin %s; process start to listening %.2f s, to /ready %.2f s;"
        + " %s%n", label, r.process.pid(), r.url(), r.adminUrl(), r.listeningSeconds, r.readySeconds, r.memoryLine());
    return r;
  }

  static Path jar() {
    Path jar = Path.of(System.getProperty("mbxrelay.jar", "target/mbxrelay.jar"));
    if (!Files.isRegularFile(jar)) {
      throw new IllegalStateException("shaded jar missing: " + jar + " (run mvn package first)");
    }
    return jar;
  }

  /**
   * CPU time of this JVM (the generator) so far, ns: user + system of every thread from {@code /proc/self/stat}, as the
   * relay's is read from {@code /proc/PID/stat}; the JVM's own figure where there is no {@code /proc}.
   */
  static long generatorCpuNanos() {
    double s = BenchRelayProcess.cpuSeconds("self");
    if (!Double.isNaN(s)) {
      return (long) (s * 1e9);
    }
    return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
        .getProcessCpuTime();
  }

  /**
   * Waits (10 s at most) until the JIT has worked off what a preparation queued (Jackson, Ed25519 and the request
   * builders keep the compiler threads busy for a while): the total compilation time still for 400 ms. Returns the
   * seconds waited.
   */
  static double settleJit() throws InterruptedException {
    long t0 = System.nanoTime();
    var jit = ManagementFactory.getCompilationMXBean();
    if (jit == null || !jit.isCompilationTimeMonitoringSupported()) {
      Thread.sleep(1000);
    } else {
      long last = jit.getTotalCompilationTime();
      long quiet = System.nanoTime();
      while (System.nanoTime() - t0 < 10_000_000_000L && System.nanoTime() - quiet < 400_000_000L) {
        Thread.sleep(50);
        long now = jit.getTotalCompilationTime();
        if (now != last) {
          last = now;
          quiet = System.nanoTime();
        }
      }
    }
    return (System.nanoTime() - t0) / 1e9;
  }

  /** Relay CPU and memory over a measured window, one line; "" when the relay is not ours. */
  static String relayLine(BenchRelayProcess r, double cpuAtStart, double wallSeconds) {
    if (r == null) {
      return "relay: not started here (--url): no RSS/CPU figures";
    }
    double cpu = r.cpuSeconds() - cpuAtStart;
    return String.format(Locale.ROOT, "relay: %s; CPU %.1f s in %.0f s measured (%.2f cores)", r.memoryLine(), cpu,
        wallSeconds, cpu / wallSeconds);
  }

  /** Sizes of the store's files, MiB: {@code relay.db 812 MiB, total 830 MiB}. */
  static String storeSize(Path dir) throws IOException {
    Map<String, Long> sizes = new LinkedHashMap<>();
    long total = 0;
    try (Stream<Path> s = Files.list(dir)) {
      for (Path p : s.sorted().toList()) {
        if (Files.isRegularFile(p)) {
          long n = Files.size(p);
          sizes.put(p.getFileName().toString(), n);
          total += n;
        }
      }
    }
    return String.format(Locale.ROOT, "relay.db %.0f MiB, wal %.0f MiB, all files %.0f MiB",
        sizes.getOrDefault("relay.db", 0L) / 1048576.0, sizes.getOrDefault("relay.db-wal", 0L) / 1048576.0,
        total / 1048576.0);
  }

  static void deleteTree(Path p) {
    if (!Files.exists(p)) {
      return;
    }
    try (Stream<Path> s = Files.walk(p)) {
      s.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
    } catch (IOException ignored) {
      // best effort
    }
  }
}
