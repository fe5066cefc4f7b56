package io.mbxrelay.host;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.mbxrelay.crypto.Ed25519KeyPair;
import io.mbxrelay.crypto.Fingerprint;
import io.mbxrelay.crypto.HopText;
import io.mbxrelay.wire.B64;
import io.mbxrelay.wire.CanonicalJson;
import io.mbxrelay.wire.Json;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.ext.web.client.HttpRequest;
import io.vertx.ext.web.client.WebClient;
import io.vertx.ext.web.client.WebClientOptions;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicReference;

/**
 * A host's session with one relay over the v2 API (docs/protocol.md §2 signed hop, §3 endpoints, §4.1 enrolment, §4.5 accept
 * receipt, §6 client behaviour): info with relay key pinning, challenge enrolment, push with receipt verification,
 * pull and ack. This is the minimal client: it keeps no outbox, inbox or position (the caller persists what it needs).
 *
 * <p><b>Results.</b> Every method returns a {@link Future} that succeeds with a sealed outcome for every answer the
 * relay can give (including error statuses and malformed bodies). The future fails only for I/O: connection refused,
 * timeout ({@link Options#requestTimeoutMs()}), TLS errors. A failed push must be retried with the same bytes (the
 * relay's dedup answers {@code duplicate} with the original seq).
 *
 * <p><b>Relay key.</b> Accept receipts are verified only against the pinned relay key ({@link RelayPin}). With a
 * {@link RelayPin.Key} the key is known from the start. With {@link RelayPin.Fingerprint} or (explicit opt-in)
 * {@link RelayPin.TrustOnFirstUse}, the key is learned from the first valid {@link #info()} — {@link #push} and
 * {@link #enrol} call it first when needed — and then fixed for the client's life; read it back with
 * {@link #relayKey()} to persist the pin. A relay presenting another key yields {@link RelayKeyChanged}.
 *
 * <p><b>Signed hop.</b> Headers {@code x-mbx-host} (when a name is set), {@code x-mbx-key}, {@code x-mbx-ts} (ms),
 * {@code x-mbx-sig} over {@link HopText#signedText} of the method, the path plus raw query (for {@code /v2/} paths),
 * the ts and the exact body bytes sent. Query strings are built here with {@link #encodeUriComponent} and sent
 * unchanged (absolute URI string, no query parameter API), so the relay sees exactly what was signed.
 *
 * <p><b>Threading.</b> Safe to call from any thread; futures complete on a Vert.x event loop. Holds one
 * {@link WebClient} in a field (Vert.x 5 closes unreachable clients); {@link #close()} releases it.
 */
public final class RelayClient implements AutoCloseable {
  private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(RelayClient.class);

  /**
   * Client options.
   *
   * @param requestTimeoutMs per-request timeout, ms (no response within it fails the future)
   * @param clock source of hop timestamps (ms since the epoch)
   */
  public record Options(long requestTimeoutMs, Clock clock) {
    /** 30 s per request, system clock. */
    public static final Options DEFAULT = new Options(30_000, Clock.systemUTC());

    /** @throws IllegalArgumentException for a non-positive timeout */
    public Options {
      if (requestTimeoutMs <= 0) {
        throw new IllegalArgumentException("requestTimeoutMs must be positive");
      }
      Objects.requireNonNull(clock);
    }
  }

  /** A raw answer: status, body text, parsed JSON (null when the body is not JSON). */
  private record Answer(int status, String raw, JsonNode json) {}

  private final WebClient web;
  /** The HTTP client under {@link #web} (wrapped, so its connections get an exception handler); closed with it. */
  private final io.vertx.core.http.HttpClient http;
  private final String base;
  private final String hostName;
  private final Ed25519KeyPair key;
  private final RelayPin pin;
  private final Options options;
  private final AtomicReference<String> relayKey = new AtomicReference<>();

