package io.mbxrelay.store.postgres;

import static org.assertj.core.api.Assertions.assertThat;

import io.mbxrelay.cli.Main;
import io.mbxrelay.config.ConfigLoader;
import io.mbxrelay.config.RelayConfig;
import io.mbxrelay.crypto.Ed25519KeyPair;
import io.mbxrelay.crypto.RelayKeys;
import io.mbxrelay.store.model.EnrolOutcome;
import io.mbxrelay.store.model.Page;
import io.mbxrelay.store.model.PushOutcome;
import io.mbxrelay.store.model.RejectReason;
import io.mbxrelay.store.StoreCommand;
import io.mbxrelay.store.sqlite.SqliteRelayStore;
import io.mbxrelay.store.sqlite.StoreLock;
import io.mbxrelay.wire.Hashes;
import io.vertx.core.Vertx;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * {@code mbxrelay migrate-store --from sqlite:DIR --to postgresql:URL}: the relay key, epoch, enrolments, queues (with
 * their seqs and acked position) and dedup rows arrive intact, and the migrated store goes on under the same rules;
 * a running relay's store, and a database that already holds a store, are refused with nothing written.
 */
class MigrateStoreTest {
  private final Ed25519KeyPair relay = Ed25519KeyPair.generate();
  private final String a = Ed25519KeyPair.generate().publicKeyB64();
  private final String b = Ed25519KeyPair.generate().publicKeyB64();

  private static StoreCommand.Target target(String key, String text) {
    byte[] w = text.getBytes(StandardCharsets.UTF_8);
    return new StoreCommand.Target(key, w, Hashes.sha256Hex(w), null);
  }

  private static StoreCommand.Push push(String sender, String id, StoreCommand.Target t) {
    return new StoreCommand.Push(sender, "sender", "envelope", id, List.of(t));
  }

  private static int migrate(Path dir, String url) {
    CommandLine cli = new CommandLine(new Main());
    // the user in the URL: the command takes MBX_RELAY_STORE_USER from the environment, which a test cannot set
    return cli.execute("migrate-store", "--from", "sqlite:" + dir, "--to", "postgresql:" + url + "?user="
        + PgTestServer.SUPERUSER);
  }

  @SuppressWarnings("try") // a resource held for the block, not used in it
  @Test
  void key_epoch_enrolments_queues_and_dedup_arrive_intact_and_the_store_goes_on(@TempDir Path dir)
      throws Exception {
    RelayConfig.Limits limits = ConfigLoader.load(null, Map.of()).limits();
    Files.writeString(dir.resolve(RelayKeys.FILE_NAME), RelayKeys.toFileJson(relay));
    String epoch;
    long seq2;
    try (SqliteRelayStore s = SqliteRelayStore.open(dir, relay.publicKeyB64(), Clock.systemUTC(), limits, 5000,
        600_000)) {
      epoch = s.epoch();
      assertThat(s.execute(new StoreCommand.Enrol("alpha", a, "", null, null))).isEqualTo(EnrolOutcome.OK);
      assertThat(s.execute(new StoreCommand.Enrol("beta", b, "", "acct", "jwt"))).isEqualTo(EnrolOutcome.OK);
      for (int i = 1; i <= 3; i++) {
        assertThat(s.execute(push(a, "id" + i, target(b, "wire" + i)))).isInstanceOf(PushOutcome.Stored.class);
      }
      seq2 = ((PushOutcome.Stored) s.execute(push(a, "id2", target(b, "wire2")))).targets().get(0).seq();
      long seq1 = ((PushOutcome.Stored) s.execute(push(a, "id1", target(b, "wire1")))).targets().get(0).seq();
      s.execute(new StoreCommand.Ack(b, epoch, OptionalLong.of(seq1))); // item 1 acked: its dedup row stays
    }
    String url = PgTestServer.shared().createDatabase();
    // a relay holding the store's lock: refused, nothing written
    try (StoreLock held = StoreLock.acquire(dir, 0)) {
      assertThat(migrate(dir, url)).isEqualTo(1);
    }
    assertThat(migrate(dir, url)).isZero();
    assertThat(migrate(dir, url)).as("a database that already holds a store").isEqualTo(1);

    try (PgStore pg = PgStore.open(new PgStore.Settings(url, PgTestServer.SUPERUSER, "", 4), null,
        System::currentTimeMillis, 600_000); io.mbxrelay.store.RelayLedger s = pg.newLedger(Clock.systemUTC(), limits)) {
      assertThat(pg.relayKey().publicKeyB64()).isEqualTo(relay.publicKeyB64());
      assertThat(pg.epoch()).isEqualTo(epoch);
      assertThat(pg.openReport().epochRotatedReason()).isNull();
      assertThat(pg.enrolmentCache().get(a)).isPresent();
      assertThat(pg.enrolmentCache().get(b).orElseThrow().account()).isEqualTo("acct");
      // dedup: the acked item and a queued one are duplicates at their seqs; other bytes are a conflict
      PushOutcome again = s.execute(push(a, "id2", target(b, "wire2")));
      assertThat(again).isInstanceOf(PushOutcome.Stored.class);
      assertThat(((PushOutcome.Stored) again).fresh()).isFalse();
      assertThat(((PushOutcome.Stored) again).targets().get(0).seq()).isEqualTo(seq2);
      assertThat(((PushOutcome.Stored) s.execute(push(a, "id1", target(b, "wire1")))).fresh()).isFalse();
      PushOutcome other = s.execute(push(a, "id3", target(b, "other bytes")));
      assertThat(other).isInstanceOf(PushOutcome.Rejected.class);
      assertThat(((PushOutcome.Rejected) other).reason()).isEqualTo(RejectReason.CONFLICT);
      // the queue: items 2 and 3 (1 was acked), in seq order; a new item goes after them
      Vertx vertx = Vertx.vertx();
      try (PgReads reads = new PgReads(vertx, pg, 1)) {
        Page page = reads.pull(b, 0, 10, 1 << 20).toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
        assertThat(page.items()).extracting(it -> it.itemId()).containsExactly("id2", "id3");
        assertThat(page.items().get(0).seq()).isEqualTo(seq2);
        long head = page.headSeq();
        long fresh = ((PushOutcome.Stored) s.execute(push(a, "id4", target(b, "wire4")))).targets().get(0).seq();
        assertThat(fresh).isGreaterThan(head);
      } finally {
        vertx.close();
      }
    }
  }
}
