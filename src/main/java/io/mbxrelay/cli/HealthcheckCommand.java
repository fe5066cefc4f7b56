package io.mbxrelay.cli;

import io.mbxrelay.config.ConfigException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code mbxrelay healthcheck}: GETs the admin {@code /health} and exits 0 when it answers 200, else 1; 2 when the
 * configuration it reads is invalid. For container {@code HEALTHCHECK}s (the JRE image has no curl). The URL is
 * {@code --url}, else built from the relay's own configuration ({@link AdminUrl}: {@code --config} or
 * {@code $MBX_RELAY_CONFIG}, then {@code MBX_RELAY_ADMIN_BIND} and {@code MBX_RELAY_ADMIN_PORT}; a wildcard bind means
 * loopback). A failure prints what went wrong and where, never only an exception's class name (issue 12 item 6).
 */
@Command(name = "healthcheck", mixinStandardHelpOptions = true,
    description = "GET the admin /health; exit 0 when it answers 200, else 1.")
public final class HealthcheckCommand implements Callable<Integer> {
  @Option(names = "--url", description = "Health URL (default: from the relay's configuration: admin.bind and"
      + " admin.port, loopback for a wildcard bind; http://127.0.0.1:7375/health by default).")
  String url;

  @Option(names = "--config", description = "The relay's configuration file (default: $MBX_RELAY_CONFIG), for"
      + " admin.bind and admin.port.")
  Path config;

  @Option(names = "--timeout-ms", defaultValue = "5000", description = "Give up after this many ms (default: 5000).")
  long timeoutMs;

  /** The process environment (tests replace it). */
  Map<String, String> env = System.getenv();

  @Override
  public Integer call() {
    String target;
    try {
      target = url != null ? url : AdminUrl.base(config, env) + "/health";
    } catch (ConfigException e) {
      System.err.println("[mbxrelay] health check: invalid configuration:");
      e.violations().forEach(v -> System.err.println("  - " + v));
      return 2;
    }
    try {
      HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
          .connectTimeout(Duration.ofMillis(timeoutMs)).build();
      HttpResponse<String> r = client.send(HttpRequest.newBuilder(URI.create(target))
          .timeout(Duration.ofMillis(timeoutMs)).GET().build(), HttpResponse.BodyHandlers.ofString());
      if (r.statusCode() == 200) {
        return 0;
      }
      System.err.println("[mbxrelay] unhealthy: " + target + " answered " + r.statusCode() + " " + r.body());
      return 1;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      System.err.println("[mbxrelay] health check interrupted");
      return 1;
    } catch (Exception e) {
      System.err.println("[mbxrelay] health check failed: " + target + ": " + AdminUrl.describe(e, timeoutMs));
      return 1;
    }
  }
}
