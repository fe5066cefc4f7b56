package io.mbxrelay.bench;

import static org.assertj.core.api.Assertions.assertThat;

import io.mbxrelay.host.seal.Ulid;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class BenchItemsTest {

  @Test
  void timeOrderedIdsAreUlidsThatSortInTheOrderOfTheirTimestamps() {
    long base = 1_796_000_000_000L;
    List<String> ids = new ArrayList<>();
    for (int i = 0; i < 1000; i++) {
      ids.add(BenchItems.ulidAt(base + i));
    }
    for (String id : ids) {
      assertThat(Ulid.PATTERN.matcher(id).matches()).as(id).isTrue();
    }
    assertThat(ids).isSortedAccordingTo(String::compareTo);
    // the first ten characters are the timestamp, as the host library's ULIDs
    assertThat(ids.get(0).substring(0, 10)).isEqualTo(Ulid.next(base).substring(0, 10));
  }

  @Test
  void randomIdsHaveNoTimeOrder() {
    List<String> ids = new ArrayList<>();
    for (int i = 0; i < 1000; i++) {
      ids.add(BenchItems.newId());
    }
    assertThat(ids).allMatch(id -> Ulid.PATTERN.matcher(id).matches());
    assertThat(ids).isNotEqualTo(ids.stream().sorted().toList());
  }
}
