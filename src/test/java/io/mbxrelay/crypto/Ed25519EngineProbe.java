package io.mbxrelay.crypto;

import java.nio.charset.StandardCharsets;

/**
 * A child JVM's answer for {@link Ed25519EngineSelectionTest}: one line {@code <engine>|<fallback reason or "">|<ok>},
 * where ok says that a signature made with the selected engine verifies and a corrupted one does not.
 */
public final class Ed25519EngineProbe {
  private Ed25519EngineProbe() {}

  public static void main(String[] args) {
    Ed25519KeyPair key = Ed25519KeyPair.fromSeed(new byte[32]);
    byte[] m = "probe".getBytes(StandardCharsets.UTF_8);
    byte[] sig = key.sign(m);
    byte[] bad = sig.clone();
    bad[0] ^= 1;
    boolean ok = Ed25519.verify(key.publicKey(), m, sig) && !Ed25519.verify(key.publicKey(), m, bad);
    System.out.println(Ed25519Engine.inUse().kind().label() + "|" + Ed25519Engine.fallbackReason().orElse("") + "|"
        + ok);
  }
}
