package io.mbxrelay.server;

import static org.assertj.core.api.Assertions.assertThat;

import io.mbxrelay.testing.ChildRelay;
import io.mbxrelay.testing.Envelopes;
import io.mbxrelay.testing.Http;
import io.mbxrelay.testing.TestHost;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 10 item 4: {@code relay.db} truncated to 0 bytes, or deleted while {@code relay.key} and {@code relay.lock}
 * remain, made the relay create a fresh store (new epoch, every enrolment and item gone) and serve it. Now the real jar
 * refuses the dir with exit status 3 and names the remedies; {@code serve --new-store} starts a new store on purpose
 * and keeps the remains; a brand-new empty dir still starts as before.
 */
class LostStoreIT {

  private static ChildRelay.Cli serve(Path dir, String... extra) throws Exception {
    String[] args = new String[6 + extra.length];
    System.arraycopy(new String[] {"serve", "--port", "0", "--bind", "127.0.0.1", "--store-dir"}, 0, args, 0, 6);
    String[] all = new String[args.length + 1];
    System.arraycopy(args, 0, all, 0, 6);
    all[6] = dir.toString();
    System.arraycopy(extra, 0, all, 7, extra.length);
    return ChildRelay.cli(Map.of("MBX_RELAY_ADMIN_PORT", "0"), all);
  }

  /** A store with one enrolment and one queued item; returns its epoch. */
  private static String populated(Path dir, boolean sigkill) throws Exception {
    try (ChildRelay relay = ChildRelay.start(dir, Map.of())) {
      TestHost a = new TestHost(relay.url(), "alpha").enrol();
      TestHost b = new TestHost(relay.url(), "beta").enrol();
      String id = Envelopes.newId();
      assertThat(a.pushEnvelope(b, id, Envelopes.sealed(id)).status()).isEqualTo(200);
      String epoch = Http.send(relay.url(), "GET", "/v2/relay/info", null).json().get("epoch").asText();
      if (sigkill) {
        relay.kill();
      } else {
        relay.stop();
      }
      return epoch;
    }
  }

  @Test
  void a_relay_db_truncated_to_zero_bytes_is_refused_until_new_store_is_asked_for(@TempDir Path dir) throws Exception {
    String epoch = populated(dir, false);
    try (FileChannel ch = FileChannel.open(dir.resolve("relay.db"), StandardOpenOption.WRITE)) {
      ch.truncate(0);
    }
    ChildRelay.Cli refused = serve(dir);
    assertThat(refused.exit()).as(refused.err()).isEqualTo(3);
    assertThat(refused.err()).contains("store refused").contains("no store in " + dir + ": relay.db is empty (0 bytes) although a store lived there")
        .contains("mbxrelay restore FILE --store-dir " + dir).contains("mbxrelay serve --new-store --store-dir " + dir);
    assertThat(Files.size(dir.resolve("relay.db"))).as("nothing was created in its place").isZero();

    try (ChildRelay relay = ChildRelay.start(dir, Map.of(), "--new-store")) {
      String fresh = Http.send(relay.url(), "GET", "/v2/relay/info", null).json().get("epoch").asText();
      assertThat(fresh).isNotEqualTo(epoch);
      assertThat(String.join("\n", relay.output)).contains("--new-store: starting a new, empty store in " + dir);
    }
    try (var lost = Files.list(dir)) {
      Path kept = lost.filter(p -> p.getFileName().toString().startsWith("lost-")).findFirst().orElseThrow();
      assertThat(Files.size(kept.resolve("relay.db"))).isZero();
    }
    // the new store is a store: a restart needs no flag
    try (ChildRelay relay = ChildRelay.start(dir, Map.of())) {
      assertThat(Http.send(relay.url(), "GET", "/v2/relay/info", null).status()).isEqualTo(200);
    }
  }

  @Test
  void a_relay_db_deleted_while_relay_key_and_relay_lock_remain_is_refused(@TempDir Path dir) throws Exception {
    populated(dir, false);
    for (String f : new String[] {"relay.db", "relay.db-wal", "relay.db-shm"}) {
      Files.deleteIfExists(dir.resolve(f));
    }
    assertThat(dir.resolve("relay.key")).exists();
    assertThat(dir.resolve("relay.lock")).exists();
    ChildRelay.Cli refused = serve(dir);
    assertThat(refused.exit()).as(refused.err()).isEqualTo(3);
    assertThat(refused.err()).contains("no store in " + dir + ": relay.db is missing although a store lived there"
        + " (found relay.lock, relay.closed)").contains("--new-store");
    assertThat(dir.resolve("relay.db")).doesNotExist();
  }

  @Test
  void a_relay_db_deleted_after_a_sigkill_with_its_wal_left_is_refused(@TempDir Path dir) throws Exception {
    populated(dir, true);
    assertThat(Files.size(dir.resolve("relay.db-wal"))).isPositive();
    Files.delete(dir.resolve("relay.db"));
    ChildRelay.Cli refused = serve(dir);
    assertThat(refused.exit()).as(refused.err()).isEqualTo(3);
    assertThat(refused.err()).contains("relay.db is missing although a store lived there (found relay.lock,"
        + " relay.db-wal, relay.db-shm)");
  }

  @Test
  void a_brand_new_empty_store_dir_still_starts_without_any_flag(@TempDir Path tmp) throws Exception {
    Path dir = tmp.resolve("new").resolve("store");
    try (ChildRelay relay = ChildRelay.start(dir, Map.of())) {
      assertThat(Http.send(relay.url(), "GET", "/v2/relay/info", null).status()).isEqualTo(200);
    }
    // a provisioned relay.key alone is not a lost store
    Path provisioned = Files.createDirectory(tmp.resolve("provisioned"));
    Files.copy(dir.resolve("relay.key"), provisioned.resolve("relay.key"));
    try (ChildRelay relay = ChildRelay.start(provisioned, Map.of())) {
      assertThat(Http.send(relay.url(), "GET", "/v2/relay/info", null).status()).isEqualTo(200);
    }
  }
}
