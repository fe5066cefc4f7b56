package io.mbxrelay.http;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.mbxrelay.wire.Json;

/**
 * One catalog of HTTP errors (docs/architecture.md "Results and errors"): status, exact wire text (docs/protocol.md §3, §4) and the optional
 * {@code code} and extra members. The router's failure handler turns a thrown {@code RelayError} into its answer;
 * anything else becomes 500 with a generic text.
 *
 * <p>Thrown without a stack trace: these are expected outcomes.
 */
public final class RelayError extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /** 401 on a protected route whose hop does not verify (docs/protocol.md §2). */
  public static final RelayError BAD_HOP = new RelayError(401, "bad relay hop", null);
  /** 404 for a path no route matches, after a valid hop (docs/protocol.md §3). */
  public static final RelayError NOT_FOUND = new RelayError(404, "not found", null);
  /** 413 for a body over the route's streaming cap (docs/protocol.md §3). */
  public static final RelayError TOO_LARGE = new RelayError(413, "request body too large", null);
  /**
   * 429 for an enrolment call (challenge, enrol, rotate) over the per-address window: the reference's text, byte for
   * byte (issue 12 item 12).
   */
  public static final RelayError RATE = new RelayError(429, "too many enrolment calls; retry in a minute", null);
  /** 503 when the writer's outcome is unknown or the store is unavailable: retry (dedup makes it safe). */
  public static final RelayError STORE_UNAVAILABLE = new RelayError(503, "store unavailable; retry later", null);
  /** 500 for a bug; no detail leaks. */
  /**
   * 503 when a bound on memory held for answers is reached (pull pages being written to slow readers): retry shortly.
   * Answered with {@code Retry-After}.
   */
  public static final RelayError BUSY = new RelayError(503, "relay busy; retry later", null);
  public static final RelayError INTERNAL = new RelayError(500, "internal error", null);
  /** 408 when the body did not arrive within the request timeout. */
  public static final RelayError REQUEST_TIMEOUT = new RelayError(408, "request timeout", null);

  private final int status;
  private final String error;
  private final String code;
  private final transient ObjectNode extra;

  /**
   * @param status HTTP status
   * @param error exact {@code error} text
   * @param code wire {@code code} member, or null
   */
  public RelayError(int status, String error, String code) {
    this(status, error, code, null);
  }

  /**
   * @param status HTTP status
   * @param error exact {@code error} text
   * @param code wire {@code code} member, or null
   * @param extra further members appended after {@code error} and {@code code} (e.g. {@code epoch}, {@code head_seq}),
   *     or null
   */
  public RelayError(int status, String error, String code, ObjectNode extra) {
    super(error, null, false, false);
    this.status = status;
    this.error = error;
    this.code = code;
    this.extra = extra;
  }

  /** A 400 with the given text. */
  public static RelayError badRequest(String text) {
    return new RelayError(400, text, null);
  }

  /** HTTP status. */
  public int status() {
    return status;
  }

  /** The {@code error} text. */
  public String error() {
    return error;
  }

  /** The answer body, {@code {"error":…[,"code":…][,…extra]}}. */
  public String body() {
    ObjectNode n = Json.MAPPER.createObjectNode();
    n.put("error", error);
    if (code != null) {
      n.put("code", code);
    }
    if (extra != null) {
      n.setAll(extra);
    }
    return Json.stringify(n);
  }
}
