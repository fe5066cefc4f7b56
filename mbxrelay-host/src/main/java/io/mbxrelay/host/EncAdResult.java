package io.mbxrelay.host;

/**
 * Outcome of publishing this host's enc-key ad (docs/protocol.md §4.2, §6 step 5): {@link Published}, {@link Refused} (the
 * relay's status and error text, e.g. 404 from a relay without v2 ads, or 400 {@code enc-key ad refused: <reason>}) or
 * {@link BadAnswer}. Immutable.
 */
public sealed interface EncAdResult permits EncAdResult.Published, Refused, BadAnswer {

  /**
   * The relay stored the ad.
   *
   * @param version 1 or 2
   */
  record Published(int version) implements EncAdResult {}
}
