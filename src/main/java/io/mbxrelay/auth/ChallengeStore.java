package io.mbxrelay.auth;

import io.mbxrelay.wire.B64;
import java.security.SecureRandom;
import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;
import java.util.Optional;

/**
 * Open enrolment challenges, in memory (seed 000 §2 "Challenges ... MAY stay in memory, bounded"; wire.md §4.1):
 * one per host key, a new one replaces the key's previous one, each lives {@code ttlMs}, at most {@code max} open.
 * A restart only invalidates outstanding challenges; clients retry.
 *
 * <p>Thread-safe (shared by every HTTP verticle instance); methods are short and synchronized.
 */
public final class ChallengeStore {
  private final int max;
  private final long ttlMs;
  private final SecureRandom random = new SecureRandom();
  private final Map<String, Open> open = new HashMap<>();

  private record Open(String nonce, long expiresAt) {}

  /**
   * @param max most open challenges
   * @param ttlMs lifetime of a challenge
   */
  public ChallengeStore(int max, long ttlMs) {
    this.max = max;
    this.ttlMs = ttlMs;
  }

  /**
   * Issues a challenge for a key, replacing its previous one.
   *
   * @param hostPubkey the key
   * @param nowMs now
   * @return the nonce (16 random bytes, base64url without padding), or empty when {@code max} challenges of other
   *     keys are open (503)
   */
  public synchronized Optional<String> issue(String hostPubkey, long nowMs) {
    purge(nowMs);
    if (!open.containsKey(hostPubkey) && open.size() >= max) {
      return Optional.empty();
    }
    byte[] b = new byte[16];
    random.nextBytes(b);
    String nonce = B64.base64UrlNoPad(b);
    open.put(hostPubkey, new Open(nonce, nowMs + ttlMs));
    return Optional.of(nonce);
  }

  /**
   * The key's unexpired challenge, without consuming it.
   *
   * @param hostPubkey the key
   * @param nowMs now
   * @return the nonce or empty
   */
  public synchronized Optional<String> pending(String hostPubkey, long nowMs) {
    Open o = open.get(hostPubkey);
    if (o == null || o.expiresAt <= nowMs) {
      return Optional.empty();
    }
    return Optional.of(o.nonce);
  }

  /**
   * Consumes the key's challenge if it is still the given nonce.
   *
   * @param hostPubkey the key
   * @param nonce the nonce that was verified
   */
  public synchronized void consume(String hostPubkey, String nonce) {
    Open o = open.get(hostPubkey);
    if (o != null && o.nonce.equals(nonce)) {
      open.remove(hostPubkey);
    }
  }

  /** Open challenges right now (metrics). */
  public synchronized int size() {
    return open.size();
  }

  private void purge(long nowMs) {
    Iterator<Open> it = open.values().iterator();
    while (it.hasNext()) {
      if (it.next().expiresAt <= nowMs) {
        it.remove();
      }
    }
  }
}
