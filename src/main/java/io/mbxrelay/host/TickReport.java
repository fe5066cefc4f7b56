package io.mbxrelay.host;

import java.util.List;

/**
 * What one {@link HostAgent#tick()} did (docs/protocol.md §6), over all of the agent's relays, with each relay's part
 * in {@link #relays()}. Immutable.
 *
 * @param session how the sessions went: {@code ok} when every relay's did, else the first relay's that did not:
 *     {@code no-pin} (no relay key pinned — run {@code relay set}; also: the agent uses no relay);
 *     {@code relay-key-changed} (relay unused until the owner confirms); {@code backoff} (an earlier failure's
 *     {@code next_at} is not reached); {@code unreachable} (I/O: connection error or deadline); {@code refused} (the
 *     relay answered an error status); {@code enrol-failed}
 * @param epochChanged whether an epoch change or rewind was handled this tick
 * @param accepted rows that got a valid accept receipt
 * @param notAccepted rows left pending (rejected, unverified, lost response), with backoff
 * @param delivered envelopes handed to the application (accepted by it)
 * @param duplicates envelopes already received before (the application was not called again)
 * @param receipts delivery receipts applied to sent rows
 * @param notices expiry notices applied
 * @param quarantined items put in quarantine
 * @param receivedThrough the first relay's receive position after the tick (-1 when no session)
 * @param ackedThrough the first relay's acked marker after the tick (-1 when no session)
 * @param notes human-readable lines (no key material); with several relays a line about one relay starts
 *     {@code relay <url>: }
 * @param relayPullWaitSeconds the longest pull wait the first reachable relay offering long-poll pulls offers (0 when
 *     none)
 * @param pulledAll whether the pulls of every relay reached this tick ended on a page without {@code more} (false
 *     when none was reached); with {@code relayPullWaitSeconds} above 0 a caller looping on
 *     {@link HostAgent#tick(int)} then needs no timer of its own (the next tick waits on that relay)
 * @param relays each relay's part, in the agent's order
 */
public record TickReport(String session, boolean epochChanged, int accepted, int notAccepted, int delivered,
    int duplicates, int receipts, int notices, int quarantined, long receivedThrough, long ackedThrough,
    List<String> notes, int relayPullWaitSeconds, boolean pulledAll, List<Relay> relays) {

  /** Copies the lists. */
  public TickReport {
    notes = List.copyOf(notes);
    relays = List.copyOf(relays);
  }

  /**
   * One relay's part of a tick.
   *
   * @param url the relay URL
   * @param session how its session went ({@code ok}, {@code no-pin}, {@code relay-key-changed}, {@code backoff},
   *     {@code unreachable}, {@code refused}, {@code enrol-failed}); a relay that is not {@code ok} stopped only its
   *     own part: the other relays pushed and pulled as usual
   * @param epochChanged whether its epoch changed (or it went back in time) this tick
   * @param receivedThrough its receive position after the tick (-1 before the first session)
   * @param ackedThrough its acked marker (-1 before the first session)
   * @param relayPullWaitSeconds its long-poll offer (0 when none or not reached)
   * @param pulledAll whether its pulls ended on a page without {@code more}
   */
  public record Relay(String url, String session, boolean epochChanged, long receivedThrough, long ackedThrough,
      int relayPullWaitSeconds, boolean pulledAll) {}
}
