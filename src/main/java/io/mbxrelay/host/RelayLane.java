package io.mbxrelay.host;

/**
 * Everything a {@link HostAgent} keeps for one of its relays (docs/host-library.md "Several relays"): the URL, the
 * transport (opened once the relay key is pinned, reopened when it changes), the session (pin, epoch, enrolment,
 * allowlist, enc-key ad, backoff: {@link RelaySession}) and the receive side (position, pages, acks:
 * {@link Inbox}). A lane's failure stops only that lane's part of a tick. Used under the store lock on the ticking
 * thread, except the long-poll wait, which reads {@link RelaySession#relayPullWait},
 * {@link RelaySession#sessionRelayPub} and {@link Inbox#caughtUp} (volatile) and uses the transport outside it.
 */
final class RelayLane implements AutoCloseable {

  final String url;
  private final AgentContext ctx;
  final RelaySession session;
  Inbox inbox;
  /** Whether this relay's part of the last tick got through (session, push, pull). */
  volatile boolean okLastTick;
  private RelayTransport transport;
  private String transportKey;

  RelayLane(AgentContext ctx, String url) {
    this.ctx = ctx;
    this.url = url;
    this.session = new RelaySession(ctx, this);
  }

  /** The transport for the pinned relay key (a new one when the key changed). */
  synchronized RelayTransport transport(String relayPub) {
    if (transport == null || !relayPub.equals(transportKey)) {
      if (transport != null) {
        transport.close();
      }
      transport = ctx.transports.open(url, ctx.options.hostName(), relayPub);
      transportKey = relayPub;
    }
    return transport;
  }

  @Override
  public synchronized void close() {
    if (transport != null) {
      transport.close();
      transport = null;
    }
  }
}
