package io.mbxrelay.store.model;

import java.nio.file.Path;

/**
 * What opening a store did, whatever its backend, for the start lines of {@code serve} (docs/architecture.md "Store:
 * ledger and backends"). Immutable; safe on any thread.
 *
 * @param created the store (SQLite: {@code relay.db}; PostgreSQL: the relay schema) was created by this open
 * @param keyCreated this open generated the relay key (PostgreSQL: the database had none and none was given); the
 *     SQLite key lives in the store directory and is never created by the open, so false there
 * @param epochRotatedReason why the epoch rotated at open ({@link io.mbxrelay.store.EpochRule}), or null
 * @param previousEpoch the epoch before that rotation, or null
 * @param migratedFrom the schema version the store was migrated from, 0 when it was not migrated
 * @param migrationBackup the automatic backup taken before that migration (issue 12 item 13), or null
 */
public record OpenReport(boolean created, boolean keyCreated, String epochRotatedReason, String previousEpoch,
    int migratedFrom, Path migrationBackup) {}
