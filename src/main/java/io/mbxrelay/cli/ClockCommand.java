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
 * {@code mbxrelay clock status|resume} (issue 10 item 7): the running relay's store clock through its admin port.
 * {@code status} GETs {@code /clock}; {@code resume} POSTs {@code /clock/resume}, the operator's acceptance of the wall
 * clock after a step paused expiry and dedup pruning (check the time first: {@code timedatectl}, {@code chronyc
 * tracking}). The admin token, when the relay has one, comes from {@code $MBX_RELAY_ADMIN_TOKEN}; the admin address
 * from the relay's configuration ({@link AdminUrl}). Prints the relay's JSON answer; exit 0 on 200, 1 otherwise, 2 on
 * an invalid configuration.
 */
@Command(name = "clock", mixinStandardHelpOptions = true,
    description = "Show the relay's store clock, or resume expiry and dedup pruning after a wall-clock step.",
    subcommands = {ClockCommand.Status.class, ClockCommand.Resume.class})
public final class ClockCommand implements Runnable {
  @Override
  public void run() {
    picocli.CommandLine.usage(this, System.err);
  }

  /** Shared {@code --url} and {@code --config} options. */
  abstract static class AdminCall implements Callable<Integer> {
    @Option(names = "--url", description = "Admin base URL (default: from the relay's configuration: admin.bind and"
        + " admin.port, loopback for a wildcard bind; http://127.0.0.1:7375 by default).")
    String url;

    @Option(names = "--config", description = "The relay's configuration file (default: $MBX_RELAY_CONFIG), for"
        + " admin.bind and admin.port.")
    java.nio.file.Path config;

    int call(String method, String path) {
      Map<String, String> env = System.getenv();
      String base;
      try {
        base = url != null ? url : AdminUrl.base(config, env);
      } catch (io.mbxrelay.config.ConfigException e) {
        System.err.println("[mbxrelay] invalid configuration:");
        e.violations().forEach(v -> System.err.println("  - " + v));
        return 2;
      }
      HttpRequest.Builder req;
      try {
        req = HttpRequest.newBuilder(URI.create(base + path)).timeout(Duration.ofSeconds(10))
            .method(method, HttpRequest.BodyPublishers.noBody());
      } catch (IllegalArgumentException e) {
        System.err.println("[mbxrelay] --url is not a usable URL: " + base);
        return 2;
      }
      String token = env.get("MBX_RELAY_ADMIN_TOKEN");
      if (token != null && !token.isBlank()) {
        req.header("authorization", "Bearer " + token.trim());
      }
      try {
        HttpResponse<String> r = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(5)).build().send(req.build(), HttpResponse.BodyHandlers.ofString());
        System.out.println(r.body());
        if (r.statusCode() != 200) {
          System.err.println("[mbxrelay] " + method + " " + path + " answered " + r.statusCode());
          return 1;
        }
        return 0;
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return 1;
      } catch (Exception e) {
        System.err.println("[mbxrelay] cannot reach the admin server at " + base + ": " + AdminUrl.describe(e, 10_000));
        return 1;
      }
    }
  }

  /** {@code mbxrelay clock status}. */
  @Command(name = "status", mixinStandardHelpOptions = true, description = "GET the admin /clock.")
  static final class Status extends AdminCall {
    @Override
    public Integer call() {
      return call("GET", "/clock");
    }
  }

  /** {@code mbxrelay clock resume}. */
  @Command(name = "resume", mixinStandardHelpOptions = true,
      description = "Accept the wall clock as right: expiry and dedup pruning resume with it (check the time first).")
  static final class Resume extends AdminCall {
    @Override
    public Integer call() {
      int code = call("POST", "/clock/resume");
      if (code == 0) {
        System.err.println("[mbxrelay] the wall clock is accepted; the next expiry sweep uses it");
      }
      return code;
    }
  }
}
