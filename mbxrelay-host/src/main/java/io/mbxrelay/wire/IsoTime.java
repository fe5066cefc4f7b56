package io.mbxrelay.wire;

import java.time.Instant;
import java.time.LocalDate;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeParseException;
import java.util.OptionalLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * ISO-8601 timestamps as the JS reference writes and reads them ({@code docs/protocol.md §1} "Timestamps", §4.8).
 * Stateless and thread-safe.
 */
public final class IsoTime {

  /** JS Date range: ±8.64e15 ms around the epoch. */
  private static final long MAX_MS = 8_640_000_000_000_000L;

  /** ES Date Time String Format with V8's extensions (any number of fraction digits). */
  private static final Pattern ISO =
      Pattern.compile(
          "([+-]\\d{6}|\\d{4})(?:-(\\d{2})(?:-(\\d{2}))?)?"
              + "(?:[T ](\\d{2}):(\\d{2})(?::(\\d{2})(?:\\.(\\d+))?)?(Z|[+-]\\d{2}:?\\d{2})?)?");

  /** zod 4 {@code z.string().datetime()}: calendar-checked date, seconds, optional fraction, {@code Z} only. */
  private static final Pattern ZOD_DATETIME =
      Pattern.compile(
          "(?:(?:\\d\\d[2468][048]|\\d\\d[13579][26]|\\d\\d0[48]|[02468][048]00|[13579][26]00)-02-29"
              + "|\\d{4}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12]\\d|3[01])|(?:0[469]|11)-(?:0[1-9]|[12]\\d|30)"
              + "|(?:02)-(?:0[1-9]|1\\d|2[0-8])))"
              + "T(?:[01]\\d|2[0-3]):[0-5]\\d:[0-5]\\d(?:\\.\\d+)?Z");

  private IsoTime() {}

  /**
   * JS {@code new Date(epochMs).toISOString()}: exactly {@code YYYY-MM-DDTHH:mm:ss.SSSZ} (UTC, 3 fraction
   * digits); years outside 0..9999 use the JS extended form {@code ±YYYYYY}. Expiry and dedup pruning
   * compare these strings, so always emit this shape.
   *
   * @param epochMs milliseconds since the epoch
   * @return the ISO string
   * @throws IllegalArgumentException outside the JS Date range (±8.64e15 ms), as JS throws RangeError
   */
  public static String format(long epochMs) {
    if (epochMs > MAX_MS || epochMs < -MAX_MS) {
      throw new IllegalArgumentException("time value out of range");
    }
    OffsetDateTime t = Instant.ofEpochMilli(epochMs).atOffset(ZoneOffset.UTC);
    int year = t.getYear();
    if (year >= 0 && year <= 9999) {
      // the common case, written digit by digit: this runs twice per stored item (accepted_at, expires_at)
      char[] c = new char[24];
      digits(c, 0, year, 4);
      c[4] = '-';
      digits(c, 5, t.getMonthValue(), 2);
      c[7] = '-';
      digits(c, 8, t.getDayOfMonth(), 2);
      c[10] = 'T';
      digits(c, 11, t.getHour(), 2);
      c[13] = ':';
      digits(c, 14, t.getMinute(), 2);
      c[16] = ':';
      digits(c, 17, t.getSecond(), 2);
      c[19] = '.';
      digits(c, 20, t.getNano() / 1_000_000, 3);
      c[23] = 'Z';
      return new String(c);
    }
    String y = (year < 0 ? "-" : "+") + String.format("%06d", Math.abs(year));
    return String.format(
        "%s-%02d-%02dT%02d:%02d:%02d.%03dZ",
        y,
        t.getMonthValue(),
        t.getDayOfMonth(),
        t.getHour(),
        t.getMinute(),
        t.getSecond(),
        t.getNano() / 1_000_000);
  }

  private static void digits(char[] out, int at, int value, int width) {
    for (int i = at + width - 1; i >= at; i--) {
      out[i] = (char) ('0' + value % 10);
      value /= 10;
    }
  }

