package io.mbxrelay.wire;

import static org.assertj.core.api.Assertions.assertThat;

import io.mbxrelay.http.EnrolmentRoutes;
import java.util.List;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;

/**
 * Every regular expression that reads client input (docs/security.md "Regular expressions that see client input")
 * run on 1 MB inputs built to make a backtracking engine split runs in many ways. A quadratic pattern would need
 * hours on these; a linear one needs milliseconds. The bound of 2 s for all of them only tells the two apart.
 */
class ClientRegexLinearityTest {
  private static final int N = 1 << 20;

  @Test
  void every_client_facing_pattern_fails_a_1_mb_adversarial_input_in_linear_time() {
    String digits = "1".repeat(N);
    String letters = "a".repeat(N);
    String iso = "2026-01-01T00:00:00.";
    List<Supplier<Object>> runs = List.of(
        () -> EnrolmentRoutes.HOST_RE.matcher(letters + "!").matches(),
        () -> EnrolmentRoutes.OWNER_FP_RE.matcher(letters + "!").matches(),
        () -> ReceiptCheck.HOST_RE.matcher(letters + "!").matches(),
        () -> EnvelopeCheck.NAME_RE.matcher(letters + "!").matches(),
        () -> IsoTime.parse(iso + digits + "x"),
        () -> IsoTime.parse(iso + digits + "+0"),
        () -> IsoTime.parse(iso + digits + "Z!"),
        () -> IsoTime.parse(digits + "x"),
        () -> IsoTime.isZodDatetime(iso + digits + "x"),
        () -> IsoTime.isZodDatetime(iso + digits + "ZZ"),
        () -> EnvelopeCheck.check(Json.parse("{\"v\":3,\"id\":\"" + "A".repeat(N) + "\"}")),
        () -> B64.isStdB64("A".repeat(N) + "=!"),
        () -> JsNumber.ofString(digits + "x"));
    long start = System.nanoTime();
    for (Supplier<Object> run : runs) {
      Object result = run.get();
      assertThat(result).isIn(false, java.util.OptionalLong.empty(), Double.NaN,
          java.util.Optional.of("bad id"));
    }
    assertThat((System.nanoTime() - start) / 1_000_000).as("ms for 13 adversarial 1 MB inputs").isLessThan(2000);
  }
}
