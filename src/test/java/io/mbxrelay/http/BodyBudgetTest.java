package io.mbxrelay.http;

import static org.assertj.core.api.Assertions.assertThat;

import io.mbxrelay.crypto.Ed25519KeyPair;
import io.mbxrelay.server.HttpVerticle;
import io.mbxrelay.testing.Envelopes;
import io.mbxrelay.testing.Http;
import io.mbxrelay.testing.RawHttp;
import io.mbxrelay.testing.RelayHarness;
import io.mbxrelay.testing.TestHost;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Clock;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.function.LongSupplier;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 11 item 2 and issue 10 item 13: the global in-flight body budget, the push rate read from the headers, and h2c
 * off by default (with a stream cap when on). The relay here has 1 MiB bodies and a 4 MiB budget, so 4 large bodies
 * fill it; the report's relays died of 40 concurrent 8 MiB bodies (OutOfMemoryError) instead.
 */
class BodyBudgetTest {
  private static final int BODY = 1 << 20;
  private static final long BUDGET = 4L << 20;
  /** The refusal of a state-changing request whose body was not read: nothing stored (issue 20 item 4). */
  private static final String BUSY = "{\"error\":\"relay busy; retry later\",\"outcome\":\"not_stored\"}";

  @TempDir
  static Path dir;
  static RelayHarness relay;
  static TestHost a;
  static TestHost b;

  @BeforeAll
  static void start() throws Exception {
    relay = RelayHarness.start(dir, Map.of("MBX_RELAY_HTTP_MAX_BODY_BYTES", Integer.toString(BODY),
        "MBX_RELAY_HTTP_MAX_IN_FLIGHT_BODY_BYTES", Long.toString(BUDGET),
        // every test client here is 127.0.0.1; the per-client share has a test of its own below
        "MBX_RELAY_HTTP_MAX_IN_FLIGHT_BODY_BYTES_PER_CLIENT", Long.toString(BUDGET),
        "MBX_RELAY_LIMITS_PUSH_REQUESTS_PER_MINUTE", "5"), Clock.systemUTC(), Ed25519KeyPair.generate());
    a = new TestHost(relay.url(), "budget-a").enrol();
    b = new TestHost(relay.url(), "budget-b").enrol();
  }

  @AfterAll
  static void stop() {
    relay.close();
  }

  private static BodyBudget budget() {
    return relay.server.bodyBudget();
  }

  /** Waits (bounded, polling the relay's state, not a timer) until {@code value} equals {@code expected}. */
  private static void awaitValue(LongSupplier value, long expected) throws InterruptedException {
    long deadline = System.nanoTime() + 10_000_000_000L;
    while (value.getAsLong() != expected && System.nanoTime() < deadline) {
      Thread.sleep(5);
    }
    assertThat(value.getAsLong()).isEqualTo(expected);
  }

  /** A signed ack of exactly {@link #BODY} bytes (padded with an extra member the relay ignores). */
  private static byte[] bigAck(String epoch) {
    String start = "{\"epoch\":\"" + epoch + "\",\"through\":0,\"pad\":\"";
    char[] pad = new char[BODY - start.length() - 2];
    Arrays.fill(pad, 'x');
    return (start + new String(pad) + "\"}").getBytes(StandardCharsets.UTF_8);
  }

  /** Opens a connection and sends the head and the first half of a large signed body; the rest is held back. */
  private static Socket halfSent(TestHost h, byte[] body) throws Exception {
    Socket s = new Socket("127.0.0.1", relay.server.port());
    s.setSoTimeout(10_000);
    OutputStream out = s.getOutputStream();
    out.write(RawHttp.signedHead(h.key, h.pub(), "POST", "/v2/relay/ack", System.currentTimeMillis(), body,
        body.length).getBytes(StandardCharsets.ISO_8859_1));
    out.write(body, 0, body.length / 2);
    out.flush();
    return s;
  }

