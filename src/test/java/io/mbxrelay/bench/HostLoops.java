package io.mbxrelay.bench;

import io.mbxrelay.bench.BenchClient.Answer;
import io.mbxrelay.bench.BenchHosts.Host;
import io.vertx.core.http.HttpMethod;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The hosts' side of the {@code hosts} workload in one JVM: per host a receive loop that holds a freshly signed
 * {@code wait=} pull, acks what a pull brought (signed when sent) and pulls again; a failed or refused pull retries
 * after its {@code Retry-After}, else 1 s (with jitter). What the loops see goes to a {@link Sink}: the workload's own
 * counters when the loops run in the generator's process, the lines a {@link HostsProcess} writes to its parent when
 * they run in a child JVM. Indices are positions in this JVM's host list. Thread-safe; the loops run on the client's
 * event loops.
 */
final class HostLoops implements HostsWorkload.HostsSide {
  private static final long ACK_TIMEOUT_MS = 30_000;
  private static final int PULL_LIMIT = 500;

  /** Where the loops' outcomes go; called on the event loops, so implementations are thread-safe and quick. */
  interface Sink {
    /**
     * A pull answer, or the failure to get one.
     *
     * @param status the answer's class, for the reconnect storm's tally: {@code 200}, {@code HTTP 503 retry-after 5},
     *     {@code timeout}, {@code connect}, …
     * @param error null when the answer was a page, else the error class ({@code unreadable page} for a bad 200)
     * @param sample the error's sample (the relay's answer or the exception), or null
     * @param items the page's item count (0: the wait ran out), or -1 with an error
     */
    void pullAnswered(String status, String error, String sample, int items);

    /** A page carried this item at {@code atNanos} ({@link System#nanoTime()}); called before its pull's answer. */
    void pulled(String itemId, long atNanos);

    /**
     * An ack's answer: latency from {@code startNanos} (when the pull's answer arrived) to {@code nowNanos}.
     *
     * @param errorKind null for a 2xx, else the error class ({@link PushAckAnswers#failure})
     * @param sample the error's sample, or null
     */
    void ackAnswered(long startNanos, long nowNanos, String errorKind, String sample);
  }

  private final BenchClient client;
  private final List<Host> hosts;
  private final String epoch;
  private final int waitSeconds;
  private final double rampPerSecond;
  private final Sink sink;
  private final long[] cursor;
  private final AtomicInteger pullsInFlight = new AtomicInteger();
  private final ConcurrentLinkedQueue<Integer> parked = new ConcurrentLinkedQueue<>();
  private volatile boolean stopping;
  /** While true (the restart), a loop whose pull ends parks instead of pulling again. */
  private volatile boolean paused;

  /**
   * @param client the HTTP side (its pool holds the waits)
   * @param hosts the hosts whose loops run here
   * @param epoch the relay's epoch, sent with every pull and ack
   * @param waitSeconds the {@code wait=} of every pull, s
   * @param rampPerSecond loops started per second by {@link #start}
   * @param sink where the outcomes go
   */
  HostLoops(BenchClient client, List<Host> hosts, String epoch, int waitSeconds, double rampPerSecond, Sink sink) {
    this.client = client;
    this.hosts = hosts;
    this.epoch = epoch;
    this.waitSeconds = waitSeconds;
    this.rampPerSecond = rampPerSecond;
    this.sink = sink;
    this.cursor = new long[hosts.size()];
  }

  /** Starts the loops of hosts {@code from} (inclusive) to {@code to} (exclusive) at the ramp rate; blocks till then. */
  @Override
  public void start(int from, int to) throws Exception {
    if (to <= from) {
      return;
    }
    AtomicInteger next = new AtomicInteger(from);
    long start = System.nanoTime();
    long end = start + (long) ((to - from) / rampPerSecond * 1e9) + 1_000_000;
    client.openLoop(rampPerSecond, start, end, due -> {
      int t = next.getAndIncrement();
      if (t < to) {
        pull(t);
      }
    }).await(600, TimeUnit.SECONDS);
  }

