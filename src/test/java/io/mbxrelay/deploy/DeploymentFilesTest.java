package io.mbxrelay.deploy;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import io.mbxrelay.testing.RelayHarness;
import java.io.IOException;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The deployment files as an operator uses them (issue 12 item 8), checked without a Docker engine, systemd or nginx:
 * {@code docker-compose.yml} parses, mounts only files that exist, and its Prometheus target, Grafana datasource and
 * dashboard paths agree with its services; the image's HEALTHCHECK script answers for a real relay; the Dockerfile
 * bounds the heap, labels the image and starts no second JVM to check health; the systemd unit's install steps
 * install what it links; nginx forwards only the relay paths.
 */
class DeploymentFilesTest {
  private static final ObjectMapper YAML = new ObjectMapper(new YAMLFactory());

  @TempDir
  Path dir;

  private static JsonNode yaml(String path) throws IOException {
    return YAML.readTree(Files.readString(Path.of(path)));
  }

  /** The {@code source:target[:mode]} bind mounts of a compose service whose source is a path. */
  private static List<String[]> bindMounts(JsonNode service) {
    List<String[]> out = new ArrayList<>();
    service.path("volumes").forEach(v -> {
      String[] parts = v.asText().split(":");
      if (parts[0].startsWith(".") || parts[0].startsWith("/")) {
        out.add(parts);
      }
    });
    return out;
  }

