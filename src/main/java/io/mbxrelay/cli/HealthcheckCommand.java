package io.mbxrelay.cli;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code mbxrelay healthcheck}: GETs the admin {@code /health} and exits 0 when it answers 200, else 1. For container
 * {@code HEALTHCHECK}s (the JRE image has no curl). The default URL is
 * {@code http://127.0.0.1:$MBX_RELAY_ADMIN_PORT/health} (port 7375 when the variable is unset); an admin port set only
 * in a config file needs {@code --url}.
 */
@Command(name = "healthcheck", mixinStandardHelpOptions = true,
    description = "GET the admin /health; exit 0 when it answers 200, else 1.")
public final class HealthcheckCommand implements Callable<Integer> {
  @Option(names = "--url", description = "Health URL (default: http://127.0.0.1:$MBX_RELAY_ADMIN_PORT/health, port 7375).")
  String url;

  @Option(names = "--timeout-ms", defaultValue = "5000", description = "Give up after this many ms (default: 5000).")
  long timeoutMs;

  @Override
  public Integer call() {
    String target = url != null ? url : defaultUrl(System.getenv());
    try {
      HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
          .connectTimeout(Duration.ofMillis(timeoutMs)).build();
      HttpResponse<String> r = client.send(HttpRequest.newBuilder(URI.create(target))
          .timeout(Duration.ofMillis(timeoutMs)).GET().build(), HttpResponse.BodyHandlers.ofString());
      if (r.statusCode() == 200) {
        return 0;
      }
      System.err.println("[mbxrelay] unhealthy: " + r.statusCode() + " " + r.body());
      return 1;
    } catch (Exception e) {
      System.err.println("[mbxrelay] health check failed: " + e.getClass().getSimpleName());
      return 1;
    }
  }

  /**
   * The default health URL.
   *
   * @param env environment
   * @return {@code http://127.0.0.1:<port>/health}
   */
  static String defaultUrl(Map<String, String> env) {
    String port = env.get("MBX_RELAY_ADMIN_PORT");
    return "http://127.0.0.1:" + (port == null || port.isBlank() ? "7375" : port.trim()) + "/health";
  }
}
