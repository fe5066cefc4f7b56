package io.mbxrelay;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The package rules of docs/architecture.md "Store: ledger and backends", read from the sources: {@code http} does
 * not reach into {@code server} (no package cycle), and the backend-neutral {@code store} package (the ledger, the
 * backend interfaces, commands and records) names no SQL and no backend.
 */
class PackageRulesTest {
  private static final Path MAIN = Path.of("src/main/java/io/mbxrelay");
  private static final Pattern NAMED = Pattern.compile("io\\.mbxrelay\\.([a-z]+(?:\\.[a-z]+)*)\\.[A-Z]");

  /** Every {@code io.mbxrelay.<package>} a source file of {@code dir} (not its subpackages) names, with the file. */
  private static List<String> references(Path dir, Pattern what) throws IOException {
    List<String> out = new ArrayList<>();
    try (Stream<Path> files = Files.list(dir)) {
      for (Path f : files.filter(p -> p.toString().endsWith(".java")).sorted().toList()) {
        String code = Files.readString(f).replaceAll("(?s)/\\*.*?\\*/", "").replaceAll("//[^\\n]*", "");
        Matcher m = what.matcher(code);
        while (m.find()) {
          out.add(f.getFileName() + ": " + m.group());
        }
      }
    }
    return out;
  }

  @Test
  void http_names_nothing_of_server() throws IOException {
    List<String> refs = references(MAIN.resolve("http"), NAMED);
    assertThat(refs).isNotEmpty(); // the scan sees the package's references
    assertThat(refs).filteredOn(r -> r.contains("io.mbxrelay.server.")).isEmpty();
  }

  @Test
  void the_backend_neutral_store_names_no_sql_and_no_backend() throws IOException {
    Path store = MAIN.resolve("store");
    assertThat(references(store, Pattern.compile("java\\.sql\\.\\w+|javax\\.sql\\.\\w+"))).isEmpty();
    List<String> refs = references(store, NAMED);
    assertThat(refs).anyMatch(r -> r.startsWith("RelayLedger.java: io.mbxrelay.config."));
    assertThat(refs).filteredOn(r -> r.matches(".*io\\.mbxrelay\\.(server|http|cli|host)\\..*")).isEmpty();
    assertThat(references(store, Pattern.compile("io\\.mbxrelay\\.store\\.sqlite\\.[A-Z]\\w*"))).isEmpty();
  }

  @Test
  void the_writer_knows_no_http_server_or_cli_and_the_store_knows_no_writer() throws IOException {
    List<String> writer = references(MAIN.resolve("writer"), NAMED);
    assertThat(writer).anyMatch(r -> r.contains("io.mbxrelay.store."));
    assertThat(writer).filteredOn(r -> r.matches(".*io\\.mbxrelay\\.(server|http|cli|host)\\..*")).isEmpty();
    // the writer drives the store; the store and its backends never reach back into the writer
    for (String pkg : List.of("store", "store/sqlite", "store/postgres", "store/jdbc")) {
      if (Files.isDirectory(MAIN.resolve(pkg))) {
        assertThat(references(MAIN.resolve(pkg), NAMED)).as(pkg)
            .filteredOn(r -> r.contains("io.mbxrelay.writer.")).isEmpty();
      }
    }
  }
}
