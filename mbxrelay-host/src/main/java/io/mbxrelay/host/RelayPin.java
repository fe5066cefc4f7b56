package io.mbxrelay.host;

import io.mbxrelay.wire.B64;

/**
 * How a {@link RelayClient} trusts the relay's signing key (docs/protocol.md §6 "Session open", step 1). The pinned key
 * verifies every accept receipt (docs/protocol.md §4.5); a relay presenting another key is refused
 * ({@link RelayKeyChanged}), never silently used.
 *
 * <ul>
 *   <li>{@link Key}: the full base64 relay public key is known (e.g. from the pin file); receipts are verified
 *       against it without asking the relay first.
 *   <li>{@link Fingerprint}: only the fingerprint is known (operator-provided, {@code --relay-key}); the key is
 *       learned from {@code GET /v2/relay/info} and must have that fingerprint.
 *   <li>{@link TrustOnFirstUse}: nothing is known; the key of the first valid info answer is accepted and pinned for
 *       the rest of this client's life. Only when the caller asks for it explicitly; the caller should persist
 *       {@link RelayClient#relayKey()} afterwards.
 * </ul>
 * Immutable values.
 */
public sealed interface RelayPin permits RelayPin.Key, RelayPin.Fingerprint, RelayPin.TrustOnFirstUse {

  /**
   * A pinned full relay public key.
   *
   * @param relayPubkey standard base64 of the 32-byte key (44 characters); must pass {@link B64#isPubkey}
   */
  record Key(String relayPubkey) implements RelayPin {
    /** @throws IllegalArgumentException when {@code relayPubkey} is not a base64 32-byte key */
    public Key {
      if (!B64.isPubkey(relayPubkey)) {
        throw new IllegalArgumentException("relay key must be a base64 32-byte public key");
      }
    }
  }

  /**
   * A pinned relay key fingerprint.
   *
   * @param fingerprint lowercase dashed form, e.g. {@code 3f9a-0c11-7d2e-b845} ({@link
   *     io.mbxrelay.crypto.Fingerprint#normalize} accepts what operators type)
   */
  record Fingerprint(String fingerprint) implements RelayPin {
    /** @throws IllegalArgumentException when {@code fingerprint} is not a fingerprint or key */
    public Fingerprint {
      fingerprint = io.mbxrelay.crypto.Fingerprint.normalize(fingerprint)
          .orElseThrow(() -> new IllegalArgumentException("not a relay key fingerprint"));
    }
  }

  /** Trust the first relay key seen (explicit opt-in). */
  record TrustOnFirstUse() implements RelayPin {}

}
