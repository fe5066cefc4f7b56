package io.mbxrelay.host;

import io.mbxrelay.host.seal.EncKeyPair;
import java.sql.SQLException;
import java.util.Optional;

/**
 * This host's X25519 encryption key, kept in the owner-only host store ({@code meta} {@code enc_priv} /
 * {@code enc_pub}, standard base64) and generated on first use (docs/host-library.md "Peer encryption keys"). Peers
 * seal envelopes for its public key; {@link HostAgent} advertises it on the relay; {@link SealedInbox} opens with it.
 * Thread-safe (locks the store).
 */
public final class HostEncKey {

  private HostEncKey() {}

  /**
   * Loads the key pair, or generates and stores one.
   *
   * @param store the host store
   * @return the key pair
   * @throws SQLException on storage errors
   * @throws IllegalStateException when the stored private key is not a valid key
   */
  public static EncKeyPair loadOrCreate(HostStore store) throws SQLException {
    synchronized (store) {
      Optional<String> priv = store.setting("enc_priv");
      if (priv.isPresent()) {
        try {
          return EncKeyPair.fromPrivateB64(priv.get());
        } catch (IllegalArgumentException e) {
          throw new IllegalStateException("the host store's encryption key is damaged: " + e.getMessage());
        }
      }
      EncKeyPair k = EncKeyPair.generate();
      store.tx(c -> {
        store.putMeta("enc_priv", k.privateKeyB64());
        store.putMeta("enc_pub", k.publicKeyB64());
        return null;
      });
      return k;
    }
  }
}
