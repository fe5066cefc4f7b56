package io.mbxrelay.host;

import io.mbxrelay.crypto.Ed25519KeyPair;
import io.mbxrelay.host.BlockingRelayClient.RelayUnreachable;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import java.time.Clock;
import java.util.Collection;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * {@link RelayTransport} over {@link RelayClient} (Vert.x {@code WebClient}) with request deadlines (docs/host-library.md
 * "Pieces"): an idle timeout per request (no bytes for {@code idleTimeoutMs} fails it) and an overall
 * deadline per call ({@code deadlineMs}, including the response body; a call that makes several requests, like enrol,
 * gets one deadline per request). A call past its deadline throws {@link RelayUnreachable} and its late answer is
 * ignored. Retrying is the caller's decision ({@link HostAgent} retries on its next tick after {@code next_at}). One
 * thread at a time; never on a Vert.x event loop.
 */
public final class VertxRelayTransport implements RelayTransport {

  /** Default overall deadline per request, ms (45 s). */
  public static final long DEFAULT_DEADLINE_MS = 45_000;
  /** Default idle timeout per request, ms (35 s). */
  public static final long DEFAULT_IDLE_TIMEOUT_MS = 35_000;

  private final RelayClient client;
  private final long deadlineMs;

  /**
   * @param vertx the Vert.x instance (not closed here)
   * @param relayUrl relay base URL
   * @param hostName this host's name
   * @param key this host's key
   * @param relayPubkey the pinned relay key (base64)
   * @param idleTimeoutMs idle timeout per request, ms (&gt; 0)
   * @param deadlineMs overall deadline per request, ms (&gt; 0)
   * @param clock hop timestamp source
   */
  public VertxRelayTransport(Vertx vertx, String relayUrl, String hostName, Ed25519KeyPair key, String relayPubkey,
      long idleTimeoutMs, long deadlineMs, Clock clock) {
    this.client = new RelayClient(vertx, relayUrl, hostName, key, new RelayPin.Key(relayPubkey),
        new RelayClient.Options(idleTimeoutMs, clock));
    this.deadlineMs = deadlineMs;
    if (deadlineMs <= 0) {
      throw new IllegalArgumentException("deadlineMs must be positive");
    }
    Objects.requireNonNull(clock);
  }

  /**
   * A factory with the default deadlines.
   *
   * @param vertx the Vert.x instance
   * @param key this host's key
   * @param clock hop timestamp source
   * @return the factory
   */
  public static RelayTransport.Factory factory(Vertx vertx, Ed25519KeyPair key, Clock clock) {
    return (url, name, relayPubkey) -> new VertxRelayTransport(vertx, url, name, key, relayPubkey,
        DEFAULT_IDLE_TIMEOUT_MS, DEFAULT_DEADLINE_MS, clock);
  }

  @Override
  public InfoResult info() throws RelayUnreachable {
    return await(client.info(), 1);
  }

  @Override
  public EnrolResult enrol(String ownerFp) throws RelayUnreachable {
    return await(client.enrol(ownerFp), 3);
  }

  @Override
  public PushResult push(List<PushItem> items) throws RelayUnreachable {
    return await(client.push(items), 1);
  }

  @Override
  public PullResult pull(long after, int limit, String epoch) throws RelayUnreachable {
    return await(client.pull(after, limit, epoch), 1);
  }

  @Override
  public PullResult pull(long after, int limit, String epoch, int waitSeconds) throws RelayUnreachable {
    return await(client.pull(after, limit, epoch, waitSeconds), 1);
  }

  @Override
  public java.util.Optional<PullResult> pull(long after, int limit, String epoch, int waitSeconds,
      java.util.function.BooleanSupplier giveUp) throws RelayUnreachable {
    Future<PullResult> f = client.pull(after, limit, epoch, waitSeconds);
    long deadline = System.nanoTime() + deadlineMs * 1_000_000L;
    while (true) {
      long left = (deadline - System.nanoTime()) / 1_000_000L;
      if (f.isComplete() || left <= 200) {
        return java.util.Optional.of(BlockingRelayClient.await(f, Math.max(1, left))); // the same deadline as pull
      }
      try {
        return java.util.Optional.of(f.toCompletionStage().toCompletableFuture().get(200,
            java.util.concurrent.TimeUnit.MILLISECONDS));
      } catch (java.util.concurrent.TimeoutException e) {
        if (giveUp.getAsBoolean()) {
          return java.util.Optional.empty(); // the held request ends on its own; its page is dropped
        }
      } catch (java.util.concurrent.ExecutionException e) {
        return java.util.Optional.of(await(f, 1)); // the same failure, mapped as every other call maps it
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new RelayUnreachable("interrupted");
      }
    }
  }

  @Override
  public AckResult ack(String epoch, long through) throws RelayUnreachable {
    return await(client.ack(epoch, through), 1);
  }

  @Override
  public SendersResult publishSenders(Collection<String> senders, long iatMs) throws RelayUnreachable {
    return await(client.publishSenders(senders, iatMs), 1);
  }

  @Override
  public EncAdResult publishEncAd(String hostName, String encPub, long iatMs) throws RelayUnreachable {
    return await(client.publishEncAd(hostName, encPub, iatMs), 1);
  }

  @Override
  public EncAdResult publishEncAdV1(String hostName, String encPub) throws RelayUnreachable {
    return await(client.publishEncAdV1(hostName, encPub), 1);
  }

  private <T> T await(Future<T> f, int requests) throws RelayUnreachable {
    return BlockingRelayClient.await(f, deadlineMs * requests);
  }

  @Override
  public EncKeyAnswer encKey(String hostPubkey) throws RelayUnreachable {
    return await(client.encKey(hostPubkey), 1);
  }

  @Override
  public void close() {
    client.close();
  }
}
