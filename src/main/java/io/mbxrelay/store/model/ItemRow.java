package io.mbxrelay.store.model;

/**
 * One queued item row (docs/protocol.md §5).
 *
 * @param target the target key
 * @param seq its seq in the target's queue
 * @param kind {@code envelope}, {@code receipt} or {@code expired}
 * @param itemId the item id
 * @param sender the sender key (the relay key for notices)
 * @param senderHost the sender's stored name ({@code relay} for notices)
 * @param wire the exact stored bytes; null where an operation says it leaves them out
 * @param wireHash lowercase hex SHA-256 of the wire
 * @param bytes wire length, bytes
 * @param acceptedAt ISO time accepted
 * @param expiresAt ISO expiry time, or null (never expires)
 */
public record ItemRow(String target, long seq, String kind, String itemId, String sender, String senderHost,
    byte[] wire, String wireHash, long bytes, String acceptedAt, String expiresAt) {}
