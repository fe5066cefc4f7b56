package io.mbxrelay.store;

import io.mbxrelay.store.model.AckOutcome;
import io.mbxrelay.store.model.DenyEntry;
import io.mbxrelay.store.model.DenyKey;
import io.mbxrelay.store.model.DenyOutcome;
import io.mbxrelay.store.model.EncAds;
import io.mbxrelay.store.model.EnrolOutcome;
import io.mbxrelay.store.model.Enrolment;
import io.mbxrelay.store.model.HostState;
import io.mbxrelay.store.model.Page;
import io.mbxrelay.store.model.PulledItem;
import io.mbxrelay.store.model.PushOutcome;
import io.mbxrelay.store.model.QueueStats;
import io.mbxrelay.store.model.RejectReason;
import io.mbxrelay.store.model.RotateOutcome;
import io.mbxrelay.store.model.SendersOutcome;
import io.mbxrelay.store.model.SweepCounts;
import io.mbxrelay.store.spi.RelayReads;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import io.mbxrelay.budget.PageBudget;
import io.mbxrelay.config.ConfigLoader;
import io.mbxrelay.config.RelayConfig;
import io.mbxrelay.crypto.Ed25519;
import io.mbxrelay.crypto.Ed25519KeyPair;
import io.mbxrelay.crypto.Fingerprint;
import io.mbxrelay.testing.MutableClock;
import io.mbxrelay.wire.CanonicalJson;
import io.mbxrelay.wire.Hashes;
import io.mbxrelay.wire.IsoTime;
import io.mbxrelay.wire.Json;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The store contract (docs/architecture.md "Store: ledger and backends"), run against every backend: a subclass per
 * backend opens a fresh store, reopens the same one, and opens its {@link RelayReads}. Every command, every read,
 * every rejection text, the seq rule, dedup across a restart, quotas, rotation and the sweep. The clock starts at 0 ms
 * so seqs are 1, 2, 3 until a test moves it (docs/protocol.md §5 "Seq allocation").
 */
public abstract class RelayStoreContractTest {
  protected static final Clock EPOCH_ZERO = Clock.fixed(Instant.EPOCH, ZoneOffset.UTC);
  private static Vertx vertx;

  protected RelayStore store;
  protected final Ed25519KeyPair relayPair = Ed25519KeyPair.generate();
  protected final String relayKey = relayPair.publicKeyB64();
  protected final String a = Ed25519KeyPair.generate().publicKeyB64();
  protected final String b = Ed25519KeyPair.generate().publicKeyB64();
  protected final String c = Ed25519KeyPair.generate().publicKeyB64();
  protected final String d = Ed25519KeyPair.generate().publicKeyB64();
  protected final MutableClock clock = new MutableClock(0);
  private RelayReads reads;

  /** Opens a fresh, empty store with the given limits and clock. */
  protected abstract RelayStore open(RelayConfig.Limits limits, Clock clock) throws Exception;

  /** Opens again the store the last {@link #open} created (the caller closed it): a restart. */
  protected abstract RelayStore reopen(RelayConfig.Limits limits, Clock clock) throws Exception;

  /** Opens the read path over the store the last {@link #open} created. */
  protected abstract RelayReads openReads(Vertx vertx) throws Exception;

  protected static RelayConfig.Limits limits(Map<String, String> env) throws Exception {
    return ConfigLoader.load(null, env).limits();
  }

  @BeforeAll
  static void startVertx() {
    vertx = Vertx.vertx();
  }

  @AfterAll
  static void stopVertx() {
    vertx.close();
  }

  @BeforeEach
  void setUp() throws Exception {
    store = open(limits(Map.of()), clock);
    enrolAll();
  }

  private void enrolAll() throws Exception {
    assertThat(store.execute(new StoreCommand.Enrol("alpha", a, "", null, null))).isEqualTo(EnrolOutcome.OK);
    assertThat(store.execute(new StoreCommand.Enrol("beta", b, "", "acct", "jwt"))).isEqualTo(EnrolOutcome.OK);
    assertThat(store.execute(new StoreCommand.Enrol("gamma", c, "", null, null))).isEqualTo(EnrolOutcome.OK);
    assertThat(store.execute(new StoreCommand.Enrol("delta", d, "", "acct", "jwt"))).isEqualTo(EnrolOutcome.OK);
  }

  @AfterEach
  void tearDown() {
    if (reads != null) {
      reads.close();
    }
    store.close();
  }

  /** A fresh store with other limits, the four hosts enrolled again. */
  private void withLimits(Map<String, String> env) throws Exception {
    store.close();
    store = open(limits(env), clock);
    enrolAll();
  }

  /** Sets the store's clock to {@code ms} (forwards or back). */
  private void at(long ms) {
    clock.step(java.time.Duration.ofMillis(ms - clock.millis()));
  }

  private void restart() throws Exception {
    store.close();
    store = reopen(limits(Map.of()), clock);
  }

  protected RelayReads reads() throws Exception {
    if (reads == null) {
      reads = openReads(vertx);
    }
    return reads;
  }

  protected static <T> T await(Future<T> f) throws Exception {
    try {
      return f.toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
    } catch (ExecutionException e) {
      throw e.getCause() instanceof Exception x ? x : e;
    }
  }

  protected static StoreCommand.Target target(String key, String text) {
    byte[] w = text.getBytes(StandardCharsets.UTF_8);
    return new StoreCommand.Target(key, w, Hashes.sha256Hex(w), null);
  }

  protected PushOutcome push(String sender, String id, StoreCommand.Target... targets) throws Exception {
    return store.execute(new StoreCommand.Push(sender, "sender", "envelope", id, List.of(targets)));
  }

  private PushOutcome.Stored stored(String sender, String id, StoreCommand.Target... targets) throws Exception {
    PushOutcome o = push(sender, id, targets);
    assertThat(o).isInstanceOf(PushOutcome.Stored.class);
    return (PushOutcome.Stored) o;
  }

  private static PushOutcome rejected(String wireText) {
    return new PushOutcome.Rejected(RejectReason.parse(wireText));
  }

  private static String text(int n, char ch) {
    return String.valueOf(ch).repeat(n);
  }

  // ---- seqs ----

