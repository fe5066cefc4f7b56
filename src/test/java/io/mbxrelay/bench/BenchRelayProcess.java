package io.mbxrelay.bench;

import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.HttpURLConnection;
import java.net.ServerSocket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The relay under test as a child process: {@code java <jvm opts> -jar mbxrelay.jar serve --port 0 --bind 127.0.0.1
 * --store-dir DIR} with environment overrides and the admin server on a free port. Records the time from process start
 * to the listening line and to the first 200 of the admin {@code /ready} (polled every 20 ms), and reads the child's
 * memory ({@code VmRSS}, {@code VmHWM}, KiB) and CPU time ({@code utime + stime}) from {@code /proc/<pid>} (Linux).
 * Its output goes to {@code log}; the lines with WARN, ERROR or Exception are counted.
 */
final class BenchRelayProcess implements AutoCloseable {
  private static final Pattern LISTENING = Pattern.compile("listening on :(\\d+)");

  final Process process;
  final int port;
  final int adminPort;
  /** Process start → listening line, and → first {@code /ready} 200, seconds. */
  final double listeningSeconds;
  final double readySeconds;
  /** Output lines with WARN, ERROR or Exception (filled by the output reader thread). */
  private final List<String> problems;

  private BenchRelayProcess(Process process, int port, int adminPort, double listening, double ready,
      List<String> problems) {
    this.process = process;
    this.port = port;
    this.adminPort = adminPort;
    this.listeningSeconds = listening;
    this.readySeconds = ready;
    this.problems = problems;
  }

  /**
   * Starts the relay and waits until {@code /ready} answers 200 (at most 120 s).
   *
   * @param jar the shaded jar
   * @param storeDir the store dir (created by the relay when missing)
   * @param jvmOpts JVM options, split on white space (e.g. {@code -Xmx512m})
   * @param env environment overrides ({@code MBX_RELAY_*})
   * @param log file for the child's output
   * @param pidFile when not null, the child's pid is written there (the wrapper script kills it on exit)
   */
  static BenchRelayProcess start(Path jar, Path storeDir, String jvmOpts, Map<String, String> env, Path log,
      Path pidFile) throws Exception {
    return start(jar, storeDir, jvmOpts, env, log, pidFile, 0);
  }

