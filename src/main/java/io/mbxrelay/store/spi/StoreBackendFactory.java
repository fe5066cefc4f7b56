package io.mbxrelay.store.spi;

import io.mbxrelay.config.RelayConfig;
import io.mbxrelay.crypto.Ed25519KeyPair;
import io.mbxrelay.store.StoreOpenException;
import java.nio.file.Path;
import java.time.Clock;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.ServiceLoader;

/**
 * A store backend as the relay starts it (docs/architecture.md "Store: ledger and backends"): one implementation per
 * {@code store.backend} value, found through {@link ServiceLoader} ({@code META-INF/services}), so the composition root
 * and the commands name no backend. It opens the store with its own guards and hands back an {@link OpenedStore}: the
 * writer's {@link LedgerBackend}, the reads, the open report and what closes it all.
 *
 * <p>Implementations are stateless and safe on any thread; {@link #open} is blocking (call it from a plain thread).
 */
public interface StoreBackendFactory {

  /**
   * The {@code store.backend} value this factory opens ({@link RelayConfig.Store#backend()}).
   *
   * @return e.g. {@code sqlite}, {@code postgresql}
   */
  String backend();

  /**
   * Whether the store lives in the store directory beside the relay key file and the store lock (SQLite): then
   * {@code serve} prepares that directory (modes, restore at start, the lost-store check, the key file, the lock) and
   * the file commands ({@code backup}, {@code restore}, {@code rotate-epoch}, {@code log}, {@code check}) work on it.
   * A database server's store (PostgreSQL) keeps the key and the data in the database and uses no directory.
   *
   * @return true for a store in the store directory
   */
  boolean storeInDirectory();

  /**
   * What logs and the start lines name as the store: the directory, or the database URL without its parameters (which
   * may carry secrets).
   *
   * @param config the store configuration
   * @param storeDir the store directory
   * @return the name, never a secret
   */
  String describe(RelayConfig.Store config, Path storeDir);

  /**
   * Opens (creating or migrating when needed) the store. On failure everything this call took (lock, pool, files) is
   * released again.
   *
   * @param request what to open and how
   * @return the open store
   * @throws StoreOpenException the store cannot be opened; a {@link io.mbxrelay.store.StoreRefusedException} when it is
   *     refused (damaged, foreign, behind its watermark, …) and a restart would not help
   */
  OpenedStore open(OpenRequest request) throws StoreOpenException;

  /**
   * What {@link #open} needs.
   *
   * @param config validated configuration
   * @param storeDir the store directory (a store that uses none ignores it)
   * @param givenKey the relay key the operator gave (SQLite: loaded from the store directory; PostgreSQL: from
   *     {@code MBX_RELAY_KEY}, or null to take the database's)
   * @param wallClock the wall clock (the store reads guarded time derived from it)
   * @param acceptClock take the wall clock as right even far from the store's clock watermark
   *     ({@code serve --accept-clock})
   * @param acceptLostCommits open a store behind its commit watermark with a new epoch
   *     ({@code serve --accept-lost-commits})
   * @param lockWaitMs how long to wait for another process to release the store's lock, ms
   */
  record OpenRequest(RelayConfig config, Path storeDir, Ed25519KeyPair givenKey, Clock wallClock, boolean acceptClock,
      boolean acceptLostCommits, long lockWaitMs) {
    public OpenRequest {
      Objects.requireNonNull(config);
      Objects.requireNonNull(storeDir);
      Objects.requireNonNull(wallClock);
    }
  }

  /**
   * The factory of the configured backend.
   *
   * @param config the store configuration
   * @return its factory
   * @throws IllegalArgumentException when no factory in this build opens {@code store.backend}
   */
  static StoreBackendFactory of(RelayConfig.Store config) {
    List<String> known = new ArrayList<>();
    for (StoreBackendFactory f : ServiceLoader.load(StoreBackendFactory.class, StoreBackendFactory.class
        .getClassLoader())) {
      if (f.backend().equals(config.backend())) {
        return f;
      }
      known.add(f.backend());
    }
    throw new IllegalArgumentException("store.backend " + config.backend() + " is not in this build ("
        + String.join(", ", known) + ")");
  }
}
