package io.mbxrelay.crypto;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * The engine is chosen once per process, so each case runs {@link Ed25519EngineProbe} in a child JVM with the test
 * class path: AWS-LC by default on linux-x86_64; BouncyCastle, with the reason, when forced, when ACCP's native code
 * does not load (ACCP told to skip its bundled library, which is what another OS or architecture amounts to) and when
 * the ACCP jar is missing. In every case a signature verifies and a corrupted one does not.
 */
class Ed25519EngineSelectionTest {

  private static String probe(List<String> jvmArgs, boolean withoutAccpJar) throws Exception {
    String cp = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
    if (withoutAccpJar) {
      cp = Arrays.stream(cp.split(File.pathSeparator)).filter(e -> !e.contains("AmazonCorrettoCryptoProvider"))
          .collect(Collectors.joining(File.pathSeparator));
    }
    List<String> cmd = new ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    cmd.addAll(jvmArgs);
    cmd.addAll(List.of("-cp", cp, Ed25519EngineProbe.class.getName()));
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
    assertThat(p.exitValue()).as(out).isZero();
    String[] lines = out.strip().split("\n");
    return lines[lines.length - 1];
  }

  private static boolean linuxX8664() {
    String arch = System.getProperty("os.arch", "").toLowerCase(Locale.ROOT);
    return System.getProperty("os.name", "").toLowerCase(Locale.ROOT).startsWith("linux")
        && (arch.equals("amd64") || arch.equals("x86_64"));
  }

  @Test
  void by_default_aws_lc_is_chosen_on_linux_x86_64() throws Exception {
    assumeTrue(linuxX8664(), "ACCP's native code is built for linux-x86_64 only");
    assertThat(probe(List.of(), false)).isEqualTo("aws-lc||true");
  }

  @Test
  void the_system_property_forces_bouncycastle() throws Exception {
    assertThat(probe(List.of("-Dmbxrelay.crypto=bouncycastle"), false))
        .isEqualTo("bouncycastle|forced by -Dmbxrelay.crypto=bouncycastle|true");
    assertThat(probe(List.of("-Dmbxrelay.crypto=BouncyCastle "), false)).startsWith("bouncycastle|forced");
  }

  @Test
  void an_unknown_property_value_falls_back_to_bouncycastle_and_says_so() throws Exception {
    assertThat(probe(List.of("-Dmbxrelay.crypto=fast"), false))
        .isEqualTo("bouncycastle|-Dmbxrelay.crypto must be auto or bouncycastle|true");
  }

  @Test
  void when_accps_native_code_does_not_load_bouncycastle_takes_over_with_the_reason() throws Exception {
    String out = probe(List.of("-Dcom.amazon.corretto.crypto.provider.useExternalLib=true"), false);
    assertThat(out).startsWith("bouncycastle|AWS-LC (ACCP) not available: ").endsWith("|true");
    if (linuxX8664()) {
      assertThat(out).contains("Unable to load native library");
    }
  }

  @Test
  void without_the_accp_jar_bouncycastle_takes_over_with_the_reason() throws Exception {
    assertThat(probe(List.of(), true)).startsWith("bouncycastle|AWS-LC (ACCP) not available: NoClassDefFoundError")
        .endsWith("|true");
  }
}