  /**
   * A client with {@link Options#DEFAULT}.
   *
   * @param vertx the Vert.x instance (not closed by this client)
   * @param baseUrl relay base URL, {@code http(s)://host[:port][/prefix]}; a trailing {@code /} is ignored
   * @param hostName this host's name (HOST_RE, docs/protocol.md §3) sent as {@code x-mbx-host} and used to enrol; may be null
   *     for a client that never enrols (the v2 hop identifies the caller by key)
   * @param key this host's key pair
   * @param pin how the relay key is trusted
   * @throws IllegalArgumentException when the URL is not an absolute http(s) URL
   */
  public RelayClient(Vertx vertx, String baseUrl, String hostName, Ed25519KeyPair key, RelayPin pin) {
    this(vertx, baseUrl, hostName, key, pin, Options.DEFAULT);
  }

  /**
   * A client.
   *
   * @param vertx the Vert.x instance (not closed by this client)
   * @param baseUrl relay base URL (see above)
   * @param hostName this host's name, or null
   * @param key this host's key pair
   * @param pin how the relay key is trusted
   * @param options timeouts and clock
   * @throws IllegalArgumentException when the URL is not an absolute http(s) URL
   */
  public RelayClient(Vertx vertx, String baseUrl, String hostName, Ed25519KeyPair key, RelayPin pin,
      Options options) {
    this.base = RelayPins.normalizeUrl(Objects.requireNonNull(baseUrl));
    URI u = URI.create(base);
    if (u.getScheme() == null || !(u.getScheme().equals("http") || u.getScheme().equals("https"))
        || u.getHost() == null || u.getRawQuery() != null) {
      throw new IllegalArgumentException("relay URL must be http(s)://host[:port][/path]");
    }
    this.hostName = hostName;
    this.key = Objects.requireNonNull(key);
    this.pin = Objects.requireNonNull(pin);
    this.options = Objects.requireNonNull(options);
    if (pin instanceof RelayPin.Key k) {
      relayKey.set(B64.encode(B64.decodeLenient(k.relayPubkey()).orElseThrow()));
    }
    // The relay closes idle connections after 5 s (docs/protocol.md §3); drop ours before that to avoid reusing a closed one.
    WebClientOptions webOptions = new WebClientOptions().setKeepAliveTimeout(4).setUserAgent("mbxrelay-host")
        .setConnectTimeout((int) Math.min(Integer.MAX_VALUE, options.requestTimeoutMs()));
    // A pooled connection the relay resets while idle (a relay killed or restarted) fails no request: the next one
    // opens a new connection, and a request in flight fails through its own future. Without a handler of its own,
    // Vert.x logs each such reset as an ERROR with no context; say it once at DEBUG instead.
    this.http = vertx.httpClientBuilder().with(webOptions)
        .withConnectHandler(conn -> conn.exceptionHandler(e -> LOG.debug(
            "relay connection failed [relay: {}] [error: {}]", base, e.toString())))
        .build();
    this.web = WebClient.wrap(http, webOptions);
  }

  /**
   * The relay key this client verifies receipts with.
   *
   * @return the base64 relay key, or empty while a fingerprint/TOFU pin has not been resolved by {@link #info()}
   */
  public Optional<String> relayKey() {
    return Optional.ofNullable(relayKey.get());
  }

  /**
   * This host's public key.
   *
   * @return base64 key
   */
  public String hostPubkey() {
    return key.publicKeyB64();
  }

  /**
   * Signed {@code GET /v2/relay/info} (docs/protocol.md §4.7) and the pin check (docs/protocol.md §6 session open (1)).
   *
   * @return {@link InfoResult.Ok} for a v2 info ({@code v == 2}, string {@code relay_pubkey} that is a 32-byte key,
   *     string {@code epoch}, object {@code limits}) whose key matches the pin — a fingerprint/TOFU pin is resolved
   *     to that key; {@link RelayKeyChanged} when it does not match; {@link Refused} for a non-200;
   *     {@link BadAnswer} for anything else. Fails only on I/O.
   */
  public Future<InfoResult> info() {
    return send(HttpMethod.GET, "/v2/relay/info", null, true).map(this::infoOf);
  }

