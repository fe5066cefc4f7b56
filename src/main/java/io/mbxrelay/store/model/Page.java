package io.mbxrelay.store.model;

import java.util.List;

/**
 * A pull page (docs/protocol.md §3).
 *
 * @param headSeq last allocated seq for the target
 * @param items items in seq order, without the damaged ones
 * @param more true when rows beyond the page exist
 * @param throughSeq the last seq the page covers (its answer's {@code last_seq}), the seq of its last row even when
 *     that row was withheld; -1 when the page covers nothing
 * @param damaged seqs of rows whose wire no longer matches their stored {@code wire_hash}: never served; the caller
 *     sets them aside ({@link StoreCommand.SetAsideDamaged})
 */
public record Page(long headSeq, List<PulledItem> items, boolean more, long throughSeq, List<Long> damaged) {

  /** A page with nothing withheld: {@code throughSeq} is its last item's seq (or none). */
  public Page(long headSeq, List<PulledItem> items, boolean more) {
    this(headSeq, items, more, items.isEmpty() ? -1 : items.get(items.size() - 1).seq(), List.of());
  }

  /** The items' wire bytes (what the page holds in memory), bytes. */
  public long wireBytes() {
    long n = 0;
    for (PulledItem it : items) {
      n += it.wire().length;
    }
    return n;
  }
}
