package io.mbxrelay.host;

import io.mbxrelay.crypto.Ed25519KeyPair;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * A blocking {@link RelayClient} with its own small Vert.x instance, for command-line tools (the {@code cli} package
 * stays free of Vert.x). Each call blocks the calling thread until the outcome is known; same outcomes as
 * {@link RelayClient}. Not for use on a Vert.x event loop. One thread at a time.
 */
public final class BlockingRelayClient implements AutoCloseable {

  /** An I/O failure: the relay could not be reached or did not answer in time. The outcome is unknown. */
  public static final class RelayUnreachable extends Exception {
    /**
     * @param message what failed (no key material)
     */
    public RelayUnreachable(String message) {
      super(message, null, false, false);
    }
  }

  private final Vertx vertx;
  private final RelayClient client;
  private final long waitMs;

  /**
   * Starts a private Vert.x (1 event loop) and a client.
   *
   * @param baseUrl relay base URL
   * @param hostName host name or null
   * @param key host key
   * @param pin relay key pin
   * @param requestTimeoutMs per-request timeout, ms
   * @throws IllegalArgumentException for a bad URL
   */
  public BlockingRelayClient(String baseUrl, String hostName, Ed25519KeyPair key, RelayPin pin,
      long requestTimeoutMs) {
    this.vertx = Vertx.vertx(new VertxOptions().setEventLoopPoolSize(1).setPreferNativeTransport(false));
    try {
      this.client = new RelayClient(vertx, baseUrl, hostName, key, pin,
          new RelayClient.Options(requestTimeoutMs, java.time.Clock.systemUTC()));
    } catch (RuntimeException e) {
      vertx.close();
      throw e;
    }
    // enrol and push may make 2-3 requests in a row
    this.waitMs = requestTimeoutMs * 3 + 5_000;
  }

  /**
   * @return the relay key receipts are verified with, once known ({@link RelayClient#relayKey()})
   */
  public Optional<String> relayKey() {
    return client.relayKey();
  }

  /**
   * {@link RelayClient#info()}.
   *
   * @return the outcome
   * @throws RelayUnreachable on I/O failure
   */
  public InfoResult info() throws RelayUnreachable {
    return await(client.info());
  }

  /**
   * {@link RelayClient#enrol(String)}.
   *
   * @param ownerFp owner fingerprint or ""
   * @return the outcome
   * @throws RelayUnreachable on I/O failure
   */
  public EnrolResult enrol(String ownerFp) throws RelayUnreachable {
    return await(client.enrol(ownerFp));
  }

  /**
   * {@link RelayClient#push(List)}.
   *
   * @param items the items
   * @return the outcome
   * @throws RelayUnreachable on I/O failure (outcome unknown: push the same bytes again)
   */
  public PushResult push(List<PushItem> items) throws RelayUnreachable {
    return await(client.push(items));
  }

  /**
   * {@link RelayClient#pull(long, int, String)}.
   *
   * @param after seq to start after
   * @param limit page size, ≤ 0 for the relay default
   * @param epoch expected epoch or null
   * @return the outcome
   * @throws RelayUnreachable on I/O failure
   */
  public PullResult pull(long after, int limit, String epoch) throws RelayUnreachable {
    return await(client.pull(after, limit, epoch));
  }

  /**
   * {@link RelayClient#ack(String, long)}.
   *
   * @param epoch the epoch
   * @param through highest processed seq
   * @return the outcome
   * @throws RelayUnreachable on I/O failure
   */
  public AckResult ack(String epoch, long through) throws RelayUnreachable {
    return await(client.ack(epoch, through));
  }

  private <T> T await(Future<T> f) throws RelayUnreachable {
    return await(f, waitMs);
  }

  /**
   * Blocks for a relay call's outcome (not on an event loop).
   *
   * @param f the call
   * @param waitMs how long to wait, ms
   * @param <T> outcome type
   * @return the outcome
   * @throws RelayUnreachable on an I/O failure, no answer in time, or interruption (the outcome is unknown)
   */
  static <T> T await(Future<T> f, long waitMs) throws RelayUnreachable {
    try {
      return f.toCompletionStage().toCompletableFuture().get(waitMs, TimeUnit.MILLISECONDS);
    } catch (ExecutionException e) {
      Throwable c = e.getCause() == null ? e : e.getCause();
      throw new RelayUnreachable(c.getMessage() == null ? c.getClass().getSimpleName() : c.getMessage());
    } catch (TimeoutException e) {
      throw new RelayUnreachable("no answer within " + waitMs + " ms");
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new RelayUnreachable("interrupted");
    }
  }

  /** Closes the client and its Vert.x (waits up to 10 s). */
  @Override
  public void close() {
    client.close();
    try {
      vertx.close().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
    } catch (ExecutionException | TimeoutException e) {
      // best effort on shutdown
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