  @Override
  public void pause() {
    paused = true;
  }

  @Override
  public int parked() {
    return parked.size();
  }

  /** Every parked loop pulls again now, spread over the event loops; returns how many. */
  @Override
  public int resume() {
    paused = false;
    List<Integer> all = new ArrayList<>();
    for (Integer t; (t = parked.poll()) != null; ) {
      all.add(t);
    }
    int n = client.loops.size();
    for (int k = 0; k < n; k++) {
      int first = k;
      client.loops.get(k).runOnContext(v -> {
        for (int i = first; i < all.size(); i += n) {
          pull(all.get(i));
        }
      });
    }
    return all.size();
  }

  @Override
  public int pullsInFlight() {
    return pullsInFlight.get();
  }

  /** Ends the loops: no pull or ack starts after this, and answers still coming are ignored. */
  @Override
  public void close() {
    stopping = true;
  }

  /** One receive-loop step of host {@code t}: a freshly signed wait pull; then ack (if items) and pull again. */
  private void pull(int t) {
    if (stopping) {
      return;
    }
    if (paused) {
      parked.add(t);
      return;
    }
    long after = cursor[t];
    pullsInFlight.incrementAndGet();
    String path = "/v2/relay/items?after=" + after + "&limit=" + PULL_LIMIT + "&epoch=" + epoch + "&wait="
        + waitSeconds;
    long timeout = (waitSeconds + 15) * 1000L;
    client.send(HttpMethod.GET, path, null, hosts.get(t), timeout).onComplete(ar -> {
      pullsInFlight.decrementAndGet();
      long now = System.nanoTime();
      if (stopping) {
        return;
      }
      long retryMs = 1000;
      PullPage page = null;
      if (ar.failed()) {
        String kind = BenchClient.failureKind(ar.cause());
        sink.pullAnswered(kind, kind, String.valueOf(ar.cause()), -1);
      } else if (!ar.result().ok()) {
        Answer a = ar.result();
        String kind = BenchClient.statusKind(a) + (a.retryAfter() != null ? " retry-after " + a.retryAfter() : "");
        sink.pullAnswered(kind, kind, a.text(), -1);
        if (a.retryAfter() != null) {
          retryMs = Math.max(1, Long.parseLong(a.retryAfter().trim())) * 1000;
        }
      } else {
        try {
          page = PullPage.parse(ar.result().body());
        } catch (IOException | RuntimeException e) {
          sink.pullAnswered(Integer.toString(ar.result().status()), "unreadable page", ar.result().text(), -1);
        }
      }
      if (page == null) {
        // a real host backs off: Retry-After when given, else 1 s (with jitter so retries do not come in lockstep)
        long jitter = ThreadLocalRandom.current().nextLong(Math.max(1, retryMs / 4));
        client.vertx.setTimer(retryMs + jitter, id -> pull(t));
        return;
      }
      int n = page.itemIds().size();
      for (int i = 0; i < n; i++) {
        sink.pulled(page.itemIds().get(i), now);
      }
      sink.pullAnswered(Integer.toString(ar.result().status()), null, null, n);
      cursor[t] = Math.max(after, page.lastSeq());
      if (n == 0) {
        pull(t);
      } else {
        ack(t, page.lastSeq(), now);
      }
    });
  }

  private void ack(int t, long through, long start) {
    byte[] body = ("{\"epoch\":\"" + epoch + "\",\"through\":" + through + "}").getBytes(StandardCharsets.UTF_8);
    client.send(HttpMethod.POST, "/v2/relay/ack", body, hosts.get(t), ACK_TIMEOUT_MS).onComplete(ar -> {
      if (!stopping) {
        String[] f = PushAckAnswers.failure(ar);
        sink.ackAnswered(start, System.nanoTime(), f == null ? null : f[0], f == null ? null : f[1]);
      }
      pull(t);
    });
  }
}
