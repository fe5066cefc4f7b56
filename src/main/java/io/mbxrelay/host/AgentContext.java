package io.mbxrelay.host;

import io.mbxrelay.crypto.Ed25519KeyPair;
import java.sql.SQLException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What every part of one {@link HostAgent} shares, whatever relay it works for ({@link Outbox}, and each
 * {@link RelayLane}'s {@link RelaySession} and {@link Inbox}): the store, this host's key, the options, the transport
 * factory, time, backoff and alerts. Used under the store lock on the ticking thread.
 */
final class AgentContext {

  private static final Logger LOG = LoggerFactory.getLogger(HostAgent.class);

  final HostStore store;
  final Ed25519KeyPair key;
  final HostAgent.Options options;
  final RelayTransport.Factory transports;

  AgentContext(HostStore store, Ed25519KeyPair key, HostAgent.Options options, RelayTransport.Factory transports) {
    this.store = store;
    this.key = key;
    this.options = options;
    this.transports = transports;
  }

  long now() {
    return options.clock().millis();
  }

  /** Capped exponential backoff with jitter factor 0.5–1.0: base·2^(n−1), at most cap. */
  long backoff(long baseMs, long capMs, int n) {
    double raw = Math.min((double) capMs, baseMs * Math.pow(2, Math.max(0, n - 1)));
    return (long) (raw * (0.5 + 0.5 * options.random().nextDouble()));
  }

  /** Records an alert for people (and logs its kind, not its text); {@code relay} may be null (message-level). */
  void alert(String kind, String relay, String target, String itemId, String text) throws SQLException {
    store.insertAlert(now(), kind, relay, target, itemId, text);
    LOG.warn("host alert [kind: {}]", kind);
  }
}
