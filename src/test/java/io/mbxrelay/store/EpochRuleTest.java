package io.mbxrelay.store;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Optional;
import org.junit.jupiter.api.Test;

/** The epoch rule at open, as both backends apply it (docs/protocol.md §5 "epoch"). */
class EpochRuleTest {
  private static final long NOW = 1_800_000_000_000L;
  private static final long STALE = 3_600_000L;

  @Test
  void a_new_store_without_a_heartbeat_keeps_its_epoch() {
    assertThat(EpochRule.atOpen(false, Optional.empty(), NOW, STALE)).isEmpty();
  }

  @Test
  void a_fresh_heartbeat_keeps_the_epoch_up_to_the_stale_limit_in_either_direction() {
    assertThat(EpochRule.atOpen(false, Optional.of(Long.toString(NOW - STALE)), NOW, STALE)).isEmpty();
    assertThat(EpochRule.atOpen(false, Optional.of(Long.toString(NOW + STALE)), NOW, STALE)).isEmpty();
    assertThat(EpochRule.atOpen(false, Optional.of(Long.toString(NOW)), NOW, STALE)).isEmpty();
  }

  @Test
  void a_heartbeat_older_than_the_stale_limit_rotates_the_epoch_as_stale() {
    Optional<EpochRule.Rotation> r = EpochRule.atOpen(false, Optional.of(Long.toString(NOW - STALE - 1)), NOW, STALE);
    assertThat(r).contains(new EpochRule.Rotation(EpochRule.STALE_HEARTBEAT, false,
        io.mbxrelay.wire.IsoTime.format(NOW - STALE - 1)));
  }

  @Test
  void a_heartbeat_further_ahead_than_the_stale_limit_rotates_the_epoch_as_in_the_future() {
    Optional<EpochRule.Rotation> r = EpochRule.atOpen(false, Optional.of(Long.toString(NOW + STALE + 1)), NOW, STALE);
    assertThat(r.orElseThrow().reason()).isEqualTo(EpochRule.HEARTBEAT_IN_THE_FUTURE);
    assertThat(r.orElseThrow().byOperator()).isFalse();
  }

  @Test
  void a_heartbeat_that_is_not_a_number_rotates_the_epoch_as_stale_and_is_shown_as_stored() {
    assertThat(EpochRule.atOpen(false, Optional.of("yesterday"), NOW, STALE))
        .contains(new EpochRule.Rotation(EpochRule.STALE_HEARTBEAT, false, "yesterday"));
  }

  @Test
  void a_stale_limit_of_zero_never_rotates_on_the_heartbeat() {
    assertThat(EpochRule.atOpen(false, Optional.of("0"), NOW, 0)).isEmpty();
    assertThat(EpochRule.atOpen(false, Optional.of("yesterday"), NOW, 0)).isEmpty();
  }

  @Test
  void lost_commits_accepted_by_the_operator_rotate_the_epoch_whatever_the_heartbeat() {
    assertThat(EpochRule.atOpen(true, Optional.of(Long.toString(NOW)), NOW, STALE))
        .contains(new EpochRule.Rotation(EpochRule.LOST_COMMITS_ACCEPTED, true, io.mbxrelay.wire.IsoTime.format(NOW)));
    assertThat(EpochRule.atOpen(true, Optional.empty(), NOW, 0))
        .contains(new EpochRule.Rotation(EpochRule.LOST_COMMITS_ACCEPTED, true, ""));
    assertThat(EpochRule.atOpen(true, Optional.of("yesterday"), NOW, STALE).orElseThrow().heartbeat())
        .isEqualTo("yesterday");
  }
}
