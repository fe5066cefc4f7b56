package io.mbxrelay.testing;

import io.mbxrelay.auth.ClientAddress;
import io.mbxrelay.config.ConfigLoader;
import io.mbxrelay.config.RelayConfig;
import io.mbxrelay.crypto.Ed25519KeyPair;
import io.mbxrelay.server.CrashPoint;
import io.mbxrelay.server.RelayServer;
import java.nio.file.Path;
import java.time.Clock;
import java.util.HashMap;
import java.util.Map;

/** A real relay on 127.0.0.1:0 over a real SQLite store in a temp dir, for whole-server tests. */
public final class RelayHarness implements AutoCloseable {
  public final RelayServer server;
  public final Ed25519KeyPair relayKey;
  public final Path dir;
  public final RelayConfig config;

  private RelayHarness(RelayServer server, Ed25519KeyPair relayKey, Path dir, RelayConfig config) {
    this.server = server;
    this.relayKey = relayKey;
    this.dir = dir;
    this.config = config;
  }

  /** Starts a relay with default configuration. */
  public static RelayHarness start(Path dir) throws Exception {
    return start(dir, Map.of(), Clock.systemUTC(), Ed25519KeyPair.generate());
  }

  /**
   * Starts a relay.
   *
   * @param dir store dir
   * @param env configuration overrides as MBX_RELAY_* variables
   * @param clock relay clock
   * @param key relay key
   */
  public static RelayHarness start(Path dir, Map<String, String> env, Clock clock, Ed25519KeyPair key)
      throws Exception {
    return start(dir, env, clock, key, ClientAddress.SOCKET);
  }

  /** Starts a relay with a trust-proxy mode. */
  public static RelayHarness start(Path dir, Map<String, String> env, Clock clock, Ed25519KeyPair key,
      ClientAddress mode) throws Exception {
    return start(dir, env, key, new RelayServer.Options(0, "127.0.0.1", dir, mode, CrashPoint.NONE, clock));
  }

  /** Starts a relay with explicit server options (their port, bind and store dir are used as given). */
  public static RelayHarness start(Path dir, Map<String, String> env, Ed25519KeyPair key, RelayServer.Options options)
      throws Exception {
    Map<String, String> e = new HashMap<>(env);
    e.putIfAbsent("MBX_RELAY_HTTP_INSTANCES", "2");
    e.putIfAbsent("MBX_RELAY_ADMIN_PORT", "0");
    e.putIfAbsent("MBX_RELAY_LIMITS_ENROL_CALLS_PER_MINUTE", "100000");
    e.putIfAbsent("MBX_RELAY_LIMITS_PUSH_REQUESTS_PER_MINUTE", "100000");
    RelayConfig config = ConfigLoader.load(null, e);
    RelayServer server = RelayServer.start(config, key, options);
    return new RelayHarness(server, key, dir, config);
  }

  /** Admin base URL ({@code /metrics}, {@code /health}, {@code /ready}). */
  public String adminUrl() {
    return "http://127.0.0.1:" + server.adminPort();
  }

  /** Base URL, e.g. {@code http://127.0.0.1:40123}. */
  public String url() {
    return "http://127.0.0.1:" + server.port();
  }

  @Override
  public void close() {
    server.close();
  }
}