  @Test
  void seqs_with_a_clock_at_zero_are_1_2_3_per_target_and_head_follows() throws Exception {
    for (int i = 1; i <= 3; i++) {
      PushOutcome.Stored s = stored(a, "id" + i, target(b, "w" + i));
      assertThat(s.fresh()).isTrue();
      assertThat(s.targets().get(0).seq()).isEqualTo(i);
      assertThat(s.epoch()).isEqualTo(store.epoch());
    }
    assertThat(store.headSeq(b)).isEqualTo(3);
    assertThat(store.headSeq(c)).isZero();
    assertThat(stored(a, "idc", target(c, "x")).targets().get(0).seq()).isEqualTo(1);
  }

  @Test
  void a_seq_is_max_of_next_and_now_and_never_goes_back_when_the_clock_does_nor_across_a_restart()
      throws Exception {
    at(1000);
    assertThat(stored(a, "1", target(b, "1")).targets().get(0).seq()).isEqualTo(1000);
    at(500);
    assertThat(stored(a, "2", target(b, "2")).targets().get(0).seq()).isEqualTo(1001);
    at(5000);
    assertThat(stored(a, "3", target(b, "3")).targets().get(0).seq()).isEqualTo(5000);
    restart();
    at(10);
    assertThat(stored(a, "4", target(b, "4")).targets().get(0).seq()).isEqualTo(5001);
    assertThat(store.headSeq(b)).isEqualTo(5001);
  }

  // ---- dedup ----

  @Test
  void dedup_returns_the_original_seq_and_at_and_a_different_hash_is_a_conflict_that_changes_nothing()
      throws Exception {
    PushOutcome.Stored first = stored(a, "m", target(b, "wire"));
    at(7000);
    PushOutcome.Stored again = stored(a, "m", target(b, "wire"));
    assertThat(again.fresh()).isFalse();
    assertThat(again.targets()).isEqualTo(first.targets());
    assertThat(again.at()).isEqualTo(first.at());
    assertThat(push(a, "m", target(b, "other"))).isEqualTo(rejected("conflict"));
    assertThat(store.headSeq(b)).isEqualTo(1);
    // the same item id from another sender is another item
    assertThat(stored(c, "m", target(b, "other")).fresh()).isTrue();
  }

  @Test
  void dedup_survives_a_restart() throws Exception {
    PushOutcome.Stored first = stored(a, "m", target(b, "wire"), target(c, "wire-c"));
    restart();
    PushOutcome.Stored again = stored(a, "m", target(b, "wire"), target(c, "wire-c"));
    assertThat(again.fresh()).isFalse();
    assertThat(again.targets()).isEqualTo(first.targets());
    assertThat(again.at()).isEqualTo(first.at());
    assertThat(push(a, "m", target(b, "changed"))).isEqualTo(rejected("conflict"));
    assertThat(store.headSeq(b)).isEqualTo(1);
  }

  @Test
  void an_item_partly_stored_before_is_fresh_for_the_new_target_and_keeps_the_old_seq_for_the_other()
      throws Exception {
    stored(a, "m", target(b, "w"));
    PushOutcome.Stored both = stored(a, "m", target(b, "w"), target(c, "w"));
    assertThat(both.fresh()).isTrue();
    assertThat(both.targets()).extracting(PushOutcome.TargetSeq::seq).containsExactly(1L, 1L);
  }

  // ---- admission order and texts ----

  @Test
  void an_item_is_all_or_nothing_across_its_targets() throws Exception {
    String stranger = Ed25519KeyPair.generate().publicKeyB64();
    assertThat(push(a, "x", target(b, "1"), target(c, "2"), target(stranger, "3")))
        .isEqualTo(rejected("target not enrolled"));
    assertThat(store.headSeq(b)).isZero();
    assertThat(store.headSeq(c)).isZero();
    StoreCommand.Target bad = new StoreCommand.Target(c, null, null, RejectReason.parse("bad wire"));
    assertThat(push(a, "y", target(b, "1"), bad)).isEqualTo(rejected("bad wire"));
    assertThat(store.headSeq(b)).isZero();
    // a conflict on the second target rolls back the fresh first one, and gives its seq back
    stored(a, "z", target(c, "c-wire"));
    assertThat(push(a, "z", target(b, "b-wire"), target(c, "changed"))).isEqualTo(rejected("conflict"));
    assertThat(store.headSeq(b)).isZero();
    assertThat(stored(a, "after", target(b, "1")).targets().get(0).seq()).isEqualTo(1);
  }

  @Test
  void the_commit_signal_names_each_target_with_its_new_head_and_nothing_an_item_rolled_back() throws Exception {
    List<Map<String, Long>> signals = new java.util.concurrent.CopyOnWriteArrayList<>();
    store.onNewItems(signals::add);
    stored(a, "z", target(c, "c-wire"));
    assertThat(signals).containsExactly(Map.of(c, 1L));
    signals.clear();
    // the conflict on c rolls back b's fresh insert: the COMMIT stored nothing, so nothing is signalled
    assertThat(push(a, "z", target(b, "b-wire"), target(c, "changed"))).isEqualTo(rejected("conflict"));
    assertThat(signals).isEmpty();
    // one transaction, two items for beta and one for delta: each target once, with its highest seq
    store.execute(new StoreCommand.PushBatch(List.of(
        new StoreCommand.Push(a, "sender", "envelope", "p", List.of(target(b, "1"))),
        new StoreCommand.Push(a, "sender", "envelope", "q", List.of(target(b, "2"), target(d, "2"))))));
    assertThat(signals).containsExactly(Map.of(b, 2L, d, 1L));
    assertThat(store.headSeq(b)).isEqualTo(2);
  }

