package io.mbxrelay.host;

import java.util.List;

/**
 * What one {@link HostAgent#tick()} did (docs/protocol.md §6). Immutable.
 *
 * @param session how the session went: {@code ok}; {@code no-pin} (no relay key pinned — run {@code relay set});
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
 * @param receivedThrough receive position after the tick (-1 when no session)
 * @param ackedThrough acked marker after the tick (-1 when no session)
 * @param notes human-readable lines (no key material)
 * @param relayPullWaitSeconds the longest pull wait the relay offers (0 when none, or no session)
 * @param pulledAll whether the tick's pulls ended on a page without {@code more}; with {@code relayPullWaitSeconds}
 *     above 0 a caller looping on {@link HostAgent#tick(int)} then needs no timer of its own (the next tick waits on
 *     the relay)
 */
public record TickReport(String session, boolean epochChanged, int accepted, int notAccepted, int delivered,
    int duplicates, int receipts, int notices, int quarantined, long receivedThrough, long ackedThrough,
    List<String> notes, int relayPullWaitSeconds, boolean pulledAll) {

  /** Copies the notes. */
  public TickReport {
    notes = List.copyOf(notes);
  }
}
