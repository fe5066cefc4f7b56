package io.mbxrelay.auth;

/**
 * The default authority for self-hosted relays (docs/protocol.md §4.1 {@code host-key-challenge}): possession of the host
 * key, proven by the challenge signature the relay already checked, is enough. Grants no account.
 */
public final class HostKeyChallengeAuthority implements EnrolmentAuthority {
  /** Authority name. */
  public static final String NAME = "host-key-challenge";

  @Override
  public String name() {
    return NAME;
  }

  @Override
  public Decision authorize(Request request) {
    return Decision.granted();
  }
}
