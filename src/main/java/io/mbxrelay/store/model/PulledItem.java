package io.mbxrelay.store.model;

/**
 * One stored item as pulled (docs/protocol.md §3).
 *
 * @param seq its seq
 * @param kind envelope, receipt or expired
 * @param itemId item id
 * @param senderPubkey sender key
 * @param wire exact stored bytes
 * @param senderHost the sender's stored name (v1 pull answers it as {@code from})
 */
public record PulledItem(long seq, String kind, String itemId, String senderPubkey, byte[] wire, String senderHost) {}
