package io.mbxrelay.cli;

import io.mbxrelay.auth.ClientAddress;
import io.mbxrelay.config.ConfigException;
import io.mbxrelay.config.ConfigLoader;
import io.mbxrelay.config.RelayConfig;
import io.mbxrelay.crypto.Ed25519KeyPair;
import io.mbxrelay.crypto.RelayKeyException;
import io.mbxrelay.crypto.RelayKeys;
import io.mbxrelay.server.CrashPoint;
import io.mbxrelay.server.RelayServer;
import io.mbxrelay.store.StoreOpenException;
import io.mbxrelay.store.StoreRefusedException;
import io.mbxrelay.store.sqlite.OpsException;
import io.mbxrelay.store.sqlite.SqliteOps;
import io.mbxrelay.store.sqlite.SqliteRelayStore;
import io.mbxrelay.store.sqlite.StoreFiles;
import java.nio.file.Path;
import java.time.Clock;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code mbxrelay serve} (docs/protocol.md §5 "CLI"): port {@code --port} &gt; {@code $PORT} &gt; 7374; bind {@code --bind}
 * &gt; 0.0.0.0; store dir {@code --store-dir} &gt; {@code $MBX_RELAY_DIR} &gt; {@code ~/.local/share/mbxrelay};
 * trust proxy {@code --trust-proxy} (= xff) or {@code $MBX_RELAY_TRUST_PROXY}; configuration {@code --config} &gt;
 * {@code $MBX_RELAY_CONFIG} over the defaults, then {@code MBX_RELAY_<SECTION>_<KEY>} variables.
 */
@Command(name = "serve", mixinStandardHelpOptions = true, description = "Run the relay.")
public final class ServeCommand implements Callable<Integer> {
  private static final Logger LOG = LoggerFactory.getLogger(ServeCommand.class);

  /**
   * Exit status when the store is refused (damaged, missing or empty where a store lived, invalid metadata, unsafe
   * files): restarting does not help, the message names the remedy (issue 10 items 2, 4, 5).
   */
  public static final int EXIT_STORE_REFUSED = 3;

  @Option(names = "--port", description = "Listen port (default: $PORT or 7374; 0 = any free port).")
  Integer port;

  @Option(names = "--bind", description = "Listen address (default: 0.0.0.0).")
  String bind;

  @Option(names = "--store-dir", description = "Store directory (default: $MBX_RELAY_DIR or ~/.local/share/mbxrelay).")
  Path storeDir;

  @Option(names = "--trust-proxy",
      description = "Rate-limit enrolment calls by the rightmost X-Forwarded-For entry (same as MBX_RELAY_TRUST_PROXY=xff).")
  boolean trustProxy;

  @Option(names = "--config", description = "Operator configuration file (default: $MBX_RELAY_CONFIG; shape of conf/relay.json).")
  Path config;

  @Option(names = "--new-store", description = "Start a new, empty store where relay.db is missing or empty although a"
      + " store lived in the dir (relay.lock, WAL files or rollback/ remain); the remains are moved to lost-<time>/."
      + " Without it the relay refuses such a dir. Never replaces an existing store.")
  boolean newStore;

  @Option(names = "--accept-clock", description = "Take the wall clock as right at start even when it is further than"
      + " timers.maxClockStepMs from the store's clock watermark (after checking the time); otherwise expiry and"
      + " dedup pruning start paused.")
  boolean acceptClock;

  @Option(names = "--accept-lost-commits", description = "Serve a store that is behind its commit watermark"
      + " (relay.watermark: committed transactions were lost, e.g. a damaged write-ahead log after a crash) or whose"
      + " watermark is damaged, with a new epoch so senders re-push and receivers pull again; keep a copy of the store"
      + " dir first. Without it the relay refuses such a store (exit 3). Does nothing for a store that is not behind.")
  boolean acceptLostCommits;