  private InfoResult infoOf(Answer a) {
    if (a.status() != 200) {
      return refused(a);
    }
    JsonNode j = a.json();
    if (j == null || !j.isObject()) {
      return new BadAnswer(a.status(), "info is not a JSON object");
    }
    JsonNode v = j.get("v");
    if (v == null || !v.isNumber() || v.asDouble() != 2) {
      return new BadAnswer(a.status(), "info v is not 2");
    }
    String pub = text(j, "relay_pubkey");
    String epoch = text(j, "epoch");
    JsonNode limits = j.get("limits");
    if (pub == null || !B64.isPubkey(pub) || epoch == null || limits == null || !limits.isObject()) {
      return new BadAnswer(a.status(), "info lacks relay_pubkey, epoch or limits");
    }
    String known = relayKey.get();
    if (known != null && !known.equals(pub)) {
      return new RelayKeyChanged(Fingerprint.ofB64(known), pub);
    }
    if (known == null) {
      if (pin instanceof RelayPin.Fingerprint f && !f.fingerprint().equals(Fingerprint.ofB64(pub))) {
        return new RelayKeyChanged(f.fingerprint(), pub);
      }
      if (!relayKey.compareAndSet(null, pub) && !pub.equals(relayKey.get())) {
        return new RelayKeyChanged(Fingerprint.ofB64(relayKey.get()), pub);
      }
    }
    Optional<RelayInfo.You> you = Optional.empty();
    JsonNode y = j.get("you");
    if (y != null && y.isObject()) {
      you = Optional.of(new RelayInfo.You(text(y, "host"), text(y, "pubkey"), y.path("head_seq").asLong(),
          y.path("acked_through").asLong(), y.has("enc_ad") ? y.get("enc_ad") : Json.MAPPER.nullNode()));
    }
    String version = text(j, "version");
    JsonNode wait = j.path("features").path("pull_wait_max_seconds");
    int waitMax = wait.isIntegralNumber() && wait.asLong() > 0 ? (int) Math.min(3600, wait.asLong()) : 0;
    return new InfoResult.Ok(new RelayInfo(2, pub, epoch, version == null ? "" : version,
        RelayInfo.Limits.of(limits), you, waitMax));
  }

  /**
   * Enrols this host (docs/protocol.md §4.1): first {@link #info()} (the relay key must match the pin), then unsigned
   * {@code POST /v1/relay/challenge {host, pubkey}} and {@code POST /v1/relay/enrol {host, pubkey, owner_fp, sig}}
   * with {@code sig} over canonical {@code {v:1, challenge, host, pubkey, owner_fp}}. Re-enrolling an enrolled key
   * is allowed (it overwrites name and owner_fp).
   *
   * @param ownerFp the owner key fingerprint, or {@code ""} (OWNER_FP_RE {@code ^[A-Za-z0-9._-]{0,64}$}); null = ""
   * @return {@link EnrolResult.Enrolled}; {@link Refused} with the relay's status, text and code;
   *     {@link RelayKeyChanged}; {@link BadAnswer}. Fails only on I/O.
   * @throws IllegalStateException when this client was built without a host name
   */
  public Future<EnrolResult> enrol(String ownerFp) {
    if (hostName == null) {
      throw new IllegalStateException("enrolment needs a host name");
    }
    String owner = ownerFp == null ? "" : ownerFp;
    return info().compose(ir -> {
      if (ir instanceof InfoResult.Ok ok) {
        return challengeAndEnrol(owner, ok.info());
      }
      return Future.succeededFuture((EnrolResult) ir);
    });
  }

  private Future<EnrolResult> challengeAndEnrol(String ownerFp, RelayInfo info) {
    ObjectNode c = Json.MAPPER.createObjectNode().put("host", hostName).put("pubkey", key.publicKeyB64());
    return send(HttpMethod.POST, "/v1/relay/challenge", Json.stringify(c), false).compose(a -> {
      if (a.status() != 200) {
        return Future.succeededFuture(refused(a));
      }
      String challenge = a.json() == null ? null : text(a.json(), "challenge");
      if (challenge == null) {
        return Future.succeededFuture(new BadAnswer(a.status(), "challenge answer has no challenge"));
      }
      ObjectNode rec = Json.MAPPER.createObjectNode().put("v", 1).put("challenge", challenge).put("host", hostName)
          .put("pubkey", key.publicKeyB64()).put("owner_fp", ownerFp);
      String sig = key.signB64(CanonicalJson.canonicalBytes(rec));
      ObjectNode body = Json.MAPPER.createObjectNode().put("host", hostName).put("pubkey", key.publicKeyB64())
          .put("owner_fp", ownerFp).put("sig", sig);
      return send(HttpMethod.POST, "/v1/relay/enrol", Json.stringify(body), false).map(e -> {
        if (e.status() != 200) {
          return refused(e);
        }
        if (e.json() == null || !e.json().path("ok").asBoolean(false)) {
          return new BadAnswer(e.status(), "enrol answer is not {ok:true}");
        }
        return new EnrolResult.Enrolled(hostName, key.publicKeyB64(), info.relayPubkey(), info.epoch());
      });
    });
  }

