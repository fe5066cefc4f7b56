package io.mbxrelay.store.model;

/**
 * What a host sees of itself in {@code info.you} (docs/protocol.md §4.7).
 *
 * @param headSeq last allocated seq for the host, 0 if none
 * @param ackedThrough highest seq the host acked, 0 if none
 * @param v1EncPub the v1 enc-key ad's key, or null
 * @param v2Record the v2 ad record (canonical JSON), or null
 */
public record HostState(long headSeq, long ackedThrough, String v1EncPub, String v2Record) {}