  /** As above on a given relay port (0: any free one), e.g. the port of a relay this one restarts. */
  static BenchRelayProcess start(Path jar, Path storeDir, String jvmOpts, Map<String, String> env, Path log,
      Path pidFile, int port) throws Exception {
    int admin = freePort();
    List<String> cmd = new ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    String work = System.getProperty("bench.work");
    if (work != null) {
      // the native library copy and Vert.x cache go into the work dir, which scripts/bench-hosted removes even when
      // it had to kill the relay (a killed JVM leaves them behind)
      cmd.add("-Dorg.sqlite.tmpdir=" + work);
      cmd.add("-Dvertx.cacheDirBase=" + Path.of(work, "vertx-cache"));
    }
    for (String o : jvmOpts.trim().split("\\s+")) {
      if (!o.isEmpty()) {
        cmd.add(o);
      }
    }
    cmd.addAll(List.of("-jar", jar.toString(), "serve", "--port", Integer.toString(port), "--bind", "127.0.0.1", "--store-dir",
        storeDir.toString()));
    ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
    pb.environment().keySet().removeIf(k -> k.startsWith("MBX_RELAY_"));
    pb.environment().putAll(env);
    pb.environment().put("MBX_RELAY_ADMIN_PORT", Integer.toString(admin));
    long t0 = System.nanoTime();
    Process p = pb.start();
    if (pidFile != null) {
      Files.writeString(pidFile, Long.toString(p.pid()));
    }
    List<String> problems = new CopyOnWriteArrayList<>();
    CompletableFuture<long[]> listening = new CompletableFuture<>();
    List<String> tail = new CopyOnWriteArrayList<>();
    Thread reader = new Thread(() -> {
      try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
          BufferedWriter w = Files.newBufferedWriter(log, StandardCharsets.UTF_8)) {
        String line;
        while ((line = r.readLine()) != null) {
          w.write(line);
          w.newLine();
          w.flush();
          if (tail.size() < 200) {
            tail.add(line);
          }
          if (line.contains("WARN") || line.contains("ERROR") || line.contains("Exception")) {
            problems.add(line);
          }
          Matcher m = LISTENING.matcher(line);
          if (m.find()) {
            listening.complete(new long[] {Long.parseLong(m.group(1)), System.nanoTime()});
          }
        }
      } catch (IOException ignored) {
        // process gone
      }
      listening.completeExceptionally(new IllegalStateException("relay exited before listening: " + tail));
    }, "relay-output");
    reader.setDaemon(true);
    reader.start();
    long readyAt = -1;
    long deadline = t0 + TimeUnit.SECONDS.toNanos(120);
    while (System.nanoTime() < deadline && p.isAlive()) {
      if (ready(admin)) {
        readyAt = System.nanoTime();
        break;
      }
      Thread.sleep(20);
    }
    if (readyAt < 0) {
      p.destroyForcibly();
      throw new IllegalStateException("relay not ready within 120 s (alive " + p.isAlive() + "): " + tail);
    }
    long[] l = listening.get(60, TimeUnit.SECONDS);
    return new BenchRelayProcess(p, (int) l[0], admin, (l[1] - t0) / 1e9, (readyAt - t0) / 1e9, problems);
  }

  String url() {
    return "http://127.0.0.1:" + port;
  }

  String adminUrl() {
    return "http://127.0.0.1:" + adminPort;
  }

  /** One GET of the admin {@code /ready}: true on 200. */
  static boolean ready(int adminPort) {
    try {
      HttpURLConnection c = (HttpURLConnection) URI.create("http://127.0.0.1:" + adminPort + "/ready").toURL()
          .openConnection();
      c.setConnectTimeout(1000);
      c.setReadTimeout(1000);
      int status = c.getResponseCode();
      c.getInputStream().readAllBytes();
      c.disconnect();
      return status == 200;
    } catch (IOException e) {
      return false;
    }
  }

  private static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0)) {
      return s.getLocalPort();
    }
  }

  /** {@code VmRSS} and {@code VmHWM} in MiB, or -1 when unreadable. */
  double[] memoryMiB() {
    double rss = -1;
    double hwm = -1;
    try {
      for (String line : Files.readAllLines(Path.of("/proc/" + process.pid() + "/status"))) {
        if (line.startsWith("VmRSS:")) {
          rss = Long.parseLong(line.replaceAll("[^0-9]", "")) / 1024.0;
        } else if (line.startsWith("VmHWM:")) {
          hwm = Long.parseLong(line.replaceAll("[^0-9]", "")) / 1024.0;
        }
      }
    } catch (IOException | RuntimeException e) {
      // not Linux, or the process is gone
    }
    return new double[] {rss, hwm};
  }

  /**
   * The child's heap right after a full collection ({@code jcmd PID GC.run}, then {@code GC.heap_info}): {@code {used,
   * committed}} MiB, or {@code {-1, -1}} when jcmd cannot attach.
   */
  double[] heapAfterGcMiB() {
    try {
      String jcmd = Path.of(System.getProperty("java.home"), "bin", "jcmd").toString();
      String pid = Long.toString(process.pid());
      Process gc = new ProcessBuilder(jcmd, pid, "GC.run").redirectErrorStream(true).start();
      gc.getInputStream().readAllBytes();
      gc.waitFor(60, TimeUnit.SECONDS);
      Process info = new ProcessBuilder(jcmd, pid, "GC.heap_info").redirectErrorStream(true).start();
      String out = new String(info.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      info.waitFor(60, TimeUnit.SECONDS);
      Matcher m = Pattern.compile("total (\\d+)K, used (\\d+)K").matcher(out);
      return m.find() ? new double[] {Long.parseLong(m.group(2)) / 1024.0, Long.parseLong(m.group(1)) / 1024.0}
          : new double[] {-1, -1};
    } catch (IOException | InterruptedException | RuntimeException e) {
      return new double[] {-1, -1};
    }
  }

  /** CPU time (user + system) used by the child so far, seconds, or NaN. */
  double cpuSeconds() {
    return cpuSeconds(Long.toString(process.pid()));
  }

  /**
   * CPU time (user + system, every thread) a process used so far, from {@code /proc/PID/stat} (Linux), seconds, or NaN.
   *
   * @param pid a process id, or {@code self} for this JVM
   */
  static double cpuSeconds(String pid) {
    try {
      return cpuSecondsOfStat(Files.readString(Path.of("/proc/" + pid + "/stat")));
    } catch (IOException | RuntimeException e) {
      return Double.NaN;
    }
  }

  /** The thread groups {@link #cpuByThreadGroup()} reports, in print order. */
  static final List<String> THREAD_GROUPS = List.of("event loops", "writer", "page readers", "JIT", "GC", "other");

  /**
   * CPU time (user + system) the relay's threads used so far, seconds, summed per group of thread names from
   * {@code /proc/PID/task/TID/stat} (Linux; empty elsewhere): {@code vert.x-eventloop-*} event loops, {@code mbx-writer-*}
   * the writer, {@code mbx-pages-*} the page readers, the JVM's compiler threads (JIT) and its collector threads (GC:
   * G1's workers, refinement and marking threads, and the VM thread that runs the pauses); the rest is other. A thread
   * that ended between two readings is in neither, so a difference undercounts short-lived threads.
   */
  Map<String, Double> cpuByThreadGroup() {
    Map<String, Double> out = new java.util.LinkedHashMap<>();
    for (String g : THREAD_GROUPS) {
      out.put(g, 0.0);
    }
    Path tasks = Path.of("/proc/" + process.pid() + "/task");
    try (java.util.stream.Stream<Path> list = Files.list(tasks)) {
      for (Path t : list.toList()) {
        List<String> lines;
        try {
          lines = Files.readAllLines(t.resolve("stat"), StandardCharsets.ISO_8859_1);
        } catch (IOException gone) {
          continue; // the thread ended while listed
        }
        if (lines.isEmpty()) {
          continue;
        }
        String stat = lines.get(0);
        String comm = stat.substring(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
        out.merge(threadGroup(comm), cpuSecondsOfStat(stat), Double::sum);
      }
    } catch (IOException | RuntimeException e) {
      return Map.of();
    }
    return out;
  }

  /** The group of a thread by its name as the kernel keeps it (its first 15 characters). */
  static String threadGroup(String comm) {
    if (comm.startsWith("vert.x-eventloo")) {
      return "event loops";
    }
    if (comm.startsWith("mbx-writer")) {
      return "writer";
    }
    if (comm.startsWith("mbx-pages")) {
      return "page readers";
    }
    if (comm.contains("CompilerThre")) {
      return "JIT";
    }
    if (comm.startsWith("GC Thread") || comm.startsWith("G1 ") || comm.equals("VM Thread")) {
      return "GC";
    }
    return "other";
  }

  /**
   * {@code "event loops 0.61, writer 0.30, …"}: cores per thread group between two {@link #cpuByThreadGroup()}
   * readings over {@code wallSeconds}; empty when either reading is.
   */
  static String threadGroupCores(Map<String, Double> before, Map<String, Double> after, double wallSeconds) {
    if (before.isEmpty() || after.isEmpty() || wallSeconds <= 0) {
      return "";
    }
    StringBuilder b = new StringBuilder();
    for (String g : THREAD_GROUPS) {
      double d = Math.max(0, after.getOrDefault(g, 0.0) - before.getOrDefault(g, 0.0));
      b.append(b.length() == 0 ? "" : ", ").append(g).append(' ')
          .append(String.format(Locale.ROOT, "%.2f", d / wallSeconds));
    }
    return b.toString();
  }

  /** User + system CPU seconds from one {@code stat} line of {@code /proc} (a process's or a thread's). */
  private static double cpuSecondsOfStat(String stat) {
    String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
    // after "pid (comm) ": state is field 3, so utime (14) and stime (15) are at 11 and 12
    return (Long.parseLong(f[11]) + Long.parseLong(f[12])) / (double) CLOCK_TICKS;
  }

  private static final long CLOCK_TICKS = clockTicks();

  private static long clockTicks() {
    try {
      Process p = new ProcessBuilder("getconf", "CLK_TCK").start();
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.US_ASCII).trim();
      p.waitFor(5, TimeUnit.SECONDS);
      return Long.parseLong(out);
    } catch (Exception e) {
      return 100;
    }
  }

  /** {@code "RSS x MiB (peak y MiB)"}. */
  String memoryLine() {
    double[] m = memoryMiB();
    return String.format(Locale.ROOT, "RSS %.0f MiB (peak VmHWM %.0f MiB)", m[0], m[1]);
  }

  /** Lines of the relay's output with WARN, ERROR or Exception: count and the first few. */
  String problemsLine() {
    StringBuilder b = new StringBuilder("relay log: " + problems.size() + " lines with WARN/ERROR/Exception");
    problems.stream().limit(5).forEach(l -> b.append("\n  ").append(l.length() > 300 ? l.substring(0, 300) : l));
    return b.toString();
  }

  /** SIGTERM, wait up to 30 s, then SIGKILL; returns the seconds the graceful stop took (NaN if killed). */
  double stop() throws InterruptedException {
    if (!process.isAlive()) {
      return 0;
    }
    long t0 = System.nanoTime();
    process.destroy();
    if (process.waitFor(30, TimeUnit.SECONDS)) {
      return (System.nanoTime() - t0) / 1e9;
    }
    process.destroyForcibly();
    process.waitFor(30, TimeUnit.SECONDS);
    return Double.NaN;
  }

  @Override
  public void close() {
    try {
      stop();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
