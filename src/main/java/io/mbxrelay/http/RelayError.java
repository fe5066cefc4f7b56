package io.mbxrelay.http;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.mbxrelay.wire.Json;
import java.util.Locale;

/**
 * The one catalogue of the relay's HTTP error bodies (docs/architecture.md "Results and errors"): each entry is a
 * status, the exact wire text (docs/protocol.md §3, §4, byte for byte, because clients match the texts)
 * and the optional {@code code} and extra members. Fixed answers are constants; answers that carry a value (a limit,
 * a host name, an epoch, a reason from a check) are factories here. No other class builds an {@code {"error":…}}
 * body: {@code RelayErrorCatalogueTest} scans {@code src/main} for one.
 *
 * <p>The router's failure handler turns a thrown {@code RelayError} into its answer; anything else becomes 500 with a
 * generic text. Thrown without a stack trace: these are expected outcomes. Immutable; safe on any thread.
 */
public final class RelayError extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /**
   * What a client may conclude from a 503 to a state-changing request (docs/protocol.md §3 "Unavailable: what was
   * stored"): the extra member {@code outcome} after {@code error}. Reads carry none (nothing to store).
   */
  public enum Outcome {
    /** The request failed before its transaction's COMMIT: nothing of it took effect. {@code "not_stored"} */
    NOT_STORED,
    /** The COMMIT itself failed or its answer did not come in time: it may have taken effect. {@code "unknown"} */
    UNKNOWN;

    /** The wire value: {@code not_stored} or {@code unknown}. */
    public String wire() {
      return name().toLowerCase(Locale.ROOT);
    }
  }

  // ---- routing, hop and body (docs/protocol.md §2, §3) ----

  /** 401 on a protected route whose hop does not verify (docs/protocol.md §2). */
  public static final RelayError BAD_HOP = new RelayError(401, "bad relay hop", null);
  /** 404 for a path no route matches, after a valid hop (docs/protocol.md §3); also the admin port's unknown path. */
  public static final RelayError NOT_FOUND = new RelayError(404, "not found", null);
  /** 405 for a method a path does not take ({@code /admin/deny}, the admin port). */
  public static final RelayError METHOD_NOT_ALLOWED = new RelayError(405, "method not allowed", null);
  /** 408 when the body did not arrive within the request timeout. */
  public static final RelayError REQUEST_TIMEOUT = new RelayError(408, "request timeout", null);
  /** 413 for a body over the route's streaming cap (docs/protocol.md §3). */
  public static final RelayError TOO_LARGE = new RelayError(413, "request body too large", null);
  /** 400 for a body that is not JSON (docs/protocol.md §3 "Bodies"). */
  public static final RelayError NOT_JSON = badRequest("request body is not valid JSON");
  /** 400 for a JSON {@code null} body (docs/protocol.md §3 "Bodies"). */
  public static final RelayError NOT_OBJECT = badRequest("request body must be a JSON object");
  /** 400 for a body with a number JS cannot hold (our text; docs/wire-compatibility.md). */
  public static final RelayError NON_FINITE = badRequest("request body has a number out of range");

  // ---- store and capacity ----

  /** The text of every "store unavailable" 503: the writer's outcome is unknown or the store cannot be reached. */
  static final String STORE_UNAVAILABLE_TEXT = "store unavailable; retry later";
  /**
   * 503 when the store is unavailable to a read (no {@code outcome}: nothing to store): retry. Answered with
   * {@code Retry-After}. For state-changing requests see {@link #storeUnavailable(Outcome)}.
   */
  public static final RelayError STORE_UNAVAILABLE = new RelayError(503, STORE_UNAVAILABLE_TEXT, null);
  private static final RelayError STORE_NOT_STORED = withOutcome(STORE_UNAVAILABLE, Outcome.NOT_STORED);
  private static final RelayError STORE_OUTCOME_UNKNOWN = withOutcome(STORE_UNAVAILABLE, Outcome.UNKNOWN);
  /**
   * 503 when a bound on memory held for request bodies or answers is reached (docs/wire-compatibility.md): retry
   * shortly. Answered with {@code Retry-After}. On a state-changing request see {@link #busy(boolean)}.
   */
  public static final RelayError BUSY = new RelayError(503, "relay busy; retry later", null);
  private static final RelayError BUSY_NOT_STORED = withOutcome(BUSY, Outcome.NOT_STORED);
  /** 500 for a bug; no detail leaks. */
  public static final RelayError INTERNAL = new RelayError(500, "internal error", null);

  // ---- enrolment calls (docs/protocol.md §4.1) ----

  /**
   * 429 for an enrolment call (challenge, enrol, rotate) over the per-address window: the reference's text, byte for
   * byte (issue 12 item 12).
   */
  public static final RelayError RATE = new RelayError(429, "too many enrolment calls; retry in a minute", null);
  /** 400: challenge without a truthy {@code host} or {@code pubkey}. */
  public static final RelayError HOST_AND_PUBKEY_REQUIRED = badRequest("host and pubkey required");
  /** 400: challenge {@code host} not matching HOST_RE. */
  public static final RelayError BAD_HOST_NAME = badRequest("bad host name");
  /** 400: challenge {@code pubkey} not a key. */
  public static final RelayError BAD_HOST_KEY = badRequest("bad host key");
  /** 503: 10,000 challenges open and none for this key (no code, as the reference). */
  public static final RelayError CHALLENGES_FULL =
      new RelayError(503, "too many open enrolment challenges; retry later", null);
  /** 400: enrol without host, pubkey, sig or owner_fp (no code: answered before the enrolment core). */
  public static final RelayError INCOMPLETE_ENROLMENT = badRequest("incomplete enrolment");
  /** 400 BAD_REQUEST: enrol fields that do not validate. */
  public static final RelayError BAD_ENROLMENT_FIELDS = new RelayError(400, "bad enrolment fields", "BAD_REQUEST");
  /** 401: no unexpired challenge for the key. */
  public static final RelayError NO_PENDING_CHALLENGE = new RelayError(401, "no pending enrolment challenge", null);
  /** 401: the enrolment signature does not verify. */
  public static final RelayError BAD_ENROLMENT_SIGNATURE = new RelayError(401, "bad enrolment signature", null);
  /** 503 FULL: a new key at the live-enrolment limit. */
  public static final RelayError ENROLMENT_FULL = new RelayError(503, "relay enrolment capacity reached", "FULL");
  /** 403 REVOKED: the key was revoked here. */
  public static final RelayError REVOKED = new RelayError(403, "this host key was revoked on this relay", "REVOKED");

  // ---- trust records (docs/protocol.md §4.2 - §4.5) ----

  /** 404: enc-key lookup of a key or name with no live enrolment. */
  public static final RelayError UNKNOWN_HOST = new RelayError(404, "unknown host", null);
  /** 400: a sender list that is not one. */
  public static final RelayError BAD_SENDER_LIST = badRequest("bad sender list");
  /** 400: a sender list dated more than 5 minutes ahead. */
  public static final RelayError SENDER_LIST_IN_FUTURE = badRequest("sender list iat is in the future");
  /** 401: the sender list's signature is not the caller's. */
  public static final RelayError SENDER_LIST_NOT_SIGNED =
      new RelayError(401, "sender list is not signed by the target", null);
  /** 409: a newer sender list is stored. */
  public static final RelayError SENDER_LIST_STALE = new RelayError(409, "a newer sender list is already stored", null);
  /** 400: v1 enc-key ad without enc_pub or sig. */
  public static final RelayError ENC_PUB_AND_SIG_REQUIRED = badRequest("enc_pub and sig required");
  /** 401: v1 enc-key ad naming another host. */
  public static final RelayError HOST_MISMATCH = new RelayError(401, "host mismatch", null);
  /** 401: v1 enc-key ad signature does not verify. */
  public static final RelayError BAD_ENC_KEY_SIGNATURE = new RelayError(401, "bad enc-key signature", null);
  /** 404 NOT_ENROLLED: the rotation's old key is not a live enrolment. */
  public static final RelayError ROTATED_KEY_NOT_ENROLLED =
      new RelayError(404, "the rotated key is not enrolled here", null);
  /** 409 ROTATION_TARGET: the rotation's new key was revoked (or denied) here. */
  public static final RelayError NEW_KEY_REVOKED = new RelayError(409, "the new key was revoked here", null);
  /** 400: a deny entry note over 200 characters. */
  public static final RelayError DENY_NOTE_TOO_LONG = badRequest("bad deny entry: note over 200 characters");

  // ---- v1 push (docs/protocol.md §3) ----

  /** 400: v1 push without an {@code envelopes} array. */
  public static final RelayError BAD_BATCH_V1 = badRequest("bad batch");

  // ---- v2 items (docs/protocol.md §3) ----

  /** The 409 text of an epoch mismatch on pull and ack. */
  private static final String EPOCH_CHANGED = "relay epoch changed: pull again from 0";

  // ---- admin port (docs/operations.md) ----

  /** 403: {@code POST /clock/resume} without the admin token. */
  public static final RelayError ADMIN_TOKEN_REQUIRED = new RelayError(403, "admin token required", null);
  /** 403: {@code POST /clock/resume} from another host while {@code admin.token} is unset. */
  public static final RelayError LOOPBACK_ONLY =
      new RelayError(403, "only a loopback caller may resume the clock when admin.token is unset", null);
  /** 500: {@code GET /status} could not be assembled. */
  public static final RelayError STATUS_NOT_AVAILABLE = new RelayError(500, "status not available", null);

  private final int status;
  private final String error;
  private final String code;
  private final transient ObjectNode extra;

  private RelayError(int status, String error, String code) {
    this(status, error, code, null);
  }

  private RelayError(int status, String error, String code, ObjectNode extra) {
    super(error, null, false, false);
    this.status = status;
    this.error = error;
    this.code = code;
    this.extra = extra;
  }

  private static RelayError withOutcome(RelayError base, Outcome outcome) {
    ObjectNode extra = Json.MAPPER.createObjectNode();
    extra.put("outcome", outcome.wire());
    return new RelayError(base.status, base.error, base.code, extra);
  }

  private static RelayError badRequest(String text) {
    return new RelayError(400, text, null);
  }

  // ---- factories: answers that carry a value ----

  /**
   * The 503 "store unavailable; retry later" of a state-changing request, with {@code "outcome"} after {@code error}
   * (issue 20 item 4).
   *
   * @param outcome what the client may conclude, or null for a read (no {@code outcome} member)
   * @return the shared instance
   */
  public static RelayError storeUnavailable(Outcome outcome) {
    if (outcome == null) {
      return STORE_UNAVAILABLE;
    }
    return outcome == Outcome.NOT_STORED ? STORE_NOT_STORED : STORE_OUTCOME_UNKNOWN;
  }

  /**
   * The 503 "relay busy; retry later": refused before the body was read, so a state-changing request says
   * {@code "outcome":"not_stored"}.
   *
   * @param stateChanging the request changes state (not a GET)
   * @return the shared instance
   */
  public static RelayError busy(boolean stateChanging) {
    return stateChanging ? BUSY_NOT_STORED : BUSY;
  }

  /**
   * The generic answer of a failure the router met with a status of its own (Vert.x Web's 4xx).
   *
   * @param status the 4xx status
   * @return {@code {"error":"bad request"}} with that status
   */
  static RelayError routerStatus(int status) {
    return new RelayError(status, "bad request", null);
  }

  /**
   * 400: a v2 push whose {@code items} is not an array of at most {@code maxBatch} (docs/protocol.md §3).
   *
   * @param maxBatch {@code limits.maxBatch}
   * @return {@code batch must be an array of at most <maxBatch>}
   */
  public static RelayError batchTooLong(int maxBatch) {
    return badRequest("batch must be an array of at most " + maxBatch);
  }

  /**
   * 409: a pull naming another epoch (docs/protocol.md §3 "Pull v2"): {@code {error, epoch}}, no code.
   *
   * @param epoch the current epoch
   * @return the error
   */
  public static RelayError pullEpochChanged(String epoch) {
    ObjectNode extra = Json.MAPPER.createObjectNode();
    extra.put("epoch", epoch);
    return new RelayError(409, EPOCH_CHANGED, null, extra);
  }

  /**
   * 409 EPOCH: an ack naming another epoch (docs/protocol.md §3 "Ack v2"): {@code {error, code, epoch, head_seq}}.
   *
   * @param epoch the current epoch
   * @param headSeq the caller's head seq
   * @return the error
   */
  public static RelayError ackEpochChanged(String epoch, long headSeq) {
    return new RelayError(409, EPOCH_CHANGED, "EPOCH", epochAndHead(epoch, headSeq));
  }

  /**
   * 400 BAD_ACK: an ack beyond the head seq (docs/protocol.md §3 "Ack v2"): {@code {error, code, epoch, head_seq}}.
   *
   * @param epoch the current epoch
   * @param headSeq the caller's head seq
   * @return the error
   */
  public static RelayError badAck(String epoch, long headSeq) {
    return new RelayError(400, "ack beyond the last allocated seq: treat as an epoch change", "BAD_ACK",
        epochAndHead(epoch, headSeq));
  }

  private static ObjectNode epochAndHead(String epoch, long headSeq) {
    ObjectNode extra = Json.MAPPER.createObjectNode();
    extra.put("epoch", epoch);
    extra.put("head_seq", headSeq);
    return extra;
  }

  /**
   * 409 NAME_TAKEN (docs/protocol.md §4.1).
   *
   * @param hostName the name as enrolled
   * @return {@code host name <h> is already enrolled in this account with another key}
   */
  public static RelayError nameTaken(String hostName) {
    return new RelayError(409, "host name " + hostName + " is already enrolled in this account with another key",
        "NAME_TAKEN");
  }

  /**
   * 403 DENIED (docs/protocol.md §4.1): {@code enrolment not authorized[: <reason, ≤ 200 chars>]}.
   *
   * @param reason the authority's reason, or null/empty for none
   * @return the error
   */
  public static RelayError enrolmentDenied(String reason) {
    String text = "enrolment not authorized"
        + (reason == null || reason.isEmpty() ? "" : ": " + (reason.length() > 200 ? reason.substring(0, 200) : reason));
    return new RelayError(403, text, "DENIED");
  }

  /**
   * 400: a v2 enc-key ad refused (docs/protocol.md §4.2).
   *
   * @param reason the check's reason ({@code unsigned}, {@code malformed}, …)
   * @return {@code enc-key ad refused: <reason>}
   */
  public static RelayError encAdRefused(String reason) {
    return badRequest("enc-key ad refused: " + reason);
  }

  /**
   * 400: a rotation refused by its checks (docs/protocol.md §4.4).
   *
   * @param reason the check's text ({@code not a rotation record}, …)
   * @return the error with that text
   */
  public static RelayError badRotation(String reason) {
    return badRequest(reason);
  }

  /**
   * 400: a deny entry that does not validate (docs/deny-list.md).
   *
   * @param problem the key check's text
   * @return {@code bad deny entry: <problem>}
   */
  public static RelayError badDenyEntry(String problem) {
    return badRequest("bad deny entry: " + problem);
  }

  /**
   * 429 on v2 push over the sender's window (docs/protocol.md §3): answered with {@code Retry-After}.
   *
   * @param perMinute {@code limits.pushRequestsPerMinute}
   * @return {@code push rate exceeded (<n>/min)}
   */
  public static RelayError pushRate(int perMinute) {
    return new RelayError(429, pushRateText(perMinute), null);
  }

  /** The push-rate text, shared by v2's 429 and v1's {@code {stored, error}}. */
  static String pushRateText(int perMinute) {
    return "push rate exceeded (" + perMinute + "/min)";
  }

  /** The v1 push's batch-size text (docs/protocol.md §3 "v1 endpoints"). */
  static String v1BatchOverLimit(int maxBatch) {
    return "batch over limit " + maxBatch;
  }

  /**
   * The v1 push answer {@code {stored[,error]}} (docs/protocol.md §3): {@code stored} first; the status is 413 when
   * there is an error and nothing was stored, else 200.
   *
   * @param stored envelopes stored before the first error
   * @param error the first error's text, or null
   * @return the body
   */
  static String v1PushAnswer(int stored, String error) {
    ObjectNode out = Json.MAPPER.createObjectNode();
    out.put("stored", stored);
    if (error != null) {
      out.put("error", error);
    }
    return Json.stringify(out);
  }

  /** HTTP status. */
  public int status() {
    return status;
  }

  /** The {@code error} text. */
  public String error() {
    return error;
  }

  /** The {@code code} member, or null. */
  public String code() {
    return code;
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
