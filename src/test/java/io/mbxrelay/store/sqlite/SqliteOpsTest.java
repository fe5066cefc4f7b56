package io.mbxrelay.store.sqlite;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.mbxrelay.crypto.Ed25519KeyPair;
import io.mbxrelay.testing.Envelopes;
import io.mbxrelay.testing.RelayHarness;
import io.mbxrelay.testing.TestHost;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Clock;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Backup, restore, rotate-epoch and the ops log (docs/protocol.md §5 "Ops"). */
class SqliteOpsTest {

  private static long scalar(Path db, String sql) throws Exception {
    try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + db); Statement st = c.createStatement();
        ResultSet rs = st.executeQuery(sql)) {
      rs.next();
      return rs.getLong(1);
    }
  }

  @Test
  void backup_while_the_relay_runs_is_integrity_checked_owner_only_and_never_overwrites(@TempDir Path tmp)
      throws Exception {
    Path dir = tmp.resolve("store");
    Path file = tmp.resolve("backups").resolve("b1.db");
    try (RelayHarness r = RelayHarness.start(dir)) {
      TestHost a = new TestHost(r.url(), "alpha").enrol();
      TestHost b = new TestHost(r.url(), "beta").enrol();
      for (int i = 0; i < 3; i++) {
        String id = Envelopes.newId();
        a.pushEnvelope(b, id, Envelopes.sealed(id));
      }
      ObjectNode receipt = SqliteOps.backup(dir, file, Clock.systemUTC());
      assertThat(receipt.get("type").asText()).isEqualTo("relay-backup");
      assertThat(receipt.get("epoch").asText()).isEqualTo(r.server.epoch());
      assertThat(receipt.get("relay_fingerprint").asText()).isEqualTo(r.relayKey.fingerprint());
      assertThat(receipt.get("counts").get("items").asLong()).isEqualTo(3);
      assertThat(receipt.get("counts").get("enrolments").asLong()).isEqualTo(2);
      assertThat(receipt.get("sha256").asText()).hasSize(64);
      assertThat(Files.getPosixFilePermissions(file)).isEqualTo(PosixFilePermissions.fromString("rw-------"));
      assertThat(Files.getPosixFilePermissions(file.getParent())).isEqualTo(PosixFilePermissions.fromString("rwx------"));
      assertThat(scalar(file, "SELECT count(*) FROM items")).isEqualTo(3);
      assertThatThrownBy(() -> SqliteOps.backup(dir, file, Clock.systemUTC()))
          .isInstanceOfSatisfying(OpsException.class, e -> assertThat(e.code()).isEqualTo("EXISTS"));
      // the relay keeps serving after the backup
      String id = Envelopes.newId();
      assertThat(a.pushEnvelope(b, id, Envelopes.sealed(id)).json().get("results").get(0).get("status").asText())
          .isEqualTo("accepted");
      assertThatThrownBy(() -> SqliteOps.restore(dir, file, false, Clock.systemUTC(), false))
          .isInstanceOfSatisfying(OpsException.class, e -> assertThat(e.code()).isEqualTo("RELAY_RUNNING"));
      assertThatThrownBy(() -> SqliteOps.rotateEpoch(dir, Clock.systemUTC()))
          .isInstanceOfSatisfying(OpsException.class, e -> assertThat(e.code()).isEqualTo("RELAY_RUNNING"));
      List<ObjectNode> log = SqliteOps.log(dir, 50);
      assertThat(log).extracting(n -> n.get("op").asText()).contains("backup");
    }
  }

  @Test
  void restore_keeps_a_rollback_carries_revocations_and_seq_floors_and_rotates_the_epoch(@TempDir Path tmp)
      throws Exception {
    Path dir = tmp.resolve("store");
    Path file = tmp.resolve("b.db");
    Ed25519KeyPair key = Ed25519KeyPair.generate();
    String epoch;
    long seqAfterBackup;
    String bKey;
    try (RelayHarness r = RelayHarness.start(dir, Map.of(), Clock.systemUTC(), key)) {
      TestHost a = new TestHost(r.url(), "alpha").enrol();
      TestHost b = new TestHost(r.url(), "beta").enrol();
      bKey = b.pub();
      String id = Envelopes.newId();
      a.pushEnvelope(b, id, Envelopes.sealed(id));
      SqliteOps.backup(dir, file, Clock.systemUTC());
      String id2 = Envelopes.newId();
      seqAfterBackup = a.pushEnvelope(b, id2, Envelopes.sealed(id2)).json().get("results").get(0).get("targets")
          .get(0).get("seq").asLong();
      epoch = r.server.epoch();
    }
    // a revocation made after the backup (written directly: the revoke path belongs to the trust issue)
    try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + dir.resolve("relay.db"));
        Statement st = c.createStatement()) {
      st.executeUpdate("UPDATE enrolments SET revoked_at='2026-11-29T00:00:00.000Z' WHERE host_name='alpha'");
    }
    ObjectNode receipt = SqliteOps.restore(dir, file, false, Clock.systemUTC(), false);
    assertThat(receipt.get("type").asText()).isEqualTo("relay-restore");
    assertThat(receipt.get("epoch").get("from").asText()).isEqualTo(epoch);
    String to = receipt.get("epoch").get("to").asText();
    assertThat(to).isNotEqualTo(epoch);
    assertThat(receipt.get("carried").get("revocations").asInt()).isEqualTo(1);
    assertThat(receipt.get("carried").get("seq_floors").asInt()).isEqualTo(1);
    JsonNode replaced = receipt.get("replaced");
    assertThat(Files.isRegularFile(Path.of(replaced.get("rollback").asText()))).isTrue();
    Path db = dir.resolve("relay.db");
    assertThat(scalar(db, "SELECT count(*) FROM items")).isEqualTo(1); // the post-backup item is gone
    assertThat(scalar(db, "SELECT next_seq FROM seqs WHERE target_pubkey='" + bKey + "'")).isGreaterThan(seqAfterBackup);
    assertThat(scalar(db, "SELECT count(*) FROM enrolments WHERE revoked_at IS NOT NULL")).isEqualTo(1);
    assertThat(SqliteOps.log(dir, 10)).extracting(n -> n.get("op").asText()).contains("backup", "restore");
    ObjectNode logged = SqliteOps.log(dir, 10).stream().filter(n -> n.get("op").asText().equals("restore"))
        .findFirst().orElseThrow();
    assertThat(logged.get("receipt").get("rollback").asText()).isEqualTo(replaced.get("rollback").asText());
    assertThat(SqliteOps.alreadyRestored(dir, file)).isTrue();

    // the relay serves the restored store with the new epoch
    try (RelayHarness r = RelayHarness.start(dir, Map.of(), Clock.systemUTC(), key)) {
      assertThat(r.server.epoch()).isEqualTo(to);
    }
    ObjectNode rotated = SqliteOps.rotateEpoch(dir, Clock.systemUTC());
    assertThat(rotated.get("from").asText()).isEqualTo(to);
    assertThat(rotated.get("by").asText()).isEqualTo("operator");
  }

  @SuppressWarnings("try") // a resource held for the block, not used in it
  @Test
  void restore_refuses_what_is_not_a_store_and_a_backup_of_another_relay(@TempDir Path tmp) throws Exception {
    Path dir = tmp.resolve("store");
    Path other = tmp.resolve("other");
    Path junk = tmp.resolve("junk.db");
    Files.writeString(junk, "not a database at all".repeat(200));
    try (RelayHarness r = RelayHarness.start(dir)) {
      // running
    }
    assertThatThrownBy(() -> SqliteOps.restore(dir, junk, false, Clock.systemUTC(), false))
        .isInstanceOfSatisfying(OpsException.class, e -> assertThat(e.code()).isEqualTo("NOT_A_STORE"));
    Path otherBackup = tmp.resolve("other.db");
    try (RelayHarness r = RelayHarness.start(other)) {
      SqliteOps.backup(other, otherBackup, Clock.systemUTC());
    }
    assertThatThrownBy(() -> SqliteOps.restore(dir, otherBackup, true, Clock.systemUTC(), false))
        .isInstanceOfSatisfying(OpsException.class, e -> {
          assertThat(e.code()).isEqualTo("OTHER_RELAY");
          assertThat(e.getMessage()).doesNotContain("=");
        });
  }
}