  /**
   * Pushes items in one request ({@code POST /v2/relay/items}, docs/protocol.md §3) and verifies each accept receipt
   * ({@link AcceptCheck}, docs/protocol.md §4.5) against the pinned relay key. If the relay key is not known yet, calls
   * {@link #info()} first.
   *
   * @param items 0–{@code max_batch} (200) items
   * @return {@link PushResult.Pushed} with one {@link ItemOutcome} per item in order; {@link Refused};
   *     {@link RelayKeyChanged}; {@link BadAnswer} (200 without exactly one result per item). Fails only on I/O, in
   *     which case the outcome is unknown and the same bytes must be pushed again.
   */
  public Future<PushResult> push(List<PushItem> items) {
    List<PushItem> list = List.copyOf(items);
    String k = relayKey.get();
    if (k != null) {
      return pushWith(list, k);
    }
    return info().compose(ir -> {
      if (ir instanceof InfoResult.Ok ok) {
        return pushWith(list, ok.info().relayPubkey());
      }
      return Future.succeededFuture((PushResult) ir);
    });
  }

  private Future<PushResult> pushWith(List<PushItem> items, String relayPubkey) {
    ObjectNode body = Json.MAPPER.createObjectNode();
    ArrayNode arr = body.putArray("items");
    for (PushItem item : items) {
      ObjectNode o = arr.addObject().put("kind", item.kind()).put("item_id", item.itemId());
      ArrayNode ts = o.putArray("targets");
      for (PushItem.Target t : item.targets()) {
        ts.addObject().put("host_pubkey", t.hostPubkey()).put("wire_b64", B64.encode(t.wire()));
      }
    }
    return send(HttpMethod.POST, "/v2/relay/items", Json.stringify(body), true).map(a -> {
      if (a.status() != 200) {
        return refused(a);
      }
      JsonNode results = a.json() == null ? null : a.json().get("results");
      if (results == null || !results.isArray() || results.size() != items.size()) {
        return new BadAnswer(a.status(), "push answer does not have one result per item");
      }
      List<ItemOutcome> out = new ArrayList<>(items.size());
      for (int i = 0; i < items.size(); i++) {
        out.add(AcceptCheck.check(items.get(i), results.get(i), key.publicKeyB64(), relayPubkey));
      }
      return new PushResult.Pushed(out);
    });
  }

  /**
   * Pulls one page ({@code GET /v2/relay/items?after=&limit=&epoch=}, docs/protocol.md §3 pull v2).
   *
   * @param after return items with seq above this (≥ 0)
   * @param limit items per page, 1–500; ≤ 0 omits the parameter (the relay then uses 500)
   * @param epoch the epoch the caller's position belongs to, or null to omit (first pull; accept any epoch)
   * @return {@link PullResult.Page} (wire bytes decoded); {@link EpochChanged} on 409 or when the page's epoch
   *     differs from {@code epoch}; {@link Refused}; {@link BadAnswer}. Fails only on I/O.
   */
  public Future<PullResult> pull(long after, int limit, String epoch) {
    return pull(after, limit, epoch, 0);
  }