  @Test
  void docker_compose_runs_the_relay_prometheus_and_grafana_from_files_that_exist_and_agree() throws Exception {
    JsonNode compose = yaml("docker-compose.yml");
    JsonNode services = compose.get("services");
    List<String> names = new ArrayList<>();
    services.fieldNames().forEachRemaining(names::add);
    assertThat(names).containsExactly("relay", "prometheus", "grafana");

    // every bind-mounted file exists, and named volumes are declared
    for (String name : names) {
      for (String[] mount : bindMounts(services.get(name))) {
        assertThat(Path.of(mount[0])).as(name + " mounts " + mount[0]).exists();
      }
      services.get(name).path("volumes").forEach(v -> {
        String source = v.asText().split(":")[0];
        if (!source.startsWith(".") && !source.startsWith("/")) {
          assertThat(compose.get("volumes").has(source)).as("volume " + source + " declared").isTrue();
        }
      });
      assertThat(services.get(name).path("image").asText()).as(name + " image pinned").matches(".+:[^:]+");
      assertThat(services.get(name).path("image").asText()).doesNotEndWith(":latest");
    }

    // the relay is built from this repository's Dockerfile, its admin server reachable by Prometheus on the compose
    // network but published on the host's loopback only; the relay port is published
    JsonNode relay = services.get("relay");
    assertThat(relay.get("build").asText()).isEqualTo(".");
    assertThat(Path.of("Dockerfile")).exists();
    String adminPort = relay.get("environment").get("MBX_RELAY_ADMIN_PORT").asText();
    assertThat(relay.get("environment").get("MBX_RELAY_ADMIN_BIND").asText()).isEqualTo("0.0.0.0");
    List<String> ports = new ArrayList<>();
    relay.get("ports").forEach(p -> ports.add(p.asText()));
    assertThat(ports).contains("7374:7374", "127.0.0.1:" + adminPort + ":" + adminPort);
    assertThat(relay.get("mem_limit").asText()).isEqualTo("1g"); // the heap is half of it: the tuned 512 MiB

    // Prometheus: its config and rules are mounted side by side, rule_files resolve, it scrapes the relay service
    JsonNode prometheus = services.get("prometheus");
    String configTarget = null;
    Map<String, String> mounted = new java.util.HashMap<>();
    for (String[] m : bindMounts(prometheus)) {
      mounted.put(m[1], m[0]);
    }
    for (JsonNode arg : prometheus.get("command")) {
      if (arg.asText().startsWith("--config.file=")) {
        configTarget = arg.asText().substring("--config.file=".length());
      }
    }
    assertThat(mounted).containsKey(configTarget);
    Path config = Path.of(mounted.get(configTarget));
    JsonNode prometheusConfig = YAML.readTree(Files.readString(config));
    String configDir = configTarget.substring(0, configTarget.lastIndexOf('/') + 1);
    for (JsonNode rules : prometheusConfig.get("rule_files")) {
      String inContainer = rules.asText().startsWith("/") ? rules.asText() : configDir + rules.asText();
      assertThat(mounted).as("rule file " + inContainer + " mounted").containsKey(inContainer);
      assertThat(Path.of(mounted.get(inContainer)).normalize()).isEqualTo(Path.of("deploy/prometheus/alerts.yml"));
    }
    JsonNode job = prometheusConfig.get("scrape_configs").get(0);
    assertThat(job.get("job_name").asText()).isEqualTo("mbxrelay"); // MbxRelayDown matches up{job="mbxrelay"}
    assertThat(job.get("static_configs").get(0).get("targets").get(0).asText()).isEqualTo("relay:" + adminPort);

    // Grafana: the provisioned datasource is the Prometheus service, the dashboard provider reads the directory the
    // dashboard is mounted into, and the home dashboard is that file
    JsonNode grafana = services.get("grafana");
    Map<String, String> grafanaMounts = new java.util.HashMap<>();
    for (String[] m : bindMounts(grafana)) {
      grafanaMounts.put(m[0], m[1]);
    }
    assertThat(grafanaMounts.get("./deploy/grafana/provisioning/datasources"))
        .isEqualTo("/etc/grafana/provisioning/datasources");
    assertThat(grafanaMounts.get("./deploy/grafana/provisioning/dashboards"))
        .isEqualTo("/etc/grafana/provisioning/dashboards");
    JsonNode datasource = yaml("deploy/grafana/provisioning/datasources/prometheus.yml").get("datasources").get(0);
    assertThat(datasource.get("type").asText()).isEqualTo("prometheus");
    assertThat(datasource.get("url").asText()).isEqualTo("http://prometheus:9090");
    assertThat(datasource.get("isDefault").asBoolean()).isTrue();
    String dashboardTarget = grafanaMounts.get("./deploy/grafana/mbxrelay-dashboard.json");
    JsonNode provider = yaml("deploy/grafana/provisioning/dashboards/mbxrelay.yml").get("providers").get(0);
    assertThat(dashboardTarget).startsWith(provider.get("options").get("path").asText() + "/");
    assertThat(grafana.get("environment").get("GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH").asText())
        .isEqualTo(dashboardTarget);
    JsonNode dashboard = io.mbxrelay.wire.Json.MAPPER.readTree(
        Files.readString(Path.of("deploy/grafana/mbxrelay-dashboard.json")));
    assertThat(dashboard.get("templating").get("list").get(0).get("query").asText()).isEqualTo("prometheus");
  }

  /**
   * Issue 22 item 6: a refused store (exit 3) must not be restarted in a loop. The compose relay service runs
   * {@code hold-on-refusal} (copied into the image) as its entrypoint under its restart policy, and binds every address
   * explicitly, as the image's own command does (the relay's default bind is loopback, issue 22 item 9).
   */
  @Test
  void the_compose_relay_holds_after_a_refused_store_instead_of_restarting_and_binds_every_address()
      throws Exception {
    JsonNode relay = yaml("docker-compose.yml").get("services").get("relay");
    assertThat(relay.get("entrypoint").get(0).asText()).isEqualTo("/opt/mbxrelay/hold-on-refusal");
    List<String> command = new ArrayList<>();
    relay.get("command").forEach(c -> command.add(c.asText()));
    assertThat(command).containsExactly("serve", "--bind", "0.0.0.0");
    assertThat(relay.get("restart").asText()).isEqualTo("unless-stopped");
    String dockerfile = Files.readString(Path.of("Dockerfile"));
    assertThat(dockerfile).contains("COPY deploy/docker/hold-on-refusal /opt/mbxrelay/hold-on-refusal")
        .contains("CMD [\"serve\", \"--bind\", \"0.0.0.0\"]");
    assertThat(Files.isExecutable(Path.of("deploy/docker/hold-on-refusal"))).isTrue();
  }

