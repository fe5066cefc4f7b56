package io.mbxrelay.testing;

import com.fasterxml.jackson.databind.JsonNode;
import io.mbxrelay.wire.B64;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * One target host pulling and acking its queue page by page through whatever URL the drill gives for each request (a
 * random instance, a load balancer), recording what it was delivered and every way delivery went wrong: a seq not
 * above the one before, an item delivered twice, an unknown item or other bytes than were pushed, another epoch.
 * Used by the multi-instance drills; not thread-safe (one thread pulls).
 */
public final class QueuePuller {
  private final TestHost host;
  private final Supplier<String> url;
  private final String epoch;
  private final Map<String, byte[]> pushed;
  private final List<String> violations;
  private final Consumer<Http.Resp> answers;
  /** Item id → the seq it was delivered at. */
  public final Map<String, Long> delivered = new ConcurrentHashMap<>();
  private long after;
  private volatile boolean more = true;

  /**
   * @param host the target (its name and key; its base URL is not used)
   * @param url the base URL of each request (asked again per request)
   * @param epoch the epoch every page must carry
   * @param pushed item id → the wire bytes pushed under it
   * @param violations where what went wrong is added (a synchronized list)
   * @param answers sees every answer (pages and acks), e.g. to count statuses
   */
  public QueuePuller(TestHost host, Supplier<String> url, String epoch, Map<String, byte[]> pushed,
      List<String> violations, Consumer<Http.Resp> answers) {
    this.host = host;
    this.url = url;
    this.epoch = epoch;
    this.pushed = pushed;
    this.violations = violations;
    this.answers = answers;
  }

  /** The target host. */
  public TestHost host() {
    return host;
  }

  /** Whether the last page said no more items follow. */
  public boolean drained() {
    return !more;
  }

  /** Pulls one page after the last delivered seq, checks it, and acks through its last seq. */
  public void pageOnce() {
    try {
      TestHost h = new TestHost(url.get(), host.name, host.key);
      Http.Resp page = h.pull(after, 50, epoch);
      answers.accept(page);
      if (page.status() != 200) {
        return; // 503 while a database connection broke, and the like: the next page asks again
      }
      JsonNode j = page.json();
      if (!epoch.equals(j.get("epoch").asText())) {
        violations.add("epoch changed to " + j.get("epoch").asText());
      }
      long prev = after;
      for (JsonNode it : j.get("items")) {
        long seq = it.get("seq").asLong();
        String id = it.get("item_id").asText();
        if (seq <= prev) {
          violations.add(host.name + ": seq " + seq + " after " + prev);
        }
        prev = seq;
        if (delivered.put(id, seq) != null) {
          violations.add(host.name + ": " + id + " delivered twice");
        }
        byte[] want = pushed.get(id);
        if (want == null) {
          violations.add(host.name + ": unknown item " + id);
        } else if (!Arrays.equals(B64.decodeLenient(it.get("wire_b64").asText()).orElseThrow(), want)) {
          violations.add(host.name + ": " + id + " bytes differ");
        }
      }
      after = Math.max(after, j.get("last_seq").asLong());
      more = j.get("more").asBoolean();
      if (after > 0) {
        answers.accept(new TestHost(url.get(), host.name, host.key).ack(epoch, after)); // a lost ack: the next one
      }
    } catch (Exception lost) {
      // no answer (an instance killed under the request, a reset connection): the next page asks again
    }
  }
}