  @Test
  void enrolment_and_allowlist_are_checked_before_the_edge_s_own_finding_for_each_target() throws Exception {
    String stranger = Ed25519KeyPair.generate().publicKeyB64();
    StoreCommand.Target dup = new StoreCommand.Target(stranger, null, null, RejectReason.parse("duplicate target"));
    assertThat(push(a, "x", dup)).isEqualTo(rejected("target not enrolled"));
    assertThat(store.execute(new StoreCommand.PublishSenders(c, List.of(b), "2026-01-01T00:00:00.000Z",
        IsoTime.parse("2026-01-01T00:00:00.000Z").getAsLong(), "{}", "sig"))).isEqualTo(SendersOutcome.STORED);
    StoreCommand.Target size = new StoreCommand.Target(c, null, null, RejectReason.parse("item over size limit"));
    assertThat(push(a, "x", size)).isEqualTo(rejected("sender not accepted by target"));
    for (String text : List.of("duplicate target", "bad wire", "item over size limit", "bad envelope: no body",
        "item id is not the envelope id", "envelope body is not sealed", "bad receipt",
        "item id is not the receipt id", "receipt is not signed by the sending host")) {
      StoreCommand.Target t = new StoreCommand.Target(b, null, null, RejectReason.parse(text));
      PushOutcome o = push(a, "x", t);
      assertThat(o).isEqualTo(rejected(text));
      assertThat(((PushOutcome.Rejected) o).wireText()).isEqualTo(text);
    }
  }

  @Test
  void an_allowlist_admits_only_listed_senders_and_an_older_or_equal_one_is_stale() throws Exception {
    long t1 = IsoTime.parse("2026-01-01T00:00:00.000Z").getAsLong();
    assertThat(store.execute(new StoreCommand.PublishSenders(b, List.of(c), "2026-01-01T00:00:00.000Z", t1,
        "{\"v\":1}", "sig"))).isEqualTo(SendersOutcome.STORED);
    assertThat(push(a, "1", target(b, "1"))).isEqualTo(rejected("sender not accepted by target"));
    assertThat(((PushOutcome.Rejected) push(a, "1", target(b, "1"))).reason())
        .isEqualTo(RejectReason.SENDER_NOT_ACCEPTED);
    stored(c, "1", target(b, "1"));
    assertThat(store.execute(new StoreCommand.PublishSenders(b, List.of(a), "2026-01-01T00:00:00.000Z", t1,
        "{\"v\":2}", "sig"))).isEqualTo(SendersOutcome.STALE);
    assertThat(store.execute(new StoreCommand.PublishSenders(b, List.of(a), "2026-01-02T00:00:00.000Z",
        t1 + 86_400_000L, "{\"v\":3}", "sig"))).isEqualTo(SendersOutcome.STORED);
    stored(a, "2", target(b, "2"));
    assertThat(push(c, "3", target(b, "3"))).isEqualTo(rejected("sender not accepted by target"));
  }

  // ---- quotas (docs/protocol.md §3 "Quota messages") ----

  @Test
  void every_quota_refuses_the_whole_item_with_its_text() throws Exception {
    withLimits(Map.of("MBX_RELAY_LIMITS_MAX_QUEUE_ITEMS", "3", "MBX_RELAY_LIMITS_MAX_SENDER_ITEMS", "2"));
    stored(a, "1", target(b, "1"));
    stored(a, "2", target(b, "2"));
    assertThat(push(a, "3", target(b, "3"))).isEqualTo(rejected("quota:sender share exceeded for beta"));
    stored(c, "3", target(b, "3"));
    assertThat(push(c, "4", target(b, "4"))).isEqualTo(rejected("quota:queue depth exceeded for beta"));
    assertThat(store.headSeq(b)).isEqualTo(3);
    // an existing dedup row wins over the quota: a retry of a stored item is a duplicate
    assertThat(stored(c, "3", target(b, "3")).fresh()).isFalse();

    withLimits(Map.of("MBX_RELAY_LIMITS_MAX_QUEUE_BYTES", "1024", "MBX_RELAY_LIMITS_MAX_SENDER_BYTES", "1024"));
    stored(a, "1", target(b, text(600, 'x')));
    assertThat(push(c, "2", target(b, text(600, 'y')))).isEqualTo(rejected("quota:queue bytes exceeded for beta"));

    withLimits(Map.of("MBX_RELAY_LIMITS_MAX_QUEUE_BYTES", "2048", "MBX_RELAY_LIMITS_MAX_SENDER_BYTES", "1024"));
    stored(a, "1", target(b, text(600, 'x')));
    assertThat(push(a, "2", target(b, text(600, 'y')))).isEqualTo(rejected("quota:sender share exceeded for beta"));

    // beta and delta share the account "acct"
    withLimits(Map.of("MBX_RELAY_LIMITS_MAX_OWNER_ITEMS", "1"));
    stored(a, "1", target(b, "1"));
    assertThat(push(a, "2", target(d, "2"))).isEqualTo(rejected("quota:owner queue depth exceeded for delta"));
    stored(a, "3", target(c, "3")); // gamma has no account

    withLimits(Map.of("MBX_RELAY_LIMITS_MAX_OWNER_BYTES", "1024"));
    stored(a, "1", target(b, text(600, 'x')));
    assertThat(push(a, "2", target(d, text(600, 'y')))).isEqualTo(rejected("quota:owner queue bytes exceeded for delta"));

    withLimits(Map.of("MBX_RELAY_LIMITS_MAX_SENDER_TOTAL_ITEMS", "1"));
    stored(a, "1", target(b, "1"));
    assertThat(push(a, "2", target(c, "2"))).isEqualTo(rejected("quota:sender total exceeded"));
    stored(c, "2", target(a, "2"));

    withLimits(Map.of("MBX_RELAY_LIMITS_MAX_STORE_ITEMS", "2"));
    stored(a, "1", target(b, "1"));
    stored(c, "2", target(d, "2"));
    PushOutcome full = push(b, "3", target(a, "3"));
    assertThat(full).isEqualTo(rejected("quota:relay store full"));
    assertThat(((PushOutcome.Rejected) full).reason()).isEqualTo(RejectReason.QUOTA);
    assertThat(((PushOutcome.Rejected) full).detail()).isEqualTo("relay store full");
  }

