package io.mbxrelay.host;

import io.mbxrelay.crypto.Ed25519KeyPair;
import java.sql.SQLException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What the parts of one {@link HostAgent} share ({@link RelaySession}, {@link Outbox}, {@link Inbox}): the store, this
 * host's key, the relay URL, the options, the transport to the relay (opened once the relay key is pinned, reopened
 * when it changes), time, backoff and alerts. Used under the store lock on the ticking thread.
 */
final class AgentContext implements AutoCloseable {

  private static final Logger LOG = LoggerFactory.getLogger(HostAgent.class);

  final HostStore store;
  final Ed25519KeyPair key;
  final String url;
  final HostAgent.Options options;
  private final RelayTransport.Factory transports;
  private RelayTransport transport;
  private String transportKey;

  AgentContext(HostStore store, Ed25519KeyPair key, String url, HostAgent.Options options,
      RelayTransport.Factory transports) {
    this.store = store;
    this.key = key;
    this.url = url;
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

  /** The transport for the pinned relay key (a new one when the key changed). */
  RelayTransport transport(String relayPub) {
    if (transport == null || !relayPub.equals(transportKey)) {
      if (transport != null) {
        transport.close();
      }
      transport = transports.open(url, options.hostName(), relayPub);
      transportKey = relayPub;
    }
    return transport;
  }

  /** Records an alert for people (and logs its kind, not its text). */
  void alert(String kind, String target, String itemId, String text) throws SQLException {
    store.insertAlert(now(), kind, url, target, itemId, text);
    LOG.warn("host alert [kind: {}]", kind);
  }

  @Override
  public void close() {
    if (transport != null) {
      transport.close();
      transport = null;
    }
  }
}