  /**
   * Parses like JS {@code Date.parse} for the ISO forms clients send: {@code YYYY}, {@code YYYY-MM},
   * {@code YYYY-MM-DD} (UTC), optionally {@code THH:mm}, {@code :ss}, a fraction of any length (only the
   * first 3 digits count, as in V8), and {@code Z} or {@code ±HH:mm}. Also accepted, as V8's fallback parser
   * does: a space instead of {@code T}, {@code ±HHmm} offsets, and the RFC 1123 form of
   * {@code toUTCString()}. Like V8, a day 1..31 past the month's end rolls over and {@code 24:00:00} is the
   * next midnight. Deviation: a date-time without offset is read as UTC (JS would use the process time zone;
   * our servers run in UTC). V8's legacy parser accepts further free-form text that is refused here.
   *
   * @param s the text, may be null
   * @return epoch milliseconds, or empty when JS would give NaN (or the form is not supported here)
   */
  public static OptionalLong parse(String s) {
    if (s == null) {
      return OptionalLong.empty();
    }
    String text = s.trim();
    Matcher m = ISO.matcher(text);
    if (m.matches()) {
      return fromParts(m);
    }
    try {
      long ms = OffsetDateTime.parse(text, DateTimeFormatter.RFC_1123_DATE_TIME).toInstant().toEpochMilli();
      return inRange(ms);
    } catch (DateTimeParseException | ArithmeticException e) {
      return OptionalLong.empty();
    }
  }

  /**
   * The receipt {@code at} check ({@code docs/protocol.md §4.8}): zod 4 {@code datetime()} with default options — a
   * real calendar date, {@code THH:mm:ss}, optional fraction of any precision, ending in {@code Z}, no offset.
   * Decision: seconds are required (newer zod 4 releases require them; the spec leaves minute-only precision
   * unverified, and clients always send {@code toISOString()} output), i.e. the stricter reading.
   *
   * @param s the text, may be null (→ false)
   * @return whether it passes
   */
  public static boolean isZodDatetime(String s) {
    return s != null && ZOD_DATETIME.matcher(s).matches();
  }

  private static OptionalLong fromParts(Matcher m) {
    String yearText = m.group(1);
    if (yearText.equals("-000000")) {
      return OptionalLong.empty(); // ES: minus zero year is invalid
    }
    long year = Long.parseLong(yearText.startsWith("+") ? yearText.substring(1) : yearText);
    int month = m.group(2) == null ? 1 : Integer.parseInt(m.group(2));
    int day = m.group(3) == null ? 1 : Integer.parseInt(m.group(3));
    boolean hasTime = m.group(4) != null;
    if (hasTime && m.group(3) == null) {
      return OptionalLong.empty(); // a time needs a full date
    }
    int hour = hasTime ? Integer.parseInt(m.group(4)) : 0;
    int minute = hasTime ? Integer.parseInt(m.group(5)) : 0;
    int second = m.group(6) == null ? 0 : Integer.parseInt(m.group(6));
    String frac = m.group(7);
    int millis = 0;
    if (frac != null) {
      String three = (frac + "00").substring(0, 3);
      millis = Integer.parseInt(three);
    }
    if (month < 1 || month > 12 || day < 1 || day > 31 || minute > 59 || second > 59) {
      return OptionalLong.empty();
    }
    if (hour > 24 || (hour == 24 && (minute != 0 || second != 0 || millis != 0))) {
      return OptionalLong.empty();
    }
    long offsetMinutes = 0;
    String zone = m.group(8);
    if (zone != null && !zone.equals("Z")) {
      String digits = zone.substring(1).replace(":", "");
      int oh = Integer.parseInt(digits.substring(0, 2));
      int om = Integer.parseInt(digits.substring(2, 4));
      if (oh > 23 || om > 59) {
        return OptionalLong.empty();
      }
      offsetMinutes = (zone.charAt(0) == '-' ? -1 : 1) * (oh * 60L + om);
    }
    if (Math.abs(year) > 300_000) {
      return OptionalLong.empty();
    }
    long days = LocalDate.of((int) year, month, 1).toEpochDay() + (day - 1);
    long ms = ((days * 24 + hour) * 60 + minute - offsetMinutes) * 60_000L + second * 1000L + millis;
    return inRange(ms);
  }

  private static OptionalLong inRange(long ms) {
    return ms > MAX_MS || ms < -MAX_MS ? OptionalLong.empty() : OptionalLong.of(ms);
  }
}
