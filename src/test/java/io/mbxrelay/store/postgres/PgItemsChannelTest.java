package io.mbxrelay.store.postgres;

import static org.assertj.core.api.Assertions.assertThat;

import io.mbxrelay.crypto.Ed25519KeyPair;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

class PgItemsChannelTest {
  private static List<String> keys(int n) {
    List<String> out = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      out.add(Ed25519KeyPair.generate().publicKeyB64());
    }
    return out;
  }

  @Test
  void the_targets_of_another_instance_come_back_and_its_own_are_skipped() {
    List<String> targets = keys(3);
    List<String> payloads = PgItemsChannel.payloads("abc12345", targets);
    assertThat(payloads).hasSize(1);
    assertThat(PgItemsChannel.targets(payloads.get(0), "ffff0000")).containsExactlyInAnyOrderElementsOf(targets);
    assertThat(PgItemsChannel.targets(payloads.get(0), "abc12345")).isEmpty();
    // an id that only starts like ours is another instance's
    assertThat(PgItemsChannel.targets(payloads.get(0), "abc1234")).hasSize(3);
  }

  @Test
  void many_targets_are_split_into_payloads_postgresql_accepts_and_none_is_lost() {
    List<String> targets = keys(1_000); // 45 kB of keys
    List<String> payloads = PgItemsChannel.payloads("abc12345", targets);
    assertThat(payloads.size()).isGreaterThan(5);
    Set<String> back = new HashSet<>();
    for (String p : payloads) {
      assertThat(p.getBytes(StandardCharsets.UTF_8).length).isLessThanOrEqualTo(PgItemsChannel.MAX_PAYLOAD);
      back.addAll(PgItemsChannel.targets(p, "other"));
    }
    assertThat(back).containsExactlyInAnyOrderElementsOf(targets);
  }

  @Test
  void no_targets_send_nothing_and_a_malformed_payload_wakes_nobody() {
    assertThat(PgItemsChannel.payloads("abc12345", List.of())).isEmpty();
    assertThat(PgItemsChannel.targets("", "x")).isEmpty();
    assertThat(PgItemsChannel.targets(null, "x")).isEmpty();
    assertThat(PgItemsChannel.targets("nospace", "x")).isEmpty();
    assertThat(PgItemsChannel.targets("abc ", "x")).isEmpty();
  }
}