  @Test
  void an_ack_frees_quota_in_the_same_way_a_restart_does_not_change_it() throws Exception {
    withLimits(Map.of("MBX_RELAY_LIMITS_MAX_QUEUE_ITEMS", "2", "MBX_RELAY_LIMITS_MAX_SENDER_ITEMS", "2"));
    stored(a, "1", target(b, "1"));
    stored(a, "2", target(b, "2"));
    store.close();
    store = reopen(limits(Map.of("MBX_RELAY_LIMITS_MAX_QUEUE_ITEMS", "2", "MBX_RELAY_LIMITS_MAX_SENDER_ITEMS", "2")),
        clock);
    assertThat(push(a, "3", target(b, "3"))).isEqualTo(rejected("quota:queue depth exceeded for beta"));
    assertThat(store.execute(new StoreCommand.Ack(b, store.epoch(), OptionalLong.of(1))))
        .isEqualTo(new AckOutcome.Done(1, 1, 2));
    assertThat(stored(a, "3", target(b, "3")).targets().get(0).seq()).isEqualTo(3);
  }

  // ---- ack ----

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
    assertThat(store.execute(new StoreCommand.Ack(b, store.epoch(), OptionalLong.of(-1))))
        .isEqualTo(new AckOutcome.BadAck(store.epoch(), 3));
    assertThat(store.execute(new StoreCommand.Ack(b, store.epoch(), OptionalLong.empty())))
        .isEqualTo(new AckOutcome.BadAck(store.epoch(), 3));
    assertThat(store.execute(new StoreCommand.Ack(b, "other", OptionalLong.of(3))))
        .isEqualTo(new AckOutcome.EpochChanged(store.epoch(), 3));
    // dedup outlives the ack: a late retry is a duplicate, never a re-delivery
    assertThat(stored(a, "id0", target(b, "w0")).fresh()).isFalse();
    assertThat(store.headSeq(b)).isEqualTo(3);
    assertThat(await(reads().hostState(b))).isEqualTo(new HostState(3, 2, null, null));
  }

  // ---- enrolment and deny list ----

  @Test
  void enrolment_keeps_revocation_and_account_rules() throws Exception {
    String e = Ed25519KeyPair.generate().publicKeyB64();
    String f = Ed25519KeyPair.generate().publicKeyB64();
    assertThat(store.execute(new StoreCommand.Enrol("Laptop", e, "", "acct-1", "jwt"))).isEqualTo(EnrolOutcome.OK);
    assertThat(store.execute(new StoreCommand.Enrol("laptop", f, "", "acct-1", "jwt")))
        .isEqualTo(EnrolOutcome.NAME_TAKEN);
    // the same name in another account, or without account, coexists
    assertThat(store.execute(new StoreCommand.Enrol("laptop", f, "", "acct-2", "jwt"))).isEqualTo(EnrolOutcome.OK);
    // a weaker re-enrolment without account keeps the stored account and its authority
    assertThat(store.execute(new StoreCommand.Enrol("laptop", e, "fp", null, null))).isEqualTo(EnrolOutcome.OK);
    Enrolment row = store.enrolment(e).orElseThrow();
    assertThat(row.account()).isEqualTo("acct-1");
    assertThat(row.authorizedBy()).isEqualTo("jwt");
    assertThat(row.ownerFp()).isEqualTo("fp");
    assertThat(row.live()).isTrue();
  }

  @Test
  void the_live_enrolment_cap_refuses_new_keys_but_not_re_enrolment() throws Exception {
    withLimits(Map.of("MBX_RELAY_LIMITS_MAX_ENROLMENTS", "4"));
    String e = Ed25519KeyPair.generate().publicKeyB64();
    assertThat(store.execute(new StoreCommand.Enrol("e", e, "", null, null))).isEqualTo(EnrolOutcome.FULL);
    assertThat(store.execute(new StoreCommand.Enrol("a2", a, "", null, null))).isEqualTo(EnrolOutcome.OK);
  }

  @Test
  void deny_by_fingerprint_revokes_for_good_and_undeny_lets_only_new_keys_in() throws Exception {
    stored(a, "1", target(b, "1"));
    String fp = Fingerprint.ofB64(b);
    assertThat(store.execute(new StoreCommand.Deny(DenyKey.HOST_FP, fp, "stolen laptop")))
        .isEqualTo(new DenyOutcome(true, 1));
    assertThat(store.execute(new StoreCommand.Deny(DenyKey.HOST_FP, fp, "again"))).isEqualTo(new DenyOutcome(false, 0));
    assertThat(store.enrolment(b).orElseThrow().live()).isFalse();
    assertThat(push(a, "2", target(b, "2"))).isEqualTo(rejected("target not enrolled"));
    assertThat(store.execute(new StoreCommand.Enrol("beta", b, "", null, null))).isEqualTo(EnrolOutcome.REVOKED);
    assertThat(store.execute(new StoreCommand.Undeny(DenyKey.HOST_FP, fp))).isTrue();
    assertThat(store.execute(new StoreCommand.Undeny(DenyKey.HOST_FP, fp))).isFalse();
    assertThat(store.execute(new StoreCommand.Enrol("beta", b, "", null, null))).isEqualTo(EnrolOutcome.REVOKED);
    String e = Ed25519KeyPair.generate().publicKeyB64();
    assertThat(store.execute(new StoreCommand.Deny(DenyKey.HOST_FP, Fingerprint.ofB64(e), "")))
        .isEqualTo(new DenyOutcome(true, 0));
    assertThat(store.execute(new StoreCommand.Enrol("e", e, "", null, null))).isEqualTo(EnrolOutcome.DENIED);
    assertThat(await(reads().denyList())).extracting(DenyEntry::kind, DenyEntry::value, DenyEntry::note)
        .containsExactly(org.assertj.core.groups.Tuple.tuple(DenyKey.HOST_FP, Fingerprint.ofB64(e), ""));
  }

  @Test
  void deny_by_client_id_revokes_every_host_of_that_token_client_and_refuses_its_next_grants() throws Exception {
    String e = Ed25519KeyPair.generate().publicKeyB64();
    String f = Ed25519KeyPair.generate().publicKeyB64();
    assertThat(store.execute(new StoreCommand.Enrol("e", e, "", "acct-9", "jwt", "client-1", "org")))
        .isEqualTo(EnrolOutcome.OK);
    assertThat(store.execute(new StoreCommand.Enrol("f", f, "", "acct-9", "jwt", "client-1", "org")))
        .isEqualTo(EnrolOutcome.OK);
    assertThat(store.execute(new StoreCommand.Deny(DenyKey.CLIENT_ID, "client-1", "")))
        .isEqualTo(new DenyOutcome(true, 2));
    assertThat(store.enrolment(e).orElseThrow().live()).isFalse();
    String g = Ed25519KeyPair.generate().publicKeyB64();
    assertThat(store.execute(new StoreCommand.Enrol("g", g, "", "acct-9", "jwt", "client-1", "org")))
        .isEqualTo(EnrolOutcome.DENIED);
    assertThat(store.execute(new StoreCommand.Enrol("g", g, "", "acct-9", "jwt", "client-2", "org")))
        .isEqualTo(EnrolOutcome.OK);
  }

  // ---- enc-key ads ----

  private static String ad(String host, String iat, String encPub) {
    return "{\"enc_pub\":\"" + encPub + "\",\"host_pubkey\":\"" + host + "\",\"iat\":\"" + iat + "\",\"v\":2}";
  }

  @Test
  void enc_key_ads_v1_replace_and_v2_only_move_forward_in_time() throws Exception {
    assertThat(store.execute(new StoreCommand.PublishEncAdV1(b, "beta", "enc-1", "sig-1"))).isTrue();
    assertThat(store.execute(new StoreCommand.PublishEncAdV1(b, "beta", "enc-2", "sig-2"))).isTrue();
    String r1 = ad(b, "2026-01-02T00:00:00.000Z", "k1");
    assertThat(store.execute(new StoreCommand.PublishEncAdV2(b, r1, "s1"))).isTrue();
    assertThat(store.execute(new StoreCommand.PublishEncAdV2(b, r1, "s1"))).isTrue(); // the same ad again
    assertThat(store.execute(new StoreCommand.PublishEncAdV2(b, ad(b, "2026-01-02T00:00:00.000Z", "k2"), "s2")))
        .isFalse();
    assertThat(store.execute(new StoreCommand.PublishEncAdV2(b, ad(b, "2026-01-01T00:00:00.000Z", "k3"), "s3")))
        .isFalse();
    String r4 = ad(b, "2026-01-03T00:00:00.000Z", "k4");
    assertThat(store.execute(new StoreCommand.PublishEncAdV2(b, r4, "s4"))).isTrue();
    assertThat(await(reads().encAds(b))).contains(new EncAds("beta", b, "enc-2", "sig-2", r4, "s4"));
    assertThat(await(reads().hostState(b))).isEqualTo(new HostState(0, 0, "enc-2", r4));
    assertThat(await(reads().encAds(Ed25519KeyPair.generate().publicKeyB64()))).isEmpty();
  }

  // ---- rotation ----

  @Test
  void rotation_moves_the_queue_in_seq_order_with_new_seqs_and_dedup_and_the_allowlist_follow() throws Exception {
    String b2 = Ed25519KeyPair.generate().publicKeyB64();
    stored(a, "1", target(b, "one"));
    stored(c, "2", target(b, "two"));
    assertThat(push(a, "3", target(b2, "three-early"))).isEqualTo(rejected("target not enrolled"));
    store.execute(new StoreCommand.PublishSenders(b, List.of(a, c), "2026-01-01T00:00:00.000Z",
        IsoTime.parse("2026-01-01T00:00:00.000Z").getAsLong(), "{}", "sig"));
    store.execute(new StoreCommand.PublishSenders(c, List.of(b), "2026-01-01T00:00:00.000Z",
        IsoTime.parse("2026-01-01T00:00:00.000Z").getAsLong(), "{}", "sig"));
    store.execute(new StoreCommand.PublishEncAdV1(b, "beta", "enc", "sig"));
    assertThat(store.execute(new StoreCommand.Rotate(b, b2, "not-beta"))).isEqualTo(new RotateOutcome.NamesAnotherHost());
    assertThat(store.execute(new StoreCommand.Rotate(b2, b, "beta"))).isEqualTo(new RotateOutcome.NotEnrolled());
    at(100);
    assertThat(store.execute(new StoreCommand.Rotate(b, b2, "beta"))).isEqualTo(new RotateOutcome.Moved(2));

    Enrolment old = store.enrolment(b).orElseThrow();
    Enrolment fresh = store.enrolment(b2).orElseThrow();
    assertThat(old.live()).isFalse();
    assertThat(fresh.live()).isTrue();
    assertThat(fresh.hostName()).isEqualTo("beta");
    assertThat(fresh.account()).isEqualTo("acct");
    assertThat(store.headSeq(b2)).isEqualTo(101);
    Page page = await(reads().pull(b2, 0, 10, 1 << 20));
    assertThat(page.items()).extracting(PulledItem::seq, PulledItem::itemId)
        .containsExactly(org.assertj.core.groups.Tuple.tuple(100L, "1"), org.assertj.core.groups.Tuple.tuple(101L, "2"));
    assertThat(await(reads().pull(b, 0, 10, 1 << 20)).items()).isEmpty();
    // dedup followed: a retry to the new key is a duplicate with the new seq; the old key is gone
    PushOutcome.Stored retry = stored(a, "1", target(b2, "one"));
    assertThat(retry.fresh()).isFalse();
    assertThat(retry.targets().get(0).seq()).isEqualTo(100);
    assertThat(push(a, "9", target(b, "x"))).isEqualTo(rejected("target not enrolled"));
    // the allowlist moved, and other lists name the new key
    assertThat(push(d, "d", target(b2, "x"))).isEqualTo(rejected("sender not accepted by target"));
    stored(b2, "to-c", target(c, "x"));
    assertThat(await(reads().encAds(b2))).contains(new EncAds("beta", b2, null, null, null, null));
    // the old key cannot come back, nor be the target of another rotation
    assertThat(store.execute(new StoreCommand.Rotate(b2, b, "beta"))).isEqualTo(new RotateOutcome.NewKeyRevoked());
    assertThat(store.execute(new StoreCommand.Enrol("beta", b, "", null, null))).isEqualTo(EnrolOutcome.REVOKED);
    String denied = Ed25519KeyPair.generate().publicKeyB64();
    store.execute(new StoreCommand.Deny(DenyKey.HOST_FP, Fingerprint.ofB64(denied), ""));
    assertThat(store.execute(new StoreCommand.Rotate(b2, denied, "beta"))).isEqualTo(new RotateOutcome.NewKeyRevoked());
  }

  @Test
  void rotation_keeps_one_copy_of_an_item_already_pushed_to_the_new_key_and_quotas_count_it_once() throws Exception {
    withLimits(Map.of("MBX_RELAY_LIMITS_MAX_SENDER_TOTAL_ITEMS", "3"));
    String b2 = Ed25519KeyPair.generate().publicKeyB64();
    assertThat(store.execute(new StoreCommand.Enrol("beta2", b2, "", null, null))).isEqualTo(EnrolOutcome.OK);
    stored(a, "same", target(b, "w"), target(b2, "w"));
    stored(a, "only-old", target(b, "o"));
    assertThat(store.execute(new StoreCommand.Rotate(b, b2, "beta"))).isEqualTo(new RotateOutcome.Moved(1));
    assertThat(await(reads().pull(b2, 0, 10, 1 << 20)).items()).hasSize(2);
    // a holds 2 items now: one more fits its total of 3, a second does not
    stored(a, "x", target(c, "x"));
    assertThat(push(a, "y", target(c, "y"))).isEqualTo(rejected("quota:sender total exceeded"));
  }

  // ---- retention ----

  @Test
  void the_sweep_deletes_expired_items_and_tells_each_live_sender_once_with_a_signed_notice() throws Exception {
    RelayConfig.Limits l = limits(Map.of());
    stored(a, "env-1", target(b, "e1"));
    store.execute(new StoreCommand.Push(a, "alpha", "receipt", "rcpt-1", List.of(target(b, "r1"))));
    stored(c, "env-2", target(b, "e2"));
    store.execute(new StoreCommand.Deny(DenyKey.HOST_FP, Fingerprint.ofB64(c), "")); // c will not be told
    long now = l.retentionMs() + 1;
    at(now);
    SweepCounts counts = store.execute(new StoreCommand.SweepBatch(now, 500, relayPair::signB64));
    assertThat(counts).isEqualTo(new SweepCounts(3, 2, 1, 0, 1, 1, 0, 6));
    assertThat(await(reads().pull(b, 0, 10, 1 << 20)).items()).isEmpty();
    Page told = await(reads().pull(a, 0, 10, 1 << 20));
    assertThat(told.items()).hasSize(1);
    PulledItem n = told.items().get(0);
    assertThat(n.kind()).isEqualTo("expired");
    assertThat(n.itemId()).isEqualTo("expired:env-1:" + b);
    assertThat(n.senderPubkey()).isEqualTo(relayKey);
    assertThat(n.senderHost()).isEqualTo("relay");
    assertThat(n.seq()).isEqualTo(now);
    JsonNode wire = Json.parse(new String(n.wire(), StandardCharsets.UTF_8));
    JsonNode notice = wire.get("notice");
    assertThat(notice.get("type").textValue()).isEqualTo("relay-expired");
    assertThat(notice.get("item_id").textValue()).isEqualTo("env-1");
    assertThat(notice.get("target_pubkey").textValue()).isEqualTo(b);
    assertThat(notice.get("accepted_at").textValue()).isEqualTo(IsoTime.format(0));
    assertThat(notice.get("expired_at").textValue()).isEqualTo(IsoTime.format(now));
    assertThat(Ed25519.verify(relayKey, CanonicalJson.canonicalBytes(notice), wire.get("sig").textValue())).isTrue();
    assertThat(n.wire()).isEqualTo(CanonicalJson.canonicalBytes(wire));
    // nothing left to sweep; the dedup rows outlive the items, until pruned
    assertThat(store.execute(new StoreCommand.SweepBatch(now, 500, relayPair::signB64))).isEqualTo(SweepCounts.NONE);
    assertThat(stored(a, "env-1", target(b, "e1")).fresh()).isFalse();
    assertThat(store.execute(new StoreCommand.PruneDedup(IsoTime.format(now), 100))).isEqualTo(3);
    assertThat(stored(a, "env-1", target(b, "e1")).fresh()).isTrue();
  }

  @Test
  void the_sweep_goes_in_bounded_batches_and_skips_a_notice_when_the_sender_s_queue_is_full() throws Exception {
    withLimits(Map.of("MBX_RELAY_LIMITS_MAX_QUEUE_ITEMS", "2", "MBX_RELAY_LIMITS_MAX_SENDER_ITEMS", "2"));
    long retention = limits(Map.of()).retentionMs();
    stored(a, "e1", target(b, "1"));
    stored(a, "e2", target(b, "2"));
    at(retention / 2); // these two do not expire yet and fill a's queue
    stored(b, "fill-1", target(a, "f"));
    stored(c, "fill-2", target(a, "f"));
    long now = retention + 1;
    at(now);
    SweepCounts skipped = new SweepCounts(1, 1, 0, 0, 0, 0, 1, 1);
    assertThat(store.execute(new StoreCommand.SweepBatch(now, 1, relayPair::signB64))).isEqualTo(skipped);
    assertThat(store.execute(new StoreCommand.SweepBatch(now, 1, relayPair::signB64))).isEqualTo(skipped);
    assertThat(store.execute(new StoreCommand.SweepBatch(now, 1, relayPair::signB64))).isEqualTo(SweepCounts.NONE);
    assertThat(store.headSeq(a)).isEqualTo(retention / 2 + 1);
  }

  // ---- damaged items, ops, heartbeat ----

  @Test
  void setting_aside_an_item_whose_wire_still_matches_its_hash_moves_nothing() throws Exception {
    stored(a, "1", target(b, "1"));
    assertThat(store.execute(new StoreCommand.SetAsideDamaged(b, List.of(1L, 99L)))).isZero();
    assertThat(await(reads().pull(b, 0, 10, 1 << 20)).items()).hasSize(1);
  }

  @Test
  void heartbeat_answers_the_clock_and_log_op_is_stored() throws Exception {
    at(1234);
    assertThat(store.execute(new StoreCommand.Heartbeat())).isEqualTo(1234L);
    assertThat(store.execute(new StoreCommand.LogOp("sweep", "{\"v\":1}"))).isTrue();
  }

  @Test
  void the_writer_probe_takes_the_write_lock_and_commits_nothing() throws Exception {
    stored(a, "1", target(b, "1"));
    assertThat(store.probeWriter()).isTrue();
    assertThat(store.headSeq(b)).isEqualTo(1);
    assertThat(await(reads().headSeq(b))).isEqualTo(1);
  }

  // ---- v1 ----

  private StoreCommand.PushV1 v1(String sender, String id, String text, List<StoreCommand.V1Target> to,
      String precheck) {
    byte[] w = text.getBytes(StandardCharsets.UTF_8);
    return new StoreCommand.PushV1(sender, "alpha", id, w, Hashes.sha256Hex(w), to, precheck);
  }

  @Test
  void v1_push_is_all_or_nothing_with_its_own_texts_and_v1_ack_clamps() throws Exception {
    StoreCommand.V1Target beta = new StoreCommand.V1Target(b, "beta");
    StoreCommand.V1Target gamma = new StoreCommand.V1Target(c, "gamma");
    StoreCommand.V1Target ghost = new StoreCommand.V1Target(Ed25519KeyPair.generate().publicKeyB64(), "ghost");
    assertThat(store.execute(v1(a, "e1", "w", List.of(beta, gamma), null))).isEmpty();
    assertThat(store.execute(v1(a, "e1", "other bytes", List.of(beta, gamma), null))).isEmpty(); // counted as stored
    assertThat(store.headSeq(b)).isEqualTo(1);
    assertThat(store.execute(v1(a, "e2", "w", List.of(beta, ghost), null)))
        .contains("recipient host not enrolled: ghost");
    assertThat(store.execute(v1(a, "e2", "w", List.of(beta), "no such host: zed"))).contains("no such host: zed");
    store.execute(new StoreCommand.PublishSenders(c, List.of(d), "2026-01-01T00:00:00.000Z",
        IsoTime.parse("2026-01-01T00:00:00.000Z").getAsLong(), "{}", "sig"));
    assertThat(store.execute(v1(a, "e3", "w", List.of(beta, gamma), null))).contains("sender not accepted by gamma");
    assertThat(store.headSeq(b)).isEqualTo(1);
    assertThat(await(reads().pull(b, 0, 10, 1 << 20)).items().get(0).senderHost()).isEqualTo("alpha");

    assertThat(store.execute(new StoreCommand.AckV1(b, OptionalLong.of(99)))).isEqualTo(1L);
    assertThat(store.execute(new StoreCommand.AckV1(b, OptionalLong.empty()))).isEqualTo(0L);
    assertThat(await(reads().pull(b, 0, 10, 1 << 20)).items()).isEmpty();
  }

  @Test
  void v1_quota_texts_have_no_prefix_and_roll_back_earlier_targets() throws Exception {
    withLimits(Map.of("MBX_RELAY_LIMITS_MAX_QUEUE_ITEMS", "1", "MBX_RELAY_LIMITS_MAX_SENDER_ITEMS", "1"));
    stored(c, "fill", target(d, "f"));
    StoreCommand.V1Target beta = new StoreCommand.V1Target(b, "beta");
    StoreCommand.V1Target delta = new StoreCommand.V1Target(d, "delta");
    assertThat(store.execute(v1(a, "e1", "w", List.of(beta, delta), null)))
        .contains("queue depth exceeded for delta");
    assertThat(store.headSeq(b)).isZero();
    assertThat(stored(a, "after", target(b, "x")).targets().get(0).seq()).isEqualTo(1);
  }

  // ---- group commit ----

  @Test
  void a_batch_commits_once_and_a_rejected_command_rolls_back_only_itself() throws Exception {
    List<RelayStore.CommandResult> results = store.execute(List.of(
        new StoreCommand.Push(a, "s", "envelope", "ok1", List.of(target(b, "1"))),
        new StoreCommand.Push(a, "s", "envelope", "bad", List.of(target(b, "2"),
            target(Ed25519KeyPair.generate().publicKeyB64(), "3"))),
        new StoreCommand.PushBatch(List.of(
            new StoreCommand.Push(a, "s", "envelope", "ok2", List.of(target(b, "4"))),
            new StoreCommand.Push(a, "s", "envelope", "ok1", List.of(target(b, "changed"))))),
        new StoreCommand.Heartbeat()));
    assertThat(results).hasSize(4);
    assertThat(((PushOutcome.Stored) results.get(0).value()).targets().get(0).seq()).isEqualTo(1);
    assertThat(results.get(1).value()).isEqualTo(rejected("target not enrolled"));
    @SuppressWarnings("unchecked")
    List<PushOutcome> batch = (List<PushOutcome>) results.get(2).value();
    assertThat(((PushOutcome.Stored) batch.get(0)).targets().get(0).seq()).isEqualTo(2);
    assertThat(batch.get(1)).isEqualTo(rejected("conflict"));
    assertThat(store.headSeq(b)).isEqualTo(2);
  }

  @Test
  void a_command_that_fails_unexpectedly_inside_an_item_rolls_back_all_of_itself_and_only_itself() throws Exception {
    try (io.mbxrelay.testing.ExpectedLog log = io.mbxrelay.testing.ExpectedLog.of(io.mbxrelay.store.RelayLedger.class,
        ch.qos.logback.classic.Level.ERROR, "store command failed [command: PushBatch]")) {
      StoreCommand.Target broken = new StoreCommand.Target(d, null, null, null); // no wire and no finding: a bug
      List<RelayStore.CommandResult> results = store.execute(List.of(
          new StoreCommand.PushBatch(List.of(
              new StoreCommand.Push(a, "s", "envelope", "first", List.of(target(b, "1"))),
              new StoreCommand.Push(a, "s", "envelope", "second", List.of(target(c, "2"), broken)))),
          new StoreCommand.Push(a, "s", "envelope", "after", List.of(target(c, "3")))));
      assertThat(results.get(0).error()).isNotNull();
      assertThat(results.get(0).error().kind()).isEqualTo(StoreException.Kind.INTERNAL);
      assertThat(store.headSeq(b)).isZero();
      assertThat(((PushOutcome.Stored) results.get(1).value()).targets().get(0).seq()).isEqualTo(1);
      assertThat(await(reads().pull(c, 0, 10, 1 << 20)).items()).extracting(PulledItem::itemId).containsExactly("after");
      assertThat(stored(a, "first", target(b, "1")).fresh()).isTrue();
      log.assertSeen("store command failed [command: PushBatch]");
    }
  }

  // ---- reads ----

  @Test
  void reads_see_enrolments_by_key_and_by_name_case_insensitively_newest_first() throws Exception {
    assertThat(await(reads().enrolment(b))).map(Enrolment::hostName).contains("beta");
    assertThat(await(reads().enrolment(Ed25519KeyPair.generate().publicKeyB64()))).isEmpty();
    at(5000);
    String b2 = Ed25519KeyPair.generate().publicKeyB64();
    store.execute(new StoreCommand.Enrol("BETA", b2, "", null, null));
    assertThat(await(reads().liveByName("Beta", 5))).extracting(Enrolment::hostPubkey).containsExactly(b2, b);
    assertThat(await(reads().liveByName("Beta", 1))).extracting(Enrolment::hostPubkey).containsExactly(b2);
    store.execute(new StoreCommand.Deny(DenyKey.HOST_FP, Fingerprint.ofB64(b2), ""));
    assertThat(await(reads().liveByName("beta", 5))).extracting(Enrolment::hostPubkey).containsExactly(b);
    assertThat(await(reads().enrolment(b2)).orElseThrow().live()).isFalse();
  }

  @Test
  void a_pull_page_is_in_seq_order_within_its_limit_and_byte_budget_and_says_whether_more_exist() throws Exception {
    for (int i = 1; i <= 3; i++) {
      stored(a, "i" + i, target(b, text(100 * i, 'w')));
    }
    Page p = await(reads().pull(b, 0, 2, 1 << 20));
    assertThat(p.items()).extracting(PulledItem::seq).containsExactly(1L, 2L);
    assertThat(p.more()).isTrue();
    assertThat(p.headSeq()).isEqualTo(3);
    assertThat(p.throughSeq()).isEqualTo(2);
    assertThat(p.items().get(0).wire()).isEqualTo(text(100, 'w').getBytes(StandardCharsets.UTF_8));
    assertThat(p.items().get(0).senderPubkey()).isEqualTo(a);
    assertThat(p.items().get(0).kind()).isEqualTo("envelope");
    Page rest = await(reads().pull(b, 2, 10, 1 << 20));
    assertThat(rest.items()).extracting(PulledItem::seq).containsExactly(3L);
    assertThat(rest.more()).isFalse();
    // a byte budget smaller than one item still hands out that one item alone
    Page tight = await(reads().pull(b, 0, 10, 50));
    assertThat(tight.items()).extracting(PulledItem::seq).containsExactly(1L);
    assertThat(tight.more()).isTrue();
    Page two = await(reads().pull(b, 0, 10, 300));
    assertThat(two.items()).extracting(PulledItem::seq).containsExactly(1L, 2L);
    Page none = await(reads().pull(c, 0, 10, 1 << 20));
    assertThat(none.items()).isEmpty();
    assertThat(none.throughSeq()).isEqualTo(-1);
    assertThat(await(reads().headSeq(b))).isEqualTo(3);
    assertThat(await(reads().headSeq(c))).isZero();
  }

  @Test
  void a_page_is_held_in_the_page_budget_and_refused_when_the_client_s_share_is_used_up() throws Exception {
    stored(a, "1", target(b, text(300, 'w')));
    PageBudget budget = new PageBudget(1000, 400);
    Page p = await(reads().pull(b, 0, 10, 1 << 20, budget, "client-1"));
    assertThat(p.items()).hasSize(1);
    assertThat(budget.held()).isEqualTo(300);
    budget.hold("client-1", 100);
    assertThatThrownBy(() -> await(reads().pull(b, 0, 10, 1 << 20, budget, "client-1")))
        .isInstanceOf(PageBudget.Exhausted.class);
    // an empty page holds nothing and is never refused
    assertThat(await(reads().pull(c, 0, 10, 1 << 20, budget, "client-1")).items()).isEmpty();
    budget.release("client-1", 400);
    assertThat(budget.held()).isZero();
  }

  @Test
  void queue_stats_count_every_queue_and_the_largest_one_and_the_read_probe_answers() throws Exception {
    stored(a, "1", target(b, "12345"), target(c, "123"));
    stored(a, "2", target(b, "1"));
    assertThat(await(reads().queueStats())).isEqualTo(new QueueStats(3, 9, 2, 6));
    await(reads().probe());
    store.execute(new StoreCommand.Ack(b, store.epoch(), OptionalLong.of(2)));
    assertThat(await(reads().queueStats())).isEqualTo(new QueueStats(1, 3, 1, 3));
  }

  @Test
  void the_deny_list_reads_in_the_order_entries_were_added() throws Exception {
    at(1000);
    store.execute(new StoreCommand.Deny(DenyKey.CLIENT_ID, "zz", "first"));
    at(2000);
    store.execute(new StoreCommand.Deny(DenyKey.CLIENT_ID, "aa", "second"));
    assertThat(await(reads().denyList())).extracting(DenyEntry::value, DenyEntry::note, DenyEntry::addedAt)
        .containsExactly(org.assertj.core.groups.Tuple.tuple("zz", "first", IsoTime.format(1000)),
            org.assertj.core.groups.Tuple.tuple("aa", "second", IsoTime.format(2000)));
  }

  // ---- the typed reasons ----

  @Test
  void every_reject_reason_round_trips_through_its_wire_text() {
    Map<RejectReason, String> texts = new HashMap<>();
    for (RejectReason r : RejectReason.values()) {
      String detail = r == RejectReason.QUOTA ? "queue depth exceeded for x"
          : r == RejectReason.BAD_ENVELOPE ? ": no body" : null;
      texts.put(r, r.wireText(detail));
      assertThat(RejectReason.parse(r.wireText(detail))).isEqualTo(new RejectReason.Rejection(r, detail));
    }
    assertThat(new ArrayList<>(texts.values())).doesNotHaveDuplicates();
    assertThatThrownBy(() -> RejectReason.parse("no such reason")).isInstanceOf(IllegalArgumentException.class);
    assertThat(Optional.of(RejectReason.NOT_ENROLLED.metricLabel())).contains("not_enrolled");
  }
}
