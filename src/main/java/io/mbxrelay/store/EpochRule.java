package io.mbxrelay.store;

import io.mbxrelay.wire.IsoTime;
import java.util.Optional;

/**
 * The one rule of when the relay epoch rotates as a store opens (docs/protocol.md §5 "epoch", §7.5), for every
 * backend: each reads what the rule needs from its own store and writes the rotation it is told to.
 *
 * <ul>
 *   <li>the operator accepted a store behind its commit watermark ({@code serve --accept-lost-commits}): committed
 *       transactions were lost, so senders must re-push and receivers pull again from 0 —
 *       {@value #LOST_COMMITS_ACCEPTED};</li>
 *   <li>the stored heartbeat is further than {@code heartbeatStaleMs} from the wall clock (no relay ran on this store
 *       for that long, or the store came back from elsewhere): {@value #STALE_HEARTBEAT}, or
 *       {@value #HEARTBEAT_IN_THE_FUTURE} when it lies ahead; a heartbeat that is not a number is stale;</li>
 *   <li>otherwise, or without a heartbeat (a new store), or with {@code heartbeatStaleMs} 0: no rotation.</li>
 * </ul>
 *
 * <p>What the rule does not decide: a store pinned to another relay key is refused by its backend (never rotated into
 * use), and a restore or {@code rotate-epoch} rotates by an operator command, not at open.
 *
 * <p>Pure and stateless; safe on any thread.
 */
public final class EpochRule {
  /** The reason of a rotation after {@code serve --accept-lost-commits}. */
  public static final String LOST_COMMITS_ACCEPTED = "lost commits accepted";
  /** The reason of a rotation over a heartbeat older than the stale limit. */
  public static final String STALE_HEARTBEAT = "stale heartbeat";
  /** The reason of a rotation over a heartbeat further ahead than the stale limit. */
  public static final String HEARTBEAT_IN_THE_FUTURE = "heartbeat in the future";

  private EpochRule() {}

  /**
   * A rotation the open must write.
   *
   * @param reason one of {@link #LOST_COMMITS_ACCEPTED}, {@link #STALE_HEARTBEAT}, {@link #HEARTBEAT_IN_THE_FUTURE}
   * @param byOperator the operator asked for it ({@code --accept-lost-commits}); else the start-up rule did
   * @param heartbeat the stored heartbeat as the receipts show it: ISO-8601 when it is epoch ms, the stored text as it
   *     is when it is not a number, empty when there was none
   */
  public record Rotation(String reason, boolean byOperator, String heartbeat) {}

  /**
   * Decides whether the epoch rotates at this open.
   *
   * @param lostCommitsAccepted the store is behind its commit watermark and the operator accepted that (SQLite; false
   *     on a backend without a watermark)
   * @param storedHeartbeat {@code meta.heartbeat} as stored (epoch ms as decimal text), empty when there is none
   * @param wallNowMs the wall clock, epoch ms
   * @param heartbeatStaleMs a heartbeat further than this from {@code wallNowMs} rotates the epoch, ms; 0 = never
   * @return the rotation to write, or empty
   */
  public static Optional<Rotation> atOpen(boolean lostCommitsAccepted, Optional<String> storedHeartbeat,
      long wallNowMs, long heartbeatStaleMs) {
    if (lostCommitsAccepted) {
      String shown = storedHeartbeat.map(h -> h.matches("[0-9]{1,15}") ? IsoTime.format(Long.parseLong(h)) : h)
          .orElse("");
      return Optional.of(new Rotation(LOST_COMMITS_ACCEPTED, true, shown));
    }
    if (storedHeartbeat.isEmpty() || heartbeatStaleMs <= 0) {
      return Optional.empty();
    }
    long beat;
    try {
      beat = Long.parseLong(storedHeartbeat.get());
    } catch (NumberFormatException e) {
      return Optional.of(new Rotation(STALE_HEARTBEAT, false, storedHeartbeat.get()));
    }
    if (Math.abs(wallNowMs - beat) <= heartbeatStaleMs) {
      return Optional.empty();
    }
    return Optional.of(new Rotation(beat > wallNowMs ? HEARTBEAT_IN_THE_FUTURE : STALE_HEARTBEAT, false,
        IsoTime.format(beat)));
  }
}
