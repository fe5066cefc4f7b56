package io.mbxrelay.host;

/**
 * The relay presented a signing key other than the pinned one (docs/protocol.md §6 "Session open", step 1). The client stops
 * there: nothing is pushed or enrolled. Immutable.
 *
 * @param pinnedFingerprint fingerprint of the pinned key (or the pinned fingerprint)
 * @param presentedPubkey the base64 relay key the relay presented in {@code /v2/relay/info}
 */
public record RelayKeyChanged(String pinnedFingerprint, String presentedPubkey)
    implements InfoResult, EnrolResult, PushResult {}
