package io.mbxrelay.docs;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.File;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Collectors;
import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * docs/host-library.md's "Complete example" needs nothing but the io.mbxrelay:mbxrelay-host artifact the same page
 * tells a reader to depend on (issue 21 part 2): compiled here from the page's text, against this module's classes
 * and dependencies, where no relay class is. The server module's {@code HostLibraryExampleTest} runs the same code
 * against two real relays.
 */
class DocumentedExampleCompilesTest {

  @TempDir Path dir;

  /** The fenced {@code java} block under the "Complete example" heading (tests run in the repository root). */
  static String documentedExample() throws Exception {
    List<String> lines = Files.readAllLines(Path.of("docs/host-library.md"));
    int heading = lines.indexOf("## Complete example");
    assertThat(heading).as("heading in docs/host-library.md").isNotNegative();
    int open = lines.subList(heading, lines.size()).indexOf("```java") + heading;
    int close = lines.subList(open + 1, lines.size()).indexOf("```") + open + 1;
    assertThat(open).isGreaterThan(heading);
    return String.join("\n", lines.subList(open + 1, close)) + "\n";
  }

  @Test
  void theDocumentedExampleCompilesAgainstTheHostLibraryAloneWithoutWarnings() throws Exception {
    Path source = dir.resolve("HostLibraryExample.java");
    Files.writeString(source, documentedExample());
    // the library's classes and its dependency closure (and the test tools, which the example does not import); not
    // this module's test classes
    String cp = Arrays.stream(System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"))
            .split(File.pathSeparator))
        .filter(e -> !e.endsWith("test-classes") && !e.endsWith("test-classes" + File.separator))
        .collect(Collectors.joining(File.pathSeparator));
    assertThat(cp).contains("mbxrelay-host").doesNotContain("mbxrelay-server");
    JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
    StringWriter out = new StringWriter();
    Boolean ok = javac.getTask(out, null, null,
        List.of("-proc:none", "-Xlint:all,-classfile", "-Werror", "--release", "17", "-cp", cp,
            "-d", dir.resolve("classes").toString()),
        null, javac.getStandardFileManager(null, null, null).getJavaFileObjects(source)).call();
    assertThat(ok).as(out.toString()).isTrue();
    assertThat(dir.resolve("classes/HostLibraryExample.class")).exists();
  }
}
