package io.mbxrelay.bench;

import io.mbxrelay.bench.BenchHosts.Host;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * The hosts' side of the {@code hosts} workload split over child JVMs ({@link HostsProcess}), for when one process's
 * open-file limit cannot hold every host's connection (issue 18 goal 4 with {@code connection: close}). Host {@code t}
 * lives in child {@code t % n} (so every stage spreads evenly); each child gets its hosts' test keys in an owner-only
 * file in the work dir, ramps its share of a stage at {@code ramp / n} per second, and reports every pull answer,
 * pulled item and ack answer, which a reader thread per child hands to the workload's {@link HostLoops.Sink}, so the
 * counters and the report are the same as with the loops in this process. Methods are called from the workload's main
 * thread; the sink from the reader threads.
 */
final class HostProcesses implements HostsWorkload.HostsSide {
  /** One child JVM. */
  private static final class Child {
    final int index;
    final Process process;
    final PrintWriter commands;
    final int hosts;
    /** Its answers to commands ({@code @ready}, {@code @started}, {@code @resumed}, …), and {@code @exit} at its end. */
    final LinkedBlockingQueue<String[]> replies = new LinkedBlockingQueue<>();
    volatile int pullsInFlight;
    volatile int parked;

    Child(int index, Process process, int hosts) {
      this.index = index;
      this.process = process;
      this.hosts = hosts;
      this.commands = new PrintWriter(process.getOutputStream(), true, StandardCharsets.UTF_8);
    }
  }

  private final List<Child> children = new ArrayList<>();
  private final HostLoops.Sink sink;

