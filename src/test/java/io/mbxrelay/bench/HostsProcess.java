package io.mbxrelay.bench;

import java.io.BufferedOutputStream;
import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.LinkedBlockingQueue;

/**
 * A child JVM of the {@code hosts} workload ({@link HostProcesses} starts it from the generator's classpath): holds the
 * receive loops ({@link HostLoops}) of its share of the hosts, so that the hosts' connections spread over several
 * processes' open-file limits. Arguments: {@code URL EPOCH WAIT_SECONDS keep-alive|close RAMP_PER_SECOND KEYS_FILE}
 * ({@code target NAME SEED_B64} lines, the hosts in the order the parent numbers them here).
 *
 * <p>Talks to its parent over stdin and stdout, one line each, fields separated by tabs. Commands (stdin):
 * {@code start FROM TO} (start the loops of hosts FROM..TO-1, answered {@code @started}), {@code pause},
 * {@code resume} (answered {@code @resumed N}), {@code stop}; the end of stdin (the parent gone) stops it too. Reports
 * (stdout): {@code @ready PID HOSTS LIMIT OPEN ALLOWED NANOTIME} at start, or {@code @refused TEXT} when its file limit
 * cannot hold its hosts; then {@code @item ID NANOS}, {@code @pull STATUS ERROR ITEMS SAMPLE} and
 * {@code @ack START NOW ERROR SAMPLE} as {@link HostLoops.Sink} gets them (empty field = null), and
 * {@code @state PULLS_IN_FLIGHT PARKED} every 200 ms. Times are {@link System#nanoTime()}, which on Linux is
 * {@code CLOCK_MONOTONIC}, one clock for every process of the machine (the parent checks that with NANOTIME). Logs go
 * to stderr.
 */
final class HostsProcess {
  private HostsProcess() {}

  /** Descriptors a hosts process keeps for itself (jars, class files, /proc reads), beyond its hosts' connections. */
  static final int RESERVE = HostedRelayBench.GENERATOR_RESERVE;

  public static void main(String[] args) throws Exception {
    String url = args[0];
    String epoch = args[1];
    int waitSeconds = Integer.parseInt(args[2]);
    boolean keepAlive = args[3].equals("keep-alive");
    double ramp = Double.parseDouble(args[4]);
    List<BenchHosts.Host> hosts = BenchHosts.readKeys(Path.of(args[5])).getOrDefault("target", List.of());
    // stdout is the report channel: buffered here and flushed by the writer (System.out flushes every line)
    Lines out = new Lines(new PrintStream(new BufferedOutputStream(new FileOutputStream(FileDescriptor.out), 1 << 16),
        false, StandardCharsets.UTF_8));
    long[] limit = fileLimit();
    long allowed = allowed(limit[0], limit[1], keepAlive);
    if (limit[0] > 0 && hosts.size() > allowed) {
      out.line("@refused", "its file limit " + limit[0] + " with " + limit[1] + " open holds " + allowed + " hosts, not "
          + hosts.size());
      out.close();
      System.exit(3);
    }
    out.line("@ready", Long.toString(ProcessHandle.current().pid()), Integer.toString(hosts.size()),
        Long.toString(limit[0]), Long.toString(limit[1]), Long.toString(allowed), Long.toString(System.nanoTime()));
    try (BenchClient client = new BenchClient(url, Math.max(1, hosts.size()), 0, keepAlive,
        Runtime.getRuntime().availableProcessors())) {
      HostLoops loops = new HostLoops(client, hosts, epoch, waitSeconds, ramp, new HostLoops.Sink() {
        @Override
        public void pullAnswered(String status, String error, String sample, int items) {
          out.line("@pull", status, error, Integer.toString(items), sample);
        }

        @Override
        public void pulled(String itemId, long atNanos) {
          out.line("@item", itemId, Long.toString(atNanos));
        }

        @Override
        public void ackAnswered(long startNanos, long nowNanos, String errorKind, String sample) {
          out.line("@ack", Long.toString(startNanos), Long.toString(nowNanos), errorKind, sample);
        }
      });
      long timer = client.vertx.setPeriodic(200, id -> out.line("@state", Integer.toString(loops.pullsInFlight()),
          Integer.toString(loops.parked())));
      BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
      for (String cmd; (cmd = in.readLine()) != null && !cmd.equals("stop"); ) {
        String[] c = cmd.split(" ");
        switch (c[0]) {
          case "start" -> {
            loops.start(Integer.parseInt(c[1]), Integer.parseInt(c[2]));
            out.line("@started", c[1], c[2]);
          }
          case "pause" -> loops.pause();
          case "resume" -> out.line("@resumed", Integer.toString(loops.resume()));
          default -> System.err.println("hosts process: unknown command " + cmd);
        }
      }
      client.vertx.cancelTimer(timer);
      loops.close();
    }
    out.close();
    System.exit(0);
  }

  /** This JVM's open-file limit and open descriptors, {@code {-1, -1}} when unknown. */
  static long[] fileLimit() {
    if (ManagementFactory.getOperatingSystemMXBean() instanceof com.sun.management.UnixOperatingSystemMXBean u) {
      return new long[] {u.getMaxFileDescriptorCount(), u.getOpenFileDescriptorCount()};
    }
    return new long[] {-1, -1};
  }

  /**
   * Waiting hosts a process holds under its file limit: the limit less what it has open and {@link #RESERVE}; with
   * {@code connection: close} a quarter of that is kept back for closing sockets (a host's closing socket still holds
   * its descriptor while its next request opens another).
   */
  static long allowed(long limit, long open, boolean keepAlive) {
    long a = limit - open - RESERVE;
    return Math.max(0, keepAlive ? a : a * 3 / 4);
  }

  /**
   * Report lines to the parent, written by one thread so the event loops never wait on the pipe; flushed whenever
   * nothing more is queued.
   */
  static final class Lines {
    private static final String END = new String("end");
    private final LinkedBlockingQueue<String> queue = new LinkedBlockingQueue<>();
    private final Thread writer;

    Lines(PrintStream to) {
      writer = new Thread(() -> {
        try {
          for (String l; (l = queue.take()) != END; ) {
            to.print(l);
            to.print('\n');
            if (queue.isEmpty()) {
              to.flush();
            }
          }
          to.flush();
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }, "hosts-process-out");
      writer.setDaemon(true);
      writer.start();
    }

    /** Queues one line: the fields joined by tabs (null as empty; tabs and line breaks in a field become spaces). */
    void line(String... fields) {
      StringBuilder b = new StringBuilder();
      for (int i = 0; i < fields.length; i++) {
        String f = fields[i] == null ? "" : fields[i];
        if (f.length() > 300) {
          f = f.substring(0, 300);
        }
        b.append(i == 0 ? "" : "\t").append(f.replace('\t', ' ').replace('\n', ' ').replace('\r', ' '));
      }
      queue.add(b.toString());
    }

    /** Writes what is queued and stops the writer (at most 5 s). */
    void close() throws InterruptedException {
      queue.add(END);
      writer.join(5000);
    }
  }
}
