package io.mbxrelay.store.sqlite;

import static org.assertj.core.api.Assertions.assertThat;

import io.mbxrelay.config.ConfigLoader;
import io.mbxrelay.config.RelayConfig;
import io.mbxrelay.crypto.Ed25519KeyPair;
import io.mbxrelay.store.model.Enrolment;
import io.mbxrelay.wire.KeySpelling;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Clock;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 11 item 4: a store written before keys were canonicalised may hold a key under another of its 4 spellings —
 * typically a revoked host that enrolled a second spelling of its key and queued mail under it. Opening the store
 * rewrites every key to its canonical spelling, merges the two enrolments (revoked if either was), appends the
 * second queue after the first (nothing hidden under an ack, nothing lost) and is a no-op on a clean store.
 */
class KeySpellingMigrationTest {
  /** Lines these tests provoke on purpose (issue 22 item 7): kept out of the build output, asserted where provoked. */
  @org.junit.jupiter.api.extension.RegisterExtension
  static final io.mbxrelay.testing.ExpectedLog LOGS = io.mbxrelay.testing.ExpectedLog.forClass()
      .and("io.mbxrelay.store.sqlite.KeySpellingMigration", ch.qos.logback.classic.Level.WARN, "rewrote host keys stored in a non-canonical base64 spelling");

  private final String relayKey = Ed25519KeyPair.generate().publicKeyB64();

  private static RelayConfig.Limits limits() throws Exception {
    return ConfigLoader.load(null, Map.of()).limits();
  }

  private SqliteRelayStore open(Path d) throws Exception {
    return SqliteRelayStore.open(d, relayKey, Clock.systemUTC(), limits(), 5000, 600_000);
  }

  private static String alt(String canonical) {
    return KeySpelling.spellings(canonical).get(2);
  }

  private static void exec(Connection c, String sql, Object... args) throws Exception {
    try (PreparedStatement ps = c.prepareStatement(sql)) {
      for (int i = 0; i < args.length; i++) {
        ps.setObject(i + 1, args[i]);
      }
      ps.executeUpdate();
    }
  }

