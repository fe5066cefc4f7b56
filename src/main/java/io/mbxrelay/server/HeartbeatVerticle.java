package io.mbxrelay.server;

import io.mbxrelay.writer.StoreClient;
import io.mbxrelay.store.StoreCommand;
import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import java.util.Objects;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Timer verticle: writes {@code meta.heartbeat} through the writer every {@code intervalMs} (docs/protocol.md §5 "Epoch /
 * heartbeat": 30 s). A store restarted after more than the stale bound without heartbeats rotates its epoch at open.
 */
public final class HeartbeatVerticle extends VerticleBase {
  private static final Logger LOG = LoggerFactory.getLogger(HeartbeatVerticle.class);
  private final StoreClient writes;
  private final long intervalMs;
  private long timer = -1;

  /**
   * @param writes the writer facade
   * @param intervalMs heartbeat interval
   */
  public HeartbeatVerticle(StoreClient writes, long intervalMs) {
    this.writes = Objects.requireNonNull(writes);
    this.intervalMs = intervalMs;
  }

  @Override
  public Future<?> start() {
    timer = vertx.setPeriodic(intervalMs, id -> beat());
    return Future.succeededFuture();
  }

  /** Writes one heartbeat now. */
  Future<Long> beat() {
    return writes.send(new StoreCommand.Heartbeat())
        .onFailure(e -> LOG.warn("heartbeat write failed [error: {}]", e.getMessage()));
  }

  @Override
  public Future<?> stop() {
    vertx.cancelTimer(timer);
    return Future.succeededFuture();
  }
}
