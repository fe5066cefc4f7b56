package io.mbxrelay.auth;

import io.vertx.core.Future;
import java.util.Objects;
import java.util.Optional;

/**
 * Open enrolment challenges as the enrolment routes see them (docs/protocol.md §7.2 "Challenges", §4.1): one per host
 * key, each {@code limits.challengeTtlMs} from its issue, at most {@code limits.maxOpenChallenges} open, consumed once.
 * Asynchronous so that a store in a shared database ({@code store/postgres/PgSharedState}, docs/scale-out.md "What is
 * shared") never blocks an event loop; the in-memory store ({@link #inMemory}) completes every future at once.
 *
 * <p>Safe on any event loop. A failed future means the store could not be reached (the caller answers 503
 * {@code store unavailable; retry later}).
 */
public interface Challenges {
  /**
   * The key's challenge: its unexpired one if there is one (same nonce, same expiry), else a new one; the oldest is
   * shed when the table is full.
   *
   * @param hostPubkey the key field as sent (any spelling; already checked with {@code B64.isPubkey})
   * @param nowMs now, epoch ms
   * @return the nonce (16 random bytes, base64url without padding), or empty when a policy refuses (503 BUSY)
   */
  Future<Optional<String>> issue(String hostPubkey, long nowMs);

  /**
   * The key's unexpired challenge, without consuming it.
   *
   * @param hostPubkey the key field as sent (any spelling)
   * @param nowMs now, epoch ms
   * @return the nonce or empty (401 {@code no pending enrolment challenge})
   */
  Future<Optional<String>> pending(String hostPubkey, long nowMs);

  /**
   * Consumes the key's challenge if it is still the given nonce: of two callers that answered one challenge (on one
   * instance or on two), exactly one gets {@code true}.
   *
   * @param hostPubkey the key field as sent (any spelling)
   * @param nonce the nonce that was verified
   * @return true when this call consumed it
   */
  Future<Boolean> consume(String hostPubkey, String nonce);

  /**
   * The in-memory challenges of one relay process (SQLite, or a single instance): every future is already complete.
   *
   * @param store the table
   * @return the asynchronous view of it
   */
  static Challenges inMemory(ChallengeStore store) {
    Objects.requireNonNull(store);
    return new Challenges() {
      @Override
      public Future<Optional<String>> issue(String hostPubkey, long nowMs) {
        return Future.succeededFuture(store.issue(hostPubkey, nowMs));
      }

      @Override
      public Future<Optional<String>> pending(String hostPubkey, long nowMs) {
        return Future.succeededFuture(store.pending(hostPubkey, nowMs));
      }

      @Override
      public Future<Boolean> consume(String hostPubkey, String nonce) {
        return Future.succeededFuture(store.consume(hostPubkey, nonce));
      }
    };
  }
}