  /**
   * 4 large bodies in flight fill the budget; 36 more sent at once are each answered 503 with {@code Retry-After}
   * before their bodies are read; the held ones complete (success) or are cut off (reset), and every byte of the
   * budget comes back; the relay keeps answering throughout.
   */
  @Test
  void many_large_concurrent_bodies_over_the_budget_get_503_before_they_are_read_and_the_budget_comes_back()
      throws Exception {
    String epoch = relay.server.epoch();
    byte[] body = bigAck(epoch);
    List<Socket> held = new ArrayList<>();
    for (int i = 0; i < 4; i++) {
      held.add(halfSent(i % 2 == 0 ? a : b, body));
    }
    awaitValue(() -> budget().used(), BUDGET);

    ExecutorService pool = Executors.newFixedThreadPool(12);
    try {
      List<Future<RawHttp.Answer>> refused = new ArrayList<>();
      for (int i = 0; i < 36; i++) {
        TestHost h = i % 2 == 0 ? a : b;
        refused.add(pool.submit(() -> RawHttp.exchange(relay.server.port(), RawHttp.signedHead(h.key, h.pub(),
            "POST", "/v2/relay/ack", System.currentTimeMillis(), body, body.length), null, 10_000)));
      }
      for (Future<RawHttp.Answer> f : refused) {
        RawHttp.Answer r = f.get();
        assertThat(r.status()).isEqualTo(503);
        assertThat(r.body()).isEqualTo(BUSY);
        assertThat(r.header("retry-after")).isEqualTo("1");
        assertThat(r.header("connection")).isEqualTo("close");
      }
    } finally {
      pool.shutdownNow();
    }
    // a request without a body is not held up by the budget
    assertThat(Http.send(relay.url(), "GET", "/v2/relay/info", null).status()).isEqualTo(200);
    // a chunked body (no content-length) is taken chunk by chunk: its first chunk does not fit
    try (Socket s = new Socket("127.0.0.1", relay.server.port())) {
      s.setSoTimeout(10_000);
      String head = RawHttp.signedHead(a.key, a.pub(), "POST", "/v2/relay/ack", System.currentTimeMillis(), body, -1)
          .replace("\r\n\r\n", "\r\ntransfer-encoding: chunked\r\n\r\n");
      s.getOutputStream().write(head.getBytes(StandardCharsets.ISO_8859_1));
      s.getOutputStream().write(("1000\r\n" + "x".repeat(0x1000) + "\r\n").getBytes(StandardCharsets.US_ASCII));
      RawHttp.Answer r = RawHttp.read(s.getInputStream(), false);
      assertThat(r.status()).isEqualTo(503);
      assertThat(r.body()).isEqualTo(BUSY);
    }
    assertThat(budget().used()).isEqualTo(BUDGET);

    // two held bodies complete: answered, their bytes given back
    for (int i = 0; i < 2; i++) {
      Socket s = held.get(i);
      s.getOutputStream().write(body, body.length / 2, body.length - body.length / 2);
      s.getOutputStream().flush();
      RawHttp.Answer r = RawHttp.read(s.getInputStream(), false);
      assertThat(r.status()).as(r.body()).isEqualTo(200);
      s.close();
    }
    awaitValue(() -> budget().used(), BUDGET / 2);
    // two are reset mid-body: their bytes come back too
    for (int i = 2; i < 4; i++) {
      held.get(i).setSoLinger(true, 0);
      held.get(i).close();
    }
    awaitValue(() -> budget().used(), 0);
    // a refused caller's retry gets in once there is room; the relay kept answering all along
    try (Socket s = halfSent(a, body)) {
      s.getOutputStream().write(body, body.length / 2, body.length - body.length / 2);
      assertThat(RawHttp.read(s.getInputStream(), false).status()).isEqualTo(200);
    }
    awaitValue(() -> budget().used(), 0);
    assertThat(budget().refused()).isGreaterThanOrEqualTo(37);
  }

  /** An answer that ends in an error (here 400 for a body that is not JSON) gives its bytes back as well. */
  @Test
  void a_body_answered_with_an_error_gives_its_bytes_back() throws Exception {
    byte[] junk = new byte[BODY / 2];
    Arrays.fill(junk, (byte) '!');
    RawHttp.Answer r = RawHttp.exchange(relay.server.port(), RawHttp.signedHead(b.key, b.pub(), "POST",
        "/v2/relay/ack", System.currentTimeMillis(), junk, junk.length), junk, 10_000);
    assertThat(r.status()).isEqualTo(400);
    assertThat(r.body()).isEqualTo("{\"error\":\"request body is not valid JSON\"}");
    awaitValue(() -> budget().used(), 0);
  }

