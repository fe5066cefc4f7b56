package io.mbxrelay.store;

import static org.assertj.core.api.Assertions.assertThat;

import io.mbxrelay.config.ConfigLoader;
import io.mbxrelay.config.RelayConfig;
import io.mbxrelay.crypto.Ed25519KeyPair;
import io.mbxrelay.wire.Hashes;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The {@link RelayStore} contract (docs/protocol.md §3, §5, §7.2–§7.4), run against every implementation. The clock is
 * fixed at 0 ms so seqs are 1, 2, 3 (docs/protocol.md §5 "Seq allocation": a clock at 0 gives 1, 2, 3).
 */
public abstract class RelayStoreContractTest {
  protected static final Clock EPOCH_ZERO = Clock.fixed(Instant.EPOCH, ZoneOffset.UTC);
  protected RelayStore store;
  protected final String relayKey = Ed25519KeyPair.generate().publicKeyB64();
  protected final String a = Ed25519KeyPair.generate().publicKeyB64();
  protected final String b = Ed25519KeyPair.generate().publicKeyB64();
  protected final String c = Ed25519KeyPair.generate().publicKeyB64();

  /** Opens a fresh, empty store with the given limits and clock. */
  protected abstract RelayStore open(RelayConfig.Limits limits, Clock clock) throws Exception;

  protected static RelayConfig.Limits limits(Map<String, String> env) throws Exception {
    return ConfigLoader.load(null, env).limits();
  }

  @BeforeEach
  void setUp() throws Exception {
    store = open(limits(Map.of()), EPOCH_ZERO);
    for (String k : List.of(a, b, c)) {
      assertThat(store.execute(new StoreCommand.Enrol("h" + k.substring(0, 4).replaceAll("[^A-Za-z0-9]", "x"), k, "",
          null, null))).isEqualTo(EnrolOutcome.OK);
    }
  }

  @AfterEach
  void tearDown() {
    store.close();
  }

  protected static StoreCommand.Target target(String key, String text) {
    byte[] w = text.getBytes(StandardCharsets.UTF_8);
    return new StoreCommand.Target(key, w, Hashes.sha256Hex(w), null);
  }

  protected PushOutcome push(String sender, String id, StoreCommand.Target... targets) throws Exception {
    return store.execute(new StoreCommand.Push(sender, "sender", "envelope", id, List.of(targets)));
  }

  @Test
  void seqs_with_a_clock_at_zero_are_1_2_3_per_target_and_head_follows() throws Exception {
    for (int i = 1; i <= 3; i++) {
      PushOutcome.Stored s = (PushOutcome.Stored) push(a, "id" + i, target(b, "w" + i));
      assertThat(s.fresh()).isTrue();
      assertThat(s.targets().get(0).seq()).isEqualTo(i);
      assertThat(s.epoch()).isEqualTo(store.epoch());
    }
    assertThat(store.headSeq(b)).isEqualTo(3);
    assertThat(store.headSeq(c)).isZero();
    assertThat(((PushOutcome.Stored) push(a, "idc", target(c, "x"))).targets().get(0).seq()).isEqualTo(1);
  }

  @Test
  void dedup_returns_the_original_seq_and_at_and_a_different_hash_is_a_conflict_that_changes_nothing()
      throws Exception {
    PushOutcome.Stored first = (PushOutcome.Stored) push(a, "m", target(b, "wire"));
    PushOutcome.Stored again = (PushOutcome.Stored) push(a, "m", target(b, "wire"));
    assertThat(again.fresh()).isFalse();
    assertThat(again.targets()).isEqualTo(first.targets());
    assertThat(again.at()).isEqualTo(first.at());
    assertThat(push(a, "m", target(b, "other"))).isEqualTo(new PushOutcome.Rejected("conflict"));
    assertThat(store.headSeq(b)).isEqualTo(1);
    // the same item id from another sender is another item
    assertThat(((PushOutcome.Stored) push(c, "m", target(b, "other"))).fresh()).isTrue();
  }

  @Test
  void an_item_is_all_or_nothing_across_its_targets() throws Exception {
    String stranger = Ed25519KeyPair.generate().publicKeyB64();
    assertThat(push(a, "x", target(b, "1"), target(c, "2"), target(stranger, "3")))
        .isEqualTo(new PushOutcome.Rejected("target not enrolled"));
    assertThat(store.headSeq(b)).isZero();
    assertThat(store.headSeq(c)).isZero();
    StoreCommand.Target bad = new StoreCommand.Target(c, null, null, "bad wire");
    assertThat(push(a, "y", target(b, "1"), bad)).isEqualTo(new PushOutcome.Rejected("bad wire"));
    assertThat(store.headSeq(b)).isZero();
    // a conflict on the second target rolls back the fresh first one
    push(a, "z", target(c, "c-wire"));
    assertThat(push(a, "z", target(b, "b-wire"), target(c, "changed"))).isEqualTo(new PushOutcome.Rejected("conflict"));
    assertThat(store.headSeq(b)).isZero();
  }

