package io.mbxrelay.testing;

import java.io.IOException;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A real nginx (Debian's package; {@code .ci/run} installs it) as a round-robin load balancer in front of several
 * relay instances, with no affinity of any kind: every request may reach any instance (issue 20 item 9). Its
 * configuration, pid file, logs and temp files live in a directory the test gives; {@link #close()} stops it.
 */
public final class Nginx implements AutoCloseable {
  private final Process process;
  private final int port;
  private final Path dir;

  private Nginx(Process process, int port, Path dir) {
    this.process = process;
    this.port = port;
    this.dir = dir;
  }

  /** Whether an {@code nginx} binary is on this machine. */
  public static boolean installed() {
    for (String d : List.of("/usr/sbin", "/usr/bin", "/usr/local/sbin", "/usr/local/bin")) {
      if (Files.isExecutable(Path.of(d, "nginx"))) {
        return true;
      }
    }
    return false;
  }

  private static String binary() {
    for (String d : List.of("/usr/sbin", "/usr/bin", "/usr/local/sbin", "/usr/local/bin")) {
      if (Files.isExecutable(Path.of(d, "nginx"))) {
        return d + "/nginx";
      }
    }
    return "nginx";
  }

  /**
   * Starts nginx on a free 127.0.0.1 port, proxying round robin to the given relay ports.
   *
   * @param dir an empty directory for its files
   * @param upstreamPorts the relay instances' ports on 127.0.0.1
   * @return the running balancer, answering on {@link #url()}
   */
  public static Nginx start(Path dir, List<Integer> upstreamPorts) throws IOException, InterruptedException {
    int port;
    try (ServerSocket s = new ServerSocket(0)) {
      port = s.getLocalPort();
    }
    StringBuilder servers = new StringBuilder();
    for (int p : upstreamPorts) {
      servers.append("    server 127.0.0.1:").append(p).append(" max_fails=0;\n");
    }
    String d = dir.toAbsolutePath().toString();
    String root = "root".equals(System.getProperty("user.name")) ? "user root;\n" : "";
    String conf = root
        + "worker_processes 1;\n"
        + "error_log " + d + "/error.log warn;\n"
        + "pid " + d + "/nginx.pid;\n"
        + "events { worker_connections 2048; }\n"
        + "http {\n"
        + "  access_log off;\n"
        + "  client_body_temp_path " + d + "/body;\n"
        + "  proxy_temp_path " + d + "/proxy;\n"
        + "  fastcgi_temp_path " + d + "/fastcgi;\n"
        + "  uwsgi_temp_path " + d + "/uwsgi;\n"
        + "  scgi_temp_path " + d + "/scgi;\n"
        + "  client_max_body_size 8m;\n"
        + "  upstream relays {\n" + servers + "    keepalive 16;\n  }\n"
        + "  server {\n"
        + "    listen 127.0.0.1:" + port + ";\n"
        + "    location / {\n"
        + "      proxy_pass http://relays;\n"
        + "      proxy_http_version 1.1;\n"
        + "      proxy_set_header Connection \"\";\n"
        + "      proxy_set_header Host $http_host;\n"
        + "      proxy_read_timeout 120s;\n"
        + "      proxy_buffering off;\n"
        + "      proxy_next_upstream off;\n" // a request reaches one instance; the client decides about retries
        + "    }\n"
        + "  }\n"
        + "}\n";
    Path confFile = dir.resolve("nginx.conf");
    Files.writeString(confFile, conf);
    Process p = new ProcessBuilder(binary(), "-p", d, "-c", confFile.toString(), "-g", "daemon off;")
        .redirectErrorStream(true).redirectOutput(dir.resolve("stdout.log").toFile()).start();
    Nginx n = new Nginx(p, port, dir);
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
    while (System.nanoTime() < deadline) {
      if (!p.isAlive()) {
        throw new IOException("nginx exited with " + p.exitValue() + ": " + Files.readString(dir.resolve("stdout.log"))
            + (Files.exists(dir.resolve("error.log")) ? Files.readString(dir.resolve("error.log")) : ""));
      }
      try (Socket s = new Socket("127.0.0.1", port)) {
        return n;
      } catch (IOException notYet) {
        Thread.sleep(50);
      }
    }
    n.close();
    throw new IOException("nginx did not listen on " + port);
  }

  /** The balancer's base URL. */
  public String url() {
    return "http://127.0.0.1:" + port;
  }

  /** nginx's error log (upstream failures), or empty. */
  public String errorLog() throws IOException {
    Path f = dir.resolve("error.log");
    return Files.exists(f) ? Files.readString(f) : "";
  }

  @Override
  public void close() {
    process.destroy(); // SIGTERM: fast shutdown
    try {
      if (!process.waitFor(10, TimeUnit.SECONDS)) {
        process.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      process.destroyForcibly();
    }
  }
}
