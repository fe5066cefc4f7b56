package io.mbxrelay.auth;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.node.ObjectNode;
import com.nimbusds.jose.JWSAlgorithm;
import com.nimbusds.jose.JWSHeader;
import com.nimbusds.jose.crypto.ECDSASigner;
import com.nimbusds.jose.jwk.Curve;
import com.nimbusds.jose.jwk.ECKey;
import com.nimbusds.jose.jwk.JWK;
import com.nimbusds.jose.jwk.JWKSet;
import com.nimbusds.jose.jwk.gen.ECKeyGenerator;
import com.nimbusds.jwt.JWTClaimsSet;
import com.nimbusds.jwt.SignedJWT;
import io.mbxrelay.crypto.Ed25519KeyPair;
import io.mbxrelay.testing.Http;
import io.mbxrelay.testing.MutableClock;
import io.mbxrelay.testing.RelayHarness;
import io.mbxrelay.wire.CanonicalJson;
import io.mbxrelay.wire.Json;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpServer;
import io.vertx.core.http.HttpServerResponse;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.util.ArrayList;
import java.util.Date;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Account-token enrolment against a local JWKS served by a test Vert.x HTTP server, with tokens minted by Nimbus
 * (issue 3 item 3; docs/protocol.md §7.8; docs/account-tokens.md). Time is a {@link MutableClock}: the unknown-kid refresh
 * interval and the JWKS cache lifetime are stepped over, never slept through.
 */
class AccountTokenEnrolmentTest {
  /** Lines these tests provoke on purpose (issue 22 item 7): kept out of the build output, asserted where provoked. */
  @org.junit.jupiter.api.extension.RegisterExtension
  static final io.mbxrelay.testing.ExpectedLog LOGS = io.mbxrelay.testing.ExpectedLog.forClass()
      .and("io.mbxrelay.auth.JwksCache", ch.qos.logback.classic.Level.WARN, "jwks fetch failed")
      .and("io.mbxrelay.auth.JwksCache", ch.qos.logback.classic.Level.WARN, "jwks fetch abandoned past its deadline")
      .and("io.mbxrelay.server.RelayServer", ch.qos.logback.classic.Level.WARN, "expiry and dedup pruning paused")
      .and("io.mbxrelay.server.ExpirySweepVerticle", ch.qos.logback.classic.Level.WARN, "expiry sweep skipped");

  private static final String ISSUER = "https://accounts.example";
  private static final String RELAY_URL = "https://relay.example";

  private Vertx vertx;
  private HttpServer jwksServer;
  private final AtomicReference<String> jwks = new AtomicReference<>();
  private final AtomicInteger jwksRequests = new AtomicInteger();
  private final AtomicBoolean jwksDown = new AtomicBoolean();
  /** How the JWKS endpoint misbehaves (issue 11 item 7), or null to answer normally. */
  private final AtomicReference<Misbehaviour> misbehave = new AtomicReference<>();
  private final AtomicLong hugeBytesWritten = new AtomicLong();
  private final AtomicBoolean hugeClosed = new AtomicBoolean();

  private enum Misbehaviour {
    /** Headers, then one byte every 100 ms, forever. */
    TRICKLE,
    /** A 64 MiB chunked answer, written as fast as the client reads it. */
    HUGE,
    /** {@code content-length} of 10 MB, then nothing. */
    DECLARED_HUGE,
    /** Never answers. */
    HANG
  }

  private static final long HUGE_TOTAL = 64L << 20;
  private ECKey k1;
  private ECKey k2;

  @BeforeEach
  void jwksServer() throws Exception {
    k1 = new ECKeyGenerator(Curve.P_256).keyID("k1").generate();
    k2 = new ECKeyGenerator(Curve.P_256).keyID("k2").generate();
    publish(k1);
    vertx = Vertx.vertx();
    jwksServer = vertx.createHttpServer().requestHandler(req -> {
      jwksRequests.incrementAndGet();
      Misbehaviour m = misbehave.get();
      if (m != null) {
        misbehave(req.response(), m);
        return;
      }
      if (jwksDown.get()) {
        req.response().setStatusCode(503).end();
      } else {
        req.response().putHeader("content-type", "application/json").end(jwks.get());
      }
    }).listen(0, "127.0.0.1").toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
  }

