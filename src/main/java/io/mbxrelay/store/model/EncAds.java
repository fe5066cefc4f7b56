package io.mbxrelay.store.model;

/**
 * The enc-key ads of a live enrolment (docs/protocol.md §4.2).
 *
 * @param hostName the enrolment's stored name
 * @param hostPubkey the key
 * @param v1EncPub the v1 ad's key, or null
 * @param v1Sig the v1 ad's signature, or null
 * @param v2Record the v2 ad record (canonical JSON), or null
 * @param v2Sig the v2 ad's signature, or null
 */
public record EncAds(String hostName, String hostPubkey, String v1EncPub, String v1Sig, String v2Record,
    String v2Sig) {}
