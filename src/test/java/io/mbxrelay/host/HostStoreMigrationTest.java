package io.mbxrelay.host;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.mbxrelay.crypto.Ed25519KeyPair;
import io.mbxrelay.testing.Envelopes;
import io.mbxrelay.wire.Hashes;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Clock;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * A host store written by the first release (schema version 1: no {@code schema_version} key, one relay in
 * {@code meta.relay_url}) is migrated in place to the current layout, keeps its rows and keeps working against a real
 * relay; a store newer than this code is refused (issue 21).
 */
class HostStoreMigrationTest extends RealRelayTest {

  /** The version-1 layout exactly as the first release created it (its peers/inbox columns added later included). */
  static final String[] V1 = {
      "CREATE TABLE meta(k TEXT PRIMARY KEY, v TEXT NOT NULL)",
      "CREATE TABLE relays(url TEXT PRIMARY KEY, relay_pubkey TEXT NOT NULL, pinned_at INTEGER NOT NULL,"
          + " presented_pubkey TEXT, presented_at INTEGER, epoch TEXT, retention_days INTEGER NOT NULL DEFAULT 14,"
          + " max_batch INTEGER NOT NULL DEFAULT 200, max_pull INTEGER NOT NULL DEFAULT 500,"
          + " enrolled_cache TEXT, enrol_failures INTEGER NOT NULL DEFAULT 0, enrol_next_at INTEGER NOT NULL DEFAULT 0,"
          + " allowlist_digest TEXT, allowlist_next_at INTEGER NOT NULL DEFAULT 0,"
          + " session_failures INTEGER NOT NULL DEFAULT 0, session_next_at INTEGER NOT NULL DEFAULT 0, last_error TEXT,"
          + " last_ok_at INTEGER)",
      "CREATE TABLE peers(host_pubkey TEXT PRIMARY KEY, name TEXT NOT NULL, added_at INTEGER NOT NULL)",
      "CREATE TABLE outbox(id INTEGER PRIMARY KEY AUTOINCREMENT, relay TEXT NOT NULL, kind TEXT NOT NULL,"
          + " item_id TEXT NOT NULL, msg_id TEXT NOT NULL, target_pubkey TEXT NOT NULL, wire BLOB NOT NULL,"
          + " wire_hash TEXT NOT NULL, state TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0,"
          + " next_at INTEGER NOT NULL, last_error TEXT, created_at INTEGER NOT NULL, seq INTEGER, epoch TEXT,"
          + " accept TEXT, accept_sig TEXT, accepted_at INTEGER, deadline_at INTEGER, done_at INTEGER,"
          + " UNIQUE(relay, item_id, target_pubkey))",
      "CREATE INDEX outbox_state ON outbox(relay, state, next_at)",
      "CREATE TABLE positions(relay TEXT PRIMARY KEY, epoch TEXT NOT NULL,"
          + " received_through INTEGER NOT NULL, acked_through INTEGER NOT NULL)",
      "CREATE TABLE quarantine(id INTEGER PRIMARY KEY AUTOINCREMENT, relay TEXT NOT NULL,"
          + " epoch TEXT NOT NULL, seq INTEGER NOT NULL, kind TEXT NOT NULL, item_id TEXT NOT NULL,"
          + " sender_pubkey TEXT NOT NULL, reason TEXT NOT NULL, wire BLOB NOT NULL, at INTEGER NOT NULL)",
      "CREATE TABLE received(sender_pubkey TEXT NOT NULL, msg_id TEXT NOT NULL, relay TEXT NOT NULL,"
          + " epoch TEXT NOT NULL, seq INTEGER NOT NULL, at INTEGER NOT NULL, PRIMARY KEY(sender_pubkey, msg_id))",
      "CREATE TABLE peer_receipts(host_pubkey TEXT PRIMARY KEY, last_at INTEGER NOT NULL)",
      "CREATE TABLE alerts(id INTEGER PRIMARY KEY AUTOINCREMENT, at INTEGER NOT NULL, kind TEXT NOT NULL,"
          + " relay TEXT, target_pubkey TEXT, item_id TEXT, text TEXT NOT NULL)",
      "CREATE TABLE inbox(id INTEGER PRIMARY KEY AUTOINCREMENT, relay TEXT NOT NULL,"
          + " sender_pubkey TEXT NOT NULL, msg_id TEXT NOT NULL, wire BLOB NOT NULL, at INTEGER NOT NULL)",
      "CREATE TABLE drafts(id INTEGER PRIMARY KEY AUTOINCREMENT, relay TEXT NOT NULL,"
          + " msg_id TEXT NOT NULL, target_pubkey TEXT NOT NULL, envelope TEXT NOT NULL, last_error TEXT,"
          + " attempts INTEGER NOT NULL DEFAULT 0, next_at INTEGER NOT NULL DEFAULT 0, created_at INTEGER NOT NULL,"
          + " UNIQUE(msg_id, target_pubkey))",
  };