  @AfterEach
  void close() throws Exception {
    vertx.close().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
  }

  private void misbehave(HttpServerResponse resp, Misbehaviour m) {
    switch (m) {
      case TRICKLE -> {
        resp.setChunked(true).putHeader("content-type", "application/json").write("{");
        long t = vertx.setPeriodic(100, id -> resp.write(" "));
        resp.closeHandler(v -> vertx.cancelTimer(t));
      }
      case HUGE -> {
        hugeBytesWritten.set(0);
        hugeClosed.set(false);
        resp.setChunked(true).putHeader("content-type", "application/json");
        resp.closeHandler(v -> hugeClosed.set(true));
        writeHuge(resp, Buffer.buffer(new byte[64 * 1024]));
      }
      case DECLARED_HUGE -> resp.putHeader("content-length", "10000000").putHeader("content-type", "application/json")
          .write("{");
      case HANG -> { }
      default -> throw new IllegalStateException();
    }
  }

  /** Writes chunks while the client reads them (back-pressure), so the server never buffers the 64 MiB itself. */
  private void writeHuge(HttpServerResponse resp, Buffer chunk) {
    while (!hugeClosed.get() && hugeBytesWritten.get() < HUGE_TOTAL && !resp.writeQueueFull()) {
      resp.write(chunk);
      hugeBytesWritten.addAndGet(chunk.length());
    }
    if (hugeClosed.get()) {
      return;
    }
    if (hugeBytesWritten.get() >= HUGE_TOTAL) {
      resp.end();
    } else {
      resp.drainHandler(v -> writeHuge(resp, chunk));
    }
  }

  private void publish(JWK... keys) {
    List<JWK> pub = new ArrayList<>();
    for (JWK k : keys) {
      pub.add(k.toPublicJWK());
    }
    jwks.set(new JWKSet(pub).toString());
  }

  private Map<String, String> env(String... more) {
    Map<String, String> e = new java.util.HashMap<>(baseEnv());
    for (int i = 0; i < more.length; i += 2) {
      e.put(more[i], more[i + 1]);
    }
    return e;
  }

  private Map<String, String> baseEnv() {
    return Map.of("MBX_RELAY_ENROLMENT_AUTHORITY", "account-token",
        "MBX_RELAY_ENROLMENT_RELAY_URL", RELAY_URL,
        "MBX_RELAY_ENROLMENT_TOKEN_ISSUER", ISSUER,
        "MBX_RELAY_ENROLMENT_JWKS_URL", "http://127.0.0.1:" + jwksServer.actualPort() + "/jwks.json");
  }

  /** A token's claims, adjustable per case. */
  private static JWTClaimsSet.Builder claims(Ed25519KeyPair host, long nowMs, String account) {
    return new JWTClaimsSet.Builder().issuer(ISSUER).audience(RELAY_URL).subject("host-" + host.fingerprint())
        .issueTime(new Date(nowMs)).expirationTime(new Date(nowMs + 10 * 60_000))
        .claim("account", account).claim("org", "org-1").claim("client_id", "client-" + account)
        .jwtID(UUID.randomUUID().toString())
        .claim("cnf", Map.of("jkt", AccountTokenAuthority.thumbprint(host.publicKeyB64()).orElseThrow()));
  }

  private static String mint(ECKey key, JWTClaimsSet claims) throws Exception {
    SignedJWT jwt = new SignedJWT(new JWSHeader.Builder(JWSAlgorithm.ES256).keyID(key.getKeyID()).build(), claims);
    jwt.sign(new ECDSASigner(key));
    return jwt.serialize();
  }

  private static Http.Resp enrol(RelayHarness r, Ed25519KeyPair host, String name, String token) throws Exception {
    Http.Resp ch = Http.send(r.url(), "POST", "/v1/relay/challenge",
        "{\"host\":\"" + name + "\",\"pubkey\":\"" + host.publicKeyB64() + "\"}");
    assertThat(ch.status()).as(ch.raw()).isEqualTo(200);
    ObjectNode rec = Json.MAPPER.createObjectNode().put("v", 1).put("challenge", ch.json().get("challenge").asText())
        .put("host", name).put("pubkey", host.publicKeyB64()).put("owner_fp", "");
    ObjectNode body = Json.MAPPER.createObjectNode().put("host", name).put("pubkey", host.publicKeyB64())
        .put("owner_fp", "").put("sig", host.signB64(CanonicalJson.canonicalBytes(rec)));
    if (token != null) {
      body.putObject("proof").put("access_token", token);
    }
    return Http.send(r.url(), "POST", "/v1/relay/enrol", Json.stringify(body));
  }

