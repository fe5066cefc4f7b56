package io.mbxrelay.host;

/**
 * Outcome of {@link RelayClient#enrol(String)} (docs/protocol.md §4.1): {@link Enrolled}; {@link Refused} with the relay's
 * status, text and code (e.g. 403 {@code DENIED}, 409 {@code NAME_TAKEN}, 401 {@code bad enrolment signature}, 429);
 * {@link RelayKeyChanged} when the pin check before enrolling failed; {@link BadAnswer}.
 */
public sealed interface EnrolResult permits EnrolResult.Enrolled, Refused, RelayKeyChanged, BadAnswer {

  /**
   * The relay answered {@code {ok:true}}.
   *
   * @param host the enrolled host name
   * @param hostPubkey this host's base64 public key
   * @param relayPubkey the (pinned) relay key the enrolment was made with
   * @param epoch the relay epoch seen just before enrolling
   */
  record Enrolled(String host, String hostPubkey, String relayPubkey, String epoch) implements EnrolResult {}
}
