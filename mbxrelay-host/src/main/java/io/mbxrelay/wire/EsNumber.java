package io.mbxrelay.wire;

import java.math.BigDecimal;
import java.math.MathContext;
import java.math.RoundingMode;

/**
 * ECMAScript {@code Number::toString(10)} for doubles (ECMA-262 §6.1.6.1.20), the number form used by
 * {@code JSON.stringify} and therefore by canonical JSON ({@code docs/protocol.md §1}).
 *
 * <p>Why our own: canonical JSON is the input of every signature, so it must match the JS reference byte for
 * byte. Java 17's {@link Double#toString(double)} does not always produce the shortest round-trip digits
 * (JDK-4511638, fixed only in Java 19) and uses another layout ({@code 1.0E21}), so we derive the shortest
 * digits ourselves from the exact {@link BigDecimal} value and lay them out the ES way.
 *
 * <p>Stateless and thread-safe.
 */
public final class EsNumber {

  private static final double TWO_53 = 9007199254740992d;

  private EsNumber() {}

  /**
   * Formats {@code value} exactly like JS {@code String(value)}: {@code 1.0} → {@code 1}, {@code -0} →
   * {@code 0}, {@code 1e21} → {@code 1e+21}, {@code 1.5e-7} → {@code 1.5e-7}, {@code 1e20} →
   * {@code 100000000000000000000}. Source: {@code docs/protocol.md §1} "Canonical JSON".
   *
   * @param value any finite double
   * @return the ES string form
   * @throws IllegalArgumentException for NaN or ±Infinity (JSON cannot carry them; canonical JSON refuses)
   */
  public static String toString(double value) {
    if (Double.isNaN(value) || Double.isInfinite(value)) {
      throw new IllegalArgumentException("number is not finite: " + value);
    }
    if (value == 0) {
      return "0"; // covers -0
    }
    if (value < 0) {
      return "-" + toString(-value);
    }
    if (value < TWO_53 && value == Math.rint(value)) {
      return Long.toString((long) value); // fast path: exact small integers are their own shortest digits
    }
    BigDecimal shortest = shortestDigits(value).stripTrailingZeros();
    String digits = shortest.unscaledValue().toString();
    int k = digits.length();
    int n = k - shortest.scale(); // value = 0.d1..dk * 10^n
    StringBuilder out = new StringBuilder(k + 8);
    if (k <= n && n <= 21) {
      out.append(digits);
      for (int i = 0; i < n - k; i++) {
        out.append('0');
      }
    } else if (0 < n && n <= 21) {
      out.append(digits, 0, n).append('.').append(digits, n, k);
    } else if (-6 < n && n <= 0) {
      out.append("0.");
      for (int i = 0; i < -n; i++) {
        out.append('0');
      }
      out.append(digits);
    } else {
      int e = n - 1;
      out.append(digits.charAt(0));
      if (k > 1) {
        out.append('.').append(digits, 1, k);
      }
      out.append('e').append(e < 0 ? '-' : '+').append(Math.abs(e));
    }
    return out.toString();
  }

  /**
   * The shortest decimal that parses back to {@code value}; among equally short ones the closest to the exact
   * value (ties: even last digit), as ECMA-262 requires. At each precision only the two neighbours (floor and
   * ceiling) of the exact value can be the answer: any other decimal of that length is farther on the same side.
   */
  private static BigDecimal shortestDigits(double value) {
    BigDecimal exact = new BigDecimal(value);
    for (int p = 1; p <= 17; p++) {
      BigDecimal lo = exact.round(new MathContext(p, RoundingMode.FLOOR));
      BigDecimal hi = exact.round(new MathContext(p, RoundingMode.CEILING));
      boolean loOk = lo.doubleValue() == value;
      boolean hiOk = hi.doubleValue() == value;
      if (loOk && hiOk) {
        int cmp = exact.subtract(lo).compareTo(hi.subtract(exact));
        if (cmp < 0) {
          return lo;
        }
        if (cmp > 0) {
          return hi;
        }
        return lastDigitEven(lo) ? lo : hi;
      }
      if (loOk) {
        return lo;
      }
      if (hiOk) {
        return hi;
      }
    }
    return exact.round(new MathContext(17, RoundingMode.HALF_EVEN)); // unreachable: 17 digits always round-trip
  }

  private static boolean lastDigitEven(BigDecimal d) {
    return d.unscaledValue().testBit(0) == false;
  }
}
