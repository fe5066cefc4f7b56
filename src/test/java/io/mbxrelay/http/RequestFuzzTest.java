package io.mbxrelay.http;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.mbxrelay.crypto.Ed25519KeyPair;
import io.mbxrelay.crypto.HopText;
import io.mbxrelay.server.HttpVerticle;
import io.mbxrelay.testing.Envelopes;
import io.mbxrelay.testing.Http;
import io.mbxrelay.testing.RawHttp;
import io.mbxrelay.testing.RelayHarness;
import io.mbxrelay.testing.TestHost;
import io.mbxrelay.wire.B64;
import io.mbxrelay.wire.CanonicalJson;
import io.mbxrelay.wire.IsoTime;
import io.mbxrelay.wire.Json;
import io.mbxrelay.wire.KeySpelling;
import java.io.BufferedInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Clock;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A request fuzzer over every route (issue 11 "Show"): a seeded generator takes real requests — signed by real
 * enrolled {@link TestHost}s, one or more per route, built the way AgentMBX clients build them — and mutates them
 * (body bytes, JSON fields, hop headers, path, query, method), re-signing about half of them so the mutation reaches
 * the route behind the hop. At least 100,000 requests go over 4 keep-alive connections to a real relay.
 *
 * <p>Asserted: no answer is a 5xx other than 503 (the only 5xx with a meaning for clients: retry later), every request
 * is answered within its socket timeout (no hang), the relay still answers an honest client afterwards, the body
 * budget is back to 0 and the heap did not grow by more than a bounded amount. Seed and count can be changed with
 * {@code -Dfuzz.seed} and {@code -Dfuzz.requests}; a failure prints the seed and the first offending requests.
 */
class RequestFuzzTest {
  private static final long SEED = Long.getLong("fuzz.seed", 0x6d62786c);
  private static final int REQUESTS = Integer.getInteger("fuzz.requests", 100_000);
  private static final int THREADS = 4;
  private static final String ADMIN = "fuzz-admin-token-0123456789abcdef0123456789";

  /** One request template: method, raw path and query, body, the host that signs it (null: unsigned). */
  private record Template(String method, String target, byte[] body, TestHost signer, Map<String, String> extra) {}

  @TempDir
  Path dir;