  static void exec(Path file, String... sql) throws SQLException {
    try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + file); Statement s = c.createStatement()) {
      for (String q : sql) {
        s.execute(q);
      }
    }
  }

  static List<String> columns(Path file, String table) throws SQLException {
    List<String> out = new ArrayList<>();
    try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + file); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("PRAGMA table_info(" + table + ")")) {
      while (rs.next()) {
        out.add(rs.getString("name"));
      }
    }
    return out;
  }

  @Test
  void aVersionOneStoreIsMigratedInPlaceKeepsItsQueuedMailAndDeliversIt() throws Exception {
    Ed25519KeyPair aKey = Ed25519KeyPair.generate();
    Path file = dir.resolve("alpha-v1.db");
    exec(file, V1);
    // a v1 host alpha with its relay pinned, beta accepted, and one envelope queued that a push already tried
    HostStore bStore = HostStore.open(dir.resolve("beta.db"));
    closing.add(bStore);
    List<String> got = new ArrayList<>();
    Ed25519KeyPair bKey = Ed25519KeyPair.generate();
    HostAgent b = new HostAgent(bStore, bKey, relay.url(), HostAgent.Options.of("beta"),
        (u, n, rp) -> new VertxRelayTransport(vertx, u, n, bKey, rp, 10_000, 15_000, Clock.systemUTC()), d -> {
          got.add(d.msgId());
          return new HostApplication.Verdict.Accepted(null);
        });
    closing.add(b);
    pinRelay(bStore, System.currentTimeMillis());
    b.addPeer(aKey.publicKeyB64(), "alpha");
    assertThat(b.tick().session()).isEqualTo("ok");
    String id = Envelopes.newId();
    byte[] wire = Envelopes.sealed(id);
    long now = System.currentTimeMillis();
    try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + file)) {
      for (String[] kv : new String[][] {{"host_name", "alpha"}, {"host_pubkey", aKey.publicKeyB64()},
          {"relay_url", relay.url() + "/"}}) {
        try (PreparedStatement ps = c.prepareStatement("INSERT INTO meta(k, v) VALUES(?, ?)")) {
          ps.setString(1, kv[0]);
          ps.setString(2, kv[1]);
          ps.executeUpdate();
        }
      }
      try (PreparedStatement ps = c.prepareStatement("INSERT INTO relays(url, relay_pubkey, pinned_at) VALUES(?, ?, ?)")) {
        ps.setString(1, relay.url());
        ps.setString(2, relay.relayKey.publicKeyB64());
        ps.setLong(3, now);
        ps.executeUpdate();
      }
      try (PreparedStatement ps = c.prepareStatement("INSERT INTO peers(host_pubkey, name, added_at) VALUES(?, ?, ?)")) {
        ps.setString(1, bKey.publicKeyB64());
        ps.setString(2, "beta");
        ps.setLong(3, now);
        ps.executeUpdate();
      }
      try (PreparedStatement ps = c.prepareStatement("INSERT INTO outbox(relay, kind, item_id, msg_id, target_pubkey,"
          + " wire, wire_hash, state, attempts, next_at, created_at) VALUES(?, 'envelope', ?, ?, ?, ?, ?, 'pending',"
          + " 1, ?, ?)")) {
        ps.setString(1, relay.url());
        ps.setString(2, id);
        ps.setString(3, id);
        ps.setString(4, bKey.publicKeyB64());
        ps.setBytes(5, wire);
        ps.setString(6, Hashes.sha256Hex(wire));
        ps.setLong(7, now);
        ps.setLong(8, now);
        ps.executeUpdate();
      }
    }
    assertThat(columns(file, "peers")).doesNotContain("enc_pub");

    HostStore a = HostStore.open(file);
    closing.add(a);
    assertThat(a.setting("schema_version")).contains(Integer.toString(HostStore.SCHEMA_VERSION));
    assertThat(a.relayUrls()).containsExactly(relay.url());
    assertThat(columns(file, "peers")).contains("enc_pub", "ad_enc_pub", "ad_iat", "ad_exp");
    assertThat(columns(file, "outbox")).contains("enc_pub", "plain", "unsure");
    assertThat(columns(file, "relays")).contains("max_item_bytes", "allowlist_iat", "last_session");
    assertThat(columns(file, "drafts")).contains("alerted_at");
    try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + file); Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT group_concat(name) FROM sqlite_master WHERE type='index'"
            + " AND tbl_name='outbox'")) {
      assertThat(rs.next()).isTrue();
      assertThat(rs.getString(1)).contains("outbox_item", "outbox_msg");
    }
    assertThat(a.outbox()).singleElement().satisfies(r -> {
      assertThat(r.itemId()).isEqualTo(id);
      assertThat(r.state()).isEqualTo("pending");
    });
    synchronized (a) {
      assertThat(a.one("SELECT unsure FROM outbox", rs -> rs.getInt(1))).as("tried before: the relay may hold it")
          .contains(1);
    }

    try (HostAgent agent = new HostAgent(a, aKey, relay.url(), HostAgent.Options.of("alpha"),
        (u, n, rp) -> new VertxRelayTransport(vertx, u, n, aKey, rp, 10_000, 15_000, Clock.systemUTC()),
        d -> new HostApplication.Verdict.Accepted(null))) {
      assertThat(agent.tick().accepted()).isEqualTo(1);
    }
    assertThat(b.tick().delivered()).isEqualTo(1);
    assertThat(got).containsExactly(id);
  }

  @Test
  void openingAMigratedStoreAgainChangesNothingAndANewStoreStartsAtTheCurrentVersion() throws Exception {
    Path file = dir.resolve("new.db");
    try (HostStore s = HostStore.open(file)) {
      assertThat(s.setting("schema_version")).contains(Integer.toString(HostStore.SCHEMA_VERSION));
      assertThat(s.relayUrls()).isEmpty();
      s.putRelayUrls(List.of("http://a.example/", "http://b.example", "http://a.example"));
    }
    try (HostStore s = HostStore.open(file)) {
      assertThat(s.relayUrls()).containsExactly("http://a.example", "http://b.example");
      assertThat(s.setting("relay_url")).contains("http://a.example");
    }
  }

  @Test
  void aStoreOfANewerSchemaIsRefusedAndLeftAsItIs() throws Exception {
    Path file = dir.resolve("future.db");
    try (HostStore s = HostStore.open(file)) {
      s.putSetting("schema_version", Integer.toString(HostStore.SCHEMA_VERSION + 1));
    }
    assertThatThrownBy(() -> HostStore.open(file)).isInstanceOf(SQLException.class)
        .hasMessageContaining("schema version " + (HostStore.SCHEMA_VERSION + 1))
        .hasMessageContaining("newer than this program's " + HostStore.SCHEMA_VERSION);
    try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + file); Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT v FROM meta WHERE k='schema_version'")) {
      assertThat(rs.next()).isTrue();
      assertThat(rs.getString(1)).isEqualTo(Integer.toString(HostStore.SCHEMA_VERSION + 1));
    }
  }
}
