package io.mbxrelay.store.model;

/**
 * One row of {@code enrolments} (docs/protocol.md §5, §7.2). Hosts are identified by key; the name is a label.
 *
 * @param hostPubkey base64 Ed25519 host key (44 chars), the primary key
 * @param hostName the host's label, matched case-insensitively
 * @param ownerFp the host's own unproven owner claim ({@code ""} when none); decides nothing
 * @param account proven account, or {@code null}
 * @param authorizedBy which enrolment authority granted the account, or {@code null}
 * @param enrolledAt ISO time of the latest enrolment
 * @param revokedAt ISO time of revocation, or {@code null} while live
 */
public record Enrolment(
    String hostPubkey,
    String hostName,
    String ownerFp,
    String account,
    String authorizedBy,
    String enrolledAt,
    String revokedAt) {

  /** True while the key is not revoked. */
  public boolean live() {
    return revokedAt == null;
  }
}