  private static String denied(String reason) {
    return "{\"error\":\"enrolment not authorized: " + reason + "\",\"code\":\"DENIED\"}";
  }

  private static String[] stored(RelayHarness r, Ed25519KeyPair host) throws Exception {
    try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + r.dir.resolve("relay.db"));
        PreparedStatement ps = c.prepareStatement("SELECT e.account, e.authorized_by, c.client_id FROM enrolments e"
            + " LEFT JOIN enrolment_clients c ON c.host_pubkey = e.host_pubkey WHERE e.host_pubkey = ?")) {
      ps.setString(1, host.publicKeyB64());
      try (ResultSet rs = ps.executeQuery()) {
        assertThat(rs.next()).isTrue();
        return new String[] {rs.getString(1), rs.getString(2), rs.getString(3)};
      }
    }
  }

  private static void awaitFirstFetch(RelayHarness r) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (r.server.trust().jwks().size() == 0 && System.nanoTime() < deadline) {
      Thread.sleep(10); // the verticle's first fetch is asynchronous and real I/O
    }
    assertThat(r.server.trust().jwks().size()).isEqualTo(1);
  }

  /** A signed pull with the relay's clock as ts (the test clock may be far from the real one). */
  private static Http.Resp pull(RelayHarness r, Ed25519KeyPair host, MutableClock clock) throws Exception {
    String ts = Long.toString(clock.millis());
    return Http.send(r.url(), "GET", "/v2/relay/items?after=0", null, host.publicKeyB64(), null, ts,
        Http.sign(host, "GET", "/v2/relay/items?after=0", ts, null));
  }

  @Test
  void account_tokens_grant_with_the_account_recorded_and_each_bad_token_is_refused_with_its_reason(
      @TempDir Path dir) throws Exception {
    MutableClock clock = MutableClock.now();
    Ed25519KeyPair relayKey = Ed25519KeyPair.generate();
    Ed25519KeyPair laptop = Ed25519KeyPair.generate();
    try (RelayHarness r = RelayHarness.start(dir, env(), clock, relayKey)) {
      awaitFirstFetch(r);
      long now = clock.millis();
      assertThat(enrol(r, laptop, "laptop", mint(k1, claims(laptop, now, "acct-1").build())).raw())
          .isEqualTo("{\"ok\":true}");
      assertThat(stored(r, laptop)).containsExactly("acct-1", "account-token", "client-acct-1");
      assertThat(pull(r, laptop, clock).status()).isEqualTo(200);

      // names are unique inside a proven account only
      Ed25519KeyPair twin = Ed25519KeyPair.generate();
      Http.Resp taken = enrol(r, twin, "LAPTOP", mint(k1, claims(twin, now, "acct-1").build()));
      assertThat(taken.status()).isEqualTo(409);
      assertThat(taken.raw()).isEqualTo("{\"error\":\"host name LAPTOP is already enrolled in this account with"
          + " another key\",\"code\":\"NAME_TAKEN\"}");
      assertThat(enrol(r, twin, "laptop", mint(k1, claims(twin, now, "acct-2").build())).status()).isEqualTo(200);

      Ed25519KeyPair h = Ed25519KeyPair.generate();
      assertThat(enrol(r, h, "h", null).raw()).isEqualTo(denied("no account token"));
      assertThat(enrol(r, h, "h", "not.a.jwt").raw()).isEqualTo(denied("malformed account token"));
      assertThat(enrol(r, h, "h", mint(k1, claims(h, now, "a").audience("https://api.example").build())).raw())
          .isEqualTo(denied("token audience is not this relay"));
      assertThat(enrol(r, h, "h", mint(k1, claims(h, now, "a").issuer("https://evil.example").build())).raw())
          .isEqualTo(denied("wrong token issuer"));
      assertThat(enrol(r, h, "h", mint(k1, claims(h, now - 20 * 60_000, "a").build())).raw())
          .isEqualTo(denied("token expired"));
      assertThat(enrol(r, h, "h", mint(k1, claims(h, now, "a").expirationTime(new Date(now + 16 * 60_000)).build()))
          .raw()).isEqualTo(denied("token lifetime over the maximum"));
      assertThat(enrol(r, h, "h", mint(k1, claims(laptop, now, "a").build())).raw())
          .isEqualTo(denied("token is not bound to this host key"));
      assertThat(enrol(r, h, "h", mint(k1, claims(h, now, "a").claim("client_id", null).build())).raw())
          .isEqualTo(denied("token lacks client_id"));
      ECKey forged = new ECKeyGenerator(Curve.P_256).keyID("k1").generate();
      assertThat(enrol(r, h, "h", mint(forged, claims(h, now, "a").build())).raw())
          .isEqualTo(denied("bad token signature"));

      // unknown kid: one refetch, then none for a minute
      int before = jwksRequests.get();
      assertThat(enrol(r, h, "h", mint(k2, claims(h, now, "a").build())).raw())
          .isEqualTo(denied("unknown token signing key"));
      assertThat(jwksRequests.get()).isEqualTo(before + 1);
      assertThat(enrol(r, h, "h", mint(k2, claims(h, now, "a").build())).raw())
          .isEqualTo(denied("unknown token signing key"));
      assertThat(jwksRequests.get()).as("not more than once a minute").isEqualTo(before + 1);
      publish(k1, k2);
      clock.advance(61_000);
      now = clock.millis();
      assertThat(enrol(r, h, "h", mint(k2, claims(h, now, "a").build())).raw()).isEqualTo("{\"ok\":true}");
      assertThat(jwksRequests.get()).isEqualTo(before + 2);

      // a key that leaves the JWKS stops verifying at once (the next refresh replaces the whole set)
      publish(k2);
      assertThat(r.server.trust().jwks().refresh().toCompletableFuture().get(10, TimeUnit.SECONDS)).isTrue();
      Ed25519KeyPair h2 = Ed25519KeyPair.generate();
      assertThat(enrol(r, h2, "h2", mint(k1, claims(h2, now, "a").build())).raw())
          .isEqualTo(denied("unknown token signing key"));

      // the JWKS cannot be fetched: cached keys serve for the cache lifetime, then new enrolments fail closed
      jwksDown.set(true);
      clock.advance(30 * 60_000);
      now = clock.millis();
      assertThat(r.server.trust().jwks().refresh().toCompletableFuture().get(10, TimeUnit.SECONDS)).isFalse();
      assertThat(enrol(r, h2, "h2", mint(k2, claims(h2, now, "a").build())).raw()).isEqualTo("{\"ok\":true}");
      clock.advance(31 * 60_000 + 61_000);
      now = clock.millis();
      Ed25519KeyPair h3 = Ed25519KeyPair.generate();
      assertThat(enrol(r, h3, "h3", mint(k2, claims(h3, now, "a").build())).raw())
          .isEqualTo(denied("token signing keys unavailable"));
      // enrolled hosts keep working: hops never consult the JWKS
      assertThat(pull(r, laptop, clock).status()).isEqualTo(200);
      assertThat(pull(r, h2, clock).status()).isEqualTo(200);
    }

    // a weaker authority (the host-key challenge) never overwrites the account a stronger one recorded
    try (RelayHarness r = RelayHarness.start(dir, Map.of(), clock, relayKey)) {
      assertThat(enrol(r, laptop, "laptop-renamed", null).raw()).isEqualTo("{\"ok\":true}");
      assertThat(stored(r, laptop)).containsExactly("acct-1", "account-token", "client-acct-1");
    }
  }

  @Test
  void an_ed25519_issuer_key_signs_account_tokens_too(@TempDir Path dir) throws Exception {
    com.nimbusds.jose.jwk.OctetKeyPair ed = new com.nimbusds.jose.jwk.gen.OctetKeyPairGenerator(Curve.Ed25519)
        .keyID("k-ed").generate();
    publish(ed);
    MutableClock clock = MutableClock.now();
    Ed25519KeyPair host = Ed25519KeyPair.generate();
    try (RelayHarness r = RelayHarness.start(dir, env(), clock, Ed25519KeyPair.generate())) {
      awaitFirstFetch(r);
      long now = clock.millis();
      SignedJWT jwt = new SignedJWT(new JWSHeader.Builder(JWSAlgorithm.EdDSA).keyID("k-ed").build(),
          claims(host, now, "acct-ed").build());
      jwt.sign(new com.nimbusds.jose.crypto.Ed25519Signer(ed));
      assertThat(enrol(r, host, "edhost", jwt.serialize()).raw()).isEqualTo("{\"ok\":true}");
      assertThat(stored(r, host)).containsExactly("acct-ed", "account-token", "client-acct-ed");

      SignedJWT forged = new SignedJWT(new JWSHeader.Builder(JWSAlgorithm.EdDSA).keyID("k-ed").build(),
          claims(Ed25519KeyPair.generate(), now, "acct-ed").build());
      forged.sign(new com.nimbusds.jose.crypto.Ed25519Signer(new com.nimbusds.jose.jwk.gen.OctetKeyPairGenerator(
          Curve.Ed25519).keyID("k-ed").generate()));
      Http.Resp bad = enrol(r, Ed25519KeyPair.generate(), "other", forged.serialize());
      assertThat(bad.status()).isEqualTo(403);
    }
  }

  @Test
  void a_denied_client_id_revokes_its_enrolments_and_refuses_new_ones(@TempDir Path dir) throws Exception {
    MutableClock clock = MutableClock.now();
    String admin = "admin-token-0123456789abcdef0123456789";
    Map<String, String> e = new java.util.HashMap<>(env());
    e.put("MBX_RELAY_ADMIN_TOKEN", admin);
    try (RelayHarness r = RelayHarness.start(dir, e, clock, Ed25519KeyPair.generate())) {
      awaitFirstFetch(r);
      Ed25519KeyPair a = Ed25519KeyPair.generate();
      assertThat(enrol(r, a, "a", mint(k1, claims(a, clock.millis(), "acct-9").build())).status()).isEqualTo(200);
      Http.Resp d = Http.sendHeaders(r.url(), "POST", "/admin/deny", "{\"kind\":\"client_id\",\"value\":\"client-acct-9\"}",
          Map.of("authorization", "Bearer " + admin));
      assertThat(d.json().get("revoked").asInt()).isEqualTo(1);
      assertThat(pull(r, a, clock).raw()).isEqualTo("{\"error\":\"bad relay hop\"}");
      Ed25519KeyPair b = Ed25519KeyPair.generate();
      assertThat(enrol(r, b, "b", mint(k1, claims(b, clock.millis(), "acct-9").build())).raw())
          .isEqualTo(denied("this host is on the relay's deny list"));
    }
  }

  // ---- issue 11 items 7 and 10 ----

  @Test
  void a_token_whose_nbf_is_further_ahead_than_the_iat_skew_is_refused(@TempDir Path dir) throws Exception {
    MutableClock clock = MutableClock.now();
    try (RelayHarness r = RelayHarness.start(dir, env(), clock, Ed25519KeyPair.generate())) {
      awaitFirstFetch(r);
      long now = clock.millis();
      Ed25519KeyPair h = Ed25519KeyPair.generate();
      assertThat(enrol(r, h, "h", mint(k1, claims(h, now, "a").notBeforeTime(new Date(now + 120_000)).build())).raw())
          .isEqualTo(denied("token not yet valid"));
      assertThat(enrol(r, h, "h", mint(k1, claims(h, now, "a").notBeforeTime(new Date(now + 30_000)).build())).raw())
          .as("inside the 60 s skew").isEqualTo("{\"ok\":true}");
    }
  }

  @Test
  void a_jwks_endpoint_that_trickles_bytes_cannot_hold_a_fetch_past_its_deadline_and_the_next_fetch_recovers(
      @TempDir Path dir) throws Exception {
    misbehave.set(Misbehaviour.TRICKLE);
    MutableClock clock = MutableClock.now();
    try (RelayHarness r = RelayHarness.start(dir, env("MBX_RELAY_ENROLMENT_JWKS_FETCH_TIMEOUT_MS", "1000"), clock,
        Ed25519KeyPair.generate())) {
      long t0 = System.nanoTime();
      // joins the start-up fetch, which the endpoint keeps alive with a byte every 100 ms
      assertThat(r.server.trust().jwks().refresh().toCompletableFuture().get(20, TimeUnit.SECONDS)).isFalse();
      assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0)).isLessThan(10_000);
      misbehave.set(null);
      assertThat(r.server.trust().jwks().refresh().toCompletableFuture().get(20, TimeUnit.SECONDS)).isTrue();
      Ed25519KeyPair h = Ed25519KeyPair.generate();
      assertThat(enrol(r, h, "h", mint(k1, claims(h, clock.millis(), "a").build())).raw()).isEqualTo("{\"ok\":true}");
    }
    LOGS.assertSeen("jwks fetch"); // issue 22 item 7: the line this test provokes
  }

  @Test
  void a_huge_jwks_answer_is_cut_at_the_byte_cap_and_never_buffered_whole(@TempDir Path dir) throws Exception {
    misbehave.set(Misbehaviour.HUGE);
    try (RelayHarness r = RelayHarness.start(dir, env(), MutableClock.now(), Ed25519KeyPair.generate())) {
      assertThat(r.server.trust().jwks().refresh().toCompletableFuture().get(30, TimeUnit.SECONDS)).isFalse();
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
      while (!hugeClosed.get() && System.nanoTime() < deadline) {
        Thread.sleep(10); // real I/O: the relay resets the stream, the server sees the close
      }
      assertThat(hugeClosed).as("the relay hung up").isTrue();
      assertThat(hugeBytesWritten.get()).as("bytes the server got rid of before the relay hung up")
          .isLessThan(8L << 20);
      assertThat(r.server.trust().jwks().size()).isZero();

      // a declared content-length over the cap is refused before any body is read
      misbehave.set(Misbehaviour.DECLARED_HUGE);
      long t0 = System.nanoTime();
      assertThat(r.server.trust().jwks().refresh().toCompletableFuture().get(30, TimeUnit.SECONDS)).isFalse();
      assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0)).as("well before the 5 s deadline")
          .isLessThan(4_000);
    }
  }

  @Test
  void token_enrolments_are_answered_at_once_while_the_keys_are_unavailable_and_work_again_once_the_issuer_recovers(
      @TempDir Path dir) throws Exception {
    MutableClock clock = MutableClock.now();
    try (RelayHarness r = RelayHarness.start(dir, env("MBX_RELAY_ENROLMENT_JWKS_FETCH_TIMEOUT_MS", "60000",
        "MBX_RELAY_ENROLMENT_JWKS_CACHE_LIFETIME_MS", "60000"), clock, Ed25519KeyPair.generate())) {
      awaitFirstFetch(r);
      Ed25519KeyPair a = Ed25519KeyPair.generate();
      assertThat(enrol(r, a, "a", mint(k1, claims(a, clock.millis(), "x").build())).raw()).isEqualTo("{\"ok\":true}");

      misbehave.set(Misbehaviour.HANG);
      clock.advance(60_001); // the cached keys are past their lifetime
      for (int i = 0; i < 3; i++) {
        Ed25519KeyPair b = Ed25519KeyPair.generate();
        long t0 = System.nanoTime();
        assertThat(enrol(r, b, "b", mint(k1, claims(b, clock.millis(), "x").build())).raw())
            .isEqualTo(denied("token signing keys unavailable"));
        assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0)).as("not waiting on the hung fetch")
            .isLessThan(5_000);
      }

      // the issuer recovers; the hung fetch is past its deadline by the relay's clock, so the next enrolment's
      // background refresh starts a new fetch instead of joining it
      misbehave.set(null);
      clock.advance(61_000);
      Ed25519KeyPair c = Ed25519KeyPair.generate();
      assertThat(enrol(r, c, "c", mint(k1, claims(c, clock.millis(), "x").build())).raw())
          .isEqualTo(denied("token signing keys unavailable"));
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
      while (r.server.trust().jwks().ageSeconds() != 0 && System.nanoTime() < deadline) {
        Thread.sleep(10); // the background fetch is real I/O
      }
      assertThat(r.server.trust().jwks().ageSeconds()).isZero();
      assertThat(r.server.trust().jwks().abandoned()).isEqualTo(1);
      assertThat(enrol(r, c, "c", mint(k1, claims(c, clock.millis(), "x").build())).raw()).isEqualTo("{\"ok\":true}");
    }
  }
}