  @Test
  @Timeout(value = 240, unit = TimeUnit.SECONDS)
  void a_hundred_thousand_mutated_real_requests_get_no_5xx_but_503_no_hang_and_a_bounded_heap() throws Exception {
    try (RelayHarness relay = RelayHarness.start(dir, Map.of("MBX_RELAY_ADMIN_TOKEN", ADMIN,
        "MBX_RELAY_HTTP_MAX_IN_FLIGHT_BODY_BYTES", Long.toString(64L << 20)), Clock.systemUTC(),
        Ed25519KeyPair.generate())) {
      TestHost alpha = new TestHost(relay.url(), "alpha").enrol();
      TestHost beta = new TestHost(relay.url(), "beta").enrol();
      TestHost gamma = new TestHost(relay.url(), "gamma").enrol();
      TestHost rotor = new TestHost(relay.url(), "rotor").enrol();
      String id0 = Envelopes.newId();
      alpha.pushEnvelope(beta, id0, Envelopes.sealed(id0));
      List<Template> templates = templates(relay, alpha, beta, gamma, rotor);

      long heapBefore = usedHeapAfterGc();
      Map<Integer, AtomicLong> statuses = new ConcurrentHashMap<>();
      List<String> offending = java.util.Collections.synchronizedList(new ArrayList<>());
      long start = System.nanoTime();
      ExecutorService pool = Executors.newFixedThreadPool(THREADS);
      try {
        List<Future<?>> runs = new ArrayList<>();
        for (int t = 0; t < THREADS; t++) {
          long seed = SEED + t;
          int count = REQUESTS / THREADS + (t < REQUESTS % THREADS ? 1 : 0);
          runs.add(pool.submit(() -> {
            run(relay.server.port(), templates, new Random(seed), count, statuses, offending, alpha, beta);
            return null;
          }));
        }
        for (Future<?> f : runs) {
          f.get();
        }
      } finally {
        pool.shutdownNow();
      }
      long seconds = (System.nanoTime() - start) / 1_000_000_000L;
      long total = statuses.values().stream().mapToLong(AtomicLong::get).sum();
      System.out.printf("fuzz: %d requests in %d s (seed %d), statuses %s%n", total, seconds, SEED,
          new TreeMap<>(statuses));

      assertThat(total).isGreaterThanOrEqualTo(REQUESTS);
      assertThat(offending).as("5xx other than 503, or no answer (seed %d)", SEED).isEmpty();
      // the relay still serves honest clients (new ones: the fuzzer's valid admin calls may have denied its hosts),
      // and nothing is left holding body budget
      TestHost omega = new TestHost(relay.url(), "omega").enrol();
      TestHost psi = new TestHost(relay.url(), "psi").enrol();
      assertThat(omega.get("/v2/relay/info").json().get("you").get("host").asText()).isEqualTo("omega");
      String id = Envelopes.newId();
      Http.Resp push = omega.pushEnvelope(psi, id, Envelopes.sealed(id));
      assertThat(push.json().get("results").get(0).get("status").asText()).as(push.raw()).isEqualTo("accepted");
      assertThat(psi.pull(0, null, null).json().get("items")).hasSize(1);
      long deadline = System.nanoTime() + 10_000_000_000L;
      BodyBudget budget = relay.server.bodyBudget();
      while (budget.used() != 0 && System.nanoTime() < deadline) {
        Thread.sleep(10);
      }
      assertThat(budget.used()).isZero();
      long heapAfter = usedHeapAfterGc();
      assertThat(heapAfter - heapBefore).as("heap growth, bytes").isLessThan(256L << 20);
    }
  }

  private static long usedHeapAfterGc() throws InterruptedException {
    Runtime rt = Runtime.getRuntime();
    for (int i = 0; i < 3; i++) {
      System.gc();
      Thread.sleep(50);
    }
    return rt.totalMemory() - rt.freeMemory();
  }

  // ---- the corpus: real requests for every route ----