  /** A stand-in for java: exits with the status its first JVM option is not, after sleeping or on SIGTERM. */
  private Path fakeJava(String body) throws IOException {
    Path f = dir.resolve("java-" + Integer.toHexString(body.hashCode()));
    Files.writeString(f, "#!/bin/bash\n" + body + "\n");
    f.toFile().setExecutable(true);
    return f;
  }

  private Process hold(Path java) throws IOException {
    ProcessBuilder pb = new ProcessBuilder("bash", "deploy/docker/hold-on-refusal", "serve");
    pb.environment().put("MBX_RELAY_JAVA", java.toString());
    pb.environment().put("MBX_RELAY_JAR", "none.jar");
    pb.redirectErrorStream(true).redirectOutput(output(java).toFile());
    return pb.start();
  }

  private Path output(Path java) {
    return dir.resolve(java.getFileName() + ".out");
  }

  private String awaitOutput(Path java, String text) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    String out = "";
    while (!out.contains(text) && System.nanoTime() < deadline) {
      Thread.sleep(20);
      out = Files.exists(output(java)) ? Files.readString(output(java)) : "";
    }
    return out;
  }

  @Test
  void hold_on_refusal_holds_after_exit_3_and_passes_every_other_exit_and_the_stop_signal_on() throws Exception {
    // exit 3: the script stays up (no exit for the restart policy to act on) and says why; a stop exits 3
    Path refusing = fakeJava("echo 'store refused: test'; exit 3");
    Process refused = hold(refusing);
    assertThat(refused.waitFor(2, TimeUnit.SECONDS)).as("holds instead of exiting").isFalse();
    assertThat(awaitOutput(refusing, "docker compose restart relay")).contains("store refused: test")
        .contains("Not restarting it");
    refused.destroy(); // SIGTERM, as docker stop
    assertThat(refused.waitFor(10, TimeUnit.SECONDS)).isTrue();
    assertThat(refused.exitValue()).isEqualTo(3);

    // any other exit passes through at once (a crash is restarted by the policy)
    Process crashed = hold(fakeJava("exit 1"));
    assertThat(crashed.waitFor(10, TimeUnit.SECONDS)).isTrue();
    assertThat(crashed.exitValue()).isEqualTo(1);

    // SIGTERM reaches the relay, which drains and exits 0; the script exits with it
    Path draining = fakeJava("trap 'echo drained; exit 0' TERM; echo up; while :; do sleep 0.1; done");
    Process running = hold(draining);
    assertThat(awaitOutput(draining, "up")).contains("up");
    running.destroy();
    assertThat(running.waitFor(10, TimeUnit.SECONDS)).isTrue();
    assertThat(running.exitValue()).isZero();
    assertThat(awaitOutput(draining, "drained")).contains("drained");
  }

  private static int run(Map<String, String> env, StringBuilder stderr) throws Exception {
    ProcessBuilder pb = new ProcessBuilder("bash", "deploy/docker/healthcheck");
    pb.environment().remove("MBX_RELAY_ADMIN_BIND");
    pb.environment().remove("MBX_RELAY_ADMIN_PORT");
    pb.environment().putAll(env);
    pb.redirectOutput(ProcessBuilder.Redirect.DISCARD);
    Process p = pb.start();
    assertThat(p.waitFor(20, TimeUnit.SECONDS)).isTrue();
    stderr.append(new String(p.getErrorStream().readAllBytes(), StandardCharsets.UTF_8));
    return p.exitValue();
  }

  @Test
  void the_image_healthcheck_answers_0_for_a_live_relay_and_1_for_a_closed_port_or_another_answer() throws Exception {
    assertThat(Files.isExecutable(Path.of("deploy/docker/healthcheck"))).isTrue();
    try (RelayHarness relay = RelayHarness.start(dir)) {
      String admin = Integer.toString(relay.server.adminPort());
      StringBuilder err = new StringBuilder();
      assertThat(run(Map.of("MBX_RELAY_ADMIN_PORT", admin), err)).as(err.toString()).isZero();
      // a wildcard bind is reached on loopback, as inside the container of docker-compose.yml
      assertThat(run(Map.of("MBX_RELAY_ADMIN_PORT", admin, "MBX_RELAY_ADMIN_BIND", "0.0.0.0"), err)).isZero();
      err.setLength(0);
      // the relay port is not the admin port: its /health is a 401
      assertThat(run(Map.of("MBX_RELAY_ADMIN_PORT", Integer.toString(relay.server.port())), err)).isEqualTo(1);
      assertThat(err.toString()).contains("/health answered: HTTP/1.0 401");
    }
    int closed;
    try (ServerSocket s = new ServerSocket(0)) {
      closed = s.getLocalPort();
    }
    StringBuilder err = new StringBuilder();
    assertThat(run(Map.of("MBX_RELAY_ADMIN_PORT", Integer.toString(closed)), err)).isEqualTo(1);
    assertThat(err.toString()).contains("not reachable at 127.0.0.1:" + closed);
  }

  @Test
  void the_dockerfile_bounds_the_heap_labels_the_image_and_checks_health_without_a_second_jvm() throws Exception {
    String dockerfile = Files.readString(Path.of("Dockerfile"));
    String joined = dockerfile.replace("\\\n", " ");
    List<String> instructions = joined.lines().map(String::trim).filter(l -> !l.isEmpty() && !l.startsWith("#"))
        .toList();
    String healthcheck = instructions.stream().filter(l -> l.startsWith("HEALTHCHECK")).findFirst().orElseThrow();
    assertThat(healthcheck).doesNotContain("java").contains("CMD [\"/opt/mbxrelay/healthcheck\"]");
    assertThat(instructions).contains("COPY deploy/docker/healthcheck /opt/mbxrelay/healthcheck");
    assertThat(instructions).anyMatch(l -> l.startsWith("ENV JAVA_TOOL_OPTIONS=")
        && l.contains("-XX:MaxRAMPercentage=50"));
    assertThat(instructions).noneMatch(l -> l.startsWith("ENTRYPOINT") && l.contains("-Xmx"));
    // every COPY from the build context names something that exists and that .dockerignore keeps
    List<String> ignored = Files.readAllLines(Path.of(".dockerignore")).stream()
        .filter(l -> !l.isBlank() && !l.startsWith("#")).toList();
    for (String copy : instructions.stream().filter(l -> l.startsWith("COPY ") && !l.contains("--from")).toList()) {
      String source = copy.split("\\s+")[1];
      assertThat(Path.of(source)).as(copy).exists();
      assertThat(ignored).as(copy).noneMatch(i -> source.startsWith(i.replaceAll("/$", "")));
    }
    // OCI labels, the version defaulting to the pom's
    Matcher pomVersion = Pattern.compile("<artifactId>mbxrelay</artifactId>\\s*<version>([^<]+)</version>")
        .matcher(Files.readString(Path.of("pom.xml")));
    assertThat(pomVersion.find()).isTrue();
    assertThat(instructions).contains("ARG VERSION=" + pomVersion.group(1));
    String label = instructions.stream().filter(l -> l.startsWith("LABEL")).findFirst().orElseThrow();
    for (String key : List.of("title", "description", "version", "revision", "created", "licenses")) {
      assertThat(label).contains("org.opencontainers.image." + key + "=");
    }
  }

  @Test
  void the_image_build_stage_copies_every_module_and_every_file_the_pom_packages_into_the_jar() throws Exception {
    // the shade plugin's IncludeResourceTransformer skips a missing <file> without a word: a build context without
    // LICENSE gives a jar without META-INF/LICENSE (the Apache-2.0 text that replaces the bundled jars' copies)
    List<String> packaged = new ArrayList<>();
    Matcher file = Pattern.compile("<file>\\$\\{root\\.dir\\}/([^<]+)</file>")
        .matcher(Files.readString(Path.of("mbxrelay-server/pom.xml")));
    while (file.find()) {
      packaged.add(file.group(1).trim());
    }
    assertThat(packaged).as("the server module packages files from the repository root").contains("LICENSE");
    // and every module's pom and sources: the reactor fails without a module's pom, and a module without its
    // sources would build an empty jar
    packaged.add("pom.xml");
    packaged.add("src/main");
    Matcher module = Pattern.compile("<module>([^<]+)</module>").matcher(Files.readString(Path.of("pom.xml")));
    while (module.find()) {
      packaged.add(module.group(1) + "/pom.xml");
      if (Files.isDirectory(Path.of(module.group(1), "src/main"))) {
        packaged.add(module.group(1) + "/src/main");
      }
    }
    assertThat(packaged).contains("mbxrelay-host/pom.xml", "mbxrelay-host/src/main", "mbxrelay-server/pom.xml");
    List<String> instructions = Files.readString(Path.of("Dockerfile")).replace("\\\n", " ").lines()
        .map(String::trim).filter(l -> !l.isEmpty() && !l.startsWith("#")).toList();
    List<String> copied = new ArrayList<>();
    for (String l : instructions) {
      if (l.startsWith("RUN ") && l.contains(" package")) {
        break; // what the build stage has when it packages the jar
      }
      if (l.startsWith("COPY ") && !l.contains("--from")) {
        String[] parts = l.split("\\s+");
        copied.addAll(List.of(parts).subList(1, parts.length - 1));
      }
    }
    for (String f : packaged) {
      assertThat(copied).as("Dockerfile build stage copies %s before it packages", f)
          .anyMatch(c -> f.equals(c) || f.startsWith(c.replaceAll("/$", "") + "/"));
    }
  }

  @Test
  void the_systemd_unit_bounds_the_heap_and_its_install_steps_install_every_doc_it_links() throws Exception {
    List<String> unit = Files.readAllLines(Path.of("deploy/systemd/mbxrelay.service"));
    String header = String.join("\n", unit.stream().filter(l -> l.startsWith("#")).toList());
    assertThat(unit).anyMatch(l -> l.startsWith("ExecStart=") && l.contains(" -Xmx512m "));
    assertThat(header).contains("install -D -m 0644 target/mbxrelay.jar /opt/mbxrelay/mbxrelay.jar")
        .contains("install -D -m 0644 -t /opt/mbxrelay/docs docs/*.md");
    List<String> docs = unit.stream().filter(l -> l.startsWith("Documentation=")).toList();
    assertThat(docs).isNotEmpty();
    for (String line : docs) {
      for (String url : line.substring("Documentation=".length()).trim().split("\\s+")) {
        assertThat(url).startsWith("file:///opt/mbxrelay/docs/");
        Path doc = Path.of("docs", url.substring("file:///opt/mbxrelay/docs/".length()));
        assertThat(doc).as(url).exists(); // installed by docs/*.md above
        assertThat(doc.getFileName().toString()).endsWith(".md");
      }
    }
  }

  @Test
  void nginx_forwards_only_the_relay_paths_and_the_docs_say_admin_deny_is_not_behind_it() throws Exception {
    String conf = Files.readString(Path.of("deploy/nginx/mbxrelay.conf"));
    Matcher location = Pattern.compile("(?m)^\\s*location\\s+([^{]+?)\\s*\\{").matcher(conf);
    List<String> locations = new ArrayList<>();
    while (location.find()) {
      locations.add(location.group(1));
    }
    assertThat(locations).containsExactly("/v1/relay/", "/v2/relay/", "/");
    assertThat(conf.substring(conf.indexOf("location / {"))).contains("return 404;");
    assertThat(Files.readString(Path.of("docs/deny-list.md"))).contains("`/admin/deny` is not reachable through the"
        + " public TLS listener");
    assertThat(Files.readString(Path.of("docs/operations.md"))).contains("`/admin/deny` is deliberately **not**");
  }
}
