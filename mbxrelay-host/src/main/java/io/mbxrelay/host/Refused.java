package io.mbxrelay.host;

/**
 * The relay answered a request with an error status (docs/protocol.md §3 error bodies {@code {"error"[,"code"]}}), e.g. 401
 * {@code bad relay hop}, 403 {@code DENIED}, 400 {@code BAD_BATCH}, 429. Immutable.
 *
 * @param status the HTTP status (not 200)
 * @param error the {@code error} text, or the raw body (at most 200 characters) when it is not JSON
 * @param code the {@code code} member, or null
 */
public record Refused(int status, String error, String code)
    implements InfoResult, EnrolResult, PushResult, PullResult, AckResult, SendersResult,
    EncAdResult, EncKeyAnswer {}
