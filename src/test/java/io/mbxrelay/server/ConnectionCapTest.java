package io.mbxrelay.server;

import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Level;
import io.mbxrelay.crypto.Ed25519KeyPair;
import io.mbxrelay.http.ConnectionGate;
import io.mbxrelay.testing.ExpectedLog;
import io.mbxrelay.testing.RawHttp;
import io.mbxrelay.testing.RelayHarness;
import io.mbxrelay.testing.Scrape;
import java.io.IOException;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Clock;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 18 goal 4: the relay port's connection cap ({@code http.maxConnections}) over real sockets. Connections over
 * the cap are answered 503 with {@code Retry-After} and closed, counted in a metric and logged once (rate-limited),
 * and a connection that closes frees its place for the next one. The count spans both HTTP instances.
 */
class ConnectionCapTest {
  @org.junit.jupiter.api.extension.RegisterExtension
  static final ExpectedLog LOGS = ExpectedLog.forClass()
      .and(ConnectionGate.class, Level.WARN, "connection refused: the relay holds its cap of connections");

  private static final String INFO = "GET /v2/relay/info HTTP/1.1\r\nHost: relay\r\n\r\n";

  @TempDir
  Path dir;

  /** A keep-alive connection that has been served once (so the relay counted it). */
  private static Socket served(int port) throws IOException {
    Socket s = new Socket("127.0.0.1", port);
    s.setSoTimeout(10_000);
    RawHttp.Answer a = ask(s);
    assertThat(a.status()).as(a.body()).isEqualTo(200);
    return s;
  }

  private static RawHttp.Answer ask(Socket s) throws IOException {
    OutputStream out = s.getOutputStream();
    out.write(INFO.getBytes(StandardCharsets.ISO_8859_1));
    out.flush();
    return RawHttp.read(s.getInputStream(), true);
  }

  /** Waits (bounded) until the open-connection gauge reads {@code n}; the relay counts a close when it sees it. */
  private static double awaitOpen(String admin, double n) throws Exception {
    long deadline = System.currentTimeMillis() + 10_000;
    double v = Scrape.of(admin).value("mbxrelay_http_connections_open");
    while (v != n && System.currentTimeMillis() < deadline) {
      Thread.sleep(20);
      v = Scrape.of(admin).value("mbxrelay_http_connections_open");
    }
    return v;
  }

  @Test
  void the_sixth_connection_over_a_cap_of_five_gets_503_with_retry_after_and_a_closed_one_makes_room() throws Exception {
    List<Socket> held = new ArrayList<>();
    try (RelayHarness relay = RelayHarness.start(dir, Map.of("MBX_RELAY_HTTP_MAX_CONNECTIONS", "5"),
        Clock.systemUTC(), Ed25519KeyPair.generate())) {
      int port = relay.server.port();
      for (int i = 0; i < 5; i++) {
        held.add(served(port));
      }
      assertThat(awaitOpen(relay.adminUrl(), 5)).isEqualTo(5);
      Scrape before = Scrape.of(relay.adminUrl());
      assertThat(before.value("mbxrelay_http_connections_max")).isEqualTo(5);
      assertThat(before.value("mbxrelay_http_connections_refused_total")).isZero();

      try (Socket sixth = new Socket("127.0.0.1", port)) {
        sixth.setSoTimeout(10_000);
        RawHttp.Answer refused = ask(sixth);
        assertThat(refused.status()).isEqualTo(503);
        assertThat(refused.header("retry-after")).isEqualTo(Integer.toString(ConnectionGate.RETRY_AFTER_SECONDS));
        assertThat(refused.body()).isEqualTo("{\"error\":\"relay busy; retry later\"}");
        assertThat(refused.closed()).as("the relay closes a refused connection").isTrue();
      }
      Scrape after = Scrape.of(relay.adminUrl());
      assertThat(after.value("mbxrelay_http_connections_refused_total")).isEqualTo(1);
      assertThat(after.value("mbxrelay_http_connections_open")).isEqualTo(5);
      LOGS.assertSeen("connection refused: the relay holds its cap of connections");

      // the held connections are still served
      assertThat(ask(held.get(1)).status()).isEqualTo(200);
      held.remove(0).close();
      assertThat(awaitOpen(relay.adminUrl(), 4)).isEqualTo(4);
      held.add(served(port));
      assertThat(awaitOpen(relay.adminUrl(), 5)).isEqualTo(5);
      assertThat(Scrape.of(relay.adminUrl()).value("mbxrelay_http_connections_refused_total")).isEqualTo(1);
    } finally {
      for (Socket s : held) {
        s.close();
      }
    }
  }

  @Test
  void a_refused_connection_that_sends_nothing_is_closed_and_leaves_the_count_alone() throws Exception {
    List<Socket> held = new ArrayList<>();
    try (RelayHarness relay = RelayHarness.start(dir, Map.of("MBX_RELAY_HTTP_MAX_CONNECTIONS", "2"),
        Clock.systemUTC(), Ed25519KeyPair.generate())) {
      int port = relay.server.port();
      held.add(served(port));
      held.add(served(port));
      try (Socket silent = new Socket("127.0.0.1", port)) {
        silent.setSoTimeout(10_000);
        // no request: the relay closes it after its grace period instead of holding a descriptor for ever
        assertThat(silent.getInputStream().read()).isEqualTo(-1);
      }
      assertThat(awaitOpen(relay.adminUrl(), 2)).isEqualTo(2);
      assertThat(Scrape.of(relay.adminUrl()).value("mbxrelay_http_connections_refused_total")).isEqualTo(1);
      assertThat(ask(held.get(0)).status()).isEqualTo(200);
    } finally {
      for (Socket s : held) {
        s.close();
      }
    }
  }
}
