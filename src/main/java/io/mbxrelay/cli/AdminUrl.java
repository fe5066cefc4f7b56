package io.mbxrelay.cli;

import io.mbxrelay.config.ConfigException;
import io.mbxrelay.config.ConfigLoader;
import io.mbxrelay.config.RelayConfig;
import java.net.ConnectException;
import java.net.http.HttpConnectTimeoutException;
import java.net.http.HttpTimeoutException;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

/**
 * Where the CLI reaches a running relay's admin server ({@code healthcheck}, {@code clock}; issue 12 item 6): the
 * same configuration {@code serve} reads (defaults, the {@code --config} file or {@code $MBX_RELAY_CONFIG}, then
 * {@code MBX_RELAY_*} variables), so {@code admin.bind} and {@code admin.port} set in a file or in the environment are
 * honoured. A wildcard bind ({@code 0.0.0.0}, {@code ::}) listens on every address, so the CLI connects to loopback.
 */
final class AdminUrl {
  private AdminUrl() {}

  /**
   * The admin base URL, e.g. {@code http://127.0.0.1:7375}.
   *
   * @param configOption the command's {@code --config} value, or null
   * @param env the environment
   * @return the base URL, without a trailing slash
   * @throws ConfigException when the configuration is invalid, or its admin port is 0 (unknown until the relay runs)
   */
  static String base(Path configOption, Map<String, String> env) throws ConfigException {
    Path file = configOption != null ? configOption
        : env.get("MBX_RELAY_CONFIG") != null && !env.get("MBX_RELAY_CONFIG").isBlank()
            ? Path.of(env.get("MBX_RELAY_CONFIG").trim()) : null;
    RelayConfig cfg = ConfigLoader.load(file, env);
    if (cfg.admin().port() == 0) {
      throw new ConfigException(List.of("admin.port is 0 (any free port): the admin port is only known to the running"
          + " relay (its start lines name it); pass --url"));
    }
    return "http://" + connectHost(cfg.admin().bind()) + ":" + cfg.admin().port();
  }

  /**
   * The host to connect to for a bind address: loopback for a wildcard, brackets for an IPv6 literal.
   *
   * @param bind {@code admin.bind}
   * @return a URL host
   */
  static String connectHost(String bind) {
    String b = bind.trim();
    if (b.isEmpty() || b.equals("0.0.0.0")) {
      return "127.0.0.1";
    }
    if (b.matches("[0:]*:[0:]*") && !b.matches(".*[1-9a-fA-F].*")) { // ::, ::0, 0:0:0:0:0:0:0:0
      return "[::1]";
    }
    return b.contains(":") ? "[" + b + "]" : b;
  }

  /**
   * A failed request as words (never just an exception class name).
   *
   * @param e the failure of {@code HttpClient.send}
   * @param timeoutMs the timeout used
   * @return e.g. {@code connection refused (is the relay running, and is its admin server on this address?)}
   */
  static String describe(Exception e, long timeoutMs) {
    if (e instanceof HttpConnectTimeoutException) {
      return "no connection within " + timeoutMs + " ms";
    }
    if (e instanceof HttpTimeoutException) {
      return "no answer within " + timeoutMs + " ms";
    }
    Throwable c = e;
    while (c != null) {
      if (c instanceof ConnectException) {
        return "connection refused (is the relay running, with its admin server on this address and port?)";
      }
      if (c instanceof java.nio.channels.UnresolvedAddressException || c instanceof java.net.UnknownHostException) {
        return "unknown host";
      }
      c = c.getCause() == c ? null : c.getCause();
    }
    if (e instanceof IllegalArgumentException) {
      return "not a usable URL (" + e.getMessage() + ")";
    }
    return e.getMessage() != null ? e.getMessage() : e.getClass().getSimpleName();
  }
}
