package io.mbxrelay.server;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.mbxrelay.crypto.Ed25519KeyPair;
import io.mbxrelay.testing.ChildRelay;
import io.mbxrelay.testing.Envelopes;
import io.mbxrelay.testing.Http;
import io.mbxrelay.testing.TestHost;
import io.mbxrelay.wire.Json;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.jar.JarFile;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The relay as a process under its supervisor's signals (issue 12 items 1, 5, 6): SIGTERM under load is a drain that
 * exits 0 and leaves no committed item without its receipt; SIGHUP reloads instead of killing; a second relay on a
 * held store names the holder at once; {@code --version} is the jar's.
 */
class GracefulStopIT {

  @Test
  void sigterm_under_concurrent_pushes_answers_every_accepted_request_and_exits_0(@TempDir Path dir)
      throws Exception {
    // a commit delay keeps several pushes waiting for the writer at any moment, so the signal finds requests in
    // progress; the grace period is far longer than any of them needs
    try (ChildRelay relay = ChildRelay.start(dir, Map.of("MBX_RELAY_HTTP_SHUTDOWN_GRACE_MS", "20000",
        "MBX_RELAY_STORE_WRITER_COMMIT_DELAY_MS", "50", "MBX_RELAY_LIMITS_PUSH_REQUESTS_PER_MINUTE", "1000000"))) {
      Ed25519KeyPair targetKey = Ed25519KeyPair.generate();
      TestHost target = new TestHost(relay.url(), "target", targetKey).enrol();
      TestHost idle = new TestHost(relay.url(), "idle").enrol();
      int senders = 6;
      List<TestHost> hosts = new ArrayList<>();
      for (int i = 0; i < senders; i++) {
        hosts.add(new TestHost(relay.url(), "sender" + i).enrol());
      }
      Map<String, Long> receipts = new ConcurrentHashMap<>(); // item id -> seq, from a 200 with an accept
      Set<String> unanswered = ConcurrentHashMap.newKeySet(); // no HTTP answer at all (connection refused/closed)
      List<String> otherAnswers = new CopyOnWriteArrayList<>();
      long[] signalAt = {Long.MAX_VALUE};
      AtomicInteger answeredAfterSignal = new AtomicInteger();
      ExecutorService pool = Executors.newFixedThreadPool(senders + 1);
      // a long-poll pull nobody will satisfy: held 50 s unless the stop answers it
      Future<Http.Resp> held = pool.submit(() -> idle.get("/v2/relay/items?after=0&wait=50"));
      List<Future<?>> loads = new ArrayList<>();
      for (TestHost h : hosts) {
        loads.add(pool.submit(() -> {
          int refusedInARow = 0;
          while (relay.process.isAlive() && refusedInARow < 20) {
            String id = Envelopes.newId();
            try {
              Http.Resp r = h.pushEnvelope(target, id, Envelopes.sealed(id));
              JsonNode res = r.json() == null ? null : r.json().at("/results/0");
              if (r.status() == 200 && res != null && res.path("status").asText().equals("accepted")
                  && res.path("accept").path("type").asText().equals("relay-accept")) {
                receipts.put(id, res.at("/targets/0/seq").asLong());
                if (System.nanoTime() > signalAt[0]) {
                  answeredAfterSignal.incrementAndGet();
                }
              } else {
                otherAnswers.add(r.status() + " " + r.raw());
              }
              refusedInARow = 0;
            } catch (java.io.IOException noAnswer) {
              unanswered.add(id);
              refusedInARow++;
              Thread.sleep(20);
            }
          }
          return null;
        }));
      }
      Thread.sleep(1500);
      assertThat(receipts).as("load is flowing before the signal").isNotEmpty();
      signalAt[0] = System.nanoTime();
      signal(relay, "TERM");
      Http.Resp released = held.get(10, TimeUnit.SECONDS);
      long releasedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - signalAt[0]);
      assertThat(relay.process.waitFor(40, TimeUnit.SECONDS)).as("exits").isTrue();
      long stopMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - signalAt[0]);
      for (Future<?> f : loads) {
        f.get(30, TimeUnit.SECONDS);
      }
      pool.shutdownNow();

      assertThat(relay.process.exitValue()).as("exit status after SIGTERM\n%s", String.join("\n", relay.output))
          .isZero();
      assertThat(released.status()).isEqualTo(200);
      assertThat(released.json().get("items")).isEmpty();
      assertThat(releasedMs).as("the held pull is answered at the start of the drain, not at its end")
          .isLessThan(5000);
      assertThat(otherAnswers).as("every HTTP answer is an accept receipt (no 503, no reset)").isEmpty();
      assertThat(answeredAfterSignal.get()).as("requests in progress at the signal were answered").isPositive();
      awaitLine(relay, "store closed cleanly: true]"); // the output reader may lag the exit
      assertThat(String.join("\n", relay.output)).contains("stop requested [signal: SIGTERM]")
          .contains("RelayServer stopping:");