  /**
   * Pulls one page, and when it would be empty lets the relay hold the request until an item for this host arrives
   * or {@code waitSeconds} pass ({@code &wait=N}, mbxrelay's long-poll; only for a relay whose {@link RelayInfo}
   * offers it). The answer is a normal page. The request's own timeout must exceed the wait.
   *
   * @param after return items with seq above this (≥ 0)
   * @param limit items per page, 1–500; ≤ 0 omits the parameter
   * @param epoch the position's epoch or null
   * @param waitSeconds how long the relay may hold the pull, s; 0 = do not wait (exactly {@link #pull(long, int,
   *     String)})
   * @return as {@link #pull(long, int, String)}
   */
  public Future<PullResult> pull(long after, int limit, String epoch, int waitSeconds) {
    StringBuilder q = new StringBuilder("/v2/relay/items?after=").append(Math.max(0, after));
    if (limit > 0) {
      q.append("&limit=").append(limit);
    }
    if (epoch != null) {
      q.append("&epoch=").append(encodeUriComponent(epoch));
    }
    if (waitSeconds > 0) {
      q.append("&wait=").append(waitSeconds);
    }
    return send(HttpMethod.GET, q.toString(), null, true).map(a -> pageOf(a, epoch));
  }

  private PullResult pageOf(Answer a, String askedEpoch) {
    if (a.status() == 409) {
      String e = a.json() == null ? null : text(a.json(), "epoch");
      return new EpochChanged(e == null ? "" : e);
    }
    if (a.status() != 200) {
      return refused(a);
    }
    JsonNode j = a.json();
    String epoch = j == null ? null : text(j, "epoch");
    JsonNode items = j == null ? null : j.get("items");
    if (epoch == null || items == null || !items.isArray() || !j.path("head_seq").isNumber()
        || !j.path("last_seq").isNumber()) {
      return new BadAnswer(a.status(), "page lacks epoch, head_seq, items or last_seq");
    }
    if (askedEpoch != null && !askedEpoch.equals(epoch)) {
      return new EpochChanged(epoch);
    }
    List<PullResult.PulledItem> list = new ArrayList<>(items.size());
    for (JsonNode it : items) {
      String kind = text(it, "kind");
      String itemId = text(it, "item_id");
      String sender = text(it, "sender_pubkey");
      String w = text(it, "wire_b64");
      Optional<byte[]> wire = w == null ? Optional.empty() : B64.decodeLenient(w);
      if (!it.path("seq").isNumber() || kind == null || itemId == null || sender == null || wire.isEmpty()) {
        return new BadAnswer(a.status(), "page item lacks seq, kind, item_id, sender_pubkey or wire_b64");
      }
      list.add(new PullResult.PulledItem(it.get("seq").asLong(), kind, itemId, sender, wire.get()));
    }
    return new PullResult.Page(epoch, j.get("head_seq").asLong(), list, j.get("last_seq").asLong(),
        j.path("more").asBoolean(false));
  }

  /**
   * Acks this host's items through a seq ({@code POST /v2/relay/ack {epoch, through}}, docs/protocol.md §3 ack v2): the relay
   * deletes them.
   *
   * @param epoch the epoch the seqs belong to
   * @param through highest seq processed (≥ 0)
   * @return {@link AckResult.Acked}; {@link EpochChanged} (409); {@link AckResult.BadAck} (400 {@code BAD_ACK});
   *     {@link Refused}; {@link BadAnswer}. Fails only on I/O.
   */
  public Future<AckResult> ack(String epoch, long through) {
    ObjectNode body = Json.MAPPER.createObjectNode().put("epoch", Objects.requireNonNull(epoch))
        .put("through", through);
    return send(HttpMethod.POST, "/v2/relay/ack", Json.stringify(body), true).map(a -> {
      JsonNode j = a.json();
      if (a.status() == 409) {
        String e = j == null ? null : text(j, "epoch");
        return new EpochChanged(e == null ? "" : e);
      }
      if (a.status() == 400 && j != null && "BAD_ACK".equals(text(j, "code"))) {
        return new AckResult.BadAck(j.path("head_seq").asLong());
      }
      if (a.status() != 200) {
        return refused(a);
      }
      if (j == null || !j.path("acked_through").isNumber() || !j.path("deleted").isNumber()
          || !j.path("head_seq").isNumber()) {
        return new BadAnswer(a.status(), "ack answer lacks acked_through, deleted or head_seq");
      }
      return new AckResult.Acked(j.get("acked_through").asLong(), j.get("deleted").asLong(),
          j.get("head_seq").asLong());
    });
  }