  private static List<Template> templates(RelayHarness relay, TestHost alpha, TestHost beta, TestHost gamma,
      TestHost rotor) {
    String epoch = relay.server.epoch();
    List<Template> t = new ArrayList<>();
    Map<String, String> none = Map.of();
    t.add(new Template("GET", "/v2/relay/info", null, null, none));
    t.add(new Template("GET", "/v2/relay/info", null, alpha, none));
    Ed25519KeyPair fresh = Ed25519KeyPair.generate();
    t.add(new Template("POST", "/v1/relay/challenge", json(Json.MAPPER.createObjectNode().put("host", "newbie")
        .put("pubkey", fresh.publicKeyB64())), null, none));
    ObjectNode enrolRec = Json.MAPPER.createObjectNode().put("v", 1).put("challenge", "AAAAAAAAAAAAAAAAAAAAAA")
        .put("host", "newbie").put("pubkey", fresh.publicKeyB64()).put("owner_fp", "");
    t.add(new Template("POST", "/v1/relay/enrol", json(Json.MAPPER.createObjectNode().put("host", "newbie")
        .put("pubkey", fresh.publicKeyB64()).put("owner_fp", "").put("sig",
            fresh.signB64(CanonicalJson.canonicalBytes(enrolRec)))), null, none));
    Ed25519KeyPair next = Ed25519KeyPair.generate();
    ObjectNode rotRec = Json.MAPPER.createObjectNode().put("v", 1).put("type", "host-rotation").put("host", "rotor")
        .put("old_pub", rotor.pub()).put("new_pub", next.publicKeyB64()).put("new_enc_pub", B64.encode(new byte[32]))
        .put("iat", IsoTime.format(System.currentTimeMillis()));
    byte[] rotBytes = CanonicalJson.canonicalBytes(rotRec);
    ObjectNode rotation = Json.MAPPER.createObjectNode();
    rotation.putObject("rotation").<ObjectNode>set("rec", rotRec).put("old_sig", rotor.key.signB64(rotBytes))
        .put("new_sig", next.signB64(rotBytes));
    t.add(new Template("POST", "/v2/relay/rotate", json(rotation), null, none));
    for (TestHost sender : List.of(alpha, gamma)) {
      String id = Envelopes.newId();
      ObjectNode push = Json.MAPPER.createObjectNode();
      ArrayNode items = push.putArray("items");
      items.add(TestHost.item("envelope", id, List.of(beta.pub()), List.of(Envelopes.sealed(id))));
      String id2 = Envelopes.newId();
      items.add(TestHost.item("envelope", id2, List.of(beta.pub(), alpha.pub()),
          List.of(Envelopes.sealed(id2), Envelopes.sealed(id2))));
      items.add(TestHost.item("receipt", "receipt:" + id + ":bob@beta:1", List.of(beta.pub()),
          List.of("{\"rec\":{},\"sig\":\"x\"}".getBytes(StandardCharsets.UTF_8))));
      t.add(new Template("POST", "/v2/relay/items", json(push), sender, none));
    }
    t.add(new Template("GET", "/v2/relay/items?after=0&limit=10&epoch=" + epoch, null, beta, none));
    t.add(new Template("GET", "/v2/relay/items?after=0", null, alpha, none));
    t.add(new Template("POST", "/v2/relay/ack", json(Json.MAPPER.createObjectNode().put("epoch", epoch)
        .put("through", 0)), beta, none));
    ObjectNode list = Json.MAPPER.createObjectNode().put("v", 1).put("type", "relay-senders")
        .put("host_pubkey", gamma.pub()).put("iat", IsoTime.format(System.currentTimeMillis() - 60_000));
    list.putArray("senders").add(alpha.pub()).add(beta.pub());
    ObjectNode senders = Json.MAPPER.createObjectNode();
    senders.set("list", list);
    senders.put("sig", gamma.key.signB64(CanonicalJson.canonicalBytes(list)));
    t.add(new Template("POST", "/v2/relay/senders", json(senders), gamma, none));
    String encPub = B64.encode(new byte[32]);
    ObjectNode v1ad = Json.MAPPER.createObjectNode().put("v", 1).put("host", "alpha").put("enc_pub", encPub);
    t.add(new Template("POST", "/v1/relay/enc-key", json(Json.MAPPER.createObjectNode().put("enc_pub", encPub)
        .put("sig", alpha.key.signB64(CanonicalJson.canonicalBytes(v1ad)))), alpha, none));
    long now = System.currentTimeMillis();
    ObjectNode ad = Json.MAPPER.createObjectNode().put("v", 2).put("type", "enc-ad").put("host", "alpha")
        .put("host_pubkey", alpha.pub()).put("enc_pub", encPub).put("iat", IsoTime.format(now - 1000))
        .put("exp", IsoTime.format(now + 86_400_000L));
    ObjectNode v2 = Json.MAPPER.createObjectNode();
    v2.set("ad", ad);
    v2.put("sig", alpha.key.signB64(CanonicalJson.canonicalBytes(ad)));
    t.add(new Template("POST", "/v2/relay/enc-key", json(v2), alpha, none));
    t.add(new Template("GET", "/v2/relay/enc-key?pubkey=" + enc(alpha.pub()), null, beta, none));
    t.add(new Template("GET", "/v1/relay/enc-key?host=alpha", null, beta, none));
    String mid = Envelopes.newId();
    ObjectNode v1push = Json.MAPPER.createObjectNode();
    v1push.putArray("envelopes").add(Json.parse(Envelopes.sealed(mid)));
    t.add(new Template("POST", "/v1/relay/messages", json(v1push), alpha, none));
    t.add(new Template("GET", "/v1/relay/messages?after=0", null, beta, none));
    t.add(new Template("POST", "/v1/relay/ack", json(Json.MAPPER.createObjectNode().put("cursor", 0)), beta, none));
    Map<String, String> admin = Map.of("authorization", "Bearer " + ADMIN);
    t.add(new Template("GET", "/admin/deny", null, null, admin));
    t.add(new Template("POST", "/admin/deny", json(Json.MAPPER.createObjectNode().put("kind", "host_fp")
        .put("value", Ed25519KeyPair.generate().fingerprint())), null, admin));
    t.add(new Template("DELETE", "/admin/deny", json(Json.MAPPER.createObjectNode().put("kind", "client_id")
        .put("value", "someone")), null, admin));
    return t;
  }