  @Test
  void ack_deletes_through_the_seq_keeps_the_max_and_refuses_past_the_head_or_another_epoch() throws Exception {
    for (int i = 0; i < 3; i++) {
      push(a, "id" + i, target(b, "w" + i));
    }
    assertThat(store.execute(new StoreCommand.Ack(b, store.epoch(), OptionalLong.of(2))))
        .isEqualTo(new AckOutcome.Done(2, 2, 3));
    assertThat(store.execute(new StoreCommand.Ack(b, store.epoch(), OptionalLong.of(1))))
        .isEqualTo(new AckOutcome.Done(2, 0, 3));
    assertThat(store.execute(new StoreCommand.Ack(b, store.epoch(), OptionalLong.of(4))))
        .isEqualTo(new AckOutcome.BadAck(store.epoch(), 3));
    assertThat(store.execute(new StoreCommand.Ack(b, store.epoch(), OptionalLong.empty())))
        .isEqualTo(new AckOutcome.BadAck(store.epoch(), 3));
    assertThat(store.execute(new StoreCommand.Ack(b, "other", OptionalLong.of(3))))
        .isEqualTo(new AckOutcome.EpochChanged(store.epoch(), 3));
    // dedup outlives the ack: a late retry is a duplicate, never a re-delivery
    assertThat(((PushOutcome.Stored) push(a, "id0", target(b, "w0"))).fresh()).isFalse();
    assertThat(store.headSeq(b)).isEqualTo(3);
  }

  @Test
  void quotas_reject_the_whole_item_with_the_target_name() throws Exception {
    store.close();
    store = open(limits(Map.of("MBX_RELAY_LIMITS_MAX_QUEUE_ITEMS", "3", "MBX_RELAY_LIMITS_MAX_SENDER_ITEMS", "2")),
        EPOCH_ZERO);
    store.execute(new StoreCommand.Enrol("beta", b, "", null, null));
    store.execute(new StoreCommand.Enrol("alpha", a, "", null, null));
    store.execute(new StoreCommand.Enrol("gamma", c, "", null, null));
    push(a, "1", target(b, "1"));
    push(a, "2", target(b, "2"));
    assertThat(push(a, "3", target(b, "3"))).isEqualTo(new PushOutcome.Rejected("quota:sender share exceeded for beta"));
    push(c, "3", target(b, "3"));
    assertThat(push(c, "4", target(b, "4"))).isEqualTo(new PushOutcome.Rejected("quota:queue depth exceeded for beta"));
    assertThat(store.headSeq(b)).isEqualTo(3);
  }

  @Test
  void enrolment_keeps_revocation_and_account_rules() throws Exception {
    String d = Ed25519KeyPair.generate().publicKeyB64();
    String e = Ed25519KeyPair.generate().publicKeyB64();
    assertThat(store.execute(new StoreCommand.Enrol("Laptop", d, "", "acct-1", "jwt"))).isEqualTo(EnrolOutcome.OK);
    assertThat(store.execute(new StoreCommand.Enrol("laptop", e, "", "acct-1", "jwt")))
        .isEqualTo(EnrolOutcome.NAME_TAKEN);
    // the same name in another account, or without account, coexists
    assertThat(store.execute(new StoreCommand.Enrol("laptop", e, "", "acct-2", "jwt"))).isEqualTo(EnrolOutcome.OK);
    // a weaker re-enrolment without account keeps the stored account and its authority
    assertThat(store.execute(new StoreCommand.Enrol("laptop", d, "fp", null, null))).isEqualTo(EnrolOutcome.OK);
    Enrolment row = store.enrolment(d).orElseThrow();
    assertThat(row.account()).isEqualTo("acct-1");
    assertThat(row.authorizedBy()).isEqualTo("jwt");
    assertThat(row.ownerFp()).isEqualTo("fp");
  }

  @Test
  void the_live_enrolment_cap_refuses_new_keys_but_not_re_enrolment() throws Exception {
    store.close();
    store = open(limits(Map.of("MBX_RELAY_LIMITS_MAX_ENROLMENTS", "2")), EPOCH_ZERO);
    assertThat(store.execute(new StoreCommand.Enrol("a", a, "", null, null))).isEqualTo(EnrolOutcome.OK);
    assertThat(store.execute(new StoreCommand.Enrol("b", b, "", null, null))).isEqualTo(EnrolOutcome.OK);
    assertThat(store.execute(new StoreCommand.Enrol("c", c, "", null, null))).isEqualTo(EnrolOutcome.FULL);
    assertThat(store.execute(new StoreCommand.Enrol("a2", a, "", null, null))).isEqualTo(EnrolOutcome.OK);
  }

  @Test
  void a_batch_commits_once_and_a_rejected_command_rolls_back_only_itself() throws Exception {
    List<RelayStore.CommandResult> results = store.execute(List.of(
        new StoreCommand.Push(a, "s", "envelope", "ok1", List.of(target(b, "1"))),
        new StoreCommand.Push(a, "s", "envelope", "bad", List.of(target(b, "2"),
            target(Ed25519KeyPair.generate().publicKeyB64(), "3"))),
        new StoreCommand.Push(a, "s", "envelope", "ok2", List.of(target(b, "4"))),
        new StoreCommand.Heartbeat()));
    assertThat(results).hasSize(4);
    assertThat(((PushOutcome.Stored) results.get(0).value()).targets().get(0).seq()).isEqualTo(1);
    assertThat(results.get(1).value()).isEqualTo(new PushOutcome.Rejected("target not enrolled"));
    assertThat(((PushOutcome.Stored) results.get(2).value()).targets().get(0).seq()).isEqualTo(2);
    assertThat(store.headSeq(b)).isEqualTo(2);
  }
}