  /**
   * Publishes this host's sender allowlist ({@code POST /v2/relay/senders {list, sig}}, docs/protocol.md §4.3, §7.2):
   * {@code list = {v:1, type:"relay-senders", host_pubkey, senders, iat}} signed by this host's key over
   * canonical(list). The relay then refuses pushes to this host from keys not on the list.
   *
   * @param senders the accepted sender keys (base64); sent deduplicated and sorted, at most 1,024
   * @param iatMs the list's issue time, ms since the epoch (a newer list replaces an older one)
   * @return {@link SendersResult.Published}; {@link Refused} (404 = the relay does not support allowlists; 409 = a
   *     newer list is stored); {@link BadAnswer}. Fails only on I/O.
   */
  public Future<SendersResult> publishSenders(java.util.Collection<String> senders, long iatMs) {
    java.util.TreeSet<String> sorted = new java.util.TreeSet<>(senders);
    ObjectNode list = Json.MAPPER.createObjectNode().put("v", 1).put("type", "relay-senders")
        .put("host_pubkey", key.publicKeyB64());
    ArrayNode arr = list.putArray("senders");
    sorted.forEach(arr::add);
    list.put("iat", io.mbxrelay.wire.IsoTime.format(iatMs));
    ObjectNode body = Json.MAPPER.createObjectNode();
    body.set("list", list);
    body.put("sig", key.signB64(CanonicalJson.canonicalBytes(list)));
    return send(HttpMethod.POST, "/v2/relay/senders", Json.stringify(body), true).map(a -> {
      if (a.status() != 200) {
        return refused(a);
      }
      return new SendersResult.Published(sorted.size());
    });
  }

  /**
   * Publishes this host's X25519 encryption key as a v2 ad (docs/protocol.md §4.2): {@code ad = {v:2, type:"enc-ad", host,
   * host_pubkey, enc_pub, iat, exp}} with {@code exp = iat + 30 d}, signed by the host key over canonical(ad),
   * posted as {@code {ad, sig}} to {@code /v2/relay/enc-key}.
   *
   * @param hostName this host's name as the relay stored it (the ad must name it exactly)
   * @param encPub base64 X25519 public key (32 bytes)
   * @param iatMs issue time, ms
   * @return Published(2), or Refused (404 = relay without v2 ads; 400 {@code enc-key ad refused: <reason>})
   */
  public Future<EncAdResult> publishEncAd(String hostName, String encPub, long iatMs) {
    ObjectNode ad = Json.MAPPER.createObjectNode().put("v", 2).put("type", "enc-ad").put("host", hostName)
        .put("host_pubkey", key.publicKeyB64()).put("enc_pub", encPub)
        .put("iat", io.mbxrelay.wire.IsoTime.format(iatMs))
        .put("exp", io.mbxrelay.wire.IsoTime.format(iatMs + 30L * 86_400_000L));
    ObjectNode body = Json.MAPPER.createObjectNode();
    body.set("ad", ad);
    body.put("sig", key.signB64(CanonicalJson.canonicalBytes(ad)));
    return send(HttpMethod.POST, "/v2/relay/enc-key", Json.stringify(body), true)
        .map(a -> a.status() == 200 ? new EncAdResult.Published(2) : refused(a));
  }

  /**
   * Publishes the v1 ad (docs/protocol.md §4.2): {@code {enc_pub, sig}} with {@code sig} over canonical
   * {@code {v:1, host:<enrolled name>, enc_pub}}, for hosts that still read v1 ads.
   *
   * @param hostName this host's name as the relay stored it
   * @param encPub base64 X25519 public key
   * @return Published(1) or Refused
   */
  public Future<EncAdResult> publishEncAdV1(String hostName, String encPub) {
    ObjectNode rec = Json.MAPPER.createObjectNode().put("v", 1).put("host", hostName).put("enc_pub", encPub);
    ObjectNode body = Json.MAPPER.createObjectNode().put("enc_pub", encPub)
        .put("sig", key.signB64(CanonicalJson.canonicalBytes(rec)));
    return send(HttpMethod.POST, "/v1/relay/enc-key", Json.stringify(body), true)
        .map(a -> a.status() == 200 ? new EncAdResult.Published(1) : refused(a));
  }

