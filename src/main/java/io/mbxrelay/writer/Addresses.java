package io.mbxrelay.writer;

/**
 * Event-bus addresses. The set is small and fixed, so event-bus metrics may label by address (docs/architecture.md "Logs and metrics").
 */
public final class Addresses {
  /** The single writer: {@code StoreCommand} requests, typed results as replies (local only). */
  public static final String STORE_WRITE = "mbx.store.write";

  private Addresses() {}
}