  @Override
  public Integer call() {
    Map<String, String> env = System.getenv();
    RelayConfig cfg;
    try {
      Path file = config != null ? config : env.get("MBX_RELAY_CONFIG") != null ? Path.of(env.get("MBX_RELAY_CONFIG")) : null;
      cfg = ConfigLoader.load(file, env);
    } catch (ConfigException e) {
      System.err.println("[mbxrelay] invalid configuration:");
      e.violations().forEach(v -> System.err.println("  - " + v));
      return 2;
    }
    LogSetup.apply(cfg.log().json());
    int listenPort;
    try {
      listenPort = port != null ? port : env.get("PORT") != null ? Integer.parseInt(env.get("PORT").trim()) : 7374;
    } catch (NumberFormatException e) {
      System.err.println("[mbxrelay] PORT must be a number");
      return 2;
    }
    if (listenPort < 0 || listenPort > 65535) {
      System.err.println("[mbxrelay] the port must be between 0 and 65535 (is " + listenPort + ")");
      return 2;
    }
    ClientAddress mode;
    CrashPoint crash;
    try {
      mode = trustProxy ? ClientAddress.XFF : ClientAddress.parse(env.get("MBX_RELAY_TRUST_PROXY"));
      crash = CrashPoint.parse(env.get(CrashPoint.ENV));
    } catch (IllegalArgumentException e) {
      System.err.println("[mbxrelay] " + e.getMessage());
      return 2;
    }
    Path dir = resolveStoreDir(storeDir, env);
    Ed25519KeyPair key;
    RelayServer server;
    try {
      SqliteRelayStore.createStoreDir(dir);
      for (String note : StoreFiles.secure(dir)) {
        System.err.println("[mbxrelay] " + note);
      }
      restoreFromEnv(dir, env.get("MBX_RELAY_RESTORE_FROM"));
      // before the key or the lock is created: a dir that held a store never silently becomes a new one
      StoreFiles.refuseLostStore(dir, newStore, System.currentTimeMillis())
          .ifPresent(note -> System.err.println("[mbxrelay] " + note));
      key = RelayKeys.loadOrCreate(dir, env.get("MBX_RELAY_KEY"));
      server = RelayServer.start(cfg, key, new RelayServer.Options(listenPort, bind == null ? "0.0.0.0" : bind, dir,
          mode, crash, Clock.systemUTC(), run -> {}, (c, n, f) -> {}, acceptClock, acceptLostCommits));
    } catch (StoreRefusedException e) {
      System.err.println("[mbxrelay] store refused: " + e.getMessage());
      return EXIT_STORE_REFUSED;
    } catch (RelayKeyException | StoreOpenException e) {
      System.err.println("[mbxrelay] " + e.getMessage());
      return 1;
    } catch (Exception e) {
      System.err.println("[mbxrelay] cannot start: " + rootMessage(e));
      return 1;
    }
    SqliteRelayStore.OpenReport report = server.openReport();
    if (report.epochRotatedReason() != null) {
      System.err.println("[mbxrelay] epoch rotated at startup (" + report.epochRotatedReason() + "): "
          + report.previousEpoch() + " -> " + server.epoch());
    }
    LOG.info("relay started [version: {}] [store: {}] [epoch: {}] [relay key: {}] [port: {}] [admin: {}:{}]"
            + " [http instances: {}] [read pool: {}] [writer batch: {}] [authority: {}] [trust proxy: {}]"
            + " [log json: {}]",
        RelayServer.version(), dir.toAbsolutePath(), server.epoch(), key.fingerprint(), server.port(),
        cfg.admin().bind(), server.adminPort(), cfg.http().instances(), cfg.store().readPoolSize(),
        cfg.store().writerBatchMax(), cfg.enrolment().authority(), mode, cfg.log().json());
    System.out.println("[mbxrelay] untrusted store-and-forward relay listening on :" + server.port()
        + " (store " + dir.toAbsolutePath() + ", epoch " + server.epoch() + ")");
    System.out.println("[mbxrelay] admin (metrics, health, ready) on " + cfg.admin().bind() + ":"
        + server.adminPort());
    System.out.println("[mbxrelay] relay key " + key.fingerprint()
        + " (hosts pin it with: mbxrelay host relay set <url> --key " + key.fingerprint() + ")");
    System.out.flush();
    CountDownLatch stopped = new CountDownLatch(1);
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      server.close();
      stopped.countDown();
    }, "mbx-shutdown"));
    try {
      stopped.await();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    return 0;
  }

  /**
   * {@code MBX_RELAY_RESTORE_FROM} (docs/protocol.md §5): restores that backup once per path before serving; a failure is
   * logged and the current store is served.
   */
  private static void restoreFromEnv(Path dir, String from) {
    if (from == null || from.isBlank()) {
      return;
    }
    Path backup = Path.of(from.trim());
    if (SqliteOps.alreadyRestored(dir, backup)) {
      LOG.info("restore at start skipped: already restored [file: {}]", backup);
      return;
    }
    try {
      var receipt = SqliteOps.restore(dir, backup, false, Clock.systemUTC(), false);
      LOG.info("restored at start [file: {}] [epoch: {} -> {}]", backup, receipt.get("epoch").get("from").asText(),
          receipt.get("epoch").get("to").asText());
    } catch (OpsException e) {
      LOG.error("restore at start failed; serving the current store [file: {}] [code: {}] [error: {}]", backup,
          e.code(), e.getMessage());
    }
  }

  /**
   * The store directory: flag, else {@code $MBX_RELAY_DIR}, else {@code <data home>/mbxrelay} (see
   * {@link #dataHome}).
   *
   * @param flag the {@code --store-dir} value or null
   * @param env environment
   * @return the directory
   */
  static Path resolveStoreDir(Path flag, Map<String, String> env) {
    if (flag != null) {
      return flag;
    }
    String fromEnv = env.get("MBX_RELAY_DIR");
    if (fromEnv != null && !fromEnv.isBlank()) {
      return Path.of(fromEnv);
    }
    return dataHome(env).resolve("mbxrelay");
  }

  /**
   * The XDG data directory: {@code $XDG_DATA_HOME}, else {@code $HOME/.local/share}, else the JVM's
   * {@code user.home} (which Java reads from the password database, not from {@code $HOME}).
   *
   * @param env environment
   * @return the directory
   */
  public static Path dataHome(Map<String, String> env) {
    String xdg = env.get("XDG_DATA_HOME");
    if (xdg != null && !xdg.isBlank()) {
      return Path.of(xdg);
    }
    String home = env.get("HOME");
    return Path.of(home != null && !home.isBlank() ? home : System.getProperty("user.home"), ".local", "share");
  }

  private static String rootMessage(Throwable t) {
    Throwable c = t;
    while (c.getCause() != null && c.getCause() != c) {
      c = c.getCause();
    }
    return c.getClass().getSimpleName() + (c.getMessage() == null ? "" : ": " + c.getMessage());
  }
}