  /**
   * Starts {@code n} child JVMs, each with every {@code n}-th host, and waits (60 s at most each) until they are ready.
   *
   * @param s the bench setup (relay URL, epoch, hosts, work dir, connection mode)
   * @param n how many child processes
   * @param waitSeconds the {@code wait=} of every pull, s
   * @param ramp loops started per second over all children
   * @param sink where the children's reports go
   * @throws IllegalStateException when a child refuses (its file limit cannot hold its share) or does not start
   */
  HostProcesses(HostedRelayBench.Setup s, int n, int waitSeconds, double ramp, HostLoops.Sink sink) throws Exception {
    this.sink = sink;
    List<Host> targets = s.hosts().targets;
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    Thread killer = new Thread(() -> children.forEach(c -> c.process.destroyForcibly()), "hosts-processes-kill");
    Runtime.getRuntime().addShutdownHook(killer);
    try {
      for (int c = 0; c < n; c++) {
        Path keys = s.work().resolve("hosts-process-" + c + ".txt");
        Files.deleteIfExists(keys);
        Files.createFile(keys, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
        StringBuilder b = new StringBuilder("# throw-away TEST keys of benchmark hosts, never real keys\n");
        int hosts = 0;
        for (int t = c; t < targets.size(); t += n) {
          BenchHosts.appendKeyLine(b, "target", targets.get(t));
          hosts++;
        }
        Files.writeString(keys, b, StandardCharsets.UTF_8);
        Process p = new ProcessBuilder(java, "-cp", System.getProperty("java.class.path"),
            HostsProcess.class.getName(), "http://" + s.client().host + ":" + s.client().port, s.epoch(),
            Integer.toString(waitSeconds), s.client().keepAlive ? "keep-alive" : "close", Double.toString(ramp / n),
            keys.toString()).redirectError(ProcessBuilder.Redirect.INHERIT).start();
        Child child = new Child(c, p, hosts);
        children.add(child);
        Thread reader = new Thread(() -> read(child), "hosts-process-" + c);
        reader.setDaemon(true);
        reader.start();
      }
      for (Child c : children) {
        String[] r = reply(c, 60);
        if (!r[0].equals("@ready")) {
          throw new IllegalStateException("hosts process " + c.index + ": " + String.join(" ", r));
        }
        long skewMs = (System.nanoTime() - Long.parseLong(r[6])) / 1_000_000;
        System.out.printf(Locale.ROOT, "hosts process %d: pid %s, %,d hosts; its file limit %s with %s open holds %s"
            + " waiting hosts%n", c.index, r[1], c.hosts, r[3], r[4], r[5]);
        if (skewMs < 0 || skewMs > 5_000) {
          System.out.printf(Locale.ROOT, "hosts process %d: WARNING its System.nanoTime is not this process's clock"
              + " (%d ms apart): the push answer → pull answer latencies are not valid%n", c.index, skewMs);
        }
      }
    } catch (Exception | Error e) {
      close();
      throw e;
    }
  }

  /** How many child processes. */
  int size() {
    return children.size();
  }

  /** CPU time (user + system) the children used so far, s, from {@code /proc/PID/stat}. */
  double cpuSeconds() {
    double sum = 0;
    for (Child c : children) {
      double v = BenchRelayProcess.cpuSeconds(Long.toString(c.process.pid()));
      sum += Double.isNaN(v) ? 0 : v;
    }
    return sum;
  }

  /** Host {@code t}'s index in child {@code c}'s list is {@code t / n}; the first of a child at or after {@code t}. */
  private int local(int c, int t) {
    int n = children.size();
    return t <= c ? 0 : (t - c + n - 1) / n;
  }

  @Override
  public void start(int from, int to) throws Exception {
    for (Child c : children) {
      c.commands.println("start " + local(c.index, from) + " " + local(c.index, to));
    }
    for (Child c : children) {
      String[] r = reply(c, 600);
      if (!r[0].equals("@started")) {
        throw new IllegalStateException("hosts process " + c.index + " did not start its loops: " + String.join(" ", r));
      }
    }
  }

  @Override
  public void pause() {
    children.forEach(c -> c.commands.println("pause"));
  }

  @Override
  public int parked() {
    return children.stream().mapToInt(c -> c.parked).sum();
  }

  @Override
  public int resume() throws Exception {
    children.forEach(c -> c.commands.println("resume"));
    int n = 0;
    for (Child c : children) {
      String[] r = reply(c, 30);
      if (r[0].equals("@resumed")) {
        n += Integer.parseInt(r[1]);
      } else {
        System.out.println("hosts process " + c.index + ": no answer to resume: " + String.join(" ", r));
      }
    }
    return n;
  }

  @Override
  public int pullsInFlight() {
    return children.stream().mapToInt(c -> c.pullsInFlight).sum();
  }

  /** Stops every child (a {@code stop} command, 30 s to exit, then SIGKILL). */
  @Override
  public void close() throws InterruptedException {
    for (Child c : children) {
      c.commands.println("stop");
      c.commands.close();
    }
    long deadline = System.nanoTime() + 30_000_000_000L;
    for (Child c : children) {
      if (!c.process.waitFor(Math.max(1, (deadline - System.nanoTime()) / 1_000_000), TimeUnit.MILLISECONDS)) {
        System.out.println("hosts process " + c.index + ": did not stop within 30 s; killed");
        c.process.destroyForcibly();
      }
    }
  }

  /** The child's next answer to a command, or {@code @timeout}. */
  private static String[] reply(Child c, int seconds) throws InterruptedException {
    String[] r = c.replies.poll(seconds, TimeUnit.SECONDS);
    return r != null ? r : new String[] {"@timeout", "no answer within " + seconds + " s"};
  }

  /** The reader thread of one child: its reports into the sink, its answers into its reply queue. */
  private void read(Child c) {
    try (BufferedReader r = new BufferedReader(new InputStreamReader(c.process.getInputStream(),
        StandardCharsets.UTF_8))) {
      for (String line; (line = r.readLine()) != null; ) {
        String[] f = line.split("\t", -1);
        try {
          switch (f[0]) {
            case "@item" -> sink.pulled(f[1], Long.parseLong(f[2]));
            case "@pull" -> sink.pullAnswered(f[1], orNull(f[2]), orNull(f[4]), Integer.parseInt(f[3]));
            case "@ack" -> sink.ackAnswered(Long.parseLong(f[1]), Long.parseLong(f[2]), orNull(f[3]), orNull(f[4]));
            case "@state" -> {
              c.pullsInFlight = Integer.parseInt(f[1]);
              c.parked = Integer.parseInt(f[2]);
            }
            case "@ready", "@refused", "@started", "@resumed" -> c.replies.add(f);
            default -> System.out.println("hosts process " + c.index + ": " + line);
          }
        } catch (RuntimeException e) {
          System.out.println("hosts process " + c.index + ": unreadable report " + line + " (" + e + ")");
        }
      }
    } catch (IOException ignored) {
      // the child is gone
    }
    c.replies.add(new String[] {"@exit", "the process ended (exit " + exitValue(c.process) + ")"});
  }

  private static String exitValue(Process p) {
    try {
      return p.waitFor(5, TimeUnit.SECONDS) ? Integer.toString(p.exitValue()) : "still running";
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return "unknown";
    }
  }

  private static String orNull(String s) {
    return s.isEmpty() ? null : s;
  }
}
