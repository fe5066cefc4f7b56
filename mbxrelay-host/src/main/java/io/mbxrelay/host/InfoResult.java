package io.mbxrelay.host;

/**
 * Outcome of {@link RelayClient#info()} (docs/protocol.md §4.7, §6 session open): {@link Ok}, {@link RelayKeyChanged},
 * {@link Refused} (non-200, e.g. 404 from a v1-only relay) or {@link BadAnswer} (not a v2 info).
 */
public sealed interface InfoResult permits InfoResult.Ok, RelayKeyChanged, Refused, BadAnswer {

  /**
   * A valid v2 info whose relay key matches the pin.
   *
   * @param info the parsed info
   */
  record Ok(RelayInfo info) implements InfoResult {}
}