  private static List<String> column(Connection c, String sql) throws Exception {
    List<String> out = new ArrayList<>();
    try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery(sql)) {
      while (rs.next()) {
        out.add(rs.getString(1));
      }
    }
    return out;
  }

  private static void item(Connection c, String target, long seq, String itemId, String sender) throws Exception {
    exec(c, "INSERT INTO items(target_pubkey, seq, kind, item_id, sender_pubkey, sender_host, wire_hash, bytes,"
        + " accepted_at, expires_at, wire) VALUES (?, ?, 'envelope', ?, ?, 'h', 'hash', 3, '2026-01-01T00:00:00.000Z',"
        + " NULL, x'616263')", target, seq, itemId, sender);
    exec(c, "INSERT INTO dedup(sender_pubkey, item_id, target_pubkey, wire_hash, seq, accepted_at)"
        + " VALUES (?, ?, ?, 'hash', ?, '2026-01-01T00:00:00.000Z')", sender, itemId, target, seq);
  }

  private static void enrolment(Connection c, String key, String name, String revokedAt) throws Exception {
    exec(c, "INSERT INTO enrolments(host_pubkey, host_name, owner_fp, enrolled_at, revoked_at)"
        + " VALUES (?, ?, '', '2026-01-01T00:00:00.000Z', ?)", key, name, revokedAt);
  }

  @Test
  void a_store_with_keys_under_other_spellings_is_rewritten_to_canonical_keys_at_open(@TempDir Path d)
      throws Exception {
    open(d).close();
    String revoked = Ed25519KeyPair.generate().publicKeyB64(); // revoked, then enrolled again as another spelling
    String renamed = Ed25519KeyPair.generate().publicKeyB64(); // only ever stored under another spelling
    String peer = Ed25519KeyPair.generate().publicKeyB64(); // canonical all along
    try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + d.resolve("relay.db"))) {
      enrolment(c, revoked, "desk", "2026-01-02T00:00:00.000Z");
      enrolment(c, alt(revoked), "desk", null);
      enrolment(c, alt(renamed), "laptop", null);
      enrolment(c, peer, "peer", null);
      // the revoked key's own queue (seq 100) and the queue of its second spelling (seqs 100, 101: a clash)
      item(c, revoked, 100, "m-0", peer);
      exec(c, "INSERT INTO seqs(target_pubkey, next_seq) VALUES (?, 101)", revoked);
      item(c, alt(revoked), 100, "m-1", peer);
      item(c, alt(revoked), 101, "m-2", peer);
      exec(c, "INSERT INTO seqs(target_pubkey, next_seq) VALUES (?, 102)", alt(revoked));
      exec(c, "INSERT INTO acked(target_pubkey, acked_through) VALUES (?, 99)", alt(revoked));
      // mail sent by the second spelling, and the renamed host's queue, ack, ad and allowlist
      item(c, peer, 7, "m-3", alt(revoked));
      item(c, alt(renamed), 5, "m-4", peer);
      exec(c, "INSERT INTO seqs(target_pubkey, next_seq) VALUES (?, 6)", alt(renamed));
      exec(c, "INSERT INTO acked(target_pubkey, acked_through) VALUES (?, 4)", alt(renamed));
      exec(c, "INSERT INTO enc_ads(host_pubkey, host_name, enc_pub, sig, at) VALUES (?, 'laptop', 'e', 's', 'x')",
          alt(renamed));
      exec(c, "INSERT INTO sender_lists(target_pubkey, senders, iat, record, sig) VALUES (?, '[]',"
          + " '2026-01-01T00:00:00.000Z', '{}', 's')", alt(renamed));
      // per-sender totals as the writer keeps them on stores that have the table (issue 11 item 8)
      exec(c, "CREATE TABLE IF NOT EXISTS sender_totals(sender_pubkey TEXT PRIMARY KEY, items INTEGER NOT NULL,"
          + " bytes INTEGER NOT NULL)");
      exec(c, "INSERT OR REPLACE INTO sender_totals VALUES (?, 1, 3)", alt(revoked));
    }

    try (SqliteRelayStore s = open(d)) {
      Connection c = s.connection();
      String all = "SELECT host_pubkey FROM enrolments UNION ALL SELECT target_pubkey FROM items UNION ALL"
          + " SELECT sender_pubkey FROM items UNION ALL SELECT sender_pubkey FROM dedup UNION ALL SELECT target_pubkey"
          + " FROM dedup UNION ALL SELECT target_pubkey FROM seqs UNION ALL SELECT target_pubkey FROM acked UNION ALL"
          + " SELECT host_pubkey FROM enc_ads UNION ALL SELECT target_pubkey FROM sender_lists UNION ALL"
          + " SELECT target_pubkey FROM queue_usage";
      assertThat(column(c, all)).allSatisfy(k -> assertThat(KeySpelling.isCanonical(k)).as(k).isTrue());

      // one enrolment for the key, revoked (it was revoked under one of its spellings); no live row for any spelling
      assertThat(column(c, "SELECT revoked_at FROM enrolments WHERE host_pubkey='" + revoked + "'"))
          .containsExactly("2026-01-02T00:00:00.000Z");
      for (String spelling : KeySpelling.spellings(revoked)) {
        assertThat(s.enrolments().get(KeySpelling.canonicalOrSelf(spelling))).as("live under %s", spelling).isEmpty();
      }
      assertThat(s.enrolments().liveByName("desk", 10)).isEmpty();
      // its second queue follows its first, in order, with new seqs; the dedup rows follow their items
      assertThat(column(c, "SELECT seq || ':' || item_id FROM items WHERE target_pubkey='" + revoked
          + "' ORDER BY seq")).containsExactly("100:m-0", "101:m-1", "102:m-2");
      assertThat(column(c, "SELECT seq FROM dedup WHERE item_id IN ('m-1','m-2') ORDER BY seq"))
          .containsExactly("101", "102");
      assertThat(column(c, "SELECT next_seq FROM seqs WHERE target_pubkey='" + revoked + "'")).containsExactly("103");
      assertThat(column(c, "SELECT items FROM queue_usage WHERE target_pubkey='" + revoked + "'"))
          .containsExactly("3");
      assertThat(column(c, "SELECT sender_pubkey FROM items WHERE item_id='m-3'")).containsExactly(revoked);
      assertThat(column(c, "SELECT sender_pubkey || ':' || items FROM sender_totals WHERE sender_pubkey IN ('"
          + revoked + "','" + alt(revoked) + "')")).containsExactly(revoked + ":1");
      // a key only ever stored under another spelling keeps everything, renamed
      assertThat(s.enrolments().get(renamed).map(Enrolment::live)).contains(true);
      assertThat(column(c, "SELECT seq FROM items WHERE target_pubkey='" + renamed + "'")).containsExactly("5");
      assertThat(column(c, "SELECT acked_through FROM acked WHERE target_pubkey='" + renamed + "'"))
          .containsExactly("4");
      assertThat(column(c, "SELECT count(*) FROM enc_ads WHERE host_pubkey='" + renamed + "'")).containsExactly("1");
      assertThat(column(c, "SELECT count(*) FROM sender_lists WHERE target_pubkey='" + renamed + "'"))
          .containsExactly("1");
      // a second run finds nothing to do
      try (Statement st = c.createStatement()) {
        st.execute("BEGIN IMMEDIATE");
        assertThat(KeySpellingMigration.run(c)).isZero();
        st.execute("ROLLBACK");
      }
    }
    LOGS.assertSeen("rewrote host keys"); // issue 22 item 7: the line this test provokes
  }

  @Test
  void the_sql_spelling_rules_agree_with_key_spelling_for_every_spelling(@TempDir Path d) throws Exception {
    try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + d.resolve("t.db"));
        Statement st = c.createStatement()) {
      for (int i = 0; i < 200; i++) {
        String canonical = Ed25519KeyPair.generate().publicKeyB64();
        for (String s : KeySpelling.spellings(canonical)) {
          try (ResultSet rs = st.executeQuery("SELECT " + KeySpellingMigration.nonCanonical("k") + ", "
              + KeySpellingMigration.canonical("k") + " FROM (SELECT '" + s + "' AS k)")) {
            rs.next();
            assertThat(rs.getInt(1) == 1).as(s).isEqualTo(!s.equals(canonical));
            assertThat(rs.getString(2)).isEqualTo(canonical);
          }
        }
      }
      for (String junk : new String[] {"", "AAAA", "x".repeat(44), "-".repeat(43) + "=", "A".repeat(42) + "==",
          "A".repeat(42) + "B"}) {
        try (ResultSet rs = st.executeQuery("SELECT " + KeySpellingMigration.nonCanonical("k")
            + " FROM (SELECT '" + junk + "' AS k)")) {
          rs.next();
          assertThat(rs.getInt(1)).as(junk).isZero();
        }
      }
    }
  }
}
