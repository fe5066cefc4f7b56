package io.mbxrelay.deploy;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.mbxrelay.testing.Envelopes;
import io.mbxrelay.testing.Http;
import io.mbxrelay.testing.RelayHarness;
import io.mbxrelay.testing.Scrape;
import io.mbxrelay.testing.TestHost;
import io.mbxrelay.wire.Json;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The operator assets only use metrics the relay exports: every {@code mbxrelay_*}, {@code vertx_*}, {@code jvm_*}
 * and {@code process_*} name in the alert rules and the Grafana dashboard appears in a real scrape after a
 * push/pull/ack run (histogram suffixes {@code _bucket/_sum/_count} map to their base name). Unsigned requests to the
 * relay port never reach the admin paths.
 */
class DeployAssetsTest {
  private static final Pattern NAME = Pattern.compile("\\b((?:mbxrelay|vertx|jvm|process)_[a-z0-9_]+)");

  @TempDir
  Path dir;

  private static Set<String> names(String text) {
    Set<String> out = new TreeSet<>();
    Matcher m = NAME.matcher(text);
    while (m.find()) {
      out.add(base(m.group(1)));
    }
    return out;
  }

  private static String base(String name) {
    for (String suffix : new String[] {"_bucket", "_sum", "_count", "_max"}) {
      if (name.endsWith(suffix)) {
        return name.substring(0, name.length() - suffix.length());
      }
    }
    return name;
  }

  private static Set<String> dashboardExpressions(JsonNode node, Set<String> out) {
    if (node.isObject()) {
      JsonNode expr = node.get("expr");
      if (expr != null && expr.isTextual()) {
        out.add(expr.asText());
      }
      JsonNode query = node.get("query");
      if (query != null && query.isTextual()) {
        out.add(query.asText());
      }
      node.forEach(child -> dashboardExpressions(child, out));
    } else if (node.isArray()) {
      node.forEach(child -> dashboardExpressions(child, out));
    }
    return out;
  }

  @Test
  void docs_configuration_lists_every_knob_of_conf_relay_json_with_its_default_and_environment_variable()
      throws Exception {
    JsonNode conf = Json.MAPPER.readTree(Files.readString(Path.of("conf/relay.json")));
    String doc = Files.readString(Path.of("docs/configuration.md"));
    conf.fields().forEachRemaining(section -> section.getValue().fields().forEachRemaining(knob -> {
      String row = "| `" + knob.getKey() + "` | `" + knob.getValue().toString() + "` | `"
          + io.mbxrelay.config.ConfigLoader.envName(section.getKey(), knob.getKey()) + "` |";
      assertThat(doc).as(section.getKey() + "." + knob.getKey()).contains(row);
    }));
  }

  @Test
  void every_metric_the_alert_rules_and_the_dashboard_use_is_exported_after_a_push_pull_ack_run() throws Exception {
    String rules = Files.readString(Path.of("deploy/prometheus/alerts.yml"));
    JsonNode dashboard = Json.MAPPER.readTree(Files.readString(Path.of("deploy/grafana/mbxrelay-dashboard.json")));
    Set<String> used = new TreeSet<>();
    rules.lines().filter(l -> l.trim().startsWith("expr:") || l.startsWith("          "))
        .forEach(l -> used.addAll(names(l)));
    dashboardExpressions(dashboard, new TreeSet<>()).forEach(e -> used.addAll(names(e)));
    assertThat(used).contains("mbxrelay_writer_transaction_seconds", "mbxrelay_ready",
        "vertx_http_server_response_time_seconds", "vertx_eventbus_pending", "vertx_eventbus_processed_total");

    try (RelayHarness relay = RelayHarness.start(dir)) {
      TestHost a = new TestHost(relay.url(), "assets-a").enrol();
      TestHost b = new TestHost(relay.url(), "assets-b").enrol();
      String id = Envelopes.newId();
      assertThat(a.pushEnvelope(b, id, Envelopes.sealed(id)).status()).isEqualTo(200);
      Http.Resp pull = b.pull(0, null, null);
      assertThat(b.ack(relay.server.epoch(), pull.json().get("last_seq").asLong()).status()).isEqualTo(200);
      Scrape scrape = Scrape.of(relay.adminUrl());
      Set<String> exported = new TreeSet<>();
      scrape.names().forEach(n -> exported.add(base(n)));
      assertThat(exported).containsAll(used);
      assertThat(scrape.value("vertx_eventbus_processed_total", "address=\"mbx.store.write\"")).isPositive();
    }
  }
}