  private static byte[] json(JsonNode n) {
    return Json.stringify(n).getBytes(StandardCharsets.UTF_8);
  }

  private static String enc(String s) {
    return java.net.URLEncoder.encode(s, StandardCharsets.UTF_8);
  }

  // ---- one worker: mutate, send, read, classify ----

  private static final String[] PATHS = {"/v2/relay/info", "/v1/relay/challenge", "/v1/relay/enrol",
      "/v2/relay/rotate", "/v2/relay/items", "/v2/relay/ack", "/v2/relay/senders", "/v1/relay/enc-key",
      "/v2/relay/enc-key", "/v1/relay/messages", "/v1/relay/ack", "/admin/deny", "/", "/nope", "/v2/relay/./ack",
      "//v2/relay/items", "/v2/relay/items/", "/v2/relay/%61ck", "/v1/relay/../v2/relay/items", "/V2/relay/items",
      "/v2/relay/items;x=1", "/v2/relay/%", "/v2/relay/%zz", "/admin/deny/", "/v2/relay/info/.."};
  private static final String[] METHODS = {"GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"};
  private static final String[] QUERIES = {"after=0", "after=-1", "after=1e400", "after=0x10", "after=%20", "after=",
      "after=" + "1".repeat(3000) + "x", "limit=0", "limit=-5", "limit=99999999999", "limit=abc", "epoch=",
      "epoch=%ZZ", "epoch=x&epoch=y", "pubkey=%2B%2F%3D", "host=alpha", "host=ALPHA", "host=", "after=1.5&limit=2.5",
      "after[]=1", "a=%E0%A4%A", "%", "&&&", "after=0&after=1"};

  private static void run(int port, List<Template> templates, Random rnd, int count, Map<Integer, AtomicLong> statuses,
      List<String> offending, TestHost alpha, TestHost beta) throws Exception {
    Socket socket = null;
    InputStream in = null;
    OutputStream out = null;
    boolean reused = false;
    for (int i = 0; i < count; i++) {
      Template t = templates.get(rnd.nextInt(templates.size()));
      byte[] request = mutate(t, rnd, alpha, beta);
      while (true) {
        if (socket == null) {
          socket = new Socket("127.0.0.1", port);
          socket.setSoTimeout(20_000);
          socket.setTcpNoDelay(true);
          in = new BufferedInputStream(socket.getInputStream(), 1 << 16);
          out = socket.getOutputStream();
          reused = false;
        }
        RawHttp.Answer a;
        try {
          out.write(request);
          out.flush();
          a = RawHttp.read(in, false);
        } catch (java.net.SocketTimeoutException e) {
          throw new AssertionError("no answer within 20 s (hang) to: " + describe(request), e);
        } catch (IOException e) {
          a = null; // the relay closed a kept-alive connection we reused: send again on a new one
        }
        if (a == null || a.status() == 0) {
          socket.close();
          socket = null;
          if (reused) {
            continue; // a kept-alive connection the relay had closed: send again on a new one
          }
          a = new RawHttp.Answer(-1, Map.of(), "", true); // a new connection closed without an answer
        }
        reused = true;
        statuses.computeIfAbsent(a.status(), k -> new AtomicLong()).incrementAndGet();
        if ((a.status() < 0 || a.status() >= 500 && a.status() != 503) && offending.size() < 20) {
          offending.add(a.status() + " " + a.body() + " <- " + describe(request));
        }
        if (a.closed() || "close".equalsIgnoreCase(a.header("connection"))) {
          socket.close();
          socket = null;
        }
        break;
      }
    }
    if (socket != null) {
      socket.close();
    }
  }

