package io.mbxrelay.store.sqlite;

import io.mbxrelay.crypto.Fingerprint;
import io.mbxrelay.store.DenyOutcome;
import io.mbxrelay.store.Enrolment;
import io.mbxrelay.store.RotateOutcome;
import io.mbxrelay.store.SendersOutcome;
import io.mbxrelay.store.StoreCommand;
import io.mbxrelay.wire.IsoTime;
import io.mbxrelay.wire.Json;
import io.mbxrelay.wire.KeySpelling;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Clock;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;

/**
 * The trust commands of the SQLite store (issue 3): sender allowlists (docs/protocol.md §4.3), enc-key ads (§4.2), rotation
 * (§4.4) and the deny list (docs/protocol.md §7.8 "Revocation"), plus the deny and client parts of enrolment. Kept apart from
 * {@link SqliteRelayStore} so the core's push/ack code and these stay easy to review separately.
 *
 * <p>Keys arrive in their canonical spelling (the routes canonicalize them, issue 11 item 4); checks that must not be
 * fooled by a row stored under another spelling before that (revocation of a rotation's new key, allowlist entries)
 * match every spelling ({@link KeySpelling#spellings}). The deny list is keyed by fingerprint, i.e. by key bytes.
 *
 * <p>Threading: writer thread only, always inside the savepoint {@link SqliteRelayStore} opened for the command.
 */
final class TrustCommands {
  private static final String HOST_FP = io.mbxrelay.store.DenyKey.HOST_FP;
  private static final String CLIENT_ID = io.mbxrelay.store.DenyKey.CLIENT_ID;

  private final SqliteRelayStore store;
  private final Connection conn;
  private final Clock clock;

  TrustCommands(SqliteRelayStore store, Connection conn, Clock clock) {
    this.store = store;
    this.conn = conn;
    this.clock = clock;
  }

  /** Runs a trust command; null when {@code command} is not one. */
  Object run(StoreCommand<?> command) throws SQLException {
    if (command instanceof StoreCommand.PublishSenders p) {
      return senders(p);
    } else if (command instanceof StoreCommand.PublishEncAdV1 a) {
      return encAdV1(a);
    } else if (command instanceof StoreCommand.PublishEncAdV2 a) {
      return encAdV2(a);
    } else if (command instanceof StoreCommand.Rotate r) {
      return rotate(r);
    } else if (command instanceof StoreCommand.Deny d) {
      return deny(d);
    } else if (command instanceof StoreCommand.Undeny u) {
      return undeny(u);
    }
    return null;
  }

  private String now() {
    return IsoTime.format(clock.millis());
  }

  // ---- enrolment: deny check and token client (docs/protocol.md §7.8) ----

  /** True when the key's fingerprint or the token's client id is denied. */
  boolean denied(String hostPubkey, String clientId) throws SQLException {
    if (exists("SELECT 1 FROM deny_list WHERE kind=? AND value=?", HOST_FP, Fingerprint.ofB64(hostPubkey))) {
      return true;
    }
    return clientId != null && exists("SELECT 1 FROM deny_list WHERE kind=? AND value=?", CLIENT_ID, clientId);
  }

  /** Records the token client of an enrolment granted with one; a grant without one keeps the stored client. */
  void recordClient(String hostPubkey, String clientId, String org) throws SQLException {
    if (clientId == null) {
      return;
    }
    update("INSERT INTO enrolment_clients(host_pubkey, client_id, org, at) VALUES(?, ?, ?, ?)"
        + " ON CONFLICT(host_pubkey) DO UPDATE SET client_id=excluded.client_id, org=excluded.org, at=excluded.at",
        hostPubkey, clientId, org, now());
  }

  // ---- sender allowlist (docs/protocol.md §4.3) ----

  private SendersOutcome senders(StoreCommand.PublishSenders p) throws SQLException {
    try (PreparedStatement ps = conn.prepareStatement("SELECT iat FROM sender_lists WHERE target_pubkey=?")) {
      ps.setString(1, p.targetPubkey());
      try (ResultSet rs = ps.executeQuery()) {
        if (rs.next()) {
          var stored = IsoTime.parse(rs.getString(1));
          // an unparsable stored iat cannot be newer than a parsable one
          if (stored.isPresent() && stored.getAsLong() >= p.iatMs()) {
            return SendersOutcome.STALE;
          }
        }
      }
    }
    update("INSERT INTO sender_lists(target_pubkey, senders, iat, record, sig) VALUES(?, ?, ?, ?, ?)"
        + " ON CONFLICT(target_pubkey) DO UPDATE SET senders=excluded.senders, iat=excluded.iat,"
        + " record=excluded.record, sig=excluded.sig",
        p.targetPubkey(), Json.stringify(p.senders()), p.iat(), p.record(), p.sig());
    return SendersOutcome.STORED;
  }

