package io.mbxrelay.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.mbxrelay.testing.Envelopes;
import io.mbxrelay.testing.Http;
import io.mbxrelay.testing.RawHttp;
import io.mbxrelay.testing.RelayHarness;
import io.mbxrelay.testing.TestHost;
import io.mbxrelay.wire.Json;
import java.io.OutputStream;
import java.net.ConnectException;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Clock;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The stop is a drain (issue 12 item 1), in-process: while a request is in progress the relay answers {@code /ready}
 * 503, refuses new connections, answers a held long-poll pull at once, and still answers the request in progress
 * (with its accept receipt) before it closes. The signal and exit-status half is {@code GracefulStopIT}.
 */
@Timeout(60)
class GracefulStopTest {
  @TempDir
  Path dir;

  @Test
  void a_stop_answers_ready_503_refuses_new_connections_releases_long_polls_and_finishes_the_request_in_progress()
      throws Exception {
    RelayHarness relay = RelayHarness.start(dir, Map.of("MBX_RELAY_HTTP_SHUTDOWN_GRACE_MS", "20000"),
        Clock.systemUTC(), io.mbxrelay.crypto.Ed25519KeyPair.generate());
    CompletableFuture<Void> stop = null;
    io.mbxrelay.crypto.Ed25519KeyPair targetKey = io.mbxrelay.crypto.Ed25519KeyPair.generate();
    String id = Envelopes.newId();
    try {
      int port = relay.server.port();
      TestHost sender = new TestHost(relay.url(), "sender").enrol();
      TestHost target = new TestHost(relay.url(), "target", targetKey).enrol();
      TestHost idle = new TestHost(relay.url(), "idle").enrol();
      assertThat(Http.send(relay.adminUrl(), "GET", "/ready", null).status()).isEqualTo(200);

      // a long-poll pull for a host nobody writes to: it would be held for 50 s
      CompletableFuture<Http.Resp> held = CompletableFuture.supplyAsync(() -> {
        try {
          return idle.get("/v2/relay/items?after=0&wait=50");
        } catch (Exception e) {
          throw new IllegalStateException(e);
        }
      });
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
      while (relay.server.metrics().registry().find("mbxrelay_pull_waiting").gauge() != null
          && relay.server.metrics().registry().find("mbxrelay_pull_waiting").gauge().value() < 1
          && System.nanoTime() < deadline) {
        Thread.sleep(20);
      }

      // a push in progress: its head and half its body are sent, the rest comes after the stop began
      byte[] body = Json.stringify(Json.MAPPER.createObjectNode().set("items", Json.MAPPER.createArrayNode()
          .add(TestHost.item("envelope", id, List.of(target.pub()), List.of(Envelopes.sealed(id))))))
          .getBytes(StandardCharsets.UTF_8);
      try (Socket s = new Socket("127.0.0.1", port)) {
        s.setSoTimeout(30_000);
        OutputStream out = s.getOutputStream();
        out.write(RawHttp.signedHead(sender.key, sender.pub(), "POST", "/v2/relay/items", System.currentTimeMillis(),
            body, body.length).getBytes(StandardCharsets.ISO_8859_1));
        out.write(body, 0, body.length / 2);
        out.flush();
        Thread.sleep(200); // the relay has read the head: the request is in progress

        long stopAt = System.nanoTime();
        stop = CompletableFuture.runAsync(relay::close);

        Http.Resp released = held.get(5, TimeUnit.SECONDS);
        assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - stopAt)).as("held pull answered at drain start")
            .isLessThan(3000);
        assertThat(released.status()).isEqualTo(200);
        assertThat(released.json().get("items")).isEmpty();

        Http.Resp ready = awaitReady503(relay.adminUrl());
        assertThat(ready.json().get("failing").toString()).contains("relay is stopping");
        assertThatThrownBy(() -> new Socket("127.0.0.1", port).close()).as("the listener is closed")
            .isInstanceOf(ConnectException.class);
        assertThat(stop).as("the stop waits for the request in progress").isNotDone();

        out.write(body, body.length / 2, body.length - body.length / 2);
        out.flush();
        RawHttp.Answer a = RawHttp.read(s.getInputStream(), false);
        assertThat(a.status()).isEqualTo(200);
        assertThat(a.header("connection")).isEqualTo("close");
        assertThat(Json.parse(a.body()).at("/results/0/status").asText()).isEqualTo("accepted");
        assertThat(Json.parse(a.body()).at("/results/0/accept/type").asText()).isEqualTo("relay-accept");
        assertThat(s.getInputStream().read()).as("closed after the answer").isEqualTo(-1);
      }
      stop.get(15, TimeUnit.SECONDS);
    } finally {
      if (stop == null) {
        relay.close();
      }
    }
    // the answered push was committed: the item is there after a restart
    try (RelayHarness again = RelayHarness.start(dir, Map.of(), Clock.systemUTC(), relay.relayKey)) {
      Http.Resp page = new TestHost(again.url(), "target", targetKey).pull(0, null, null);
      assertThat(page.json().at("/items/0/item_id").asText()).isEqualTo(id);
    }
  }

  private static Http.Resp awaitReady503(String admin) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
    Http.Resp r = Http.send(admin, "GET", "/ready", null);
    while (r.status() != 503 && System.nanoTime() < deadline) {
      Thread.sleep(20);
      r = Http.send(admin, "GET", "/ready", null);
    }
    return r;
  }
}
