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
import io.mbxrelay.store.model.OpenReport;
import io.mbxrelay.store.spi.StoreBackendFactory;
import io.mbxrelay.store.sqlite.OpsException;
import io.mbxrelay.store.sqlite.SqliteOps;
import io.mbxrelay.store.sqlite.SqliteRelayStore;
import io.mbxrelay.store.sqlite.StoreFiles;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.mbxrelay.store.StoreCommand;
import io.mbxrelay.wire.IsoTime;
import io.mbxrelay.wire.Json;
import java.nio.file.Path;
import java.time.Clock;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.event.Level;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code mbxrelay serve} (docs/protocol.md §5 "CLI"): port {@code --port} &gt; {@code $PORT} &gt; 7374; bind {@code --bind}
 * &gt; 127.0.0.1 (loopback: {@code --bind 0.0.0.0} is the explicit choice to take other machines' connections, issue
 * 22 item 9); store dir {@code --store-dir} &gt; {@code $MBX_RELAY_DIR} &gt; {@code ~/.local/share/mbxrelay};
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

  /**
   * The relay port's address without {@code --bind} (issue 22 item 9): loopback, as the systemd unit binds behind
   * nginx, so a relay started on a laptop is not public by accident; a container or a host reached directly binds
   * {@code 0.0.0.0} on purpose (the Dockerfile and docker-compose.yml do).
   */
  static final String DEFAULT_BIND = "127.0.0.1";

  @Option(names = "--port", description = "Listen port (default: $PORT or 7374; 0 = any free port).")
  Integer port;

  @Option(names = "--bind", description = "Listen address (default: 127.0.0.1, this machine only; 0.0.0.0 for every"
      + " address, e.g. in a container or behind a load balancer on another machine).")
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

  @Option(names = "--wait", description = "When another relay process holds the store, wait up to 60 s for it to"
      + " stop (saying every 5 s that it waits, and for whom) instead of failing at once (exit 1).")
  boolean waitForStore;

  @Option(names = "--print-config", description = "Print the effective configuration (defaults, then the --config"
      + " file, then MBX_RELAY_* variables, then these options) as JSON on stdout, secrets masked, and exit 0"
      + " without touching the store.")
  boolean printConfig;

  /** The process environment (tests replace it). */
  Map<String, String> env = System.getenv();

  /** The configuration in force (SIGHUP replaces what it can reload). */
  private volatile RelayConfig current;

  @Override
  public Integer call() {
    Path file = config != null ? config : env.get("MBX_RELAY_CONFIG") != null ? Path.of(env.get("MBX_RELAY_CONFIG"))
        : null;
    RelayConfig cfg;
    int listenPort;
    try {
      cfg = ConfigLoader.load(file, env);
      listenPort = listenPort();
      List<String> ports = new ArrayList<>(ConfigLoader.portViolations(cfg, listenPort));
      if (bind != null && !ConfigLoader.isListenAddress(bind)) {
        ports.add("--bind must be an IP address of this machine (e.g. 127.0.0.1, 0.0.0.0 for every address, ::1) or"
            + " localhost (is " + bind + ")");
      }
      if (!ports.isEmpty()) {
        throw new ConfigException(ports);
      }
    } catch (ConfigException e) {
      System.err.println("[mbxrelay] invalid configuration:");
      e.violations().forEach(v -> System.err.println("  - " + v));
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
    String listenBind = bind == null ? DEFAULT_BIND : bind;
    if (printConfig) {
      System.out.println(effectiveConfig(cfg, file, listenPort, listenBind, dir, mode).toPrettyString());
      return 0;
    }
    LogSetup.apply(cfg.log().json(), cfg.log().level());
    // ACCP's native library and self-tests load while the store opens, not before it (docs/performance.md "Ed25519")
    io.mbxrelay.crypto.Ed25519Engine.loadInBackground();
    boolean json = cfg.log().json();
    current = cfg;
    // a SIGHUP while the store opens (logrotate, a reload during a restart) must not end the process
    Signals.handle("HUP", () -> LOG.info("SIGHUP while starting: ignored"));
    Ed25519KeyPair key;
    RelayServer server;
    StoreBackendFactory backend = StoreBackendFactory.of(cfg.store());
    try {
      if (!backend.storeInDirectory()) {
        // the relay key lives in the database (every instance serves it); MBX_RELAY_KEY, when set, must match it
        String given = env.get(RelayKeys.ENV);
        key = given == null || given.isBlank() ? null : RelayKeys.parse(given.strip());
      } else {
        // the store lives in the store dir beside relay.key and relay.lock: that dir is prepared and checked here, where
        // a refusal is a start line and an exit status of its own (usage 2, busy 1, lost store 3)
        String notDir = notADirectory(dir);
        if (notDir != null) {
          say(json, Level.ERROR, "cannot start: " + notDir);
          return 2;
        }
        SqliteRelayStore.createStoreDir(dir);
        for (String note : StoreFiles.secure(dir)) {
          say(json, Level.WARN, note);
        }
        restoreFromEnv(dir, env.get("MBX_RELAY_RESTORE_FROM"));
        // before the key or the lock is created: a dir that held a store never silently becomes a new one
        StoreFiles.refuseLostStore(dir, newStore, System.currentTimeMillis())
            .ifPresent(note -> say(json, Level.WARN, note));
        try {
          key = RelayKeys.loadOrCreate(dir, env.get(RelayKeys.ENV));
        } catch (java.io.IOException e) {
          Path keyFile = dir.resolve(RelayKeys.FILE_NAME);
          say(json, Level.ERROR, "cannot " + (java.nio.file.Files.exists(keyFile) ? "read" : "create")
              + " the relay key file " + keyFile + ": " + StoreFiles.reason(e));
          return 1;
        }
        Integer busy = awaitStoreLock(json, dir);
        if (busy != null) {
          return busy;
        }
      }
      server = RelayServer.start(cfg, key, new RelayServer.Options(listenPort, listenBind, dir,
          mode, crash, Clock.systemUTC(), run -> {}, (c, n, f) -> {}, acceptClock, acceptLostCommits));
    } catch (StoreRefusedException e) {
      say(json, Level.ERROR, "store refused: " + e.getMessage());
      return EXIT_STORE_REFUSED;
    } catch (RelayKeyException | StoreOpenException | RelayServer.ListenException e) {
      say(json, Level.ERROR, "cannot start: " + e.getMessage());
      return 1;
    } catch (Exception e) {
      say(json, Level.ERROR, "cannot start: " + rootMessage(e));
      return 1;
    }
    key = server.relayKey();
    OpenReport report = server.openReport();
    if (report.epochRotatedReason() != null) {
      say(json, Level.WARN, "epoch rotated at startup (" + report.epochRotatedReason() + "): "
          + report.previousEpoch() + " -> " + server.epoch());
    }
    LOG.info("relay started [version: {}] [store: {}] [epoch: {}] [relay key: {}] [port: {}] [admin: {}:{}]"
            + " [http instances: {}] [read pool: {}] [writer batch: {}] [authority: {}] [trust proxy: {}]"
            + " [log json: {}] [log level: {}]",
        RelayServer.version(), backend.describe(cfg.store(), dir), server.epoch(), key.fingerprint(), server.port(),
        cfg.admin().bind(), server.adminPort(), cfg.http().instances(), cfg.store().readPoolSize(),
        cfg.store().writerBatchMax(), cfg.enrolment().authority(), mode, cfg.log().json(), LogSetup.level());
    logEd25519Engine();
    // before the banner: a supervisor or test that acts on the listening line finds the handlers in place
    CountDownLatch stopped = handleSignals(server, file);
    say(json, Level.INFO, "untrusted store-and-forward relay listening on :" + server.port()
        + " (store " + backend.describe(cfg.store(), dir) + ", epoch " + server.epoch() + ")");
    say(json, Level.INFO, "admin (metrics, health, ready) on " + cfg.admin().bind() + ":" + server.adminPort());
    say(json, Level.INFO, "relay key " + key.fingerprint()
        + " (hosts pin it with: mbxrelay host relay set <url> --key " + key.fingerprint() + ")");
    try {
      stopped.await();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    return 0;
  }

  /**
   * Issue 22 item 5: a store dir that is a file, or under one, can never work: a usage error (exit 2), not a runtime
   * failure that a restart may fix.
   *
   * @return the reason, or null when the path is a directory or can be created as one
   */
  static String notADirectory(Path dir) {
    for (Path p = dir.toAbsolutePath(); p != null; p = p.getParent()) {
      if (java.nio.file.Files.exists(p)) {
        if (java.nio.file.Files.isDirectory(p)) {
          return null;
        }
        return p.equals(dir.toAbsolutePath()) ? "the store dir " + dir + " is a file, not a directory; point"
            + " --store-dir or $MBX_RELAY_DIR at a directory"
            : "the store dir " + dir + " cannot be a directory: " + p + " is a file; point --store-dir or"
            + " $MBX_RELAY_DIR at a directory";
      }
    }
    return null;
  }

  /** How often {@code --wait} says it is still waiting for the store, ms. */
  static final long WAIT_REPORT_MS = 5_000;
  /** How long {@code --wait} waits for another relay to release the store, ms (tests shorten it). */
  long waitMaxMs = 60_000;

  /**
   * A second {@code serve} on a store another relay process holds (issue 22 item 5): fails at once naming the holder
   * (exit 1), or with {@code --wait} says every {@link #WAIT_REPORT_MS} that it waits and for whom, for up to
   * {@link #waitMaxMs}. It used to wait 60 s after one line and looked hung.
   *
   * @return null when the store is free (the relay then takes the lock), else the exit status
   */
  private Integer awaitStoreLock(boolean json, Path dir) {
    long started = System.nanoTime();
    Optional<String> holder = io.mbxrelay.store.sqlite.StoreLock.heldBy(dir);
    if (holder.isEmpty()) {
      return null;
    }
    if (!waitForStore) {
      say(json, Level.ERROR, "cannot start: the store " + dir.toAbsolutePath() + " is in use by " + holder.get()
          + " (another relay process serves it); stop that one first, or start with --wait to wait up to "
          + waitMaxMs / 1000 + " s for it to stop");
      return 1;
    }
    while (holder.isPresent()) {
      long waited = java.util.concurrent.TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
      if (waited >= waitMaxMs) {
        say(json, Level.ERROR, "cannot start: the store " + dir.toAbsolutePath() + " is still in use by "
            + holder.get() + " after " + waited / 1000 + " s (--wait); stop that relay first");
        return 1;
      }
      say(json, Level.WARN, "waiting for " + holder.get() + " to release the store " + dir.toAbsolutePath()
          + " (another relay process serves it) [waited: " + waited / 1000 + " s of " + waitMaxMs / 1000 + " s]");
      try {
        Thread.sleep(Math.min(WAIT_REPORT_MS, waitMaxMs - waited));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return 1;
      }
      holder = io.mbxrelay.store.sqlite.StoreLock.heldBy(dir);
    }
    return null;
  }

  /** One line: the Ed25519 library that signs accept receipts and verifies hops, and why when it is the fallback. */
  private static void logEd25519Engine() {
    io.mbxrelay.crypto.Ed25519Engine engine = io.mbxrelay.crypto.Ed25519Engine.inUse();
    java.util.Optional<String> fallback = io.mbxrelay.crypto.Ed25519Engine.fallbackReason();
    if (fallback.isEmpty()) {
      LOG.info("ed25519 engine [engine: {}] [library: {}]", engine.kind().label(), engine.description());
    } else {
      LOG.info("ed25519 engine [engine: {}] [library: {}] [fallback: {}]", engine.kind().label(),
          engine.description(), fallback.get());
    }
  }

  /**
   * Installs the stop and reload handlers (issue 12 item 1): SIGTERM or SIGINT drains the relay and counts the
   * returned latch down, after which {@code serve} returns 0; SIGHUP reloads. A JVM shutdown hook covers the other
   * ways out ({@code System.exit}, or a JVM that did not let us handle the signals).
   *
   * @return counted down once the relay has stopped
   */
  private CountDownLatch handleSignals(RelayServer server, Path file) {
    CountDownLatch stopped = new CountDownLatch(1);
    java.util.concurrent.atomic.AtomicBoolean stopping = new java.util.concurrent.atomic.AtomicBoolean();
    java.util.function.Consumer<String> stop = signal -> {
      if (!stopping.compareAndSet(false, true)) {
        LOG.info("stop already in progress [signal: {}]", signal);
        return;
      }
      LOG.info("stop requested [signal: {}]", signal);
      server.close();
      stopped.countDown();
    };
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      server.close(); // waits for a stop already in progress
      stopped.countDown();
    }, "mbx-shutdown"));
    Signals.Result term = Signals.handle("TERM", () -> stop.accept("SIGTERM"));
    Signals.Result interrupt = Signals.handle("INT", () -> stop.accept("SIGINT"));
    Signals.Result hangup = Signals.handle("HUP", () -> reload(server, file));
    Signals.Result unavailable = Signals.Result.UNAVAILABLE;
    if (term == unavailable || interrupt == unavailable || hangup == unavailable) {
      LOG.warn("signal handlers not installed [TERM: {}] [INT: {}] [HUP: {}]: those signals end the process the JVM's"
          + " way (status 128 + signal) after the same drain", term != unavailable, interrupt != unavailable,
          hangup != unavailable);
    }
    // issue 22 item 4: nohup or a script's background job; the JVM keeps such a signal ignored, so say what to use
    boolean termWorks = term != Signals.Result.IGNORED_AT_LAUNCH;
    for (Map.Entry<String, Signals.Result> e : List.of(Map.entry("TERM", term), Map.entry("INT", interrupt),
        Map.entry("HUP", hangup))) {
      if (e.getValue() == Signals.Result.IGNORED_AT_LAUNCH) {
        say(current.log().json(), Level.WARN, Signals.ignoredAdvice(e.getKey(), termWorks));
      }
    }
    return stopped;
  }

  /**
   * SIGHUP (issue 12 items 1 and 5): reads the configuration again (file and environment) and applies what can change
   * while running: the log level. The deny list needs no reload: it lives in the store and the relay sees a change by
   * {@code mbxrelay deny} within a second; the reload's ops entry runs a writer transaction, which checks for such
   * changes at once. Every other changed setting is named as needing a restart. An invalid file changes nothing.
   */
  private synchronized void reload(RelayServer server, Path file) {
    RelayConfig next;
    try {
      next = ConfigLoader.load(file, env);
    } catch (ConfigException e) {
      LOG.warn("SIGHUP: configuration not reloaded, it is invalid; the running settings stay [violations: {}]",
          String.join("; ", e.violations()));
      return;
    }
    RelayConfig was = current;
    String from = LogSetup.level();
    LogSetup.level(next.log().level());
    String to = LogSetup.level();
    List<String> restart = new ArrayList<>();
    if (!next.http().equals(was.http())) {
      restart.add("http");
    }
    if (!next.store().equals(was.store())) {
      restart.add("store");
    }
    if (!next.limits().equals(was.limits())) {
      restart.add("limits");
    }
    if (!next.timers().equals(was.timers())) {
      restart.add("timers");
    }
    if (!next.enrolment().equals(was.enrolment())) {
      restart.add("enrolment");
    }
    if (!next.admin().equals(was.admin())) {
      restart.add("admin");
    }
    if (next.log().json() != was.log().json()) {
      restart.add("log.json");
    }
    if (!next.trust().equals(was.trust())) {
      restart.add("trust");
    }
    current = new RelayConfig(was.http(), was.store(), was.limits(), was.timers(), was.enrolment(), was.admin(),
        new RelayConfig.Log(was.log().json(), to), was.trust());
    LOG.info("SIGHUP: configuration reloaded [log level: {} -> {}] [deny list: read live from the store, checked now]"
        + " [changed settings that need a restart: {}]", from, to, restart.isEmpty() ? "none" : String.join(", ",
            restart));
    ObjectNode receipt = Json.MAPPER.createObjectNode().put("v", 1).put("type", "relay-reload")
        .put("at", IsoTime.format(System.currentTimeMillis())).put("signal", "SIGHUP");
    receipt.putObject("log_level").put("from", from).put("to", to);
    ArrayNode r = receipt.putArray("restart_needed");
    restart.forEach(r::add);
    server.writes().send(new StoreCommand.LogOp("reload", Json.stringify(receipt)))
        .onFailure(e -> LOG.warn("reload ops entry not written [error: {}]", e.getMessage()));
  }

  /** The relay port: {@code --port} &gt; {@code $PORT} &gt; 7374. */
  private int listenPort() throws ConfigException {
    int p;
    try {
      p = port != null ? port : env.get("PORT") != null ? Integer.parseInt(env.get("PORT").trim()) : 7374;
    } catch (NumberFormatException e) {
      throw new ConfigException(List.of("PORT must be a number (is " + env.get("PORT").trim() + ")"));
    }
    if (p < 0 || p > 65535) {
      throw new ConfigException(List.of("the port must be between 0 and 65535 (is " + p + ")"));
    }
    return p;
  }

  /**
   * Human lines of the start (issue 12 item 7): the banner (INFO), start notes such as a tightened store dir or a
   * rotated epoch (WARN) and why the relay did not start (ERROR). On stderr as {@code [mbxrelay] …} lines; in JSON log
   * mode as log events of that level, so stderr stays one JSON object per line.
   */
  private static void say(boolean json, Level level, String line) {
    if (json) {
      LOG.atLevel(level).log(line);
    } else {
      System.err.println("[mbxrelay] " + line);
      System.err.flush();
    }
  }

  /**
   * {@code serve --print-config} (issue 12 item 5): the process options, then every configuration section as
   * validated. Secrets are never printed: {@code admin.token} and {@code MBX_RELAY_KEY} show only whether they are
   * set.
   */
  static ObjectNode effectiveConfig(RelayConfig cfg, Path file, int port, String bind, Path dir, ClientAddress mode,
      Map<String, String> env) {
    ObjectNode out = Json.MAPPER.createObjectNode();
    ObjectNode serve = out.putObject("serve");
    boolean pg = !StoreBackendFactory.of(cfg.store()).storeInDirectory();
    // a database's store (PostgreSQL) uses no store dir or relay.key (issue 22 item 8): no file path that would mislead
    serve.put("port", port).put("bind", bind)
        .put("store_dir", pg ? "(not used: store.backend is " + cfg.store().backend() + ")" : dir.toAbsolutePath().toString())
        .put("config_file", file == null ? null : file.toAbsolutePath().toString())
        .put("trust_proxy", mode.name().toLowerCase(java.util.Locale.ROOT));
    String key = env.get(RelayKeys.ENV);
    boolean keySet = key != null && !key.isBlank();
    serve.put("relay_key", pg ? (keySet ? "from " + RelayKeys.ENV + " (set, not shown; must match the database's)"
        : "in the PostgreSQL database") : keySet ? "from " + RelayKeys.ENV + " (set, not shown)"
        : dir.resolve(RelayKeys.FILE_NAME).toAbsolutePath().toString());
    ObjectNode tree = Json.MAPPER.valueToTree(cfg);
    ObjectNode store = (ObjectNode) tree.get("store");
    String password = cfg.store().password();
    store.put("password", password == null || password.isEmpty() ? "" : "(set, not shown)");
    store.put("url", cfg.store().url().replaceAll("\\?.*$", "?(parameters not shown)"));
    ObjectNode admin = (ObjectNode) tree.get("admin");
    String token = cfg.admin().token();
    admin.put("token", token == null || token.isEmpty() ? "" : "(set, not shown)");
    tree.fields().forEachRemaining(e -> out.set(e.getKey(), e.getValue()));
    return out;
  }

  private ObjectNode effectiveConfig(RelayConfig cfg, Path file, int port, String bind, Path dir, ClientAddress mode) {
    return effectiveConfig(cfg, file, port, bind, dir, mode, env);
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
    if (c instanceof java.io.IOException io) {
      return StoreFiles.reason(io);
    }
    return c.getMessage() == null ? c.getClass().getSimpleName() : c.getMessage();
  }
}