  // ---- enc-key ads (docs/protocol.md §4.2) ----

  private Boolean encAdV1(StoreCommand.PublishEncAdV1 a) throws SQLException {
    update("INSERT INTO enc_ads(host_pubkey, host_name, enc_pub, sig, at) VALUES(?, ?, ?, ?, ?)"
        + " ON CONFLICT(host_pubkey) DO UPDATE SET host_name=excluded.host_name, enc_pub=excluded.enc_pub,"
        + " sig=excluded.sig, at=excluded.at", a.hostPubkey(), a.hostName(), a.encPub(), a.sig(), now());
    return Boolean.TRUE;
  }

  /**
   * Stores a v2 ad unless the stored one is at least as new (issue 11 item 13): an ad whose {@code iat} is older than
   * the stored ad's, or equal with other content, is refused ({@code false}; the route answers 400 {@code enc-key ad
   * refused: not newer than the stored ad}). The stored ad itself sent again is accepted and changes nothing.
   * {@code iat} values are compared parsed, as times; a stored ad whose {@code iat} cannot be parsed never blocks.
   */
  private Boolean encAdV2(StoreCommand.PublishEncAdV2 a) throws SQLException {
    String stored = null;
    try (PreparedStatement ps = conn.prepareStatement("SELECT record FROM enc_ad_records WHERE host_pubkey=?")) {
      ps.setString(1, a.hostPubkey());
      try (ResultSet rs = ps.executeQuery()) {
        if (rs.next()) {
          stored = rs.getString(1);
        }
      }
    }
    if (stored != null) {
      if (stored.equals(a.record())) {
        return Boolean.TRUE;
      }
      OptionalLong storedIat = adIat(stored);
      OptionalLong newIat = adIat(a.record());
      if (storedIat.isPresent() && (newIat.isEmpty() || newIat.getAsLong() <= storedIat.getAsLong())) {
        return Boolean.FALSE;
      }
    }
    update("INSERT INTO enc_ad_records(host_pubkey, record, sig, at) VALUES(?, ?, ?, ?)"
        + " ON CONFLICT(host_pubkey) DO UPDATE SET record=excluded.record, sig=excluded.sig, at=excluded.at",
        a.hostPubkey(), a.record(), a.sig(), now());
    return Boolean.TRUE;
  }

  /** The parsed {@code iat} of a stored or new ad record (canonical JSON), or empty. */
  private static OptionalLong adIat(String record) {
    try {
      var iat = Json.parse(record).get("iat");
      return iat != null && iat.isTextual() ? IsoTime.parse(iat.textValue()) : OptionalLong.empty();
    } catch (IllegalArgumentException e) {
      return OptionalLong.empty();
    }
  }

  // ---- rotation (docs/protocol.md §4.4) ----

  private record OldItem(long seq, String kind, String itemId, String sender, String senderHost, byte[] wire,
      String hash, long bytes, String acceptedAt, String expiresAt) {}

