package io.mbxrelay.writer;

import java.util.Map;

/**
 * The writer's signal that a transaction stored items: implemented by whoever waits for new items (the HTTP side's
 * long-poll waiters, {@code http.PullWaiters}) and given to {@link StoreWriterVerticle}, which installs it on its store.
 * The writer knows no HTTP class; the HTTP side knows no writer thread.
 *
 * <p>Threading: called on the writer thread right after the COMMIT, before that transaction's answers are sent; must
 * not block (hand work to an event loop).
 */
@FunctionalInterface
public interface ItemsCommitted {
  /** Signals nothing: for a writer nobody waits on (the CLI, tests). */
  ItemsCommitted NONE = heads -> {};

  /**
   * @param heads the public keys (base64, canonical spelling) of the hosts that received items in the committed
   *     transaction, each mapped to its head seq after it (the highest seq stored for it); unmodifiable. Commands and
   *     items rolled back to their savepoint name nothing. Also called when the transaction failed at or after its
   *     COMMIT, since it may have committed: a head may then name a seq that was never stored.
   */
  void itemsCommitted(Map<String, Long> heads);
}
