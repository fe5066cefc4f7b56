package io.mbxrelay.host;

import io.mbxrelay.crypto.Ed25519KeyPair;
import io.mbxrelay.crypto.Fingerprint;
import io.mbxrelay.host.seal.SealedEnvelope;
import io.mbxrelay.testing.MutableClock;
import io.mbxrelay.testing.RelayHarness;
import java.lang.reflect.Proxy;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;

/**
 * The cost of sending every message to every relay (docs/host-library.md "Several relays", "Why every relay"): two
 * hosts exchange {@code ROUNDS x PER_ROUND} sealed 1 KiB messages until every one is settled, through one relay,
 * through two relays (every message to both), and through two relays of which one is down. Prints requests per kind,
 * pushed wire bytes, host store size and wall time; asserts nothing. Run on purpose only:
 * {@code heavy mvn -B test -Dtest=SendPolicyMeasurement -Dmbxrelay.measure=true}.
 */
@EnabledIfSystemProperty(named = "mbxrelay.measure", matches = "true")
class SendPolicyMeasurement extends RealRelayTest {

  static final int ROUNDS = 10;
  static final int PER_ROUND = 20;

  final Map<String, AtomicLong> calls = new ConcurrentHashMap<>();
  final AtomicLong pushedBytes = new AtomicLong();

  RelayTransport counted(RelayTransport t) {
    return (RelayTransport) Proxy.newProxyInstance(RelayTransport.class.getClassLoader(),
        new Class<?>[] {RelayTransport.class}, (p, m, args) -> {
          if (!m.getName().equals("close")) {
            calls.computeIfAbsent(m.getName(), k -> new AtomicLong()).incrementAndGet();
          }
          if (m.getName().equals("push")) {
            for (Object o : (List<?>) args[0]) {
              for (PushItem.Target x : ((PushItem) o).targets()) {
                pushedBytes.addAndGet(x.wire().length);
              }
            }
          }
          try {
            return m.invoke(t, args);
          } catch (java.lang.reflect.InvocationTargetException e) {
            throw e.getCause();
          }
        });
  }

  record Run(String name, long millis, Map<String, Long> calls, long pushedBytes, long senderDbBytes) {}

  Run measure(String name, List<RelayHarness> relays, List<RelayHarness> up) throws Exception {
    calls.clear();
    pushedBytes.set(0);
    Path d = Files.createDirectories(dir.resolve(name.replace(' ', '-')));
    MutableClock clock = new MutableClock(Instant.now());
    Ed25519KeyPair ka = Ed25519KeyPair.generate();
    Ed25519KeyPair kb = Ed25519KeyPair.generate();
    HostStore sa = HostStore.open(d.resolve("a.db"));
    HostStore sb = HostStore.open(d.resolve("b.db"));
    closing.add(sa);
    closing.add(sb);
    List<String> urls = new ArrayList<>();
    for (RelayHarness r : relays) {
      urls.add(r.url());
      for (HostStore s : List.of(sa, sb)) {
        HostAgent.pin(s, r.url(), r.relayKey.publicKeyB64(), Fingerprint.ofB64(r.relayKey.publicKeyB64()), false,
            clock.millis());
      }
    }
    HostAgent a = new HostAgent(sa, ka, urls, new HostAgent.Options("alpha", "", clock, new Random(1), null),
        (u, n, rp) -> counted(new VertxRelayTransport(vertx, u, n, ka, rp, 2_000, 4_000, Clock.systemUTC())),
        x -> new HostApplication.Verdict.Accepted(null));
    int[] got = new int[1];
    HostAgent b = new HostAgent(sb, kb, urls, new HostAgent.Options("beta", "", clock, new Random(2), null),
        (u, n, rp) -> counted(new VertxRelayTransport(vertx, u, n, kb, rp, 2_000, 4_000, Clock.systemUTC())),
        new SealedInbox(sb, m -> {
          got[0]++;
          return new HostApplication.Verdict.Accepted(null);
        }, false, clock));
    closing.add(a);
    closing.add(b);
    a.addPeer(kb.publicKeyB64(), "beta", b.encPublicKey());
    b.addPeer(ka.publicKeyB64(), "alpha");
    b.tick();
    a.tick();
    for (RelayHarness r : relays) {
      if (!up.contains(r)) {
        r.close();
      }
    }
    calls.clear();
    pushedBytes.set(0);
    String body = "x".repeat(1024);
    long t0 = System.nanoTime();
    int settledReceipts = 0;
    for (int round = 0; round < ROUNDS; round++) {
      for (int i = 0; i < PER_ROUND; i++) {
        a.sendMessage(SealedEnvelope.Draft.message("owner@alpha", "owner@beta", "m", body), kb.publicKeyB64());
      }
      a.tick();
      b.tick();
      b.tick();
      settledReceipts += a.tick().receipts();
      clock.advance(Duration.ofSeconds(1));
    }
    for (int i = 0; i < 10 && settledReceipts < ROUNDS * PER_ROUND; i++) {
      clock.advance(Duration.ofMinutes(20));
      b.tick();
      settledReceipts += a.tick().receipts();
    }
    long ms = (System.nanoTime() - t0) / 1_000_000;
    if (got[0] != ROUNDS * PER_ROUND || settledReceipts != ROUNDS * PER_ROUND) {
      throw new AssertionError(name + ": delivered " + got[0] + ", settled " + settledReceipts);
    }
    Map<String, Long> c = new java.util.TreeMap<>();
    calls.forEach((k, v) -> c.put(k, v.get()));
    return new Run(name, ms, c, pushedBytes.get(), Files.size(d.resolve("a.db")));
  }

  @Test
  void printTheCostOfEveryRelayAgainstOneRelay() throws Exception {
    List<Run> runs = new ArrayList<>();
    for (int rep = 0; rep < 3; rep++) {
      RelayHarness r1 = RelayHarness.start(dir.resolve("r1-" + rep));
      RelayHarness r2 = RelayHarness.start(dir.resolve("r2-" + rep));
      RelayHarness r3 = RelayHarness.start(dir.resolve("r3-" + rep));
      RelayHarness r4 = RelayHarness.start(dir.resolve("r4-" + rep));
      RelayHarness r5 = RelayHarness.start(dir.resolve("r5-" + rep));
      try {
        runs.add(measure("one relay " + rep, List.of(r1), List.of(r1)));
        runs.add(measure("two relays " + rep, List.of(r2, r3), List.of(r2, r3)));
        runs.add(measure("two relays, one down " + rep, List.of(r4, r5), List.of(r4)));
      } finally {
        for (RelayHarness r : List.of(r1, r2, r3, r4, r5)) {
          r.close();
        }
      }
    }
    System.out.println("send policy measurement: " + ROUNDS * PER_ROUND + " sealed 1 KiB messages, alpha -> beta,"
        + " until settled");
    for (Run r : runs) {
      System.out.println(String.format("  %-24s %6d ms  pushed %8d B  sender host.db %8d B  calls %s", r.name(),
          r.millis(), r.pushedBytes(), r.senderDbBytes(), r.calls()));
    }
  }
}
