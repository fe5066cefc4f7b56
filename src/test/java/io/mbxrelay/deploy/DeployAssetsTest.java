package io.mbxrelay.deploy;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.mbxrelay.testing.Envelopes;
import io.mbxrelay.testing.Http;
import io.mbxrelay.testing.RelayHarness;
import io.mbxrelay.testing.Scrape;
import io.mbxrelay.testing.TestHost;
import io.mbxrelay.wire.Json;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
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
  private static final ObjectMapper YAML = new ObjectMapper(new YAMLFactory());
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

  /**
   * A relay after a push, a pull, an ack, a 401 on a relay route and a 401 on a path it does not serve, scraped.
   */
  private Scrape scrapeAfterARun() throws Exception {
    try (RelayHarness relay = RelayHarness.start(dir)) {
      TestHost a = new TestHost(relay.url(), "assets-a").enrol();
      TestHost b = new TestHost(relay.url(), "assets-b").enrol();
      String id = Envelopes.newId();
      assertThat(a.pushEnvelope(b, id, Envelopes.sealed(id)).status()).isEqualTo(200);
      Http.Resp pull = b.pull(0, null, null);
      assertThat(b.ack(relay.server.epoch(), pull.json().get("last_seq").asLong()).status()).isEqualTo(200);
      assertThat(Http.send(relay.url(), "POST", "/v2/relay/items", "{}").status()).isEqualTo(401);
      assertThat(Http.send(relay.url(), "GET", "/metrics", null).status()).isEqualTo(401);
      return Scrape.of(relay.adminUrl());
    }
  }

  /** Label sets of every series, by series name (histogram series keep their suffix). */
  private static Map<String, List<Map<String, String>>> seriesLabels(Scrape scrape) {
    Map<String, List<Map<String, String>>> out = new TreeMap<>();
    for (String key : scrape.series.keySet()) {
      int b = key.indexOf('{');
      String name = b < 0 ? key : key.substring(0, b);
      Map<String, String> labels = new TreeMap<>();
      if (b >= 0) {
        Matcher m = LABEL.matcher(key.substring(b));
        while (m.find()) {
          labels.put(m.group(1), m.group(2));
        }
      }
      out.computeIfAbsent(name, n -> new ArrayList<>()).add(labels);
    }
    return out;
  }

  private static final Pattern LABEL = Pattern.compile("([a-zA-Z_][a-zA-Z0-9_]*)=\"((?:[^\"\\\\]|\\\\.)*)\"");
  private static final Pattern SELECTOR =
      Pattern.compile("\\b((?:mbxrelay|vertx|jvm|process)_[a-z0-9_]+)(\\{([^}]*)\\})?");
  private static final Pattern MATCHER =
      Pattern.compile("([a-zA-Z_][a-zA-Z0-9_]*)\\s*(=~|!~|!=|=)\\s*\"((?:[^\"\\\\]|\\\\.)*)\"");
  private static final Pattern GROUPING = Pattern.compile("\\b(?:by|without)\\s*\\(([^)]*)\\)\\s*\\(");
  /** Labels Prometheus adds at scrape time, not the relay. */
  private static final Set<String> TARGET_LABELS = Set.of("instance", "job");

  /**
   * Every label an expression names on one of our metrics, in a selector or in a {@code by (…)} grouping around it,
   * exists on that metric in the scrape; an exact matcher's value ({@code code="401"}, {@code area="heap"}) and a
   * regex matcher's pattern match at least one series. Returns the problems found.
   */
  private static List<String> labelProblems(String expr, Map<String, List<Map<String, String>>> scraped) {
    List<String> problems = new ArrayList<>();
    Matcher sel = SELECTOR.matcher(expr);
    while (sel.find()) {
      String metric = sel.group(1);
      List<Map<String, String>> series = scraped.getOrDefault(metric, List.of());
      if (sel.group(3) == null) {
        continue;
      }
      Matcher m = MATCHER.matcher(sel.group(3));
      while (m.find()) {
        String label = m.group(1);
        String op = m.group(2);
        String value = m.group(3).replace("\\\\", "\\");
        if (TARGET_LABELS.contains(label)) {
          continue;
        }
        boolean matched = series.stream().anyMatch(l -> l.containsKey(label) && switch (op) {
          case "=" -> l.get(label).equals(value);
          case "=~" -> l.get(label).matches(value);
          default -> true; // negative matchers only need the label to exist
        });
        if (!matched) {
          problems.add(metric + "{" + label + op + "\"" + value + "\"} matches no series in: " + expr);
        }
      }
    }
    Matcher g = GROUPING.matcher(expr);
    while (g.find()) {
      int open = g.end() - 1;
      int depth = 0;
      int close = open;
      for (int i = open; i < expr.length(); i++) {
        char c = expr.charAt(i);
        depth += c == '(' ? 1 : c == ')' ? -1 : 0;
        if (depth == 0) {
          close = i;
          break;
        }
      }
      Matcher inner = SELECTOR.matcher(expr.substring(open, close));
      while (inner.find()) {
        String metric = inner.group(1);
        for (String label : g.group(1).split(",")) {
          String l = label.trim();
          if (l.isEmpty() || TARGET_LABELS.contains(l)) {
            continue;
          }
          if (scraped.getOrDefault(metric, List.of()).stream().noneMatch(ls -> ls.containsKey(l))) {
            problems.add(metric + " has no label " + l + " (grouped by in: " + expr + ")");
          }
        }
      }
    }
    return problems;
  }

  private static List<String> ruleExpressions() throws Exception {
    JsonNode rules = YAML.readTree(Files.readString(Path.of("deploy/prometheus/alerts.yml")));
    List<String> out = new ArrayList<>();
    rules.get("groups").forEach(group -> group.get("rules").forEach(rule -> out.add(rule.get("expr").asText())));
    return out;
  }

  @Test
  void every_metric_and_label_the_alert_rules_and_the_dashboard_use_is_in_a_real_scrape() throws Exception {
    List<String> expressions = new ArrayList<>(ruleExpressions());
    JsonNode dashboard = Json.MAPPER.readTree(Files.readString(Path.of("deploy/grafana/mbxrelay-dashboard.json")));
    expressions.addAll(dashboardExpressions(dashboard, new TreeSet<>()));
    Set<String> used = new TreeSet<>();
    expressions.forEach(e -> used.addAll(names(e)));
    assertThat(used).contains("mbxrelay_writer_transaction_seconds", "mbxrelay_ready",
        "vertx_http_server_response_time_seconds", "vertx_eventbus_pending", "vertx_eventbus_processed_total",
        "mbxrelay_store_wal_bytes", "mbxrelay_store_free_bytes", "mbxrelay_store_file_bytes");

    Scrape scrape = scrapeAfterARun();
    Set<String> exported = new TreeSet<>();
    scrape.names().forEach(n -> exported.add(base(n)));
    assertThat(exported).containsAll(used);
    assertThat(scrape.value("vertx_eventbus_processed_total", "address=\"mbx.store.write\"")).isPositive();
    Map<String, List<Map<String, String>>> scraped = seriesLabels(scrape);
    List<String> problems = new ArrayList<>();
    expressions.forEach(e -> problems.addAll(labelProblems(e, scraped)));
    assertThat(problems).isEmpty();
  }

  @Test
  void every_alert_links_a_runbook_heading_of_docs_operations_md() throws Exception {
    Set<String> anchors = new TreeSet<>();
    Files.readString(Path.of("docs/operations.md")).lines().filter(l -> l.startsWith("#")).forEach(l -> anchors.add(
        l.replaceFirst("^#+\\s*", "").toLowerCase(java.util.Locale.ROOT).replaceAll("[^a-z0-9 -]", "")
            .replace(' ', '-')));
    JsonNode rules = YAML.readTree(Files.readString(Path.of("deploy/prometheus/alerts.yml")));
    List<String> links = new ArrayList<>();
    rules.get("groups").forEach(g -> g.get("rules")
        .forEach(r -> links.add(r.get("annotations").get("runbook").asText())));
    assertThat(links).hasSizeGreaterThan(10).allSatisfy(link -> {
      assertThat(link).startsWith("docs/operations.md#");
      assertThat(anchors).contains(link.substring(link.indexOf('#') + 1));
    });
  }

  @Test
  void the_label_check_finds_a_label_or_value_the_relay_does_not_export() {
    Map<String, List<Map<String, String>>> scraped = Map.of(
        "vertx_http_server_requests_total", List.of(Map.of("code", "401", "route", "/v2/relay/items")),
        "vertx_sql_processing_pending", List.of(Map.of()));
    assertThat(labelProblems("sum by (route) (rate(vertx_http_server_requests_total{code=\"401\"}[5m]))", scraped))
        .isEmpty();
    assertThat(labelProblems("rate(vertx_http_server_requests_total{code=\"500\"}[5m])", scraped)).hasSize(1);
    assertThat(labelProblems("vertx_http_server_requests_total{route=~\"/v[12]/relay/.*\"}", scraped)).isEmpty();
    assertThat(labelProblems("sum by (pool_name) (vertx_sql_processing_pending)", scraped)).hasSize(1);
    assertThat(labelProblems("vertx_sql_processing_pending{instance=~\"$instance\"}", scraped)).isEmpty();
  }

  /** A documented row of the docs/operations.md metrics table. */
  private record DocRow(List<String> names, List<String> types, Map<String, Set<String>> labels, boolean binders) {}

  private static List<DocRow> documentedMetrics() throws Exception {
    String doc = Files.readString(Path.of("docs/operations.md"));
    int from = doc.indexOf("\n## Metrics\n");
    String section = doc.substring(from, doc.indexOf("\n## ", from + 5));
    List<DocRow> rows = new ArrayList<>();
    Pattern token = Pattern.compile("`([a-z0-9_*]+)`");
    Pattern label = Pattern.compile("`([a-z_]+)`(?::\\s*([a-z_]+(?:,\\s*[a-z_]+)*))?");
    for (String line : section.lines().filter(l -> l.startsWith("| `")).toList()) {
      String[] cells = line.split("\\|");
      List<String> names = new ArrayList<>();
      Matcher n = token.matcher(cells[1]);
      while (n.find()) {
        names.add(n.group(1));
      }
      List<String> types = List.of(cells[2].trim().split(",\\s*"));
      Map<String, Set<String>> labels = new TreeMap<>();
      Matcher l = label.matcher(cells[3]);
      while (l.find()) {
        labels.put(l.group(1), l.group(2) == null ? Set.of() : Set.of(l.group(2).split(",\\s*")));
      }
      rows.add(new DocRow(names, types, labels, cells[3].contains("Micrometer binders")));
    }
    return rows;
  }

  /** Family name to its {@code # TYPE}. */
  private static Map<String, String> families(Scrape scrape) {
    Map<String, String> out = new TreeMap<>();
    scrape.raw.lines().filter(l -> l.startsWith("# TYPE ")).forEach(l -> {
      String[] p = l.split(" ");
      out.put(p[2], p[3]);
    });
    return out;
  }

  /** Labels (and their values) on a family's series; {@code le} and {@code quantile} are the type's own. */
  private static Map<String, Set<String>> familyLabels(String family, Map<String, List<Map<String, String>>> scraped) {
    Map<String, Set<String>> out = new TreeMap<>();
    for (String suffix : List.of("", "_bucket", "_count", "_sum")) {
      for (Map<String, String> labels : scraped.getOrDefault(family + suffix, List.of())) {
        labels.forEach((k, v) -> {
          if (!k.equals("le") && !k.equals("quantile")) {
            out.computeIfAbsent(k, x -> new TreeSet<>()).add(v);
          }
        });
      }
    }
    return out;
  }

  @Test
  void docs_operations_md_names_every_relay_metric_with_the_type_labels_and_values_a_real_scrape_has()
      throws Exception {
    List<DocRow> rows = documentedMetrics();
    assertThat(rows).hasSizeGreaterThan(30);
    Scrape scrape = scrapeAfterARun();
    Map<String, String> families = families(scrape);
    Map<String, List<Map<String, String>>> scraped = seriesLabels(scrape);
    List<String> problems = new ArrayList<>();
    Set<String> documented = new TreeSet<>();
    for (DocRow row : rows) {
      for (int i = 0; i < row.names().size(); i++) {
        String name = row.names().get(i);
        if (name.endsWith("*")) {
          String prefix = name.substring(0, name.length() - 1);
          Map<String, Set<String>> union = new TreeMap<>();
          families.keySet().stream().filter(f -> f.startsWith(prefix))
              .forEach(f -> familyLabels(f, scraped).forEach((k, v) -> union.merge(k, v, (x, y) -> x)));
          if (families.keySet().stream().noneMatch(f -> f.startsWith(prefix))) {
            problems.add(name + ": no such family in the scrape");
          } else if (!row.binders() && !union.keySet().equals(row.labels().keySet())) {
            problems.add(name + ": documented labels " + row.labels().keySet() + ", scraped " + union.keySet());
          }
          continue;
        }
        documented.add(name);
        String type = families.get(name);
        if (type == null) {
          problems.add(name + ": documented but not in the scrape");
          continue;
        }
        String docType = row.types().size() == row.names().size() ? row.types().get(i) : row.types().get(0);
        if (!docType.equals(type)) {
          problems.add(name + ": documented as " + docType + ", scraped as " + type);
        }
        Map<String, Set<String>> labels = familyLabels(name, scraped);
        if (!labels.keySet().equals(row.labels().keySet())) {
          problems.add(name + ": documented labels " + row.labels().keySet() + ", scraped " + labels.keySet());
          continue;
        }
        row.labels().forEach((label, values) -> {
          if (!values.isEmpty() && !values.equals(labels.get(label))) {
            problems.add(name + "{" + label + "}: documented values " + new TreeSet<>(values) + ", scraped "
                + labels.get(label));
          }
        });
      }
    }
    for (Map.Entry<String, String> f : families.entrySet()) {
      String name = f.getKey();
      boolean timerMax = name.endsWith("_max") && documented.contains(name.substring(0, name.length() - 4));
      if (name.startsWith("mbxrelay_") && !timerMax && !documented.contains(name)) {
        problems.add(name + ": exported but not documented");
      }
    }
    assertThat(problems).isEmpty();
  }
}
