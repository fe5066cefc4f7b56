package io.mbxrelay.store.sqlite;

import static org.assertj.core.api.Assertions.assertThat;

import io.mbxrelay.config.ConfigLoader;
import io.mbxrelay.crypto.Ed25519KeyPair;
import io.mbxrelay.store.model.EnrolOutcome;
import io.mbxrelay.store.model.PushOutcome;
import io.mbxrelay.store.RelayStore;
import io.mbxrelay.store.model.RotateOutcome;
import io.mbxrelay.store.StoreCommand;
import io.mbxrelay.store.StoreException;
import io.mbxrelay.wire.Hashes;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Clock;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Regressions for a code review of the store's durability invariants (each test names the case it pins). */
class StoreReviewRegressionTest {
  final String relay = Ed25519KeyPair.generate().publicKeyB64();
  final String s = Ed25519KeyPair.generate().publicKeyB64();
  final String a = Ed25519KeyPair.generate().publicKeyB64();
  final String b = Ed25519KeyPair.generate().publicKeyB64();

  SqliteRelayStore open(Path d) throws Exception {
    SqliteRelayStore st = SqliteRelayStore.open(d, relay, Clock.fixed(Instant.EPOCH, ZoneOffset.UTC),
        ConfigLoader.load(null, Map.of()).limits(), 5000, 600_000);
    for (var e : List.of(List.of("sender", s), List.of("laptop", a))) {
      assertThat(st.execute(new StoreCommand.Enrol(e.get(0), e.get(1), "", null, null))).isEqualTo(EnrolOutcome.OK);
    }
    return st;
  }

  static StoreCommand.Target t(String key, String text) {
    byte[] w = text.getBytes(StandardCharsets.UTF_8);
    return new StoreCommand.Target(key, w, Hashes.sha256Hex(w), null);
  }

  static long count(SqliteRelayStore st, String sql) throws Exception {
    try (Statement x = st.connection().createStatement(); ResultSet rs = x.executeQuery(sql)) {
      rs.next();
      return rs.getLong(1);
    }
  }

  /** An Error (not a RuntimeException) inside a transaction used to leave BEGIN + SAVEPOINT open for good. */
  @Test
  void an_error_inside_a_transaction_is_rolled_back_and_the_next_batch_commits(@TempDir Path d)
      throws Exception {
    try (SqliteRelayStore st = open(d)) {
      st.commitHook((cmds, committed) -> {
        if (!committed) {
          throw new AssertionError("simulated Error (OOM/StackOverflow) in the writer");
        }
      });
      try {
        st.execute(new StoreCommand.Heartbeat());
      } catch (Throwable expected) {
        // propagates past execute's catch (SQLException | RuntimeException)
      }
      st.commitHook((cmds, committed) -> {});
      // the next, perfectly valid batch:
      StoreException failed = null;
      try {
        st.execute(new StoreCommand.Heartbeat());
      } catch (StoreException e) {
        failed = e;
      }
      assertThat(failed).as("writer should recover after a failed batch").isNull();
    }
  }

  /** A v1 name resolved on a read snapshot may name a key revoked since; the writer must re-check it. */
  @Test
  void a_v1_push_racing_a_rotation_is_refused_instead_of_stranded_under_the_revoked_key(@TempDir Path d)
      throws Exception {
    try (SqliteRelayStore st = open(d)) {
      // the route resolved "laptop" -> a on a read snapshot; meanwhile the rotation a -> b commits
      assertThat(st.execute(new StoreCommand.Rotate(a, b, "laptop"))).isInstanceOf(RotateOutcome.Moved.class);
      byte[] wire = "{\"id\":\"01ARZ3NDEKTSV4RRFFQ69G5FAV\"}".getBytes(StandardCharsets.UTF_8);
      java.util.Optional<String> out = st.execute(new StoreCommand.PushV1(s, "sender", "01ARZ3NDEKTSV4RRFFQ69G5FAV", wire,
          Hashes.sha256Hex(wire), List.of(new StoreCommand.V1Target(a, "laptop")), null));
      // v2 push refuses the same target:
      assertThat(st.execute(new StoreCommand.Push(s, "sender", "envelope", "x", List.of(t(a, "w")))))
          .isEqualTo(new PushOutcome.Rejected(io.mbxrelay.store.model.RejectReason.parse("target not enrolled")));
      assertThat(out).as("v1 push to a revoked key is refused, not reported stored")
          .contains("recipient host not enrolled: laptop");
      assertThat(count(st, "SELECT count(*) FROM items WHERE target_pubkey='" + a + "' AND expires_at IS NULL"))
          .isZero();
    }
  }

  /** Rotation must keep one copy per (sender, item, target) when the new key already has the item. */
  @Test
  void rotation_does_not_queue_a_second_copy_of_an_item_the_new_key_already_has(@TempDir Path d) throws Exception {
    try (SqliteRelayStore st = open(d)) {
      assertThat(st.execute(new StoreCommand.Enrol("laptop2", b, "", null, null))).isEqualTo(EnrolOutcome.OK);
      st.execute(new StoreCommand.Push(s, "sender", "envelope", "M", List.of(t(a, "sealed-for-a"))));
      st.execute(new StoreCommand.Push(s, "sender", "envelope", "M", List.of(t(b, "sealed-for-b"))));
      st.execute(new StoreCommand.Rotate(a, b, "laptop"));
      assertThat(count(st, "SELECT count(*) FROM items WHERE target_pubkey='" + b + "' AND item_id='M'"))
          .as("copies of M queued for b").isEqualTo(1);
    }
  }
}
