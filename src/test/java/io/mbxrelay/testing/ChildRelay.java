package io.mbxrelay.testing;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The shaded jar ({@code target/mbxrelay.jar}, built by {@code package} before Failsafe runs) as a child process:
 * {@code serve --port 0 --bind 127.0.0.1 --store-dir DIR} (a {@code --port} among the extra arguments replaces the
 * 0). {@link #kill()} sends SIGKILL.
 */
public final class ChildRelay implements AutoCloseable {
  private static final Pattern LISTENING = Pattern.compile("listening on :(\\d+)");
  public final Process process;
  public final int port;
  public final List<String> output;
  private final ChildTmp tmp;

  private ChildRelay(Process process, int port, List<String> output, ChildTmp tmp) {
    this.process = process;
    this.port = port;
    this.output = output;
    this.tmp = tmp;
  }

  /** The jar under test. */
  public static Path jar() {
    String p = System.getProperty("mbxrelay.jar", "target/mbxrelay.jar");
    Path jar = Path.of(p);
    if (!Files.isRegularFile(jar)) {
      throw new IllegalStateException("shaded jar missing: " + jar + " (run mvn package first)");
    }
    return jar;
  }

  /** Starts a relay child and waits for its listening line. */
  public static ChildRelay start(Path storeDir, Map<String, String> env) throws Exception {
    return start(storeDir, env, new String[0]);
  }

  /** Starts a relay child with extra {@code serve} arguments and waits for its listening line. */
  public static ChildRelay start(Path storeDir, Map<String, String> env, String... serveArgs) throws Exception {
    return start(List.of(), storeDir, env, serveArgs);
  }

  /**
   * Starts a relay child on a given port (0: any), e.g. to restart a killed relay at the URL its hosts pinned, and
   * waits for its listening line.
   */
  public static ChildRelay start(Path storeDir, Map<String, String> env, int port, String... serveArgs)
      throws Exception {
    List<String> args = new ArrayList<>(List.of("--port", Integer.toString(port)));
    args.addAll(List.of(serveArgs));
    return start(List.of(), storeDir, env, args.toArray(String[]::new));
  }

  /** Starts a relay child with JVM options (e.g. {@code -Xmx256m}) and extra {@code serve} arguments. */
  public static ChildRelay start(List<String> jvmOptions, Path storeDir, Map<String, String> env,
      String... serveArgs) throws Exception {
    return start(List.of(), jvmOptions, storeDir, env, serveArgs);
  }

  /**
   * Starts a relay child through a launcher that ends by exec'ing the command it is given (e.g.
   * {@code sh -c 'trap "" HUP; exec "$@"' sh}), so the child keeps the launcher's pid and what it set up.
   */
  public static ChildRelay start(List<String> launcher, List<String> jvmOptions, Path storeDir,
      Map<String, String> env, String... serveArgs) throws Exception {
    return start(launcher, jvmOptions, storeDir, env, line -> { }, serveArgs);
  }

  /**
   * As {@link #start(List, List, Path, Map, String...)}, calling {@code onLine} with each line of the child's output
   * as it arrives (on the output reader's thread), e.g. to act at a log line the relay writes before it listens.
   */
  public static ChildRelay start(List<String> launcher, List<String> jvmOptions, Path storeDir,
      Map<String, String> env, java.util.function.Consumer<String> onLine, String... serveArgs) throws Exception {
    ChildTmp tmp = ChildTmp.create(); // the native library copy and Vert.x cache of a killed child go with it
    List<String> cmd = new ArrayList<>(launcher);
    cmd.add(javaBin());
    cmd.addAll(jvmOptions);
    cmd.addAll(tmp.jvmArgs());
    cmd.addAll(List.of("-jar", jar().toString(), "serve"));
    if (!List.of(serveArgs).contains("--port")) {
      cmd.addAll(List.of("--port", "0"));
    }
    cmd.addAll(List.of("--bind", "127.0.0.1", "--store-dir", storeDir.toString()));
    cmd.addAll(List.of(serveArgs));
    ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
    pb.environment().remove("MBX_RELAY_KEY");
    pb.environment().remove("MBX_RELAY_TEST_CRASH");
    pb.environment().put("MBX_RELAY_LIMITS_ENROL_CALLS_PER_MINUTE", "100000");
    pb.environment().put("MBX_RELAY_ADMIN_PORT", "0");
    pb.environment().putAll(env);
    Process p;
    try {
      p = pb.start();
    } catch (IOException e) {
      tmp.delete();
      throw e;
    }
    List<String> out = new CopyOnWriteArrayList<>();
    CompletableFuture<Integer> listening = new CompletableFuture<>();
    Thread reader = new Thread(() -> {
      try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
        String line;
        while ((line = r.readLine()) != null) {
          out.add(line);
          onLine.accept(line);
          Matcher m = LISTENING.matcher(line);
          if (m.find()) {
            listening.complete(Integer.parseInt(m.group(1)));
          }
        }
      } catch (IOException ignored) {
        // process gone
      }
      listening.completeExceptionally(new IllegalStateException("relay exited before listening: " + out));
    }, "child-relay-output");
    reader.setDaemon(true);
    reader.start();
    try {
      return new ChildRelay(p, listening.get(60, TimeUnit.SECONDS), out, tmp);
    } catch (Exception | Error e) {
      p.destroyForcibly().waitFor(30, TimeUnit.SECONDS);
      tmp.delete();
      throw e;
    }
  }

  public String url() {
    return "http://127.0.0.1:" + port;
  }

  private static final Pattern ADMIN = Pattern.compile("admin \\(metrics, health, ready\\) on ([0-9.]+):(\\d+)");

  /** The admin server's base URL ({@code /metrics}, {@code /health}, {@code /ready}), from the startup lines. */
  public String adminUrl() {
    for (String line : output) {
      Matcher m = ADMIN.matcher(line);
      if (m.find()) {
        return "http://" + m.group(1) + ":" + m.group(2);
      }
    }
    throw new IllegalStateException("no admin line in " + output);
  }

  /** SIGKILL and wait for the process to be gone. */
  public void kill() throws InterruptedException {
    process.destroyForcibly();
    process.waitFor(30, TimeUnit.SECONDS);
    gone();
  }

  /** Once the process has ended: removes its temp dir (a killed JVM cannot). */
  private void gone() {
    if (!process.isAlive()) {
      tmp.delete();
    }
  }

  /** Waits for the process to end by itself; returns its exit code. */
  public int awaitExit() throws InterruptedException {
    if (!process.waitFor(30, TimeUnit.SECONDS)) {
      throw new IllegalStateException("relay did not exit");
    }
    gone();
    return process.exitValue();
  }

  /** Result of a CLI run: exit code, stdout, stderr. */
  public record Cli(int exit, String out, String err) {}

  /** Runs {@code java -jar mbxrelay.jar args...} to completion. */
  public static Cli cli(Map<String, String> env, String... args) throws Exception {
    List<String> cmd = new ArrayList<>(List.of(javaBin(), "-jar", jar().toString()));
    cmd.addAll(List.of(args));
    ProcessBuilder pb = new ProcessBuilder(cmd);
    pb.environment().remove("MBX_RELAY_KEY");
    pb.environment().putAll(env);
    Path out = Files.createTempFile("cli", ".out");
    Path err = Files.createTempFile("cli", ".err");
    Process p = pb.redirectOutput(out.toFile()).redirectError(err.toFile()).start();
    if (!p.waitFor(120, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      throw new IllegalStateException("cli did not finish: " + args[0]);
    }
    Cli r = new Cli(p.exitValue(), Files.readString(out), Files.readString(err));
    Files.deleteIfExists(out);
    Files.deleteIfExists(err);
    return r;
  }

  /** Stops the relay with SIGTERM (graceful) and waits. */
  public void stop() throws InterruptedException {
    process.destroy();
    if (!process.waitFor(30, TimeUnit.SECONDS)) {
      kill();
    }
    gone();
  }

  /** The {@code java} of the JVM running the tests. */
  public static String javaBin() {
    return Path.of(System.getProperty("java.home"), "bin", "java").toString();
  }

  /** SIGKILL when still running, then remove its temp dir. Throws nothing, so try-with-resources needs no catch. */
  @Override
  public void close() {
    if (process.isAlive()) {
      try {
        kill();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    gone();
  }
}
