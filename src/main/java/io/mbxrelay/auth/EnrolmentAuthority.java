package io.mbxrelay.auth;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * Decides whether a host key may enrol (docs/protocol.md §7.8): {@code authorize({host_name, host_pubkey, owner_fp, proof}) →
 * {ok, account?, org?, reason?}}. A thrown exception means the authority is unavailable and the enrolment is denied
 * with reason {@code the enrolment authority is unavailable} (docs/protocol.md §4.1).
 *
 * <p>Implementations must be thread-safe and must not block (they run on event loops).
 */
public interface EnrolmentAuthority {

  /**
   * The question.
   *
   * @param hostName requested label
   * @param hostPubkey the key that proved possession by signing the challenge
   * @param ownerFp the host's unproven owner claim
   * @param proof the request's {@code proof} member, or null
   */
  record Request(String hostName, String hostPubkey, String ownerFp, JsonNode proof) {}

  /**
   * The answer.
   *
   * @param ok granted
   * @param account proven account, or null
   * @param org proven organisation, or null
   * @param reason denial reason (≤ 200 chars used), or null
   * @param clientId the token's {@code client_id} (deny-list key, docs/protocol.md §7.8), or null
   */
  record Decision(boolean ok, String account, String org, String reason, String clientId) {
    /** A decision without client id. */
    public Decision(boolean ok, String account, String org, String reason) {
      this(ok, account, org, reason, null);
    }

    /** A grant without account. */
    public static Decision granted() {
      return new Decision(true, null, null, null, null);
    }
  }

  /** Name stored in {@code enrolments.authorized_by} when this authority grants an account. */
  String name();

  /**
   * Decides.
   *
   * @param request the enrolment
   * @return the decision
   * @throws Exception when the authority is unavailable (treated as a denial)
   */
  Decision authorize(Request request) throws Exception;

  /**
   * Decides without blocking; an authority that must fetch something first (the account-token authority on an
   * unknown signing key) overrides this. A failed stage means "unavailable", like a throw from {@link #authorize}.
   *
   * @param request the enrolment
   * @return the decision
   */
  default CompletionStage<Decision> decide(Request request) {
    try {
      return CompletableFuture.completedFuture(authorize(request));
    } catch (Exception e) {
      return CompletableFuture.failedFuture(e);
    }
  }
}