      // the store holds exactly the items whose receipts were delivered: nothing committed without its answer
      Set<String> stored = new HashSet<>();
      try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + dir.resolve("relay.db"));
          PreparedStatement ps = c.prepareStatement("SELECT item_id FROM items WHERE target_pubkey=?")) {
        ps.setString(1, targetKey.publicKeyB64());
        try (ResultSet rs = ps.executeQuery()) {
          while (rs.next()) {
            stored.add(rs.getString(1));
          }
        }
      }
      assertThat(stored).as("stored items = receipted items").isEqualTo(receipts.keySet());
      assertThat(stored).as("a request without an answer left nothing behind").doesNotContainAnyElementsOf(unanswered);
      System.out.printf("graceful stop under load: %d accepted (%d answered after SIGTERM), %d without an answer"
              + " (after the listener closed), held pull answered %d ms after SIGTERM, exit 0 after %d ms%n",
          receipts.size(), answeredAfterSignal.get(), unanswered.size(), releasedMs, stopMs);
    }
  }

  @Test
  void sighup_reloads_the_log_level_from_the_file_and_the_relay_keeps_serving(@TempDir Path dir) throws Exception {
    Path conf = Files.writeString(dir.resolve("relay.json"), "{\"log\":{\"level\":\"INFO\"}}");
    Path store = dir.resolve("store");
    try (ChildRelay relay = ChildRelay.start(store, Map.of(), "--config", conf.toString())) {
      Files.writeString(conf, "{\"log\":{\"level\":\"debug\"},\"limits\":{\"maxBatch\":10}}");
      signal(relay, "HUP");
      awaitLine(relay, "SIGHUP: configuration reloaded [log level: INFO -> DEBUG]");
      assertThat(String.join("\n", relay.output)).contains("[changed settings that need a restart: limits]");
      Files.writeString(conf, "{\"log\":{\"level\":\"loud\"}}");
      signal(relay, "HUP");
      awaitLine(relay, "SIGHUP: configuration not reloaded, it is invalid");
      assertThat(relay.process.isAlive()).isTrue();
      assertThat(Http.send(relay.url(), "GET", "/v2/relay/info", null).status()).as("still serving").isEqualTo(200);
      signal(relay, "TERM");
      assertThat(relay.process.waitFor(30, TimeUnit.SECONDS)).isTrue();
      assertThat(relay.process.exitValue()).isZero();
    }
    ChildRelay.Cli log = ChildRelay.cli(Map.of(), "log", "--json", "--store-dir", store.toString());
    assertThat(log.exit()).isZero();
    assertThat(Json.parse(log.out()).toString()).contains("\"op\":\"reload\"").contains("\"to\":\"DEBUG\"");
  }

  @Test
  void a_second_relay_on_a_held_store_fails_at_once_or_with_wait_says_at_once_that_it_waits_and_for_which_pid(
      @TempDir Path dir) throws Exception {
    try (ChildRelay first = ChildRelay.start(dir, Map.of())) {
      // issue 22 item 5: without --wait it fails at once, naming the holder
      ChildRelay.Cli refused = ChildRelay.cli(Map.of("MBX_RELAY_ADMIN_PORT", "0"), "serve", "--port", "0", "--bind",
          "127.0.0.1", "--store-dir", dir.toString());
      assertThat(refused.exit()).as(refused.err()).isEqualTo(1);
      assertThat(refused.err()).contains("is in use by pid " + first.process.pid() + " (another relay process serves"
          + " it); stop that one first, or start with --wait");
      ProcessBuilder pb = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
          "-jar", ChildRelay.jar().toString(), "serve", "--port", "0", "--bind", "127.0.0.1", "--wait",
          "--store-dir", dir.toString()).redirectErrorStream(true);
      pb.environment().remove("MBX_RELAY_KEY");
      pb.environment().put("MBX_RELAY_ADMIN_PORT", "0");
      long t0 = System.nanoTime();
      Process second = pb.start();
      try {
        CompletableFuture<String> waiting = new CompletableFuture<>();
        Thread reader = new Thread(() -> {
          try (BufferedReader r = new BufferedReader(new InputStreamReader(second.getInputStream(),
              StandardCharsets.UTF_8))) {
            String line;
            while ((line = r.readLine()) != null) {
              if (line.contains("to release the store")) {
                waiting.complete(line);
              }
            }
          } catch (java.io.IOException ignored) {
            // gone
          }
          waiting.complete("");
        });
        reader.setDaemon(true);
        reader.start();
        String line = waiting.get(30, TimeUnit.SECONDS);
        long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
        assertThat(line).contains("waiting for pid " + first.process.pid() + " to release the store")
            .contains("of 60 s]");
        assertThat(ms).as("said at once, not after the 60 s wait").isLessThan(20_000);
      } finally {
        second.destroyForcibly();
        second.waitFor(30, TimeUnit.SECONDS);
      }
    }
  }

  @Test
  void version_prints_the_version_of_the_jar(@TempDir Path dir) throws Exception {
    String version;
    try (JarFile jar = new JarFile(ChildRelay.jar().toFile())) {
      version = jar.getManifest().getMainAttributes().getValue("Implementation-Version");
    }
    assertThat(version).isNotBlank();
    ChildRelay.Cli v = ChildRelay.cli(Map.of("HOME", dir.toString()), "--version");
    assertThat(v.exit()).isZero();
    assertThat(v.out().trim()).isEqualTo("mbxrelay " + version);
  }

  /**
   * Sends a signal with kill(1). Not {@code Process.destroy()}: besides SIGTERM it closes our ends of the child's
   * pipes, and the relay's stop lines would be lost.
   */
  private static void signal(ChildRelay relay, String name) throws Exception {
    Process kill = new ProcessBuilder("kill", "-" + name, Long.toString(relay.process.pid())).start();
    assertThat(kill.waitFor(10, TimeUnit.SECONDS)).isTrue();
    assertThat(kill.exitValue()).isZero();
  }

  private static void awaitLine(ChildRelay relay, String text) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
    while (relay.output.stream().noneMatch(l -> l.contains(text)) && System.nanoTime() < deadline) {
      Thread.sleep(50);
    }
    assertThat(String.join("\n", relay.output)).contains(text);
  }
}