  /**
   * Looks up a host's encryption key ad ({@code GET /v2/relay/enc-key?pubkey=<key>}, signed hop, docs/protocol.md
   * §4.2). The answer is what the relay serves: trust nothing in it before {@link PeerEncKeys} verified the signed
   * v2 ad against the peer's pinned host key.
   *
   * @param hostPubkey the peer's host key (base64)
   * @return {@link EncKeyAnswer.Found}, {@link Refused} (404: no ad for that key) or {@link BadAnswer}
   */
  public Future<EncKeyAnswer> encKey(String hostPubkey) {
    return send(HttpMethod.GET, "/v2/relay/enc-key?pubkey=" + encodeUriComponent(hostPubkey), null, true).map(a -> {
      if (a.status() != 200) {
        return refused(a);
      }
      if (a.json() == null || !a.json().isObject()) {
        return new BadAnswer(a.status(), "enc-key answer is not a JSON object");
      }
      return new EncKeyAnswer.Found(a.json());
    });
  }

  /** Closes the web client. Pending requests fail. */
  @Override
  public void close() {
    web.close();
    http.close();
  }

  /**
   * JS {@code encodeURIComponent}: UTF-8 percent-encoding of everything but {@code A–Z a–z 0–9 - _ . ! ~ * ' ( )},
   * upper-case hex (base64 {@code +} → {@code %2B}, {@code /} → {@code %2F}, {@code =} → {@code %3D}). Unpaired
   * surrogates are encoded as U+FFFD (JS would throw).
   *
   * @param s the text
   * @return the encoded text
   */
  public static String encodeUriComponent(String s) {
    StringBuilder out = new StringBuilder(s.length());
    for (byte b : s.getBytes(StandardCharsets.UTF_8)) {
      int c = b & 0xff;
      if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || "-_.!~*'()".indexOf(c) >= 0) {
        out.append((char) c);
      } else {
        out.append('%').append(Character.toUpperCase(Character.forDigit(c >> 4, 16)))
            .append(Character.toUpperCase(Character.forDigit(c & 0xf, 16)));
      }
    }
    return out.toString();
  }

  // ---- transport ----

  private Future<Answer> send(HttpMethod method, String pathAndQuery, String bodyOrNull, boolean signed) {
    String uri = base + pathAndQuery;
    HttpRequest<Buffer> req = web.requestAbs(method, uri).timeout(options.requestTimeoutMs())
        .putHeader("content-type", "application/json");
    String body = bodyOrNull == null ? "" : bodyOrNull;
    if (signed) {
      URI u = URI.create(uri);
      String ts = Long.toString(options.clock().millis());
      String text = HopText.signedText(method.name(), HopText.signedPath(u.getRawPath(), u.getRawQuery()), ts, body);
      if (hostName != null) {
        req.putHeader("x-mbx-host", hostName);
      }
      req.putHeader("x-mbx-key", key.publicKeyB64()).putHeader("x-mbx-ts", ts)
          .putHeader("x-mbx-sig", key.signB64(text.getBytes(StandardCharsets.UTF_8)));
    }
    Future<io.vertx.ext.web.client.HttpResponse<Buffer>> f =
        bodyOrNull == null ? req.send() : req.sendBuffer(Buffer.buffer(body.getBytes(StandardCharsets.UTF_8)));
    return f.map(r -> {
      String raw = r.body() == null ? "" : r.bodyAsString("UTF-8");
      JsonNode json;
      try {
        json = Json.parse(raw);
      } catch (IllegalArgumentException e) {
        json = null;
      }
      return new Answer(r.statusCode(), raw, json);
    });
  }

  private static Refused refused(Answer a) {
    JsonNode j = a.json();
    String error = j == null ? null : text(j, "error");
    String code = j == null ? null : text(j, "code");
    if (error == null) {
      String raw = a.raw().strip();
      error = raw.length() > 200 ? raw.substring(0, 200) : raw;
    }
    return new Refused(a.status(), error, code);
  }

  private static String text(JsonNode o, String name) {
    JsonNode n = o == null ? null : o.get(name);
    return n != null && n.isTextual() ? n.textValue() : null;
  }
}
