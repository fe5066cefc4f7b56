package io.mbxrelay.host;

/**
 * The relay answered with a status this client understands but a body it cannot use (not JSON, missing or mistyped
 * members, wrong protocol version). The relay (or something in between) does not speak docs/protocol.md §3; treated as a
 * failed call, never as success. Immutable.
 *
 * @param status the HTTP status
 * @param why what was wrong, e.g. {@code info v is not 2}
 */
public record BadAnswer(int status, String why)
    implements InfoResult, EnrolResult, PushResult, PullResult, AckResult, SendersResult,
    EncAdResult, EncKeyAnswer {}
