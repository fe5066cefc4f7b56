package io.mbxrelay.store.model;

/**
 * One deny-list entry (docs/deny-list.md).
 *
 * @param kind {@code host_fp} or {@code client_id}
 * @param value fingerprint or client id
 * @param note operator note
 * @param addedAt ISO time added
 */
public record DenyEntry(String kind, String value, String note, String addedAt) {}