  private static String describe(byte[] request) {
    String s = new String(request, 0, Math.min(request.length, 600), StandardCharsets.ISO_8859_1);
    return s.replace("\r\n", " | ");
  }

  /** One mutated request on the wire (head and body). */
  private static byte[] mutate(Template t, Random rnd, TestHost alpha, TestHost beta) {
    String method = t.method();
    String target = t.target();
    byte[] body = t.body() == null ? new byte[0] : t.body();
    Map<String, String> headers = new LinkedHashMap<>(t.extra());
    TestHost signer = t.signer();
    int mutations = rnd.nextInt(10) == 0 ? 0 : 1 + rnd.nextInt(3);
    boolean resign = signer != null && rnd.nextInt(2) == 0;
    boolean headerMutated = false;
    for (int m = 0; m < mutations; m++) {
      switch (rnd.nextInt(9)) {
        case 0 -> body = flipBytes(body, rnd);
        case 1 -> body = body.length == 0 ? body : Arrays.copyOf(body, rnd.nextInt(body.length));
        case 2 -> body = insert(body, rnd);
        case 3, 4 -> body = mutateJson(body, rnd, alpha, beta);
        case 5 -> {
          String path = rnd.nextInt(3) == 0 ? PATHS[rnd.nextInt(PATHS.length)] : pathOf(target);
          target = path + (rnd.nextBoolean() ? "" : "?" + QUERIES[rnd.nextInt(QUERIES.length)]);
        }
        case 6 -> {
          int q = target.indexOf('?');
          target = (q < 0 ? target : target.substring(0, q)) + "?" + QUERIES[rnd.nextInt(QUERIES.length)]
              + (rnd.nextBoolean() ? "&" + QUERIES[rnd.nextInt(QUERIES.length)] : "");
        }
        case 7 -> method = METHODS[rnd.nextInt(METHODS.length)];
        default -> headerMutated = true;
      }
    }
    if (signer != null && (resign || mutations == 0)) {
      sign(headers, signer, method, target, body, rnd);
    } else if (signer != null) {
      sign(headers, signer, t.method(), t.target(), t.body() == null ? new byte[0] : t.body(), rnd);
    }
    if (headerMutated) {
      mutateHeaders(headers, rnd, alpha, beta);
    }
    StringBuilder head = new StringBuilder(method).append(' ').append(target).append(" HTTP/1.1\r\nhost: relay\r\n");
    if (rnd.nextInt(20) != 0) {
      head.append("content-type: application/json\r\n");
    }
    headers.forEach((k, v) -> head.append(k).append(": ").append(v).append("\r\n"));
    head.append("content-length: ").append(body.length).append("\r\n\r\n");
    byte[] h = head.toString().getBytes(StandardCharsets.ISO_8859_1);
    byte[] all = Arrays.copyOf(h, h.length + body.length);
    System.arraycopy(body, 0, all, h.length, body.length);
    return all;
  }

  private static String pathOf(String target) {
    int q = target.indexOf('?');
    return q < 0 ? target : target.substring(0, q);
  }

  private static void sign(Map<String, String> headers, TestHost signer, String method, String target, byte[] body,
      Random rnd) {
    int q = target.indexOf('?');
    String path = q < 0 ? target : target.substring(0, q);
    String query = q < 0 ? null : target.substring(q + 1);
    String ts = Long.toString(System.currentTimeMillis() - rnd.nextInt(1000));
    byte[] text = HopText.signedBytes(method, HopText.signedPath(path, query), ts, body);
    if (rnd.nextInt(8) == 0) {
      headers.put("x-mbx-host", signer.name);
    } else {
      headers.put("x-mbx-key", rnd.nextInt(8) == 0 ? KeySpelling.spellings(signer.pub()).get(1 + rnd.nextInt(3))
          : signer.pub());
    }
    headers.put("x-mbx-ts", ts);
    headers.put("x-mbx-sig", signer.key.signB64(text));
  }

