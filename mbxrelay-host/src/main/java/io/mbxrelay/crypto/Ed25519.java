package io.mbxrelay.crypto;

import io.mbxrelay.wire.B64;
import java.util.Optional;

/**
 * Ed25519 signature verification as the reference does it ({@code docs/protocol.md §1}): lenient base64 decoding of key
 * and signature, and any problem means "invalid" — this never throws. What is accepted is BouncyCastle's RFC 8032
 * verification, whichever {@link Ed25519Engine} runs it (AWS-LC where it loads, glued to accept exactly the same).
 * Thread-safe: safe on any event loop.
 */
public final class Ed25519 {

  private Ed25519() {}

  /**
   * Verifies a base64 signature with a base64 public key. Both are decoded like Node's
   * {@code Buffer.from(s, 'base64')} ({@link B64#decodeLenient(String)}); they must then be 32 and 64 bytes.
   *
   * @param pubkeyB64 the signer's public key, base64 (null → false)
   * @param message the signed bytes (null → false)
   * @param sigB64 the signature, base64 (null → false)
   * @return true only for a valid signature
   */
  public static boolean verify(String pubkeyB64, byte[] message, String sigB64) {
    if (pubkeyB64 == null || message == null) {
      return false;
    }
    Optional<byte[]> sig = B64.decodeLenient(sigB64);
    if (sig.isEmpty() || sig.get().length != Ed25519KeyPair.SIGNATURE_BYTES) {
      return false;
    }
    Ed25519Engine.Verifier verifier = POINTS.get(pubkeyB64);
    if (verifier == null) {
      Optional<byte[]> pub = B64.decodeLenient(pubkeyB64);
      if (pub.isEmpty() || pub.get().length != Ed25519KeyPair.KEY_BYTES) {
        return false;
      }
      verifier = ENGINE.verifier(pub.get());
      if (verifier == null) {
        return false; // not a usable key (BouncyCastle's check): the byte form below refuses it too (tested)
      }
      int bound = maxPoints;
      if (bound > 0) {
        if (POINTS.size() >= bound) {
          evict(bound);
        }
        POINTS.put(pubkeyB64, verifier);
      }
    }
    return verifier.verify(message, sig.get());
  }

  private static final Ed25519Engine ENGINE = Ed25519Engine.inUse();

  /**
   * Per-key verifiers by key text, each holding the decoded public point (decoding a key, a square root in the
   * field, is a tenth of a verification, and every request of a host verifies with the same key) and, on the AWS-LC
   * engine, the JDK's key object (about 750 bytes in all). Bounded by {@link #cacheBound(int)}.
   */
  private static final java.util.concurrent.ConcurrentHashMap<String, Ed25519Engine.Verifier> POINTS =
      new java.util.concurrent.ConcurrentHashMap<>();
  /**
   * Default of {@link #cacheBound(int)}: the relay's default enrolment limit with room for rotated keys (~90 MB of
   * heap when full).
   */
  public static final int DEFAULT_CACHE_KEYS = 120_000;
  private static volatile int maxPoints = DEFAULT_CACHE_KEYS;

  /**
   * Sets how many keys' verifiers are kept (the relay's {@code trust.verifierCacheMaxKeys}; ~750 bytes of heap each).
   * A key not kept is decoded again on its next use: about 50 instead of 32 µs per verification with AWS-LC.
   *
   * @param maxKeys most keys kept, ≥ 0 (0 keeps none); a smaller bound than the keys held now drops the excess
   */
  public static void cacheBound(int maxKeys) {
    if (maxKeys < 0) {
      throw new IllegalArgumentException("maxKeys < 0: " + maxKeys);
    }
    maxPoints = maxKeys;
    if (POINTS.size() > maxKeys) {
      evict(maxKeys);
    }
  }

  /** Keys held now (for tests and gauges). */
  public static int cachedKeys() {
    return POINTS.size();
  }

  /** Keys dropped to keep within the bound since the process started. */
  public static long evictedKeys() {
    return EVICTED.sum();
  }

  private static final java.util.concurrent.atomic.LongAdder EVICTED = new java.util.concurrent.atomic.LongAdder();

  /**
   * Drops keys until at most seven eighths of {@code bound} are left, in the map's iteration order (effectively
   * arbitrary): hosts whose keys go are decoded again on their next request. Dropping an eighth at a time rather than
   * the whole map keeps the hit rate at about bound / active keys when more hosts are active than the bound allows
   * (the earlier clear-all emptied the cache every {@code bound} new keys). No LRU order: keeping it would put a write
   * on every verification's hot path for a rare case.
   */
  private static void evict(int bound) {
    int keep = bound - bound / 8 - 1;
    var it = POINTS.keySet().iterator();
    while (POINTS.size() > Math.max(0, keep) && it.hasNext()) {
      it.next();
      it.remove();
      EVICTED.increment();
    }
  }

  /**
   * Verifies a raw signature with a raw public key.
   *
   * @param pub32 the 32-byte public key (other lengths or null → false)
   * @param message the signed bytes (null → false)
   * @param sig64 the 64-byte signature (other lengths or null → false)
   * @return true only for a valid signature
   */
  public static boolean verify(byte[] pub32, byte[] message, byte[] sig64) {
    if (pub32 == null || message == null || sig64 == null
        || pub32.length != Ed25519KeyPair.KEY_BYTES || sig64.length != Ed25519KeyPair.SIGNATURE_BYTES) {
      return false;
    }
    Ed25519Engine.Verifier verifier = ENGINE.verifier(pub32);
    return verifier != null && verifier.verify(message, sig64);
  }
}
