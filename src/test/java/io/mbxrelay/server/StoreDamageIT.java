package io.mbxrelay.server;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.mbxrelay.crypto.Fingerprint;
import io.mbxrelay.testing.ChildRelay;
import io.mbxrelay.testing.Envelopes;
import io.mbxrelay.testing.Http;
import io.mbxrelay.testing.TestHost;
import io.mbxrelay.wire.Json;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Damaged stores and backups with the real jar (issue 10 items 1, 2, 5, 6): structural page flips that
 * {@code quick_check} catches make {@code serve} refuse the store (exit 3, naming the file and the remedy) instead of
 * serving it with {@code /ready} 200 and answering pulls with 500; a flipped byte inside one item's wire bytes is
 * named by {@code check --full} and fails {@code backup}; {@code restore} verifies the backup before it swaps anything
 * in; corrupted metadata stops start-up and nothing is rewritten.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class StoreDamageIT {
  private static final int ITEMS = 60;
  private Path template;
  private String targetFingerprint;
  private List<String> ids;
  private String epoch;

  @BeforeAll
  void a_store_with_two_hosts_and_sixty_queued_items(@TempDir Path tmp) throws Exception {
    template = tmp.resolve("template");
    ids = new ArrayList<>();
    try (ChildRelay relay = ChildRelay.start(template, Map.of())) {
      TestHost a = new TestHost(relay.url(), "alpha").enrol();
      TestHost b = new TestHost(relay.url(), "beta").enrol();
      targetFingerprint = Fingerprint.ofB64(b.pub());
      for (int r = 0; r < ITEMS / 20; r++) {
        List<ObjectNode> batch = new ArrayList<>();
        for (int i = 0; i < 20; i++) {
          String id = Envelopes.newId();
          ids.add(id);
          batch.add(TestHost.item("envelope", id, List.of(b.pub()), List.of(Envelopes.sealed(id, 600))));
        }
        assertThat(a.push(batch.toArray(new ObjectNode[0])).status()).isEqualTo(200);
      }
      epoch = Http.send(relay.url(), "GET", "/v2/relay/info", null).json().get("epoch").asText();
      relay.stop(); // graceful: the WAL is checkpointed into relay.db
    }
  }

  private Path copyOfTemplate(Path tmp) throws IOException {
    Path dir = tmp.resolve("store");
    Files.createDirectories(dir);
    Files.setPosixFilePermissions(dir, java.nio.file.attribute.PosixFilePermissions.fromString("rwx------"));
    try (Stream<Path> files = Files.list(template)) {
      for (Path f : (Iterable<Path>) files::iterator) {
        if (Files.isRegularFile(f)) {
          Files.copy(f, dir.resolve(f.getFileName()));
        }
      }
    }
    return dir;
  }

  private static ChildRelay.Cli cli(String... args) throws Exception {
    return ChildRelay.cli(Map.of("MBX_RELAY_ADMIN_PORT", "0"), args);
  }

  private static ChildRelay.Cli serve(Path dir) throws Exception {
    return cli("serve", "--port", "0", "--bind", "127.0.0.1", "--store-dir", dir.toString());
  }

  private static long pageOf(Path db, String sql) throws Exception {
    try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + db); Statement st = c.createStatement();
        ResultSet rs = st.executeQuery(sql)) {
      assertThat(rs.next()).as(sql).isTrue();
      return rs.getLong(1);
    }
  }

  private static void write(Path db, long offset, int... bytes) throws IOException {
    try (RandomAccessFile f = new RandomAccessFile(db.toFile(), "rw")) {
      f.seek(offset);
      for (int b : bytes) {
        f.write(b);
      }
    }
  }

  private static String sha256(Path f) throws Exception {
    return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(Files.readAllBytes(f)));
  }

  /** Applies one structural flip of issue 10 item 2 to a database file (checkpointed, 4 KiB pages). */
  private static void flip(Path db, String kind) throws Exception {
    long pageSize = pageOf(db, "PRAGMA page_size");
    switch (kind) {
      case "leaf-cell-count" -> {
        long p = pageOf(db, "SELECT pageno FROM dbstat WHERE name='items' AND pagetype='leaf' LIMIT 1");
        write(db, (p - 1) * pageSize + 3, 0x7f, 0xff);
      }
      case "cell-pointer" -> {
        long p = pageOf(db, "SELECT pageno FROM dbstat WHERE name='items' AND pagetype='leaf' LIMIT 1 OFFSET 1");
        write(db, (p - 1) * pageSize + 8, 0x00, 0x03); // first cell pointer into the page header
      }
      case "index-leaf" -> {
        long p = pageOf(db, "SELECT pageno FROM dbstat WHERE name='sqlite_autoindex_items_1' AND pagetype='leaf'"
            + " LIMIT 1");
        write(db, (p - 1) * pageSize + 3, 0x7f, 0xff);
      }
      case "interior-page" -> {
        long p = pageOf(db, "SELECT pageno FROM dbstat WHERE name='items' AND pagetype='internal' LIMIT 1");
        write(db, (p - 1) * pageSize + 8, 0x7f, 0xff, 0xff, 0xff); // right-child pointer far past the file
      }
      default -> throw new IllegalArgumentException(kind);
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"leaf-cell-count", "cell-pointer", "index-leaf", "interior-page"})
  void a_structural_page_flip_makes_serve_refuse_the_store_and_check_fail(String kind, @TempDir Path tmp)
      throws Exception {
    Path dir = copyOfTemplate(tmp);
    Path db = dir.resolve("relay.db");
    flip(db, kind);
    String before = sha256(db);
    ChildRelay.Cli refused = serve(dir);
    assertThat(refused.exit()).as(refused.err()).isEqualTo(3);
    assertThat(refused.err()).contains("store refused: " + db + " fails its integrity check (quick_check: ")
        .contains("mbxrelay restore BACKUP --force --store-dir " + dir)
        .contains("mbxrelay check --full --store-dir " + dir);
    assertThat(sha256(db)).as("the damaged store is kept as it was").isEqualTo(before);
    ChildRelay.Cli quick = cli("check", "--store-dir", dir.toString());
    assertThat(quick.exit()).as(quick.err()).isEqualTo(3);
    JsonNode receipt = Json.parse(quick.out());
    assertThat(receipt.get("ok").asBoolean()).isFalse();
    assertThat(receipt.get("integrity").get("problems")).isNotEmpty();
    assertThat(cli("check", "--full", "--store-dir", dir.toString()).exit()).isEqualTo(3);
  }

  /**
   * Flips one byte inside one item's stored wire bytes (its thread field), leaving every page well-formed. A page may
   * still hold a stale copy in its unused space (a cell moved by a b-tree split; SQLite does not zero it without
   * {@code secure_delete}), so every copy is flipped: the live one is surely among them, and a flip in unused space
   * changes nothing SQLite reads.
   */
  private void flipWire(Path db, int item) throws Exception {
    byte[] all = Files.readAllBytes(db);
    byte[] needle = ("\"thread\":\"" + ids.get(item) + "\"").getBytes(StandardCharsets.UTF_8);
    int at = indexOf(all, needle);
    assertThat(at).as("wire bytes of item " + item + " in the file").isNotNegative();
    for (; at >= 0; at = indexOf(all, needle, at + 1)) {
      write(db, at + needle.length - 2, all[at + needle.length - 2] == 'A' ? 'B' : 'A');
    }
  }

  private static int indexOf(byte[] hay, byte[] needle) {
    return indexOf(hay, needle, 0);
  }

  private static int indexOf(byte[] hay, byte[] needle, int from) {
    outer:
    for (int i = from; i <= hay.length - needle.length; i++) {
      for (int j = 0; j < needle.length; j++) {
        if (hay[i + j] != needle[j]) {
          continue outer;
        }
      }
      return i;
    }
    return -1;
  }

  private long seqOf(Path db, int item) throws Exception {
    return pageOf(db, "SELECT seq FROM items WHERE item_id='" + ids.get(item) + "'");
  }

  @Test
  void a_flipped_byte_in_one_items_wire_is_named_by_check_full_and_fails_the_backup(@TempDir Path tmp)
      throws Exception {
    Path dir = copyOfTemplate(tmp);
    Path db = dir.resolve("relay.db");
    long seq = seqOf(db, 7);
    flipWire(db, 7);
    ChildRelay.Cli quick = cli("check", "--store-dir", dir.toString());
    assertThat(quick.exit()).as("structure is intact: " + quick.err()).isZero();
    ChildRelay.Cli full = cli("check", "--full", "--store-dir", dir.toString());
    assertThat(full.exit()).as(full.err()).isEqualTo(3);
    JsonNode items = Json.parse(full.out()).get("items");
    assertThat(items.get("checked").asLong()).isEqualTo(ITEMS);
    assertThat(items.get("mismatched").asLong()).isEqualTo(1);
    assertThat(items.get("rows").get(0).asText()).startsWith("seq " + seq + " for target " + targetFingerprint);

    Path backup = tmp.resolve("b.db");
    ChildRelay.Cli b = cli("backup", backup.toString(), "--store-dir", dir.toString());
    assertThat(b.exit()).as(b.err()).isEqualTo(1);
    assertThat(b.err()).contains("CORRUPT: the store has 1 item whose wire bytes do not match their wire_hash (seq "
        + seq + " for target " + targetFingerprint).contains("the backup was not written");
    assertThat(backup).doesNotExist();
    try (Stream<Path> left = Files.list(tmp)) {
      assertThat(left.map(p -> p.getFileName().toString())).noneMatch(n -> n.contains(".partial-"));
    }
  }

  @Test
  void restore_verifies_the_backup_first_and_a_damaged_one_changes_nothing(@TempDir Path tmp) throws Exception {
    Path dir = copyOfTemplate(tmp);
    Path good = tmp.resolve("good.db");
    ChildRelay.Cli made = cli("backup", good.toString(), "--store-dir", dir.toString());
    assertThat(made.exit()).as(made.err()).isZero();
    assertThat(cli("check", "--full", "--file", good.toString()).exit()).isZero();
    Path wireFlipped = tmp.resolve("wire-flipped.db");
    Files.copy(good, wireFlipped);
    long seq = seqOf(wireFlipped, 3);
    flipWire(wireFlipped, 3);
    Path pageFlipped = tmp.resolve("page-flipped.db");
    Files.copy(good, pageFlipped);
    flip(pageFlipped, "leaf-cell-count");

    String before = sha256(dir.resolve("relay.db"));
    ChildRelay.Cli r1 = cli("restore", wireFlipped.toString(), "--store-dir", dir.toString());
    assertThat(r1.exit()).as(r1.err()).isEqualTo(1);
    assertThat(r1.err()).contains("CORRUPT: the backup " + wireFlipped + " fails its check (it has 1 item whose wire"
        + " bytes do not match their wire_hash (seq " + seq + " for target " + targetFingerprint)
        .contains("nothing was changed");
    ChildRelay.Cli r2 = cli("restore", pageFlipped.toString(), "--store-dir", dir.toString(), "--force");
    assertThat(r2.exit()).as(r2.err()).isEqualTo(1);
    assertThat(r2.err()).contains("CORRUPT: the backup " + pageFlipped + " fails its check (");
    assertThat(sha256(dir.resolve("relay.db"))).isEqualTo(before);
    assertThat(dir.resolve("rollback")).doesNotExist();
    try (ChildRelay relay = ChildRelay.start(dir, Map.of())) {
      assertThat(Http.send(relay.url(), "GET", "/v2/relay/info", null).json().get("epoch").asText())
          .as("still the original store").isEqualTo(epoch);
    }
    // the good backup restores, over a store that is itself damaged only with --force
    flip(dir.resolve("relay.db"), "index-leaf");
    ChildRelay.Cli unforced = cli("restore", good.toString(), "--store-dir", dir.toString());
    assertThat(unforced.exit()).isEqualTo(1);
    assertThat(unforced.err()).contains("CURRENT_UNREADABLE").contains("fails its integrity check");
    ChildRelay.Cli forced = cli("restore", good.toString(), "--store-dir", dir.toString(), "--force");
    assertThat(forced.exit()).as(forced.err()).isZero();
    try (ChildRelay relay = ChildRelay.start(dir, Map.of())) {
      assertThat(Http.send(relay.url(), "GET", "/v2/relay/info", null).status()).isEqualTo(200);
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"expiry_from=2026-13-45Tgarbage", "heartbeat=12abc", "epoch=", "schema_version=three",
      "restored_paths={not json"})
  void corrupted_metadata_stops_start_up_with_a_message_and_nothing_is_rewritten(String row, @TempDir Path tmp)
      throws Exception {
    Path dir = copyOfTemplate(tmp);
    Path db = dir.resolve("relay.db");
    String key = row.substring(0, row.indexOf('='));
    try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + db);
        var ps = c.prepareStatement("INSERT INTO meta(k, v) VALUES(?, ?) ON CONFLICT(k) DO UPDATE SET v=excluded.v")) {
      ps.setString(1, key);
      ps.setString(2, row.substring(row.indexOf('=') + 1));
      ps.executeUpdate();
    }
    String before = sha256(db);
    ChildRelay.Cli refused = serve(dir);
    assertThat(refused.exit()).as(refused.err()).isEqualTo(3);
    assertThat(refused.err()).contains("store refused: ").contains(key.equals("schema_version")
        ? "is not a relay store (no valid schema version)" : "has invalid metadata (meta." + key + " is ");
    assertThat(sha256(db)).as("nothing rewritten").isEqualTo(before);
    try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + db); Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT count(*) FROM items WHERE expires_at IS NULL")) {
      rs.next();
      assertThat(rs.getLong(1)).as("items keep their expiry").isZero();
    }
    ChildRelay.Cli check = cli("check", "--store-dir", dir.toString());
    assertThat(check.exit()).isEqualTo(3);
    assertThat(Json.parse(check.out()).get("metadata").get("problems").get(0).asText()).contains("meta." + key);
  }
}
