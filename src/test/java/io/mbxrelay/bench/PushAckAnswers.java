package io.mbxrelay.bench;

import com.fasterxml.jackson.databind.JsonNode;
import io.mbxrelay.bench.BenchClient.Answer;
import io.vertx.core.AsyncResult;

/**
 * How the waiting-host workloads ({@link LongPollWorkload}, {@link HostsWorkload} and its {@link HostLoops}) count one
 * push's and one ack's answer: written once for all. Safe on any thread (the counters are).
 */
final class PushAckAnswers {
  private PushAckAnswers() {}

  /**
   * Sends one single-item push from a random sender to a random target over the client's push pool and counts its
   * answer ({@link #push(BenchStats.Op, Deliveries, String, long, AsyncResult)}).
   *
   * @param s the bench setup (client, items, epoch)
   * @param senders the hosts that push
   * @param targets the hosts pushed to
   * @param deliveries the delivery tracker
   * @param op the phase's push counter
   * @param inFlight pushes sent and not yet answered (raised now, lowered at the answer)
   * @param due when the push was scheduled ({@link System#nanoTime()})
   * @param timeoutMs the request's timeout
   */
  static void sendOne(HostedRelayBench.Setup s, java.util.List<BenchHosts.Host> senders,
      java.util.List<BenchHosts.Host> targets, Deliveries deliveries, BenchStats.Op op,
      java.util.concurrent.atomic.AtomicInteger inFlight, long due, long timeoutMs) {
    java.util.concurrent.ThreadLocalRandom r = java.util.concurrent.ThreadLocalRandom.current();
    BenchHosts.Host sender = senders.get(r.nextInt(senders.size()));
    BenchHosts.Host target = targets.get(r.nextInt(targets.size()));
    String id = BenchItems.newId();
    byte[] body = s.items().pushBody(java.util.List.of(new BenchItems.Target(id, target.pub())));
    deliveries.sent(id, due);
    inFlight.incrementAndGet();
    s.client().sendPush(io.vertx.core.http.HttpMethod.POST, "/v2/relay/items", body, sender, timeoutMs)
        .onComplete(ar -> {
          inFlight.decrementAndGet();
          push(op, deliveries, id, due, ar);
        });
  }

  /**
   * Counts a single-item push's answer and tells the delivery tracker what became of the item.
   *
   * @param op the phase's push counter
   * @param deliveries the tracker the item was {@code sent} to
   * @param id the item id
   * @param due when the push was scheduled ({@link System#nanoTime()}): latency counts from then
   * @param ar the answer, or the failure to get one
   */
  static void push(BenchStats.Op op, Deliveries deliveries, String id, long due, AsyncResult<Answer> ar) {
    long now = System.nanoTime();
    if (ar.failed()) {
      deliveries.failed(id);
      op.failed(BenchClient.failureKind(ar.cause()), String.valueOf(ar.cause()), now - due);
      return;
    }
    Answer a = ar.result();
    String status;
    if (!a.ok()) {
      status = BenchClient.statusKind(a);
    } else {
      try {
        JsonNode res = a.json().path("results").path(0);
        status = res.path("status").asText("no status");
      } catch (RuntimeException e) {
        status = "unreadable answer";
      }
    }
    if (status.equals("accepted")) {
      op.ok(now - due, now);
      deliveries.answered(id, now);
    } else {
      deliveries.failed(id);
      op.failed(status.replaceAll(" for bh\\d+$", ""), a.text(), now - due);
    }
  }

  /**
   * Counts an ack's answer.
   *
   * @param op the phase's ack counter
   * @param start when the ack was sent ({@link System#nanoTime()})
   * @param ar the answer, or the failure to get one
   */
  static void ack(BenchStats.Op op, long start, AsyncResult<Answer> ar) {
    long now = System.nanoTime();
    String[] f = failure(ar);
    if (f == null) {
      op.ok(now - start, now);
    } else {
      op.failed(f[0], f[1], now - start);
    }
  }

  /**
   * What went wrong with a request, for the error counts: null for a 2xx answer, else {@code {kind, sample}} (the
   * transport failure's class and text, or {@code HTTP 409 EPOCH} and the relay's answer).
   */
  static String[] failure(AsyncResult<Answer> ar) {
    if (ar.failed()) {
      return new String[] {BenchClient.failureKind(ar.cause()), String.valueOf(ar.cause())};
    }
    if (!ar.result().ok()) {
      return new String[] {BenchClient.statusKind(ar.result()), ar.result().text()};
    }
    return null;
  }
}
