package io.mbxrelay.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ConfigLoaderTest {

  @Test
  void the_defaults_are_the_wire_md_constants() throws Exception {
    RelayConfig c = ConfigLoader.load(null, Map.of());
    assertThat(c.limits().maxItemBytes()).isEqualTo(524_288);
    assertThat(c.limits().maxBatch()).isEqualTo(200);
    assertThat(c.limits().maxPull()).isEqualTo(500);
    assertThat(c.limits().maxPullBytes()).isEqualTo(8_388_608);
    assertThat(c.limits().maxTargets()).isEqualTo(64);
    assertThat(c.limits().retentionDays()).isEqualTo(14);
    assertThat(c.limits().maxQueueBytes()).isEqualTo(52_428_800L);
    assertThat(c.limits().maxSenderBytes()).isEqualTo(20_971_520L);
    assertThat(c.http().maxBodyBytes()).isEqualTo(8_388_608);
    assertThat(c.http().maxSmallBodyBytes()).isEqualTo(8192);
    assertThat(c.timers().heartbeatMs()).isEqualTo(30_000);
    assertThat(c.enrolment().authority()).isEqualTo("host-key-challenge");
  }

  @Test
  void an_operator_file_then_environment_variables_override_the_defaults(@TempDir Path dir) throws Exception {
    Path f = dir.resolve("relay.json");
    Files.writeString(f, "{\"http\":{\"instances\":3},\"limits\":{\"maxBatch\":50}}");
    RelayConfig c = ConfigLoader.load(f, Map.of("MBX_RELAY_LIMITS_MAX_BATCH", "20", "MBX_RELAY_STORE_READ_POOL_SIZE", "7"));
    assertThat(c.http().instances()).isEqualTo(3);
    assertThat(c.limits().maxBatch()).isEqualTo(20);
    assertThat(c.store().readPoolSize()).isEqualTo(7);
    assertThat(ConfigLoader.envName("limits", "maxPullBytes")).isEqualTo("MBX_RELAY_LIMITS_MAX_PULL_BYTES");
  }

  @Test
  void every_violation_is_listed_at_once(@TempDir Path dir) throws Exception {
    Path f = dir.resolve("relay.json");
    Files.writeString(f, "{\"http\":{\"instances\":0,\"nope\":1},\"limits\":{\"maxBatch\":\"many\"}}");
    assertThatThrownBy(() -> ConfigLoader.load(f, Map.of("MBX_RELAY_STORE_READ_POOL_SIZE", "lots")))
        .isInstanceOfSatisfying(ConfigException.class, e -> assertThat(e.violations()).containsExactlyInAnyOrder(
            "unknown setting http.nope", "limits.maxBatch must be an integer",
            "MBX_RELAY_STORE_READ_POOL_SIZE must be an integer", "http.instances must be between 1 and 64 (is 0)"));
    assertThatThrownBy(() -> ConfigLoader.load(null, Map.of("MBX_RELAY_HTTP_INSTANCES", "0",
        "MBX_RELAY_LIMITS_RETENTION_DAYS", "0", "MBX_RELAY_ENROLMENT_AUTHORITY", "magic")))
        .isInstanceOfSatisfying(ConfigException.class, e -> assertThat(e.violations()).hasSize(3)
            .anyMatch(v -> v.startsWith("http.instances must be between 1 and 64"))
            .anyMatch(v -> v.startsWith("limits.retentionDays must be between"))
            .anyMatch(v -> v.startsWith("enrolment.authority must be one of")));
  }

  @Test
  void the_body_budget_defaults_to_an_eighth_of_the_heap_and_h2c_is_off_and_both_are_validated() throws Exception {
    RelayConfig c = ConfigLoader.load(null, Map.of());
    assertThat(c.http().maxInFlightBodyBytes()).isZero();
    assertThat(c.http().bodyBudgetBytes())
        .isEqualTo(Math.max(c.http().maxBodyBytes(), Runtime.getRuntime().maxMemory() / 8));
    assertThat(c.http().h2c()).isFalse();
    assertThat(c.http().maxConcurrentStreams()).isEqualTo(100);
    assertThat(ConfigLoader.load(null, Map.of("MBX_RELAY_HTTP_MAX_IN_FLIGHT_BODY_BYTES", "16777216")).http()
        .bodyBudgetBytes()).isEqualTo(16_777_216);
    assertThatThrownBy(() -> ConfigLoader.load(null, Map.of("MBX_RELAY_HTTP_MAX_IN_FLIGHT_BODY_BYTES", "1000",
        "MBX_RELAY_HTTP_MAX_CONCURRENT_STREAMS", "0", "MBX_RELAY_HTTP_H2C", "maybe")))
        .isInstanceOfSatisfying(ConfigException.class, e -> assertThat(e.violations()).containsExactlyInAnyOrder(
            "http.maxInFlightBodyBytes must be 0 (an eighth of the heap) or at least http.maxBodyBytes (8388608),"
                + " or the largest allowed body could never be read (is 1000)",
            "http.maxConcurrentStreams must be between 1 and 1000 (is 0)",
            "MBX_RELAY_HTTP_H2C must be true or false"));
  }

  @Test
  void the_connection_cap_defaults_to_the_file_limit_less_the_reserve_and_is_validated() throws Exception {
    RelayConfig c = ConfigLoader.load(null, Map.of());
    assertThat(c.http().maxConnections()).isZero();
    assertThat(c.http().reservedFiles()).isEqualTo(512);
    assertThat(c.http().connectionLimit(20_000)).isEqualTo(19_488);
    assertThat(c.http().connectionLimit(-1)).isEqualTo(RelayConfig.Http.FALLBACK_MAX_CONNECTIONS);
    RelayConfig set = ConfigLoader.load(null, Map.of("MBX_RELAY_HTTP_MAX_CONNECTIONS", "5000",
        "MBX_RELAY_HTTP_RESERVED_FILES", "1000"));
    assertThat(set.http().connectionLimit(20_000)).isEqualTo(5000);
    assertThat(ConfigLoader.load(null, Map.of("MBX_RELAY_HTTP_RESERVED_FILES", "1000")).http().connectionLimit(20_000))
        .isEqualTo(19_000);
    assertThatThrownBy(() -> ConfigLoader.load(null, Map.of("MBX_RELAY_HTTP_MAX_CONNECTIONS", "-1",
        "MBX_RELAY_HTTP_RESERVED_FILES", "8")))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("http.maxConnections must be between 0 and 10000000 (is -1)")
        .hasMessageContaining("http.reservedFiles must be between 32 and 1000000 (is 8)");
  }

  @Test
  void a_misspelt_variable_a_bad_admin_bind_and_a_sender_share_above_the_queue_are_reported() {
    assertThatThrownBy(() -> ConfigLoader.load(null, Map.of("MBX_RELAY_HTTP_INSTANCE", "3",
        "MBX_RELAY_ADMIN_BIND", "not-an-ip", "MBX_RELAY_LIMITS_MAX_SENDER_BYTES", "99999999",
        "MBX_RELAY_TRUST_PROXY", "xff", "MBX_RELAY_LOG_LEVEL", "DEBUG")))
        .isInstanceOfSatisfying(ConfigException.class, e -> assertThat(e.violations()).containsExactlyInAnyOrder(
            "unknown setting MBX_RELAY_HTTP_INSTANCE",
            "admin.bind must be an IP address (e.g. 127.0.0.1, 0.0.0.0, ::1) or localhost",
            "limits.maxSenderBytes must not exceed limits.maxQueueBytes"));
  }

  private static Map<String, String> accountToken(String jwksUrl) {
    return Map.of("MBX_RELAY_ENROLMENT_AUTHORITY", "account-token",
        "MBX_RELAY_ENROLMENT_RELAY_URL", "https://relay.example",
        "MBX_RELAY_ENROLMENT_TOKEN_ISSUER", "https://accounts.example",
        "MBX_RELAY_ENROLMENT_JWKS_URL", jwksUrl);
  }

  @Test
  void a_jwks_url_with_user_info_or_a_look_alike_loopback_host_is_refused() throws Exception {
    // issue 11 item 7: the loopback rule is checked on the parsed host, not as a text prefix
    for (String bad : new String[] {"http://127.0.0.1@127.0.0.2/jwks", "http://localhost.attacker.invalid/jwks",
        "https://user@issuer.example/jwks", "http://192.0.2.1/jwks"}) {
      assertThatThrownBy(() -> ConfigLoader.load(null, accountToken(bad))).as(bad)
          .isInstanceOfSatisfying(ConfigException.class, e -> assertThat(e.violations()).hasSize(1)
              .allMatch(v -> v.startsWith("enrolment.jwksUrl ")));
    }
    for (String good : new String[] {"https://issuer.example/jwks", "http://127.0.0.1:8080/jwks",
        "http://localhost/jwks", "http://[::1]/jwks"}) {
      assertThat(ConfigLoader.load(null, accountToken(good)).enrolment().jwksUrl()).isEqualTo(good);
    }
  }

  @Test
  void the_jwks_fetch_deadline_and_the_ipv6_prefix_are_validated() throws Exception {
    RelayConfig c = ConfigLoader.load(null, Map.of());
    assertThat(c.enrolment().jwksFetchTimeoutMs()).isEqualTo(5000);
    assertThat(c.trust().ipv6PrefixBits()).isEqualTo(64);
    assertThat(ConfigLoader.load(null, Map.of("MBX_RELAY_TRUST_IPV6_PREFIX_BITS", "48")).trust().ipv6PrefixBits())
        .isEqualTo(48);
    assertThatThrownBy(() -> ConfigLoader.load(null, Map.of("MBX_RELAY_TRUST_IPV6_PREFIX_BITS", "8",
        "MBX_RELAY_ENROLMENT_JWKS_FETCH_TIMEOUT_MS", "0")))
        .isInstanceOfSatisfying(ConfigException.class, e -> assertThat(e.violations()).containsExactlyInAnyOrder(
            "trust.ipv6PrefixBits must be between 16 and 128 (is 8)",
            "enrolment.jwksFetchTimeoutMs must be between 100 and 120000 (is 0)"));
    assertThatThrownBy(() -> ConfigLoader.load(null, Map.of("MBX_RELAY_ENROLMENT_JWKS_FETCH_TIMEOUT_MS", "20000",
        "MBX_RELAY_ENROLMENT_JWKS_REFRESH_MS", "15000")))
        .isInstanceOfSatisfying(ConfigException.class, e -> assertThat(e.violations())
            .containsExactly("enrolment.jwksFetchTimeoutMs must be less than enrolment.jwksRefreshMs"));
  }

  @Test
  void the_default_writer_deadline_ends_before_every_http_timeout_and_an_inverted_setting_is_refused() throws Exception {
    RelayConfig c = ConfigLoader.load(null, Map.of());
    assertThat(c.store().writerTimeoutMs() + ConfigLoader.ANSWER_MARGIN_MS)
        .isLessThanOrEqualTo(c.http().idleTimeoutMs())
        .isLessThanOrEqualTo(c.http().requestTimeoutMs());
    // issue 10 item 11: the writer waited 30 s while the idle timer closed connections at 10 s
    assertThatThrownBy(() -> ConfigLoader.load(null, Map.of("MBX_RELAY_STORE_WRITER_TIMEOUT_MS", "30000",
        "MBX_RELAY_HTTP_IDLE_TIMEOUT_MS", "10000")))
        .isInstanceOfSatisfying(ConfigException.class, e -> assertThat(e.violations()).containsExactly(
            "store.writerTimeoutMs (30000) must be at least 2000 ms shorter than http.idleTimeoutMs (10000), or a"
                + " request waiting for the writer loses its connection before its answer",
            "store.writerTimeoutMs (30000) must be at least 2000 ms shorter than http.requestTimeoutMs (30000)"));
    assertThatThrownBy(() -> ConfigLoader.load(null, Map.of("MBX_RELAY_HTTP_IDLE_TIMEOUT_MS", "9000")))
        .isInstanceOfSatisfying(ConfigException.class, e -> assertThat(e.violations()).singleElement()
            .asString().startsWith("store.writerTimeoutMs (8000) must be at least 2000 ms shorter than http.idleTimeoutMs"));
    // raising both together is fine
    assertThat(ConfigLoader.load(null, Map.of("MBX_RELAY_STORE_WRITER_TIMEOUT_MS", "30000",
        "MBX_RELAY_HTTP_IDLE_TIMEOUT_MS", "32000", "MBX_RELAY_HTTP_REQUEST_TIMEOUT_MS", "32000")).store()
        .writerTimeoutMs()).isEqualTo(30_000);
  }

  @Test
  void the_postgresql_backend_is_chosen_from_the_environment_and_its_password_is_never_printed(@TempDir Path dir)
      throws Exception {
    assertThat(ConfigLoader.load(null, Map.of()).store().backend()).isEqualTo("sqlite");
    RelayConfig c = ConfigLoader.load(null, Map.of("MBX_RELAY_STORE_BACKEND", "postgresql",
        "MBX_RELAY_STORE_URL", "jdbc:postgresql://db:5432/relay?sslmode=require&password=urlsecret",
        "MBX_RELAY_STORE_USER", "relay", "MBX_RELAY_STORE_PASSWORD", "s3cret-pw"));
    assertThat(c.store().postgresql()).isTrue();
    assertThat(c.store().user()).isEqualTo("relay");
    assertThat(c.store().resolvedPassword()).isEqualTo("s3cret-pw");
    assertThat(c.toString()).doesNotContain("s3cret-pw").doesNotContain("urlsecret").contains("password=set")
        .contains("jdbc:postgresql://db:5432/relay?");
    Path secret = dir.resolve("pw");
    Files.writeString(secret, "from-file\n");
    RelayConfig f = ConfigLoader.load(null, Map.of("MBX_RELAY_STORE_BACKEND", "postgresql",
        "MBX_RELAY_STORE_URL", "jdbc:postgresql://db/relay", "MBX_RELAY_STORE_PASSWORD_FILE", secret.toString()));
    assertThat(f.store().resolvedPassword()).isEqualTo("from-file");
  }

  @Test
  void a_bad_backend_a_missing_url_and_both_password_sources_are_refused_with_what_to_set(@TempDir Path dir) {
    assertThatThrownBy(() -> ConfigLoader.load(null, Map.of("MBX_RELAY_STORE_BACKEND", "mysql")))
        .isInstanceOfSatisfying(ConfigException.class, e -> assertThat(e.violations()).containsExactly(
            "store.backend (MBX_RELAY_STORE_BACKEND) must be \"sqlite\" or \"postgresql\" (is \"mysql\")"));
    assertThatThrownBy(() -> ConfigLoader.load(null, Map.of("MBX_RELAY_STORE_BACKEND", "postgresql")))
        .isInstanceOfSatisfying(ConfigException.class, e -> assertThat(e.violations()).singleElement()
            .asString().startsWith("store.url (MBX_RELAY_STORE_URL) is required with store.backend postgresql"));
    assertThatThrownBy(() -> ConfigLoader.load(null, Map.of("MBX_RELAY_STORE_BACKEND", "postgresql",
        "MBX_RELAY_STORE_URL", "postgres://db/relay", "MBX_RELAY_STORE_PASSWORD", "a",
        "MBX_RELAY_STORE_PASSWORD_FILE", dir.resolve("none").toString())))
        .isInstanceOfSatisfying(ConfigException.class, e -> assertThat(e.violations()).containsExactlyInAnyOrder(
            "store.url must be jdbc:postgresql://HOST[:PORT]/DATABASE[?PARAMS] (is \"postgres://db/relay\")",
            "store.password and store.passwordFile are both set; set one"));
    assertThatThrownBy(() -> ConfigLoader.load(null, Map.of("MBX_RELAY_STORE_URL", "jdbc:postgresql://db/relay")))
        .isInstanceOfSatisfying(ConfigException.class, e -> assertThat(e.violations()).containsExactly(
            "store.url is set but store.backend is \"sqlite\" (set store.backend to \"postgresql\" to use it)"));
  }

  @Test
  void a_log_level_logback_would_read_as_debug_is_refused_and_a_known_one_in_any_case_is_taken() throws Exception {
    // issue 12 item 5: MBX_RELAY_LOG_LEVEL=bogus used to start the relay at DEBUG (logback's fallback)
    assertThatThrownBy(() -> ConfigLoader.load(null, Map.of("MBX_RELAY_LOG_LEVEL", "bogus")))
        .isInstanceOfSatisfying(ConfigException.class, e -> assertThat(e.violations()).containsExactly(
            "log.level (MBX_RELAY_LOG_LEVEL) must be one of TRACE, DEBUG, INFO, WARN, ERROR, OFF (is bogus)"));
    assertThat(ConfigLoader.load(null, Map.of()).log().level()).isEqualTo("INFO");
    assertThat(ConfigLoader.load(null, Map.of("MBX_RELAY_LOG_LEVEL", "warn")).log().level()).isEqualTo("warn");
  }

  @Test
  void the_shutdown_grace_period_defaults_to_5_s_and_is_range_checked() throws Exception {
    assertThat(ConfigLoader.load(null, Map.of()).http().shutdownGraceMs()).isEqualTo(5000);
    assertThat(ConfigLoader.load(null, Map.of("MBX_RELAY_HTTP_SHUTDOWN_GRACE_MS", "0")).http().shutdownGraceMs())
        .isZero();
    assertThatThrownBy(() -> ConfigLoader.load(null, Map.of("MBX_RELAY_HTTP_SHUTDOWN_GRACE_MS", "-1")))
        .isInstanceOfSatisfying(ConfigException.class, e -> assertThat(e.violations())
            .containsExactly("http.shutdownGraceMs must be between 0 and 600000 (is -1)"));
  }

  @Test
  void an_admin_port_equal_to_the_relay_port_is_a_violation_and_port_0_never_is() throws Exception {
    RelayConfig c = ConfigLoader.load(null, Map.of("MBX_RELAY_ADMIN_PORT", "7374"));
    assertThat(ConfigLoader.portViolations(c, 7374)).singleElement().asString()
        .startsWith("admin.port (MBX_RELAY_ADMIN_PORT) must differ from the relay port (--port or $PORT); both are"
            + " 7374");
    assertThat(ConfigLoader.portViolations(c, 8000)).isEmpty();
    assertThat(ConfigLoader.portViolations(ConfigLoader.load(null, Map.of("MBX_RELAY_ADMIN_PORT", "0")), 0)).isEmpty();
  }
}
