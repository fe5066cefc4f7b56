package io.mbxrelay.host;

import java.sql.SQLException;
import java.util.Optional;

/**
 * Typed SQL on the host store's {@code relays} and {@code positions} tables, for the agent's relay session
 * (docs/host-library.md). Each method is one statement on the store's connection: the caller holds the store lock
 * and, where several must commit together, runs them inside one {@link HostStore#tx}.
 */
final class RelayRows {

  private final HostStore store;

  RelayRows(HostStore store) {
    this.store = store;
  }

  /** Epoch ms before which no new session is tried for {@code url}; 0 when none stored. */
  long sessionNextAt(String url) throws SQLException {
    return store.one("SELECT session_next_at FROM relays WHERE url=?", rs -> rs.getLong(1), url).orElse(0L);
  }

  /** Stores the relay's announced limits (days, items per push batch, items per pull page, bytes per item). */
  void setLimits(String url, long retentionDays, long maxBatch, long maxPull, long maxItemBytes) throws SQLException {
    store.update("UPDATE relays SET retention_days=?, max_batch=?, max_pull=?, max_item_bytes=? WHERE url=?",
        retentionDays, maxBatch, maxPull, maxItemBytes, url);
  }

  /** Stores the relay's epoch. */
  void setEpoch(String url, String epoch) throws SQLException {
    store.update("UPDATE relays SET epoch=? WHERE url=?", epoch, url);
  }

  /** Receive position 0 (received and acked) in {@code epoch}, replacing any earlier position of {@code url}. */
  void resetPosition(String url, String epoch) throws SQLException {
    store.update("INSERT INTO positions(relay, epoch, received_through, acked_through) VALUES(?, ?, 0, 0)"
        + " ON CONFLICT(relay) DO UPDATE SET epoch=excluded.epoch, received_through=0, acked_through=0", url, epoch);
  }

  /** Marks the host enrolled (cache key {@code url|relayPub|epoch|hostPub}) and clears enrolment failures. */
  void markEnrolled(String url, String cache) throws SQLException {
    store.update("UPDATE relays SET enrolled_cache=?, enrol_failures=0 WHERE url=?", cache, url);
  }

  /** Marks a fresh enrolment: stores the cache key and forgets the published allowlist digest. */
  void markFreshlyEnrolled(String url, String cache) throws SQLException {
    store.update("UPDATE relays SET enrolled_cache=?, allowlist_digest=NULL WHERE url=?", cache, url);
  }

  /** Consecutive session failures so far; 0 when none stored. */
  int sessionFailures(String url) throws SQLException {
    return store.one("SELECT session_failures FROM relays WHERE url=?", rs -> rs.getInt(1), url).orElse(0);
  }

  /** Records the session failure count and the epoch ms of the next try. */
  void setSessionBackoff(String url, int failures, long nextAt) throws SQLException {
    store.update("UPDATE relays SET session_failures=?, session_next_at=? WHERE url=?", failures, nextAt, url);
  }

  /** Epoch ms before which no enrolment is tried; 0 when none stored. */
  long enrolNextAt(String url) throws SQLException {
    return store.one("SELECT enrol_next_at FROM relays WHERE url=?", rs -> rs.getLong(1), url).orElse(0L);
  }

  /** Consecutive enrolment failures so far; 0 when none stored. */
  int enrolFailures(String url) throws SQLException {
    return store.one("SELECT enrol_failures FROM relays WHERE url=?", rs -> rs.getInt(1), url).orElse(0);
  }

  /** Records an enrolment failure: its count, the epoch ms of the next try, and the enrolled cache gone. */
  void setEnrolBackoff(String url, int failures, long nextAt) throws SQLException {
    store.update("UPDATE relays SET enrol_failures=?, enrol_next_at=?, enrolled_cache=NULL WHERE url=?", failures,
        nextAt, url);
  }

  /** Forgets the enrolled cache (the relay answered 401). */
  void clearEnrolled(String url) throws SQLException {
    store.update("UPDATE relays SET enrolled_cache=NULL WHERE url=?", url);
  }

  /**
   * The published allowlist state as {@code [digest (nullable), nextAt epoch ms as decimal]}; empty when the relay
   * row is missing.
   */
  Optional<String[]> allowlistState(String url) throws SQLException {
    return store.one("SELECT allowlist_digest, allowlist_next_at FROM relays WHERE url=?",
        rs -> new String[] {rs.getString(1), Long.toString(rs.getLong(2))}, url);
  }

