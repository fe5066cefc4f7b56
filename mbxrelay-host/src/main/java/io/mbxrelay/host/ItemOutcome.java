package io.mbxrelay.host;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.List;

/**
 * What happened to one pushed item (docs/protocol.md §3 push result, §4.5 accept receipt): {@link Accepted} only with an accept
 * receipt that passed every check of {@link AcceptCheck}; {@link Rejected} for {@code rejected:<why>}; {@link
 * Unverified} for a success status without a valid receipt — the sender must treat the item as not accepted and keep
 * it for a retry (docs/protocol.md §6 "Sender").
 */
public sealed interface ItemOutcome permits ItemOutcome.Accepted, ItemOutcome.Rejected, ItemOutcome.Unverified {

  /**
   * The item id the outcome belongs to.
   *
   * @return the pushed item id
   */
  String itemId();

  /**
   * One target's seq from the verified receipt.
   *
   * @param hostPubkey target host key (base64)
   * @param seq the target's seq (a safe integer; production seqs are ms timestamps, docs/protocol.md §5)
   */
  record TargetSeq(String hostPubkey, long seq) {}

  /**
   * Stored durably by the relay, with a verified accept receipt.
   *
   * @param itemId the item id
   * @param targets the seq per target, in receipt order
   * @param epoch relay epoch the seqs belong to
   * @param at receipt time (ISO, docs/protocol.md §1); for a duplicate the original accept time
   * @param accept the accept record exactly as received (keep it with {@code sig} as proof)
   * @param sig the relay's base64 signature over canonical({@code accept})
   * @param duplicate true for status {@code duplicate} (the relay already held these bytes under this id)
   */
  record Accepted(String itemId, List<TargetSeq> targets, String epoch, String at, ObjectNode accept, String sig,
      boolean duplicate) implements ItemOutcome {
    /** Copies the list. */
    public Accepted {
      targets = List.copyOf(targets);
    }
  }

  /**
   * The relay refused the item; nothing of it was stored.
   *
   * @param itemId the item id
   * @param reason the text after {@code rejected:}, exactly as on the wire (e.g. {@code target not enrolled},
   *     {@code conflict}, {@code quota:queue depth exceeded for bob}, {@code rate})
   */
  record Rejected(String itemId, String reason) implements ItemOutcome {}

  /**
   * The relay said accepted/duplicate (or something unknown) but the receipt did not verify.
   *
   * @param itemId the item id
   * @param why the first failed check, e.g. {@code receipt names another relay key}
   */
  record Unverified(String itemId, String why) implements ItemOutcome {}
}