  private RotateOutcome rotate(StoreCommand.Rotate r) throws SQLException {
    Optional<Enrolment> old = store.enrolmentRowForTrust(r.oldPub());
    if (old.isEmpty() || !old.get().live()) {
      return new RotateOutcome.NotEnrolled();
    }
    if (!old.get().hostName().equals(r.host())) {
      return new RotateOutcome.NamesAnotherHost();
    }
    // Issue 11 item 3: a revoked key must not come back under another spelling of itself, and a key on the deny list
    // must not go live through a rotation (enrolment checks the deny list; rotation used to skip it).
    if (revokedInAnySpelling(r.newPub()) || denied(r.newPub(), clientIdOf(r.oldPub()))) {
      return new RotateOutcome.NewKeyRevoked();
    }
    long nowMs = clock.millis();
    String at = IsoTime.format(nowMs);
    Enrolment o = old.get();
    update("UPDATE enrolments SET revoked_at=? WHERE host_pubkey=?", at, r.oldPub());
    update("INSERT INTO enrolments(host_pubkey, host_name, owner_fp, account, authorized_by, enrolled_at, revoked_at)"
        + " VALUES(?, ?, ?, ?, ?, ?, NULL) ON CONFLICT(host_pubkey) DO UPDATE SET host_name=excluded.host_name,"
        + " owner_fp=excluded.owner_fp, account=excluded.account, authorized_by=excluded.authorized_by,"
        + " enrolled_at=excluded.enrolled_at",
        r.newPub(), o.hostName(), o.ownerFp(), o.account(),
        o.authorizedBy() == null ? "host-rotation" : o.authorizedBy(), at);
    update("INSERT INTO enrolment_clients(host_pubkey, client_id, org, at) SELECT ?, client_id, org, ?"
        + " FROM enrolment_clients WHERE host_pubkey=? ON CONFLICT(host_pubkey) DO UPDATE SET"
        + " client_id=excluded.client_id, org=excluded.org, at=excluded.at", r.newPub(), at, r.oldPub());
    // The old queue, in seq order, appended after anything already queued for the new key.
    List<OldItem> items = new ArrayList<>();
    int moved = 0;
    try (PreparedStatement ps = conn.prepareStatement("SELECT seq, kind, item_id, sender_pubkey, sender_host, wire,"
        + " wire_hash, bytes, accepted_at, expires_at FROM items WHERE target_pubkey=? ORDER BY seq")) {
      ps.setString(1, r.oldPub());
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          items.add(new OldItem(rs.getLong(1), rs.getString(2), rs.getString(3), rs.getString(4), rs.getString(5),
              rs.getBytes(6), rs.getString(7), rs.getLong(8), rs.getString(9), rs.getString(10)));
        }
      }
    }
    try (PreparedStatement ins = conn.prepareStatement("INSERT INTO items(target_pubkey, seq, kind, item_id,"
        + " sender_pubkey, sender_host, wire, wire_hash, bytes, accepted_at, expires_at)"
        + " VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
        PreparedStatement dd = conn.prepareStatement("UPDATE OR IGNORE dedup SET target_pubkey=?, seq=?"
            + " WHERE sender_pubkey=? AND item_id=? AND target_pubkey=?")) {
      for (OldItem it : items) {
        if (exists("SELECT 1 FROM dedup WHERE sender_pubkey=? AND item_id=? AND target_pubkey=?", it.sender(),
            it.itemId(), r.newPub())) {
          continue; // the sender already pushed this item to the new key: one copy per (sender, item, target)
        }
        long seq = store.allocateSeqForTrust(r.newPub(), nowMs);
        ins.setString(1, r.newPub());
        ins.setLong(2, seq);
        ins.setString(3, it.kind());
        ins.setString(4, it.itemId());
        ins.setString(5, it.sender());
        ins.setString(6, it.senderHost());
        ins.setBytes(7, it.wire());
        ins.setString(8, it.hash());
        ins.setLong(9, it.bytes());
        ins.setString(10, it.acceptedAt());
        ins.setString(11, it.expiresAt());
        ins.executeUpdate();
        dd.setString(1, r.newPub());
        dd.setLong(2, seq);
        dd.setString(3, it.sender());
        dd.setString(4, it.itemId());
        dd.setString(5, r.oldPub());
        dd.executeUpdate();
        moved++;
      }
    }
    // Remaining dedup rows of the old key (tombstones of acked or expired items) follow it too, so a late retry to
    // the new key is still a duplicate; a row the new key already has wins.
    update("UPDATE OR IGNORE dedup SET target_pubkey=? WHERE target_pubkey=?", r.newPub(), r.oldPub());
    update("DELETE FROM dedup WHERE target_pubkey=?", r.oldPub());
    update("DELETE FROM items WHERE target_pubkey=?", r.oldPub());
    update("DELETE FROM enc_ads WHERE host_pubkey=?", r.oldPub());
    update("DELETE FROM enc_ad_records WHERE host_pubkey=?", r.oldPub());
    if (exists("SELECT 1 FROM sender_lists WHERE target_pubkey=?", r.oldPub())) {
      update("DELETE FROM sender_lists WHERE target_pubkey=?", r.newPub());
      update("UPDATE sender_lists SET target_pubkey=? WHERE target_pubkey=?", r.newPub(), r.oldPub());
    }
    List<String> olds = KeySpelling.spellings(r.oldPub());
    String in = inList(olds.size());
    List<Object> args = new ArrayList<>(olds);
    args.add(r.newPub());
    args.addAll(olds);
    update("UPDATE sender_lists SET senders=(SELECT json_group_array(DISTINCT CASE WHEN value IN " + in + " THEN ?"
        + " ELSE value END) FROM json_each(sender_lists.senders)) WHERE EXISTS(SELECT 1 FROM"
        + " json_each(sender_lists.senders) WHERE value IN " + in + ")", args.toArray());
    return new RotateOutcome.Moved(moved);
  }

  /** True when an enrolment row of this key, under any of its spellings, is revoked. */
  private boolean revokedInAnySpelling(String key) throws SQLException {
    List<String> all = KeySpelling.spellings(key);
    return exists("SELECT 1 FROM enrolments WHERE revoked_at IS NOT NULL AND host_pubkey IN " + inList(all.size()),
        all.toArray(new String[0]));
  }

  /** The token client recorded for an enrolment, or null. */
  private String clientIdOf(String key) throws SQLException {
    try (PreparedStatement ps = conn.prepareStatement("SELECT client_id FROM enrolment_clients WHERE host_pubkey=?")) {
      ps.setString(1, key);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() ? rs.getString(1) : null;
      }
    }
  }

  private static String inList(int n) {
    return "(" + String.join(", ", java.util.Collections.nCopies(n, "?")) + ")";
  }

  // ---- deny list (docs/protocol.md §7.8 "Revocation") ----

  private DenyOutcome deny(StoreCommand.Deny d) throws SQLException {
    boolean added = update("INSERT INTO deny_list(kind, value, note, added_at) VALUES(?, ?, ?, ?)"
        + " ON CONFLICT(kind, value) DO NOTHING", d.kind(), d.value(), d.note(), now()) > 0;
    String at = now();
    int revoked = 0;
    if (d.kind().equals(CLIENT_ID)) {
      revoked = update("UPDATE enrolments SET revoked_at=? WHERE revoked_at IS NULL AND host_pubkey IN"
          + " (SELECT host_pubkey FROM enrolment_clients WHERE client_id=?)", at, d.value());
    } else {
      // A fingerprint is a hash prefix: the store cannot index it, so the live keys are scanned (an operator action).
      List<String> hits = new ArrayList<>();
      try (PreparedStatement ps = conn.prepareStatement("SELECT host_pubkey FROM enrolments WHERE revoked_at IS NULL");
          ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          String key = rs.getString(1);
          try {
            if (Fingerprint.ofB64(key).equals(d.value())) {
              hits.add(key);
            }
          } catch (IllegalArgumentException e) {
            // a stored key that does not decode cannot match
          }
        }
      }
      for (String key : hits) {
        revoked += update("UPDATE enrolments SET revoked_at=? WHERE host_pubkey=? AND revoked_at IS NULL", at, key);
      }
    }
    com.fasterxml.jackson.databind.node.ObjectNode receipt = opReceipt("relay-deny", d.kind(), d.value());
    if (d.note() != null) {
      receipt.put("note", d.note());
    }
    opLog("deny-add", receipt.put("added", added).put("revoked", revoked));
    return new DenyOutcome(added, revoked);
  }

  private Boolean undeny(StoreCommand.Undeny u) throws SQLException {
    boolean removed = update("DELETE FROM deny_list WHERE kind=? AND value=?", u.kind(), u.value()) > 0;
    opLog("deny-remove", opReceipt("relay-undeny", u.kind(), u.value()).put("removed", removed));
    return removed;
  }

  private com.fasterxml.jackson.databind.node.ObjectNode opReceipt(String type, String kind, String value) {
    return io.mbxrelay.wire.Json.MAPPER.createObjectNode().put("v", 1).put("type", type).put("at", now())
        .put("kind", kind).put("value", value).put("via", store == null ? "mbxrelay deny" : "/admin/deny");
  }

  /**
   * An ops-log entry in the same transaction as the change (issue 12 item 6: deny changes appear in
   * {@code mbxrelay log}), from the CLI and from the admin endpoint alike; the last 1,000 entries are kept.
   */
  private void opLog(String op, com.fasterxml.jackson.databind.node.ObjectNode receipt) throws SQLException {
    update("INSERT INTO ops(at, op, receipt) VALUES(?, ?, ?)", now(), op, io.mbxrelay.wire.Json.stringify(receipt));
    try (java.sql.Statement st = conn.createStatement()) {
      st.executeUpdate("DELETE FROM ops WHERE id <= (SELECT max(id) FROM ops) - 1000");
    }
  }

  // ---- helpers ----

  private boolean exists(String sql, String... args) throws SQLException {
    try (PreparedStatement ps = conn.prepareStatement(sql)) {
      for (int i = 0; i < args.length; i++) {
        ps.setString(i + 1, args[i]);
      }
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next();
      }
    }
  }

  private int update(String sql, Object... args) throws SQLException {
    try (PreparedStatement ps = conn.prepareStatement(sql)) {
      for (int i = 0; i < args.length; i++) {
        ps.setObject(i + 1, args[i]);
      }
      return ps.executeUpdate();
    }
  }
}