  private static final String[] TS_JUNK = {"", " ", "NaN", "Infinity", "-1", "0x18f0a3b5c00", "1e12",
      " 1764400000000 ", "1".repeat(15_000) + "x", "1".repeat(70), "9".repeat(30), "1_000", "\u00a01", "0b", "+"};

  private static void mutateHeaders(Map<String, String> h, Random rnd, TestHost alpha, TestHost beta) {
    switch (rnd.nextInt(8)) {
      case 0 -> h.remove(new String[] {"x-mbx-ts", "x-mbx-sig", "x-mbx-key", "x-mbx-host"}[rnd.nextInt(4)]);
      case 1 -> h.put("x-mbx-ts", TS_JUNK[rnd.nextInt(TS_JUNK.length)]);
      case 2 -> h.put("x-mbx-key", new String[] {"", "junk", alpha.pub(), beta.pub(),
          KeySpelling.spellings(beta.pub()).get(2), "A".repeat(43) + "=", "=".repeat(44)}[rnd.nextInt(7)]);
      case 3 -> h.put("x-mbx-sig", new String[] {"", "x", B64.encode(new byte[64]), "A".repeat(5000),
          "-_-_" + B64.encode(new byte[64])}[rnd.nextInt(5)]);
      case 4 -> h.put("x-mbx-host", new String[] {"", "ALPHA", "beta", "x".repeat(200), "nobody"}[rnd.nextInt(5)]);
      case 5 -> h.put("authorization", new String[] {"Bearer " + ADMIN, "Bearer x", "Basic x", ""}[rnd.nextInt(4)]);
      case 6 -> h.put("x-forwarded-for", new String[] {"1.2.3.4", "::1", "junk, 2001:db8::1", ""}[rnd.nextInt(4)]);
      default -> h.put("transfer-encoding-x", "y");
    }
  }

  private static byte[] flipBytes(byte[] body, Random rnd) {
    if (body.length == 0) {
      return body;
    }
    byte[] b = body.clone();
    for (int n = 1 + rnd.nextInt(4); n > 0; n--) {
      b[rnd.nextInt(b.length)] = (byte) rnd.nextInt(256);
    }
    return b;
  }

  private static final String[] INSERTS = {"{", "}", "[", "]", "\"", "\\", ",", ":", "null", "\u0000", "\uffff",
      "\ud800", "1e999999", "-0", "[".repeat(2000), "{\"a\":".repeat(600), "\"\\u0000\""};

  private static byte[] insert(byte[] body, Random rnd) {
    byte[] ins = rnd.nextInt(4) == 0 ? randomBytes(rnd, 1 + rnd.nextInt(16))
        : INSERTS[rnd.nextInt(INSERTS.length)].getBytes(StandardCharsets.UTF_8);
    int at = body.length == 0 ? 0 : rnd.nextInt(body.length + 1);
    byte[] out = new byte[body.length + ins.length];
    System.arraycopy(body, 0, out, 0, at);
    System.arraycopy(ins, 0, out, at, ins.length);
    System.arraycopy(body, at, out, at + ins.length, body.length - at);
    return out;
  }

  private static byte[] randomBytes(Random rnd, int n) {
    byte[] b = new byte[n];
    rnd.nextBytes(b);
    return b;
  }

