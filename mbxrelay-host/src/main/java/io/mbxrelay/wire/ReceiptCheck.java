package io.mbxrelay.wire;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.Iterator;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * The delivery receipt record of {@code docs/protocol.md §4.8} ({@code kind:"receipt"} items carry
 * {@code {rec, sig}}), checked as strictly as the reference zod schema. Stateless and thread-safe.
 */
public final class ReceiptCheck {

  /** Host names ({@code docs/protocol.md §3} "Other constants"). */
  public static final Pattern HOST_RE = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]{0,62}");
  /** Receipt states, lowest first. */
  public static final Set<String> STATES = Set.of("delivered", "notified", "read", "acked");
  /** Longest {@code note}, UTF-16 units. */
  public static final int MAX_NOTE = 500;
  /** Longest {@code did}, UTF-16 units (DID_MAX of the reference). */
  public static final int MAX_DID = 200;

  private static final Set<String> KEYS =
      Set.of("v", "type", "msg", "recipient", "state", "at", "note", "did", "seq");

  private ReceiptCheck() {}

  /**
   * The strict receipt schema: an object with no keys besides {@code v, type, msg, recipient, state, at,
   * note, did, seq}; {@code v} = 1; {@code type} = {@code "receipt"}; {@code msg} a string of 10–40 units;
   * {@code recipient} ≤ 104 units, exactly one {@code @}, name {@code owner} or
   * {@code ^[a-z0-9][a-z0-9-]{1,39}$}, host matching {@link #HOST_RE}; {@code state} one of {@link #STATES};
   * {@code at} per {@link IsoTime#isZodDatetime(String)}; optional {@code note} string ≤ 500 and {@code did}
   * string ≤ 200 (present with JSON null fails, as in zod); {@code seq} a positive safe integer (zod 4
   * {@code int()}; {@code 5.0} counts as 5).
   *
   * @param rec the {@code rec} member (may be null, any node type)
   * @return whether it passes
   */
  public static boolean isValidRec(JsonNode rec) {
    if (rec == null || !rec.isObject()) {
      return false;
    }
    for (Iterator<String> names = rec.fieldNames(); names.hasNext(); ) {
      if (!KEYS.contains(names.next())) {
        return false;
      }
    }
    JsonNode msg = rec.get("msg");
    JsonNode state = rec.get("state");
    JsonNode at = rec.get("at");
    return EnvelopeCheck.isNumber(rec.get("v"), 1)
        && isText(rec.get("type"), "receipt")
        && EnvelopeCheck.isString(msg)
        && msg.textValue().length() >= 10
        && msg.textValue().length() <= 40
        && validRecipient(rec.get("recipient"))
        && EnvelopeCheck.isString(state)
        && STATES.contains(state.textValue())
        && EnvelopeCheck.isString(at)
        && IsoTime.isZodDatetime(at.textValue())
        && optionalString(rec.get("note"), MAX_NOTE)
        && optionalString(rec.get("did"), MAX_DID)
        && positiveSafeInteger(rec.get("seq"));
  }

  /**
   * The item id of a receipt: {@code receipt:<msg>:<recipient>:<seq>}, {@code seq} printed as JS prints the
   * number (an integer for valid records). Meant for records that passed {@link #isValidRec(JsonNode)}; a
   * missing member prints as {@code undefined}, as the JS template would.
   *
   * @param rec the receipt record
   * @return the item id
   */
  public static String itemIdFor(JsonNode rec) {
    return "receipt:" + part(rec.get("msg")) + ":" + part(rec.get("recipient")) + ":" + part(rec.get("seq"));
  }

  private static String part(JsonNode n) {
    if (n == null || n.isMissingNode()) {
      return "undefined";
    }
    if (n.isNumber()) {
      return EsNumber.toString(n.doubleValue());
    }
    return n.isTextual() ? n.textValue() : Json.stringify(n);
  }

  private static boolean validRecipient(JsonNode r) {
    if (!EnvelopeCheck.isString(r) || r.textValue().length() > 104) {
      return false;
    }
    String[] parts = r.textValue().split("@", -1);
    if (parts.length > 2) {
      return false;
    }
    String name = parts[0];
    String host = parts.length == 2 ? parts[1] : "";
    return (name.equals("owner") || EnvelopeCheck.NAME_RE.matcher(name).matches()) && HOST_RE.matcher(host).matches();
  }

  private static boolean isText(JsonNode n, String value) {
    return EnvelopeCheck.isString(n) && n.textValue().equals(value);
  }

  private static boolean optionalString(JsonNode n, int max) {
    return n == null || EnvelopeCheck.isStringMax(n, max);
  }

  private static boolean positiveSafeInteger(JsonNode n) {
    return EnvelopeCheck.isInteger(n) && n.doubleValue() > 0 && n.doubleValue() <= 9_007_199_254_740_991d;
  }
}