  /**
   * The push rate (docs/protocol.md §3: per sender key per sliding minute; 5 here) is read from the headers: a sender over it
   * is answered before its items are read — 429 with {@code Retry-After} on v2, the wire's own 413 answer on v1 —
   * and a push with a bad signature never counts against the key it names, so nobody can use up another host's window.
   */
  @Test
  void a_sender_over_its_push_rate_is_refused_from_its_headers_and_bad_signatures_never_count() throws Exception {
    TestHost sender = new TestHost(relay.url(), "budget-rate").enrol();
    Ed25519KeyPair forger = Ed25519KeyPair.generate();
    String fake = "{\"items\":[]}";
    for (int i = 0; i < 10; i++) {
      String ts = Long.toString(System.currentTimeMillis());
      Http.Resp r = Http.send(relay.url(), "POST", "/v2/relay/items", fake, sender.pub(), null, ts,
          Http.sign(forger, "POST", "/v2/relay/items", ts, fake));
      assertThat(r.status()).isEqualTo(401);
    }
    for (int i = 0; i < 5; i++) {
      String id = Envelopes.newId();
      assertThat(sender.pushEnvelope(a, id, Envelopes.sealed(id)).json().get("results").get(0).get("status")
          .asText()).isEqualTo("accepted");
    }
    RawHttp.Answer v2 = RawHttp.exchange(relay.server.port(), RawHttp.signedHead(sender.key, sender.pub(), "POST",
        "/v2/relay/items", System.currentTimeMillis(), new byte[0], 900_000), null, 5000);
    assertThat(v2.status()).isEqualTo(429);
    assertThat(v2.body()).isEqualTo("{\"error\":\"push rate exceeded (5/min)\"}");
    assertThat(Long.parseLong(v2.header("retry-after"))).isBetween(1L, 60L);
    assertThat(v2.header("connection")).isEqualTo("close");
    RawHttp.Answer v1 = RawHttp.exchange(relay.server.port(), RawHttp.signedHead(sender.key, sender.pub(), "POST",
        "/v1/relay/messages", System.currentTimeMillis(), new byte[0], 900_000), null, 5000);
    assertThat(v1.status()).isEqualTo(413);
    assertThat(v1.body()).isEqualTo("{\"stored\":0,\"error\":\"push rate exceeded (5/min)\"}");
    // other senders are unaffected
    String id = Envelopes.newId();
    assertThat(b.pushEnvelope(a, id, Envelopes.sealed(id)).status()).isEqualTo(200);
  }

  private static final byte[] H2_PREFACE = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".getBytes(StandardCharsets.US_ASCII);

  /** The first bytes the relay sends after an HTTP/2 prior-knowledge preface and an empty SETTINGS frame. */
  private static byte[] afterPreface(int port) throws Exception {
    try (Socket s = new Socket("127.0.0.1", port)) {
      s.setSoTimeout(5000);
      s.getOutputStream().write(H2_PREFACE);
      s.getOutputStream().write(new byte[] {0, 0, 0, 4, 0, 0, 0, 0, 0}); // SETTINGS, no parameters
      s.getOutputStream().flush();
      InputStream in = s.getInputStream();
      byte[] buf = new byte[256];
      int n = in.read(buf);
      return n <= 0 ? new byte[0] : Arrays.copyOf(buf, n);
    }
  }

  /**
   * The report: one HTTP/2 cleartext connection with 40 streams buffered 40 bodies at once (h2c was on by default).
   * Now the relay speaks only HTTP/1.1 unless {@code http.h2c} is set; when set, it announces
   * {@code SETTINGS_MAX_CONCURRENT_STREAMS} = {@code http.maxConcurrentStreams}.
   */
  @Test
  void h2c_is_off_by_default_and_when_configured_announces_its_stream_cap(@TempDir Path other) throws Exception {
    byte[] off = afterPreface(relay.server.port());
    assertThat(off.length < 9 || off[3] != 4).as("no HTTP/2 SETTINGS frame").isTrue();
    try (RelayHarness h2 = RelayHarness.start(other, Map.of("MBX_RELAY_HTTP_H2C", "true",
        "MBX_RELAY_HTTP_MAX_CONCURRENT_STREAMS", "8"), Clock.systemUTC(), Ed25519KeyPair.generate())) {
      byte[] on = afterPreface(h2.server.port());
      assertThat(on.length).isGreaterThanOrEqualTo(9);
      assertThat(on[3]).as("frame type SETTINGS").isEqualTo((byte) 4);
      int len = ((on[0] & 0xFF) << 16) | ((on[1] & 0xFF) << 8) | (on[2] & 0xFF);
      Long streams = null;
      for (int i = 9; i + 6 <= 9 + len && i + 6 <= on.length; i += 6) {
        int id = ((on[i] & 0xFF) << 8) | (on[i + 1] & 0xFF);
        long value = ((long) (on[i + 2] & 0xFF) << 24) | ((on[i + 3] & 0xFF) << 16) | ((on[i + 4] & 0xFF) << 8)
            | (on[i + 5] & 0xFF);
        if (id == 3) {
          streams = value;
        }
      }
      assertThat(streams).as("SETTINGS_MAX_CONCURRENT_STREAMS").isEqualTo(8L);
    }
  }