  /** Replaces, removes or adds one member somewhere in the JSON body (or replaces the whole body). */
  private static byte[] mutateJson(byte[] body, Random rnd, TestHost alpha, TestHost beta) {
    JsonNode root;
    try {
      root = body.length == 0 ? Json.MAPPER.createObjectNode() : Json.parse(body);
    } catch (IllegalArgumentException e) {
      return body;
    }
    if (rnd.nextInt(10) == 0) {
      return write(value(rnd, alpha, beta), body);
    }
    List<JsonNode> containers = new ArrayList<>();
    collect(root, containers);
    if (containers.isEmpty()) {
      return body;
    }
    JsonNode c = containers.get(rnd.nextInt(containers.size()));
    if (c instanceof ObjectNode o) {
      List<String> names = new ArrayList<>();
      o.fieldNames().forEachRemaining(names::add);
      if (!names.isEmpty() && rnd.nextInt(4) == 0) {
        o.remove(names.get(rnd.nextInt(names.size())));
      } else {
        String name = names.isEmpty() || rnd.nextInt(5) == 0 ? "x" + rnd.nextInt(3) : names.get(rnd.nextInt(names.size()));
        o.set(name, value(rnd, alpha, beta));
      }
    } else if (c instanceof ArrayNode a) {
      if (a.size() > 0 && rnd.nextInt(3) == 0) {
        a.remove(rnd.nextInt(a.size()));
      } else if (a.size() > 0 && rnd.nextBoolean()) {
        a.set(rnd.nextInt(a.size()), value(rnd, alpha, beta));
      } else {
        for (int n = rnd.nextInt(5) == 0 ? 300 : 1; n > 0; n--) {
          a.add(a.size() > 0 && rnd.nextBoolean() ? a.get(0).deepCopy() : value(rnd, alpha, beta));
        }
      }
    }
    return write(root, body);
  }

  /** Jackson's writer, not the relay's: it writes what a hostile client could send (e.g. 400-digit numbers). */
  private static byte[] write(JsonNode n, byte[] otherwise) {
    try {
      return Json.MAPPER.writeValueAsBytes(n);
    } catch (java.io.IOException | RuntimeException tooDeep) {
      return otherwise; // a value nested into a nested value: deeper than the writer goes; keep the body as it was
    }
  }

  private static void collect(JsonNode n, List<JsonNode> out) {
    if (n.isContainerNode()) {
      out.add(n);
      n.forEach(child -> collect(child, out));
    }
  }

  private static JsonNode value(Random rnd, TestHost alpha, TestHost beta) {
    JsonNodeFactory f = JsonNodeFactory.instance;
    return switch (rnd.nextInt(22)) {
      case 0 -> f.nullNode();
      case 1 -> f.booleanNode(rnd.nextBoolean());
      case 2 -> f.numberNode(rnd.nextLong());
      case 3 -> f.numberNode(rnd.nextDouble() * 1e300);
      case 4 -> f.numberNode(-rnd.nextInt(1000));
      case 5 -> rnd.nextBoolean() ? f.numberNode(new java.math.BigInteger("9".repeat(1 + rnd.nextInt(400))))
          : f.numberNode(new java.math.BigDecimal("1e" + (300 + rnd.nextInt(700)))); // JS: Infinity
      case 6 -> f.textNode("");
      case 7 -> f.textNode("x".repeat(rnd.nextInt(5000)));
      case 8 -> f.textNode("1".repeat(1 + rnd.nextInt(40_000)) + "x");
      case 9 -> f.textNode(alpha.pub());
      case 10 -> f.textNode(KeySpelling.spellings(beta.pub()).get(rnd.nextInt(4)));
      case 11 -> f.textNode(Envelopes.newId());
      case 12 -> f.textNode(IsoTime.format(System.currentTimeMillis() + rnd.nextInt() * 1000L));
      case 13 -> f.textNode("\u0000\u2028\ud800\uffff");
      case 14 -> f.textNode(B64.encode(randomBytes(rnd, rnd.nextInt(2048))));
      case 15 -> f.textNode("not base64 !!!");
      case 16 -> f.arrayNode();
      case 17 -> f.objectNode();
      case 18 -> {
        ArrayNode deep = f.arrayNode();
        ArrayNode cur = deep;
        for (int i = 0; i < 200 + rnd.nextInt(700); i++) { // the relay refuses nesting over 1,000 (Jackson's bound)
          cur = cur.addArray();
        }
        yield deep;
      }
      case 19 -> f.textNode("0x" + "f".repeat(rnd.nextInt(100)));
      case 20 -> f.textNode("receipt:" + Envelopes.newId() + ":bob@beta:1");
      default -> f.textNode(new String[] {"envelope", "receipt", "expired", "message"}[rnd.nextInt(4)]);
    };
  }
}
