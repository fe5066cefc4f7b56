package io.mbxrelay.host;

import io.mbxrelay.crypto.Ed25519KeyPair;

/**
 * Base of the parts of a {@link HostAgent}: short names for what they share through the {@link AgentContext}, and
 * the relay a part works for ({@code url}; null for the message-level {@link Outbox}).
 */
abstract class AgentPart {

  final AgentContext ctx;
  final HostStore store;
  /** Typed SQL on the relay and position rows. */
  final RelayRows relays;
  /** Typed SQL on the outbox and draft rows. */
  final OutboxRows rows;
  /** Typed SQL on the receive side (positions, quarantine, received, peer receipts). */
  final InboxRows inRows;
  final Ed25519KeyPair key;
  final String url;
  final HostAgent.Options options;

  AgentPart(AgentContext ctx, String url) {
    this.ctx = ctx;
    this.store = ctx.store;
    this.relays = new RelayRows(ctx.store);
    this.rows = new OutboxRows(ctx.store);
    this.inRows = new InboxRows(ctx.store);
    this.key = ctx.key;
    this.url = url;
    this.options = ctx.options;
  }

  long now() {
    return ctx.now();
  }
}
