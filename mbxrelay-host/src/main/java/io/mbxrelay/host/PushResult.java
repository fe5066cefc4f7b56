package io.mbxrelay.host;

import java.util.List;

/**
 * Outcome of one {@link RelayClient#push(List)} request (docs/protocol.md §3 push v2): {@link Pushed} with one
 * {@link ItemOutcome} per item in request order; {@link Refused} for the whole request (400 {@code BAD_BATCH}, 401
 * {@code bad relay hop}, 413, 500 …; nothing was stored); {@link RelayKeyChanged} when the relay key had to be learned
 * first and did not match the pin (nothing was sent); {@link BadAnswer} (a 200 without one result per item — the
 * outcome of each item is unknown, retry with the same bytes).
 */
public sealed interface PushResult permits PushResult.Pushed, Refused, RelayKeyChanged, BadAnswer {

  /**
   * The relay answered 200 with one result per item.
   *
   * @param items one outcome per pushed item, same order
   */
  record Pushed(List<ItemOutcome> items) implements PushResult {
    /** Copies the list. */
    public Pushed {
      items = List.copyOf(items);
    }
  }
}
