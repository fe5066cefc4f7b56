package io.mbxrelay.server;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.mbxrelay.crypto.Ed25519KeyPair;
import io.mbxrelay.testing.ChildRelay;
import io.mbxrelay.testing.Envelopes;
import io.mbxrelay.testing.Http;
import io.mbxrelay.testing.TestHost;
import io.mbxrelay.wire.B64;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * SIGKILL in the middle of concurrent pushes, three times, then every sender retries what it has no verified accept
 * for (as the host outbox does): the receiver gets every item exactly once with its exact bytes, and every accept
 * receipt a sender ever got points at an item that survived (docs/protocol.md §7.5 "Restart / crash": nothing acknowledged is
 * lost, nothing is duplicated).
 */
class KillUnderLoadIT {

  @Test
  void items_accepted_before_any_of_three_sigkills_survive_and_retries_deliver_the_rest_exactly_once(
      @TempDir Path dir) throws Exception {
    int senders = 4;
    int perSender = 60;
    List<Ed25519KeyPair> keys = new ArrayList<>();
    for (int i = 0; i < senders; i++) {
      keys.add(Ed25519KeyPair.generate());
    }
    Ed25519KeyPair targetKey = Ed25519KeyPair.generate();
    // every item: id -> wire, per sender
    List<Map<String, byte[]>> items = new ArrayList<>();
    for (int s = 0; s < senders; s++) {
      Map<String, byte[]> m = new HashMap<>();
      for (int i = 0; i < perSender; i++) {
        String id = Envelopes.newId();
        m.put(id, Envelopes.sealed(id));
      }
      items.add(m);
    }
    Map<String, Long> acceptedSeq = new ConcurrentHashMap<>(); // id -> seq from a verified accept
    for (int round = 0; round < 3; round++) {
      try (ChildRelay relay = ChildRelay.start(dir, Map.of())) {
        TestHost target = new TestHost(relay.url(), "target", targetKey);
        if (round == 0) {
          target.enrol();
        }
        ExecutorService pool = Executors.newFixedThreadPool(senders);
        List<Future<?>> fs = new ArrayList<>();
        for (int s = 0; s < senders; s++) {
          TestHost h = new TestHost(relay.url(), "sender" + s, keys.get(s));
          if (round == 0) {
            h.enrol();
          }
          Map<String, byte[]> mine = items.get(s);
          fs.add(pool.submit(() -> {
            for (Map.Entry<String, byte[]> e : mine.entrySet()) {
              if (acceptedSeq.containsKey(e.getKey())) {
                continue;
              }
              try {
                JsonNode r = h.pushEnvelope(target, e.getKey(), e.getValue()).json().get("results").get(0);
                String st = r.get("status").asText();
                if (st.equals("accepted") || st.equals("duplicate")) {
                  acceptedSeq.put(e.getKey(), r.get("targets").get(0).get("seq").asLong());
                }
              } catch (Exception connectionLost) {
                return null; // the relay was killed under us: this sender stops for this round
              }
            }
            return null;
          }));
        }
        Thread.sleep(150 + 100L * round); // let some pushes land, then kill in the middle of the stream
        relay.kill();
        for (Future<?> f : fs) {
          f.get(60, TimeUnit.SECONDS);
        }
        pool.shutdownNow();
      }
    }
    Map<String, Long> beforeRetry = new HashMap<>(acceptedSeq);
    try (ChildRelay relay = ChildRelay.start(dir, Map.of())) {
      TestHost target = new TestHost(relay.url(), "target", targetKey);
      // retries: every item, as a sender without a verified accept would; accepted ones must come back duplicate
      for (int s = 0; s < senders; s++) {
        TestHost h = new TestHost(relay.url(), "sender" + s, keys.get(s));
        for (Map.Entry<String, byte[]> e : items.get(s).entrySet()) {
          JsonNode r = h.pushEnvelope(target, e.getKey(), e.getValue()).json().get("results").get(0);
          String st = r.get("status").asText();
          long seq = r.get("targets").get(0).get("seq").asLong();
          if (beforeRetry.containsKey(e.getKey())) {
            assertThat(st).as("an item accepted before a kill is still there").isEqualTo("duplicate");
            assertThat(seq).isEqualTo(beforeRetry.get(e.getKey()));
          } else {
            assertThat(st).isIn("accepted", "duplicate");
          }
        }
      }
      Map<String, byte[]> all = new HashMap<>();
      items.forEach(all::putAll);
      Set<String> seen = new HashSet<>();
      long after = 0;
      long prev = 0;
      String epoch = null;
      while (true) {
        Http.Resp page = target.pull(after, 100, epoch);
        assertThat(page.status()).isEqualTo(200);
        epoch = page.json().get("epoch").asText();
        for (JsonNode it : page.json().get("items")) {
          String id = it.get("item_id").asText();
          assertThat(seen.add(id)).as("delivered once: %s", id).isTrue();
          assertThat(B64.decodeLenient(it.get("wire_b64").asText()).orElseThrow()).isEqualTo(all.get(id));
          assertThat(it.get("seq").asLong()).isGreaterThan(prev);
          prev = it.get("seq").asLong();
        }
        after = page.json().get("last_seq").asLong();
        if (!page.json().get("more").asBoolean()) {
          break;
        }
      }
      assertThat(seen).isEqualTo(all.keySet());
      assertThat(beforeRetry).isNotEmpty();
    }
  }
}