  /** Records the digest (SHA-256 hex) of the allowlist the relay now holds. */
  void setAllowlistDigest(String url, String digest) throws SQLException {
    store.update("UPDATE relays SET allowlist_digest=? WHERE url=?", digest, url);
  }

  /** The {@code iat} (epoch ms) of the last allowlist sent to {@code url}; 0 when none. */
  long allowlistIat(String url) throws SQLException {
    return store.one("SELECT allowlist_iat FROM relays WHERE url=?", rs -> rs.getLong(1), url).orElse(0L);
  }

  /** Records the {@code iat} (epoch ms) of an allowlist about to be sent. */
  void setAllowlistIat(String url, long iat) throws SQLException {
    store.update("UPDATE relays SET allowlist_iat=? WHERE url=?", iat, url);
  }

  /** Records the epoch ms before which the allowlist is not published again. */
  void setAllowlistNextAt(String url, long nextAt) throws SQLException {
    store.update("UPDATE relays SET allowlist_next_at=? WHERE url=?", nextAt, url);
  }

  /** Puts relay-accepted envelopes back for re-push after an epoch change; returns the rows moved. */
  int requeueAccepted(String url, long now) throws SQLException {
    return store.update("UPDATE outbox SET state='repush', next_at=?, attempts=2 WHERE relay=? AND"
        + " kind='envelope' AND state IN ('relay-accepted', 'repush')", now, url);
  }

  /** Stores a new epoch and forgets the enrolled cache and the published allowlist digest. */
  void changeEpoch(String url, String epoch) throws SQLException {
    store.update("UPDATE relays SET epoch=?, enrolled_cache=NULL, allowlist_digest=NULL WHERE url=?", epoch, url);
  }

  /** Pins a first relay key ({@code relays} row created) at epoch ms {@code nowMs}. */
  void insertPin(String url, String relayPubkey, long nowMs) throws SQLException {
    store.update("INSERT INTO relays(url, relay_pubkey, pinned_at) VALUES(?, ?, ?)", url, relayPubkey, nowMs);
  }

  /** Forgets a presented (unconfirmed) relay key: the relay presents the pinned one again. */
  void clearPresented(String url) throws SQLException {
    store.update("UPDATE relays SET presented_pubkey=NULL, presented_at=NULL WHERE url=?", url);
  }

  /** Pins another relay key; the presented key, the enrolled cache and the allowlist digest go. */
  void repin(String url, String relayPubkey, long nowMs) throws SQLException {
    store.update("UPDATE relays SET relay_pubkey=?, pinned_at=?, presented_pubkey=NULL, presented_at=NULL,"
        + " enrolled_cache=NULL, allowlist_digest=NULL WHERE url=?", relayPubkey, nowMs, url);
  }

  /** Records a presented key other than the pinned one; returns 0 when that key was already recorded. */
  int recordPresented(String url, String presented, long nowMs) throws SQLException {
    return store.update("UPDATE relays SET presented_pubkey=?, presented_at=? WHERE url=? AND"
        + " (presented_pubkey IS NULL OR presented_pubkey<>?)", presented, nowMs, url, presented);
  }

  /** Records a tick that got through: no last error, last success at {@code nowMs}, session failures reset. */
  void markOk(String url, long nowMs) throws SQLException {
    store.update("UPDATE relays SET last_error=NULL, last_ok_at=?, session_failures=0 WHERE url=?", nowMs, url);
  }

  /** Records how the relay's part of the last tick went ({@link TickReport.Relay#session()}). */
  void setLastSession(String url, String session) throws SQLException {
    store.update("UPDATE relays SET last_session=? WHERE url=?", session, url);
  }

  /** Records the last relay problem (nullable text). */
  void setLastError(String url, String error) throws SQLException {
    store.update("UPDATE relays SET last_error=? WHERE url=?", error, url);
  }

  /** The stored relay epoch; empty when the row is missing or no epoch is stored yet. */
  Optional<String> epoch(String url) throws SQLException {
    return store.one("SELECT epoch FROM relays WHERE url=?", rs -> rs.getString(1), url);
  }
}