  /**
   * A body that does not arrive within {@code http.requestTimeoutMs} is answered 408 and its bytes are given back.
   * This relay's own request timer decides when (3 s, the least the writer deadline allows); the test only reads the
   * answer.
   */
  @Test
  void a_body_that_stops_arriving_is_answered_408_and_gives_its_bytes_back(@TempDir Path other) throws Exception {
    try (RelayHarness slow = RelayHarness.start(other, Map.of("MBX_RELAY_HTTP_REQUEST_TIMEOUT_MS", "3000",
        "MBX_RELAY_STORE_WRITER_TIMEOUT_MS", "1000", "MBX_RELAY_HTTP_MAX_BODY_BYTES", Integer.toString(BODY),
        "MBX_RELAY_HTTP_MAX_IN_FLIGHT_BODY_BYTES", Long.toString(BUDGET)),
        Clock.systemUTC(), Ed25519KeyPair.generate())) {
      TestHost h = new TestHost(slow.url(), "budget-slow").enrol();
      byte[] body = bigAck(slow.server.epoch());
      try (Socket s = new Socket("127.0.0.1", slow.server.port())) {
        s.setSoTimeout(10_000);
        s.getOutputStream().write(RawHttp.signedHead(h.key, h.pub(), "POST", "/v2/relay/ack",
            System.currentTimeMillis(), body, body.length).getBytes(StandardCharsets.ISO_8859_1));
        s.getOutputStream().write(body, 0, 1000);
        BodyBudget used = slow.server.bodyBudget();
        assertThat(used.used()).isLessThanOrEqualTo(body.length);
        RawHttp.Answer r = RawHttp.read(s.getInputStream(), false);
        assertThat(r.status()).isEqualTo(408);
        assertThat(r.body()).isEqualTo("{\"error\":\"request timeout\"}");
        awaitValue(used::used, 0);
      }
    }
  }

  /**
   * Review finding: a client without a key (hop headers name public keys; the signature covers the body, so it cannot
   * be checked first) opened connections that declared large bodies and sent one byte, and took the whole budget
   * for the request timeout: every host's push was answered 503. Now one client address holds at most its share
   * (here the default: a quarter of the 4 MiB budget, but at least two 1 MiB bodies), and hosts from another address
   * keep pushing.
   */
  @Test
  void one_address_declaring_large_bodies_holds_only_its_share_and_other_clients_keep_pushing(@TempDir Path other)
      throws Exception {
    try (RelayHarness r = RelayHarness.start(other, Map.of("MBX_RELAY_HTTP_MAX_BODY_BYTES", Integer.toString(BODY),
        "MBX_RELAY_HTTP_MAX_IN_FLIGHT_BODY_BYTES", Long.toString(BUDGET)), Clock.systemUTC(),
        Ed25519KeyPair.generate())) {
      TestHost victim = new TestHost(r.url(), "budget-victim").enrol();
      TestHost peer = new TestHost(r.url(), "budget-peer").enrol();
      byte[] body = bigAck(r.server.epoch());
      List<Socket> held = new ArrayList<>();
      int refused = 0;
      try {
        for (int i = 0; i < 8; i++) {
          Socket s = new Socket();
          s.bind(new java.net.InetSocketAddress("127.0.0.2", 0));
          s.connect(new java.net.InetSocketAddress("127.0.0.1", r.server.port()));
          s.setSoTimeout(10_000);
          held.add(s);
          // the victim's public key and a fresh time; the signature would fail, but only once the body is in
          s.getOutputStream().write(RawHttp.signedHead(peer.key, victim.pub(), "POST", "/v2/relay/ack",
              System.currentTimeMillis(), body, body.length).getBytes(StandardCharsets.ISO_8859_1));
          s.getOutputStream().write(body, 0, 1);
          s.getOutputStream().flush();
        }
        awaitValue(() -> r.server.bodyBudget().used(), 2L * BODY);
        for (Socket s : held) {
          s.setSoTimeout(1_500); // a held body gets no answer while it is not sent; a refused one gets 503 at once
          RawHttp.Answer a = RawHttp.read(s.getInputStream(), false);
          if (a.status() != 0) { // 0: no answer in time, one of the two bodies within the share
            assertThat(a.status()).isEqualTo(503);
            assertThat(a.body()).isEqualTo(BUSY);
            refused++;
          }
        }
        assertThat(refused).as("connections over the address's share answered at once").isEqualTo(6);
        // the victim and its peer, from 127.0.0.1, are not held up
        String id = Envelopes.newId();
        assertThat(peer.pushEnvelope(victim, id, Envelopes.sealed(id)).status()).isEqualTo(200);
        assertThat(victim.pull(0, null, null).json().get("items")).hasSize(1);
      } finally {
        for (Socket s : held) {
          s.close();
        }
      }
      awaitValue(() -> r.server.bodyBudget().used(), 0);
    }
  }
}
