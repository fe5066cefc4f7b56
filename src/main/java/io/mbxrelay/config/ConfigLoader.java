package io.mbxrelay.config;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * Builds a {@link RelayConfig}: the defaults shipped in the jar ({@code conf/relay.json}), then an operator file
 * (optional), then environment variables, then validation of the whole.
 *
 * <p>Environment variable names are {@code MBX_RELAY_<SECTION>_<KEY>} with the key in upper snake case, e.g.
 * {@code MBX_RELAY_HTTP_INSTANCES=4} or {@code MBX_RELAY_LIMITS_MAX_BATCH=100}. Unknown keys in the operator file,
 * values of the wrong type and values out of range are all collected and reported together as a
 * {@link ConfigException}.
 */
public final class ConfigLoader {
  /** Classpath location of the default configuration (a copy of {@code conf/relay.json}). */
  public static final String DEFAULTS_RESOURCE = "/conf/relay.json";

  private static final ObjectMapper MAPPER = new ObjectMapper();

  private ConfigLoader() {}

  /**
   * Loads and validates the configuration.
   *
   * @param operatorFile optional JSON file whose members override the defaults (same shape as conf/relay.json)
   * @param env environment variables (normally {@link System#getenv()})
   * @return the validated configuration
   * @throws ConfigException listing every violation
   */
  public static RelayConfig load(Path operatorFile, Map<String, String> env) throws ConfigException {
    ObjectNode tree = defaults();
    List<String> violations = new ArrayList<>();
    if (operatorFile != null) {
      try {
        JsonNode file = MAPPER.readTree(Files.readAllBytes(operatorFile));
        if (file == null || !file.isObject()) {
          violations.add("config file " + operatorFile + " is not a JSON object");
        } else {
          merge(tree, (ObjectNode) file, "", violations);
        }
      } catch (IOException e) {
        violations.add("config file " + operatorFile + (e instanceof java.nio.file.NoSuchFileException
            ? " does not exist" : e instanceof com.fasterxml.jackson.core.JsonProcessingException
            ? " is not valid JSON (" + ((com.fasterxml.jackson.core.JsonProcessingException) e).getOriginalMessage() + ")"
            : " cannot be read"));
      }
    }
    applyEnv(tree, env, violations);
    // Values of the wrong type were never merged (the defaults stand in), so the tree always maps and every range
    // violation is reported together with the type violations.
    RelayConfig config = null;
    {
      try {
        config = MAPPER.treeToValue(tree, RelayConfig.class);
      } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
        violations.add("config does not map: " + e.getOriginalMessage());
      }
    }
    if (config != null) {
      violations.addAll(validate(config));
    }
    if (!violations.isEmpty()) {
      throw new ConfigException(violations);
    }
    return config;
  }

  /** The defaults as a fresh tree. */
  static ObjectNode defaults() {
    try (InputStream in = ConfigLoader.class.getResourceAsStream(DEFAULTS_RESOURCE)) {
      if (in == null) {
        throw new IllegalStateException("default configuration missing from the classpath: " + DEFAULTS_RESOURCE);
      }
      return (ObjectNode) MAPPER.readTree(in);
    } catch (IOException e) {
      throw new IllegalStateException("default configuration unreadable", e);
    }
  }

  private static void merge(ObjectNode base, ObjectNode over, String prefix, List<String> violations) {
    Iterator<Map.Entry<String, JsonNode>> it = over.fields();
    while (it.hasNext()) {
      Map.Entry<String, JsonNode> e = it.next();
      String name = prefix + e.getKey();
      JsonNode current = base.get(e.getKey());
      if (current == null) {
        violations.add("unknown setting " + name);
      } else if (current.isObject()) {
        if (e.getValue().isObject()) {
          merge((ObjectNode) current, (ObjectNode) e.getValue(), name + ".", violations);
        } else {
          violations.add(name + " must be an object");
        }
      } else if (sameType(current, e.getValue())) {
        base.set(e.getKey(), e.getValue());
      } else {
        violations.add(name + " must be " + typeName(current));
      }
    }
  }

  private static boolean sameType(JsonNode a, JsonNode b) {
    if (a.isNumber()) {
      return b.isIntegralNumber();
    }
    return a.getNodeType() == b.getNodeType();
  }

  private static String typeName(JsonNode n) {
    if (n.isNumber()) {
      return "an integer";
    }
    if (n.isBoolean()) {
      return "true or false";
    }
    return "a string";
  }

  private static final java.util.regex.Pattern IP_LITERAL =
      java.util.regex.Pattern.compile("^(\\d{1,3}(\\.\\d{1,3}){3}|[0-9A-Fa-f:]*:[0-9A-Fa-f:.]*)$");

  /**
   * Whether {@code address} can be a listen address: an IPv4 or IPv6 literal, or {@code localhost} (issue 22 item 5:
   * anything else was resolved by DNS at bind time and failed as {@code Query failed with NXDOMAIN}).
   *
   * @param address the address as given
   * @return true when it is one
   */
  public static boolean isListenAddress(String address) {
    return address != null && (IP_LITERAL.matcher(address).matches() || address.equals("localhost"));
  }

  /** MBX_RELAY_* variables that are not configuration knobs (docs/protocol.md §5 and the CLI), so never "unknown". */
  private static final Set<String> OTHER_VARIABLES = Set.of("MBX_RELAY_KEY", "MBX_RELAY_DIR", "MBX_RELAY_CONFIG",
      "MBX_RELAY_TRUST_PROXY", "MBX_RELAY_RESTORE_FROM", "MBX_RELAY_TEST_CRASH");

  private static void applyEnv(ObjectNode tree, Map<String, String> env, List<String> violations) {
    // A misspelt override (MBX_RELAY_HTTP_INSTANCE) would otherwise be ignored silently, like an unknown key in a file
    // is not: report variables that name a config section but no knob of it.
    Set<String> known = new java.util.HashSet<>();
    tree.fields().forEachRemaining(sec -> sec.getValue().fieldNames()
        .forEachRemaining(k -> known.add(envName(sec.getKey(), k))));
    Set<String> prefixes = new java.util.HashSet<>();
    tree.fieldNames().forEachRemaining(sec -> prefixes.add("MBX_RELAY_" + sec.toUpperCase(Locale.ROOT) + "_"));
    env.keySet().stream().sorted().filter(k -> prefixes.stream().anyMatch(k::startsWith))
        .filter(k -> !known.contains(k) && !OTHER_VARIABLES.contains(k))
        .forEach(k -> violations.add("unknown setting " + k));
    Iterator<Map.Entry<String, JsonNode>> sections = tree.fields();
    while (sections.hasNext()) {
      Map.Entry<String, JsonNode> section = sections.next();
      ObjectNode obj = (ObjectNode) section.getValue();
      for (String key : iterable(obj.fieldNames())) {
        String var = envName(section.getKey(), key);
        String raw = env.get(var);
        if (raw == null) {
          continue;
        }
        JsonNode current = obj.get(key);
        String value = raw.trim();
        if (current.isNumber()) {
          try {
            obj.set(key, JsonNodeFactory.instance.numberNode(Long.parseLong(value)));
          } catch (NumberFormatException e) {
            violations.add(var + " must be an integer");
          }
        } else if (current.isBoolean()) {
          if (value.equalsIgnoreCase("true") || value.equals("1")) {
            obj.put(key, true);
          } else if (value.equalsIgnoreCase("false") || value.equals("0")) {
            obj.put(key, false);
          } else {
            violations.add(var + " must be true or false");
          }
        } else {
          obj.put(key, value);
        }
      }
    }
  }

  private static <T> Iterable<T> iterable(Iterator<T> it) {
    List<T> list = new ArrayList<>();
    it.forEachRemaining(list::add);
    return list;
  }

  /**
   * The environment variable that overrides {@code section.key}.
   *
   * @param section top-level member, e.g. {@code limits}
   * @param key camelCase member, e.g. {@code maxBatch}
   * @return e.g. {@code MBX_RELAY_LIMITS_MAX_BATCH}
   */
  public static String envName(String section, String key) {
    return "MBX_RELAY_" + section.toUpperCase(Locale.ROOT) + "_"
        + key.replaceAll("([a-z0-9])([A-Z])", "$1_$2").toUpperCase(Locale.ROOT);
  }

  private static final Set<String> AUTHORITIES = Set.of("host-key-challenge", "account-token");

  /** The root levels {@code log.level} accepts (Logback's names; any case). */
  public static final List<String> LOG_LEVELS = List.of("TRACE", "DEBUG", "INFO", "WARN", "ERROR", "OFF");

  /** Range checks over the whole configuration; every violation is returned. */
  static List<String> validate(RelayConfig c) {
    List<String> v = new ArrayList<>();
    range(v, "http.instances", c.http().instances(), 1, 64);
    range(v, "http.maxBodyBytes", c.http().maxBodyBytes(), 1024, 64L << 20);
    range(v, "http.maxSmallBodyBytes", c.http().maxSmallBodyBytes(), 512, 1L << 20);
    range(v, "http.requestTimeoutMs", c.http().requestTimeoutMs(), 1000, 600_000);
    range(v, "http.idleTimeoutMs", c.http().idleTimeoutMs(), 1000, 600_000);
    range(v, "http.maxPageBytesInFlight", c.http().maxPageBytesInFlight(), 0, 1L << 40);
    if (c.http().maxInFlightBodyBytes() != 0 && c.http().maxInFlightBodyBytes() < c.http().maxBodyBytes()) {
      v.add("http.maxInFlightBodyBytes must be 0 (an eighth of the heap) or at least http.maxBodyBytes ("
          + c.http().maxBodyBytes() + "), or the largest allowed body could never be read (is "
          + c.http().maxInFlightBodyBytes() + ")");
    }
    range(v, "http.maxInFlightBodyBytes", c.http().maxInFlightBodyBytes(), 0, 1L << 40);
    if (c.http().maxInFlightBodyBytesPerClient() != 0
        && c.http().maxInFlightBodyBytesPerClient() < c.http().maxBodyBytes()) {
      v.add("http.maxInFlightBodyBytesPerClient must be 0 (a quarter of the body budget) or at least"
          + " http.maxBodyBytes (" + c.http().maxBodyBytes() + "), or the largest allowed body could never be read (is "
          + c.http().maxInFlightBodyBytesPerClient() + ")");
    }
    range(v, "http.maxInFlightBodyBytesPerClient", c.http().maxInFlightBodyBytesPerClient(), 0, 1L << 40);
    range(v, "http.maxPageBytesInFlightPerClient", c.http().maxPageBytesInFlightPerClient(), 0, 1L << 40);
    range(v, "http.maxConcurrentStreams", c.http().maxConcurrentStreams(), 1, 1000);
    range(v, "http.shutdownGraceMs", c.http().shutdownGraceMs(), 0, 600_000);
    range(v, "http.pageStallMs", c.http().pageStallMs(), 500, 600_000);
    range(v, "http.maxConnections", c.http().maxConnections(), 0, 10_000_000);
    range(v, "http.reservedFiles", c.http().reservedFiles(), 32, 1_000_000);
    if (!LOG_LEVELS.contains(c.log().level() == null ? "" : c.log().level().toUpperCase(Locale.ROOT))) {
      v.add("log.level (MBX_RELAY_LOG_LEVEL) must be one of " + String.join(", ", LOG_LEVELS) + " (is "
          + c.log().level() + ")");
    }
    range(v, "store.readPoolSize", c.store().readPoolSize(), 1, 64);
    range(v, "store.writerBatchMax", c.store().writerBatchMax(), 1, 10_000);
    range(v, "store.writerTimeoutMs", c.store().writerTimeoutMs(), 1000, 600_000);
    range(v, "store.busyTimeoutMs", c.store().busyTimeoutMs(), 0, 600_000);
    range(v, "store.writerBatchMaxRows", c.store().writerBatchMaxRows(), 1, 1_000_000);
    range(v, "store.writerBatchMaxBytes", c.store().writerBatchMaxBytes(), 1024, 1L << 30);
    range(v, "store.writerCommitDelayMs", c.store().writerCommitDelayMs(), 0, 100);
    range(v, "store.watermarkIntervalMs", c.store().watermarkIntervalMs(), 0, 10_000);
    range(v, "store.minFreeBytes", c.store().minFreeBytes(), 0, 1L << 40);
    range(v, "store.walAutocheckpointPages", c.store().walAutocheckpointPages(), 100, 1_000_000);
    range(v, "store.checkpointIntervalMs", c.store().checkpointIntervalMs(), 0, 60_000);
    validateBackend(c.store(), v);
    RelayConfig.Limits l = c.limits();
    range(v, "limits.maxItemBytes", l.maxItemBytes(), 1024, 64L << 20);
    range(v, "limits.maxBatch", l.maxBatch(), 1, 10_000);
    range(v, "limits.maxPull", l.maxPull(), 1, 10_000);
    range(v, "limits.maxPullBytes", l.maxPullBytes(), 1024, 256L << 20);
    range(v, "limits.maxTargets", l.maxTargets(), 1, 1024);
    range(v, "limits.retentionDays", l.retentionDays(), 1, 3650);
    range(v, "limits.maxQueueItems", l.maxQueueItems(), 1, 100_000_000);
    range(v, "limits.maxQueueBytes", l.maxQueueBytes(), 1024, 1L << 40);
    range(v, "limits.maxSenderItems", l.maxSenderItems(), 1, 100_000_000);
    range(v, "limits.maxSenderBytes", l.maxSenderBytes(), 1024, 1L << 40);
    range(v, "limits.maxOwnerItems", l.maxOwnerItems(), 1, 100_000_000);
    range(v, "limits.maxOwnerBytes", l.maxOwnerBytes(), 1024, 1L << 40);
    range(v, "limits.maxSenderTotalItems", l.maxSenderTotalItems(), 1, 100_000_000);
    range(v, "limits.maxSenderTotalBytes", l.maxSenderTotalBytes(), 1024, 1L << 40);
    range(v, "limits.maxStoreItems", l.maxStoreItems(), 1, 10_000_000_000L);
    range(v, "limits.maxStoreBytes", l.maxStoreBytes(), 1L << 20, 1L << 50);
    range(v, "limits.maxEnrolments", l.maxEnrolments(), 1, 100_000_000);
    range(v, "limits.maxOpenChallenges", l.maxOpenChallenges(), 1, 10_000_000);
    range(v, "limits.challengeTtlMs", l.challengeTtlMs(), 1000, 3_600_000);
    range(v, "limits.enrolCallsPerMinute", l.enrolCallsPerMinute(), 1, 1_000_000);
    range(v, "limits.pushRequestsPerMinute", l.pushRequestsPerMinute(), 1, 1_000_000);
    range(v, "limits.rateTableMaxKeys", l.rateTableMaxKeys(), 1, 10_000_000);
    range(v, "limits.maxPerName", l.maxPerName(), 1, 1000);
    range(v, "limits.maxSenders", l.maxSenders(), 1, 100_000);
    range(v, "limits.hopWindowMs", l.hopWindowMs(), 1000, 3_600_000);
    validateDeadlines(c, v);
    if (l.maxItemBytes() > c.http().maxBodyBytes()) {
      v.add("limits.maxItemBytes must not exceed http.maxBodyBytes");
    }
    if (l.maxSenderItems() > l.maxQueueItems()) {
      v.add("limits.maxSenderItems must not exceed limits.maxQueueItems");
    }
    if (l.maxSenderBytes() > l.maxQueueBytes()) {
      v.add("limits.maxSenderBytes must not exceed limits.maxQueueBytes");
    }
    RelayConfig.Timers t = c.timers();
    range(v, "timers.heartbeatMs", t.heartbeatMs(), 1000, 3_600_000);
    range(v, "timers.heartbeatStaleMs", t.heartbeatStaleMs(), 10_000, 86_400_000L * 30);
    range(v, "timers.sweepIntervalMs", t.sweepIntervalMs(), 1000, 86_400_000L);
    range(v, "timers.sweepBatchRows", t.sweepBatchRows(), 1, 100_000);
    range(v, "timers.sweepMaxBatches", t.sweepMaxBatches(), 1, 10_000);
    range(v, "timers.maxClockStepMs", t.maxClockStepMs(), 60_000, 86_400_000L * 30);
    if (t.heartbeatStaleMs() <= t.heartbeatMs() * 2) {
      v.add("timers.heartbeatStaleMs must be more than twice timers.heartbeatMs");
    }
    RelayConfig.Admin a = c.admin();
    range(v, "admin.port", a.port(), 0, 65_535);
    if (a.bind() == null || !IP_LITERAL.matcher(a.bind()).matches() && !a.bind().equals("localhost")) {
      v.add("admin.bind must be an IP address (e.g. 127.0.0.1, 0.0.0.0, ::1) or localhost");
    }
    range(v, "admin.readyTimeoutMs", a.readyTimeoutMs(), 50, 600_000);
    range(v, "admin.probeIntervalMs", a.probeIntervalMs(), 50, 3_600_000);
    range(v, "admin.queueScanIntervalMs", a.queueScanIntervalMs(), 100, 3_600_000);
    if (c.enrolment().authority() == null || !AUTHORITIES.contains(c.enrolment().authority())) {
      v.add("enrolment.authority must be one of " + AUTHORITIES);
    }
    validateTrust(c, v);
    return v;
  }

  /**
   * The checks that need the relay port, which is a process option ({@code --port}, {@code $PORT}) and not part of
   * the file: the admin server never shares the relay's port (issue 12 item 6), so the conflict is refused with the
   * other configuration errors instead of failing later as a port in use.
   *
   * @param c the validated configuration
   * @param relayPort the relay port (0 = any free port)
   * @return the violations, empty when none
   */
  public static List<String> portViolations(RelayConfig c, int relayPort) {
    if (relayPort != 0 && c.admin().port() == relayPort) {
      return List.of("admin.port (MBX_RELAY_ADMIN_PORT) must differ from the relay port (--port or $PORT); both are "
          + relayPort + ": the admin server has its own port so the relay port carries only the wire protocol");
    }
    return List.of();
  }

  /**
   * Least time between the writer's deadline and every HTTP timeout, ms: room for the hop check before the write and
   * the answer after it, so a request that waited the whole writer deadline still gets its 503 before an HTTP timer
   * closes the connection (issue 10 item 11).
   */
  public static final long ANSWER_MARGIN_MS = 2000;

  /**
   * Every request gets an answer: the writer's deadline ({@code store.writerTimeoutMs}, after which the caller answers
   * 503 "outcome unknown") ends at least {@link #ANSWER_MARGIN_MS} before the connection's idle timer and the request
   * timer could close the connection without an answer.
   */
  private static void validateDeadlines(RelayConfig c, List<String> v) {
    long writer = c.store().writerTimeoutMs();
    if (writer + ANSWER_MARGIN_MS > c.http().idleTimeoutMs()) {
      v.add("store.writerTimeoutMs (" + writer + ") must be at least " + ANSWER_MARGIN_MS
          + " ms shorter than http.idleTimeoutMs (" + c.http().idleTimeoutMs()
          + "), or a request waiting for the writer loses its connection before its answer");
    }
    if (writer + ANSWER_MARGIN_MS > c.http().requestTimeoutMs()) {
      v.add("store.writerTimeoutMs (" + writer + ") must be at least " + ANSWER_MARGIN_MS
          + " ms shorter than http.requestTimeoutMs (" + c.http().requestTimeoutMs() + ")");
    }
  }

  /** Account-token, replay-cache and admin settings (issue 3). */
  private static void validateTrust(RelayConfig c, List<String> v) {
    RelayConfig.Enrolment e = c.enrolment();
    range(v, "enrolment.jwksRefreshMs", e.jwksRefreshMs(), 10_000, 86_400_000L);
    range(v, "enrolment.jwksUnknownKidMinIntervalMs", e.jwksUnknownKidMinIntervalMs(), 1_000, 3_600_000);
    range(v, "enrolment.jwksCacheLifetimeMs", e.jwksCacheLifetimeMs(), 60_000, 86_400_000L);
    range(v, "enrolment.tokenMaxLifetimeMs", e.tokenMaxLifetimeMs(), 60_000, 86_400_000L);
    if ("account-token".equals(e.authority())) {
      for (String[] f : new String[][] {{"enrolment.relayUrl", e.relayUrl()}, {"enrolment.tokenIssuer", e.tokenIssuer()},
          {"enrolment.jwksUrl", e.jwksUrl()}}) {
        if (f[1] == null || f[1].isBlank()) {
          v.add(f[0] + " is required with enrolment.authority account-token");
        }
      }
      if (e.relayUrl() != null && !e.relayUrl().isBlank() && !e.relayUrl().matches("https?://[^\\s/]+.*")) {
        v.add("enrolment.relayUrl must be this relay's http(s) URL (the token audience)");
      }
      if (e.jwksUrl() != null && !e.jwksUrl().isBlank()) {
        // Parsed as a URL, and the loopback rule checked on the parsed host (issue 11 item 7): a prefix test let
        // http://127.0.0.1@127.0.0.2/ and http://localhost.attacker.invalid/ through.
        try {
          io.mbxrelay.auth.JwksEndpoint.parse(e.jwksUrl());
        } catch (io.mbxrelay.auth.JwksEndpoint.BadUrl bad) {
          v.add("enrolment.jwksUrl " + bad.getMessage());
        }
      }
    }
    range(v, "enrolment.jwksFetchTimeoutMs", e.jwksFetchTimeoutMs(), 100, 120_000);
    if (e.jwksFetchTimeoutMs() >= e.jwksRefreshMs()) {
      v.add("enrolment.jwksFetchTimeoutMs must be less than enrolment.jwksRefreshMs");
    }
    range(v, "trust.replayCacheMaxEntries", c.trust().replayCacheMaxEntries(), 1, 100_000_000);
    range(v, "trust.replayCacheMaxPerKey", c.trust().replayCacheMaxPerKey(), 1, 100_000_000);
    range(v, "trust.ipv6PrefixBits", c.trust().ipv6PrefixBits(), 16, 128);
    range(v, "trust.verifierCacheMaxKeys", c.trust().verifierCacheMaxKeys(), 0, 10_000_000);
    String token = c.admin().token();
    if (token != null && !token.isEmpty() && token.length() < 32) {
      v.add("admin.token (MBX_RELAY_ADMIN_TOKEN) must be at least 32 characters when set");
    }
  }

  private static final java.util.regex.Pattern POSTGRESQL_URL =
      java.util.regex.Pattern.compile("^jdbc:postgresql://[^/?\\s]+/[^/?\\s]+(\\?\\S*)?$");

  /** {@code store.backend} and the PostgreSQL connection settings (issue 13; docs/scale-out.md). */
  private static void validateBackend(RelayConfig.Store s, List<String> v) {
    String backend = s.backend();
    if (!RelayConfig.Store.SQLITE.equals(backend) && !RelayConfig.Store.POSTGRESQL.equals(backend)) {
      v.add("store.backend (MBX_RELAY_STORE_BACKEND) must be \"sqlite\" or \"postgresql\" (is \"" + backend + "\")");
      return;
    }
    range(v, "store.poolSize", s.poolSize(), 2, 256);
    boolean hasPassword = s.password() != null && !s.password().isEmpty();
    boolean hasPasswordFile = s.passwordFile() != null && !s.passwordFile().isEmpty();
    if (!s.postgresql()) {
      for (String[] f : new String[][] {{"store.url", s.url()}, {"store.user", s.user()}}) {
        if (f[1] != null && !f[1].isEmpty()) {
          v.add(f[0] + " is set but store.backend is \"sqlite\" (set store.backend to \"postgresql\" to use it)");
        }
      }
      if (hasPassword || hasPasswordFile) {
        v.add("a store password is set but store.backend is \"sqlite\" (set store.backend to \"postgresql\")");
      }
      return;
    }
    if (s.url() == null || s.url().isEmpty()) {
      v.add("store.url (MBX_RELAY_STORE_URL) is required with store.backend postgresql,"
          + " e.g. jdbc:postgresql://db.example:5432/mbxrelay");
    } else if (!POSTGRESQL_URL.matcher(s.url()).matches()) {
      v.add("store.url must be jdbc:postgresql://HOST[:PORT]/DATABASE[?PARAMS] (is \"" + s.url().replaceAll("\\?.*$", "?…")
          + "\")");
    }
    if (s.poolSize() < s.readPoolSize() + 2) {
      v.add("store.poolSize (" + s.poolSize() + ") must be at least store.readPoolSize + 2 (" + (s.readPoolSize() + 2)
          + "): the readers, the writer and the readiness probe each hold a connection");
    }
    if (hasPassword && hasPasswordFile) {
      v.add("store.password and store.passwordFile are both set; set one");
    } else if (hasPasswordFile && !Files.isReadable(Path.of(s.passwordFile()))) {
      v.add("store.passwordFile " + s.passwordFile() + " cannot be read");
    }
  }

  private static void range(List<String> v, String name, long value, long min, long max) {
    if (value < min || value > max) {
      v.add(name + " must be between " + min + " and " + max + " (is " + value + ")");
    }
  }
}
