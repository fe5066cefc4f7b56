package io.mbxrelay.store.guard;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * The free-space floor (issue 10 item 9) with an injected file system and clock: pushes are refused under
 * {@code store.minFreeBytes}, the file system is asked at most once a second (never per item), committed bytes lower
 * the estimate in between, and an {@code SQLITE_FULL} counts as full until space returns or a write commits.
 */
class DiskSpaceTest {
  private static final long MIB = 1L << 20;
  private final AtomicLong free = new AtomicLong(100 * MIB);
  private final AtomicLong nanos = new AtomicLong(1);
  private final AtomicInteger reads = new AtomicInteger();
  private final DiskSpace disk = new DiskSpace(() -> {
    reads.incrementAndGet();
    return free.get();
  }, nanos::get, 64 * MIB);

  private void advanceMs(long ms) {
    nanos.addAndGet(ms * 1_000_000L);
  }

  @Test
  void pushes_are_refused_under_the_floor_and_the_file_system_is_read_at_most_once_a_second() {
    for (int i = 0; i < 10_000; i++) {
      assertThat(disk.refusesPushes()).isFalse();
      disk.full();
    }
    assertThat(reads.get()).isEqualTo(1);
    free.set(10 * MIB);
    advanceMs(999);
    assertThat(disk.refusesPushes()).isFalse(); // the reading is still fresh
    advanceMs(1);
    assertThat(disk.refusesPushes()).isTrue();
    assertThat(disk.full()).isTrue();
    assertThat(disk.freeBytes()).isEqualTo(10 * MIB);
    assertThat(reads.get()).isEqualTo(2);
    // under the floor the reading is refreshed sooner (every 100 ms), so space that returns is seen quickly
    free.set(90 * MIB);
    advanceMs(100);
    assertThat(disk.refusesPushes()).isFalse();
    assertThat(disk.full()).isFalse();
  }

  @Test
  void growth_of_the_store_files_lowers_the_estimate_when_it_is_more_than_twice_the_wire_bytes() {
    AtomicLong storeBytes = new AtomicLong(50 * MIB);
    DiskSpace d = new DiskSpace(free::get, storeBytes::get, nanos::get, 64 * MIB);
    assertThat(d.refusesPushes()).isFalse(); // 100 MiB free, the store takes 50 MiB
    // small transactions write whole pages: 1 MiB of wire grew the WAL by 20 MiB
    storeBytes.addAndGet(20 * MIB);
    d.committed(MIB);
    assertThat(d.refusesPushes()).isFalse(); // 100 - 20 = 80 MiB estimated
    storeBytes.addAndGet(17 * MIB);
    d.committed(MIB);
    assertThat(d.refusesPushes()).as("100 - 37 MiB is under the 64 MiB floor").isTrue();
    // the twice-the-wire estimate alone (4 MiB) would have let these pushes in
    DiskSpace wireOnly = new DiskSpace(free::get, nanos::get, 64 * MIB);
    wireOnly.refusesPushes();
    wireOnly.committed(MIB);
    wireOnly.committed(MIB);
    assertThat(wireOnly.refusesPushes()).isFalse();
    // a WAL reused after a checkpoint does not grow: the wire estimate still counts
    advanceMs(1000);
    free.set(100 * MIB);
    assertThat(d.refusesPushes()).isFalse(); // a fresh reading
    d.committed(19 * MIB);
    assertThat(d.refusesPushes()).isTrue(); // 100 - 2 × 19 = 62 MiB
  }

  @Test
  void committed_bytes_lower_the_estimate_between_two_readings() {
    assertThat(disk.refusesPushes()).isFalse(); // 100 MiB free
    disk.committed(10 * MIB); // WAL and checkpoint: counted twice → 80 MiB
    assertThat(disk.refusesPushes()).isFalse();
    disk.committed(9 * MIB); // → 62 MiB estimated
    int before = reads.get();
    assertThat(disk.refusesPushes()).isTrue(); // no new reading yet (taken under 100 ms ago)
    assertThat(reads.get()).isEqualTo(before);
    advanceMs(100);
    assertThat(disk.refusesPushes()).isFalse(); // the real reading: the space was there after all
    assertThat(reads.get()).isEqualTo(before + 1);
  }

  @Test
  void sqlite_full_counts_as_full_until_space_returns_or_a_write_commits() {
    DiskSpace noFloor = new DiskSpace(free::get, nanos::get, 0);
    free.set(0);
    assertThat(noFloor.refusesPushes()).isFalse(); // no floor: nothing is refused up front
    noFloor.failedFull();
    assertThat(noFloor.full()).isTrue();
    free.set(512 * 1024);
    advanceMs(1000);
    assertThat(noFloor.full()).isTrue(); // half a MiB is not "space returned"
    free.set(3 * MIB);
    advanceMs(1000);
    assertThat(noFloor.full()).isFalse();
    noFloor.failedFull();
    assertThat(noFloor.full()).isTrue();
    noFloor.committed(100);
    assertThat(noFloor.full()).isFalse(); // a write committed: there was room
  }

  @Test
  void a_failing_reading_keeps_the_last_one() {
    AtomicInteger calls = new AtomicInteger();
    DiskSpace d = new DiskSpace(() -> {
      if (calls.incrementAndGet() > 1) {
        throw new IllegalStateException("statvfs failed");
      }
      return 10 * MIB;
    }, nanos::get, 64 * MIB);
    assertThat(d.refusesPushes()).isTrue();
    advanceMs(2000);
    assertThat(d.refusesPushes()).isTrue();
    assertThat(d.freeBytes()).isEqualTo(10 * MIB);
  }
}
