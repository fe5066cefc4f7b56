package io.mbxrelay.wire;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * The envelope shape check of {@code docs/protocol.md §4.9}: structural validation of anything that claims to be a v3
 * envelope, with the exact reason texts of the reference (they travel as {@code rejected:bad envelope: <reason>}).
 *
 * <p>Rules run in the spec's order and the first failure wins. Lengths are UTF-16 code units
 * ({@link String#length()}); {@code body} sizes are UTF-8 bytes (a lone surrogate counts 3 bytes, as Node's
 * {@code Buffer.byteLength}). The reading follows JS semantics of the reference: a JSON array is an "object"
 * for the first test (so {@code []} fails with {@code unsupported version}); numbers compare by value
 * ({@code 3.0} is {@code 3}); a member that is present with JSON {@code null} counts as present.
 *
 * <p>Sub-fields where §4.9 is terse, as implemented:
 * <ul>
 *   <li>{@code enc} (when not null): must be a JSON object or array, else {@code bad enc}; {@code v} = 1, {@code alg}
 *       = {@code x25519+xchacha20poly1305}, {@code epk}/{@code nonce} strings decoding (leniently, {@link B64})
 *       to 32/24 bytes, {@code body} a non-empty string; its {@code body} over 349,548 UTF-16 units →
 *       {@code sealed body over 349548 bytes}.</li>
 *   <li>{@code authority}: absent or not an object → {@code bad authority}; {@code null} is fine. With an
 *       {@code owner_sig} member: {@code owner_sig} and {@code owner_fp} strings and no {@code grant} /
 *       {@code session_sig} member, else {@code bad owner authority}. Otherwise {@code grant} must be an object
 *       with {@code v} = 2, {@code session_sig} a string and no {@code owner_fp} member, else
 *       {@code bad grant authority}; then {@code grant.id, iss, sub, agent, host, iat, exp, nonce, sig} strings
 *       ({@code bad grant.<field>}, first missing in that order) and {@code grant.caps} an array of strings.</li>
 *   <li>{@code meta}: an object; {@code mentions, directives, tags, task_refs} arrays of strings
 *       ({@code bad meta.<field>}); optional {@code sender_verification} ∈ {unverified, leased}; optional
 *       {@code hop} an integer 0..1000; optional {@code origin} ∈ {agent, external}; optional {@code project} /
 *       {@code project_key} strings ≤ 300 ({@code bad project} / {@code bad project key}); optional
 *       {@code local_names} an array of ≤ 100 agent names {@code ^[a-z0-9][a-z0-9-]{1,39}$}.</li>
 * </ul>
 * Extra members anywhere are allowed. The envelope signature is never checked here (the relay is content-blind).
 * Stateless and thread-safe.
 */
public final class EnvelopeCheck {

  /** Plaintext body cap, UTF-8 bytes (256 KiB). */
  public static final int MAX_BODY = 262_144;
  /** Sealed body cap: base64 of MAX_BODY plus the 16-byte tag = 4 × ceil((262,144 + 16) / 3). */
  public static final int MAX_SEALED_BODY = 349_548;
  /** The envelope kinds. */
  public static final Set<String> KINDS =
      Set.of("message", "request", "reply", "status", "decision", "alert", "task");
  /** The only body sealing algorithm. */
  public static final String ENC_ALG = "x25519+xchacha20poly1305";

  private static final int MAX_FIELD = 300;
  private static final int MAX_RECIPIENTS = 100;
  private static final int MAX_SUBJECT = 200;
  private static final int MAX_REFS = 100;
  private static final int MAX_REF = 2048;
  private static final int MAX_RELAY_DEPTH = 1000;
  private static final Pattern ULID = Pattern.compile("[0-9A-HJKMNP-TV-Z]{26}");
  /** Agent names, also used by the receipt check ({@code docs/protocol.md §4.8}). */
  static final Pattern NAME_RE = Pattern.compile("[a-z0-9][a-z0-9-]{1,39}");
  private static final Pattern CONTROL = Pattern.compile("[\\u0000-\\u001f\\u007f\\u0085\\u2028\\u2029]");
  private static final String[] GRANT_FIELDS = {"id", "iss", "sub", "agent", "host", "iat", "exp", "nonce", "sig"};
  private static final String[] META_LISTS = {"mentions", "directives", "tags", "task_refs"};

  private EnvelopeCheck() {}

  /**
   * Runs the §4.9 shape check.
   *
   * @param envelope the parsed wire JSON (may be null, any node type)
   * @return the reason that follows {@code bad envelope: } (e.g. {@code Optional.of("bad id")}), or empty when
   *     the shape is valid
   */
  public static Optional<String> check(JsonNode envelope) {
    return Optional.ofNullable(reason(envelope));
  }

  private static String reason(JsonNode e) {
    if (e == null || !(e.isObject() || e.isArray())) {
      return "not an object";
    }
    if (!isNumber(e.get("v"), 3)) {
      return "unsupported version";
    }
    JsonNode id = e.get("id");
    if (!isString(id) || !ULID.matcher(id.textValue()).matches()) {
      return "bad id";
    }
    JsonNode from = e.get("from");
    if (!isString(from) || !from.textValue().contains("@")) {
      return "bad from";
    }
    if (from.textValue().length() > MAX_FIELD) {
      return "from over " + MAX_FIELD + " characters";
    }
    JsonNode to = e.get("to");
    if (!isStringArray(to) || to.isEmpty()) {
      return "bad to";
    }
    if (to.size() > MAX_RECIPIENTS) {
      return "more than " + MAX_RECIPIENTS + " recipients";
    }
    for (JsonNode t : to) {
      if (t.textValue().length() > MAX_FIELD) {
        return "recipient over " + MAX_FIELD + " characters";
      }
    }
    JsonNode kind = e.get("kind");
    if (!isString(kind) || !KINDS.contains(kind.textValue())) {
      return "bad kind";
    }
    JsonNode enc = e.get("enc");
    if (enc == null) {
      return "bad enc";
    }
    JsonNode body = e.get("body");
    if (!isString(body)) {
      return "bad body";
    }
    int maxBody = enc.isNull() ? MAX_BODY : MAX_SEALED_BODY;
    if (utf8Length(body.textValue()) > maxBody) {
      return "body over " + maxBody + " bytes";
    }
    JsonNode subject = e.get("subject");
    if (!isString(subject)) {
      return "bad subject";
    }
    if (subject.textValue().length() > MAX_SUBJECT) {
      return "subject over " + MAX_SUBJECT + " characters";
    }
    if (CONTROL.matcher(subject.textValue()).find()) {
      return "subject contains control characters";
    }
    JsonNode ts = e.get("ts");
    if (!isString(ts) || IsoTime.parse(ts.textValue()).isEmpty()) {
      return "bad ts";
    }
    if (!isStringMax(e.get("thread"), MAX_FIELD)) {
      return "bad thread";
    }
    JsonNode replyTo = e.get("reply_to");
    if (replyTo == null || !(replyTo.isNull() || isStringMax(replyTo, MAX_FIELD))) {
      return "bad reply_to";
    }
    JsonNode needsReply = e.get("needs_reply");
    if (needsReply == null || !needsReply.isBoolean()) {
      return "bad needs_reply";
    }
    JsonNode refs = e.get("refs");
    if (!isStringArray(refs)) {
      return "bad refs";
    }
    if (refs.size() > MAX_REFS || anyLonger(refs, MAX_REF)) {
      return "more than " + MAX_REFS + " refs or a ref over " + MAX_REF + " characters";
    }
    if (!enc.isNull()) {
      String bad = encReason(enc);
      if (bad != null) {
        return bad;
      }
      if (enc.get("body").textValue().length() > MAX_SEALED_BODY) {
        return "sealed body over " + MAX_SEALED_BODY + " bytes";
      }
    }
    String bad = authorityReason(e.get("authority"));
    if (bad != null) {
      return bad;
    }
    return metaReason(e.get("meta"));
  }

  private static String encReason(JsonNode enc) {
    if (!(enc.isObject() || enc.isArray())) {
      return "bad enc";
    }
    if (!isNumber(enc.get("v"), 1)) {
      return "unsupported enc version";
    }
    JsonNode alg = enc.get("alg");
    if (!isString(alg) || !alg.textValue().equals(ENC_ALG)) {
      return "unsupported enc algorithm";
    }
    if (!decodesTo(enc.get("epk"), 32)) {
      return "bad enc epk";
    }
    if (!decodesTo(enc.get("nonce"), 24)) {
      return "bad enc nonce";
    }
    JsonNode body = enc.get("body");
    if (!isString(body) || body.textValue().isEmpty()) {
      return "bad enc body";
    }
    return null;
  }

  private static String authorityReason(JsonNode a) {
    if (a != null && a.isNull()) {
      return null;
    }
    if (a == null || !a.isObject()) {
      return "bad authority";
    }
    if (a.has("owner_sig")) {
      if (!isString(a.get("owner_sig")) || !isString(a.get("owner_fp")) || a.has("grant") || a.has("session_sig")) {
        return "bad owner authority";
      }
      return null;
    }
    JsonNode g = a.get("grant");
    if (g == null || !g.isObject() || !isNumber(g.get("v"), 2) || !isString(a.get("session_sig")) || a.has("owner_fp")) {
      return "bad grant authority";
    }
    for (String field : GRANT_FIELDS) {
      if (!isString(g.get(field))) {
        return "bad grant." + field;
      }
    }
    if (!isStringArray(g.get("caps"))) {
      return "bad grant.caps";
    }
    return null;
  }

  private static String metaReason(JsonNode m) {
    if (m == null || !m.isObject()) {
      return "bad meta";
    }
    for (String field : META_LISTS) {
      if (!isStringArray(m.get(field))) {
        return "bad meta." + field;
      }
    }
    JsonNode sv = m.get("sender_verification");
    if (sv != null && !(isString(sv) && (sv.textValue().equals("unverified") || sv.textValue().equals("leased")))) {
      return "bad sender verification";
    }
    JsonNode hop = m.get("hop");
    if (hop != null && !(isInteger(hop) && hop.doubleValue() >= 0 && hop.doubleValue() <= MAX_RELAY_DEPTH)) {
      return "bad hop";
    }
    JsonNode origin = m.get("origin");
    if (origin != null && !(isString(origin) && (origin.textValue().equals("agent") || origin.textValue().equals("external")))) {
      return "bad origin";
    }
    JsonNode project = m.get("project");
    if (project != null && !isStringMax(project, MAX_FIELD)) {
      return "bad project";
    }
    JsonNode projectKey = m.get("project_key");
    if (projectKey != null && !isStringMax(projectKey, MAX_FIELD)) {
      return "bad project key";
    }
    JsonNode localNames = m.get("local_names");
    if (localNames != null) {
      if (!localNames.isArray() || localNames.size() > 100) {
        return "bad local names";
      }
      for (JsonNode n : localNames) {
        if (!isString(n) || !NAME_RE.matcher(n.textValue()).matches()) {
          return "bad local names";
        }
      }
    }
    return null;
  }

  static boolean isString(JsonNode n) {
    return n != null && n.isTextual();
  }

  static boolean isStringMax(JsonNode n, int max) {
    return isString(n) && n.textValue().length() <= max;
  }

  static boolean isStringArray(JsonNode n) {
    if (n == null || !n.isArray()) {
      return false;
    }
    for (JsonNode x : n) {
      if (!x.isTextual()) {
        return false;
      }
    }
    return true;
  }

  /** JS {@code x === value} for a JSON number. */
  static boolean isNumber(JsonNode n, double value) {
    return n != null && n.isNumber() && n.doubleValue() == value;
  }

  /** JS {@code Number.isInteger(x)}. */
  static boolean isInteger(JsonNode n) {
    if (n == null || !n.isNumber()) {
      return false;
    }
    double d = n.doubleValue();
    return Double.isFinite(d) && d == Math.floor(d);
  }

  private static boolean anyLonger(JsonNode strings, int max) {
    for (JsonNode s : strings) {
      if (s.textValue().length() > max) {
        return true;
      }
    }
    return false;
  }

  private static boolean decodesTo(JsonNode n, int bytes) {
    return isString(n) && B64.decodeLenient(n.textValue()).map(b -> b.length == bytes).orElse(false);
  }

  /**
   * UTF-8 length as Node's {@code Buffer.byteLength}: lone surrogates count as U+FFFD (3 bytes).
   *
   * @param s the text
   * @return its UTF-8 size in bytes
   */
  public static long utf8Length(String s) {
    long bytes = 0;
    int n = s.length();
    for (int i = 0; i < n; i++) {
      char c = s.charAt(i);
      if (c < 0x80) {
        bytes += 1;
      } else if (c < 0x800) {
        bytes += 2;
      } else if (Character.isHighSurrogate(c) && i + 1 < n && Character.isLowSurrogate(s.charAt(i + 1))) {
        bytes += 4;
        i++;
      } else {
        bytes += 3;
      }
    }
    return bytes;
  }
}
