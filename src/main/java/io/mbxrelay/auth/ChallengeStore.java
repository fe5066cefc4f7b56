package io.mbxrelay.auth;

import io.mbxrelay.wire.B64;
import io.mbxrelay.wire.KeySpelling;
import java.security.SecureRandom;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Open enrolment challenges, in memory (docs/protocol.md §7.2 "Challenges", §4.1):
 * one per host key, each lives {@code ttlMs} from its issue, at most {@code max} open. A restart only invalidates
 * outstanding challenges; clients retry.
 *
 * <p>Stricter than the reference in two ways (issue 11 items 5 and 6; docs/security.md):
 * <ul>
 *   <li>Asking again for a key with an unexpired challenge returns <em>the same</em> nonce with its original expiry
 *       (the reference replaced it). The nonce is not a secret: it only makes the enrolment signature fresh. So a
 *       third party asking for a victim's key can no longer invalidate the victim's pending challenge. The wire texts
 *       are unchanged.</li>
 *   <li>A full table sheds its oldest challenge instead of refusing every new key (the reference answered 503
 *       {@code too many open enrolment challenges; retry later} for the whole TTL). Expired challenges go first.</li>
 * </ul>
 * Keys are held in their canonical spelling ({@link KeySpelling}), so the 4 spellings of one key share one challenge.
 *
 * <p>The routes see it through {@link Challenges#inMemory}; several instances on one PostgreSQL share theirs in the
 * database instead ({@code store/postgres/PgSharedState}).
 *
 * <p>Thread-safe (shared by every HTTP verticle instance); methods are short and synchronized. Issuing is O(1)
 * amortized: entries are kept in issue order, so expired and shed entries are taken from the head.
 */
public final class ChallengeStore {
  private final int max;
  private final long ttlMs;
  private final SecureRandom random = new SecureRandom();
  /** Insertion (= issue) order; with one TTL for all, also expiry order. */
  private final LinkedHashMap<String, Open> open = new LinkedHashMap<>();
  private final AtomicLong shed = new AtomicLong();

  private record Open(String nonce, long expiresAt) {}

  /**
   * @param max most open challenges (config {@code limits.maxOpenChallenges}), at least 1
   * @param ttlMs lifetime of a challenge, ms (config {@code limits.challengeTtlMs}, docs/protocol.md §3: 300,000)
   */
  public ChallengeStore(int max, long ttlMs) {
    if (max < 1 || ttlMs < 1) {
      throw new IllegalArgumentException("max and ttlMs must be positive");
    }
    this.max = max;
    this.ttlMs = ttlMs;
  }

  /**
   * The key's challenge: its unexpired one if there is one (same nonce, same expiry), else a new one. When
   * {@code max} challenges are open, the oldest is shed to make room.
   *
   * @param hostPubkey the key field as sent (any spelling; already checked with {@code B64.isPubkey})
   * @param nowMs now, epoch ms
   * @return the nonce (16 random bytes, base64url without padding, docs/protocol.md §1); never empty since issue 11 (the
   *     Optional stays so that a future policy may refuse again, answered 503 BUSY by the caller)
   */
  public synchronized Optional<String> issue(String hostPubkey, long nowMs) {
    String key = KeySpelling.canonicalOrSelf(hostPubkey);
    Open current = open.get(key);
    if (current != null && current.expiresAt > nowMs) {
      return Optional.of(current.nonce);
    }
    if (current != null) {
      open.remove(key);
    }
    purgeExpired(nowMs);
    while (open.size() >= max) {
      Iterator<String> oldest = open.keySet().iterator();
      oldest.next();
      oldest.remove();
      shed.incrementAndGet();
    }
    byte[] b = new byte[16];
    random.nextBytes(b);
    String nonce = B64.base64UrlNoPad(b);
    open.put(key, new Open(nonce, nowMs + ttlMs));
    return Optional.of(nonce);
  }

  /**
   * The key's unexpired challenge, without consuming it.
   *
   * @param hostPubkey the key field as sent (any spelling)
   * @param nowMs now, epoch ms
   * @return the nonce or empty (docs/protocol.md §4.1: 401 {@code no pending enrolment challenge})
   */
  public synchronized Optional<String> pending(String hostPubkey, long nowMs) {
    Open o = open.get(KeySpelling.canonicalOrSelf(hostPubkey));
    if (o == null || o.expiresAt <= nowMs) {
      return Optional.empty();
    }
    return Optional.of(o.nonce);
  }

  /**
   * Consumes the key's challenge if it is still the given nonce.
   *
   * @param hostPubkey the key field as sent (any spelling)
   * @param nonce the nonce that was verified
   * @return true when this call consumed it (false: already consumed, replaced or shed)
   */
  public synchronized boolean consume(String hostPubkey, String nonce) {
    String key = KeySpelling.canonicalOrSelf(hostPubkey);
    Open o = open.get(key);
    if (o != null && o.nonce.equals(nonce)) {
      open.remove(key);
      return true;
    }
    return false;
  }

  /** Open challenges right now (metrics). */
  public synchronized int size() {
    return open.size();
  }

  /** Unexpired challenges shed to make room since start (metrics, tests). */
  public long shed() {
    return shed.get();
  }

  private void purgeExpired(long nowMs) {
    Iterator<Open> it = open.values().iterator();
    while (it.hasNext()) {
      if (it.next().expiresAt > nowMs) {
        return; // issue order is expiry order: the rest is younger
      }
      it.remove();
    }
  }
}
