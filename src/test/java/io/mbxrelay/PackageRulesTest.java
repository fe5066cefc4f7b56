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
 * The package rules of docs/architecture.md "Packages", read from the sources: {@code http} does not reach into
 * {@code server} and nothing but {@code cli} names {@code server}; the backend-neutral {@code store} package (the
 * ledger, commands) and its {@code spi}, {@code model} and {@code guard} name no SQL and no backend; the backends do
 * not import each other (the one cross-backend step, {@code store.migrate}, may name two); {@code server}, {@code http}
 * and {@code writer} name no backend; the SQL catalogue and shared JDBC operations ({@code store.jdbc}) name no
 * backend, and both JDBC backends use them; {@code wire} imports no higher layer.
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

  /** Every {@code io.mbxrelay.*} reference of every source file under {@code root} (all subpackages), with its file. */
  private static List<String> referencesUnder(Path root) throws IOException {
    List<String> out = new ArrayList<>();
    try (Stream<Path> dirs = Files.walk(root)) {
      for (Path d : dirs.filter(Files::isDirectory).sorted().toList()) {
        for (String r : references(d, NAMED)) {
          out.add(root.relativize(d) + "/" + r);
        }
      }
    }
    return out;
  }

  @Test
  void nothing_but_cli_names_server() throws IOException {
    for (String pkg : List.of("auth", "budget", "config", "http", "metrics", "store", "writer")) {
      assertThat(referencesUnder(MAIN.resolve(pkg))).as(pkg)
          .filteredOn(r -> r.contains("io.mbxrelay.server.")).isEmpty();
    }
  }

  @Test
  void the_store_backends_do_not_import_each_other() throws IOException {
    List<String> backends = List.of("sqlite", "postgres", "memory");
    for (String b : backends) {
      List<String> refs = referencesUnder(MAIN.resolve("store").resolve(b));
      assertThat(refs).as(b).anyMatch(r -> r.contains("io.mbxrelay.store.")); // the scan sees the references
      for (String other : backends) {
        if (!other.equals(b)) {
          assertThat(refs).as(b + " names " + other)
              .filteredOn(r -> r.contains("io.mbxrelay.store." + other + ".")).isEmpty();
        }
      }
    }
  }

  @Test
  void the_composition_root_http_and_the_writer_name_no_store_backend() throws IOException {
    // store.backend picks a store.spi.StoreBackendFactory; only the backends' own packages (and cli's store-dir
    // commands) name SQLite or PostgreSQL classes
    for (String pkg : List.of("server", "http", "writer")) {
      List<String> refs = referencesUnder(MAIN.resolve(pkg));
      assertThat(refs).as(pkg).anyMatch(r -> r.contains("io.mbxrelay.store.")); // the scan sees the references
      assertThat(refs).as(pkg)
          .filteredOn(r -> r.matches(".*io\\.mbxrelay\\.store\\.(sqlite|postgres|memory|jdbc)\\..*")).isEmpty();
    }
  }

  @Test
  void the_sql_catalogue_names_no_backend_and_both_jdbc_backends_use_it() throws IOException {
    List<String> jdbc = referencesUnder(MAIN.resolve("store/jdbc"));
    assertThat(jdbc).anyMatch(r -> r.contains("io.mbxrelay.store.")); // the scan sees the references
    assertThat(jdbc).filteredOn(r -> r.matches(".*io\\.mbxrelay\\.store\\.(sqlite|postgres|memory)\\..*")).isEmpty();
    assertThat(jdbc).filteredOn(r -> r.matches(".*io\\.mbxrelay\\.(server|http|cli|writer|auth)\\..*")).isEmpty();
    for (String b : List.of("sqlite", "postgres")) {
      assertThat(referencesUnder(MAIN.resolve("store").resolve(b))).as(b)
          .anyMatch(r -> r.contains("io.mbxrelay.store.jdbc."));
    }
  }

  @Test
  void the_store_model_spi_and_guard_name_no_backend_and_no_rules() throws IOException {
    for (String pkg : List.of("store/model", "store/spi", "store/guard")) {
      List<String> refs = references(MAIN.resolve(pkg), NAMED);
      assertThat(refs).as(pkg)
          .filteredOn(r -> r.matches(".*io\\.mbxrelay\\.store\\.(sqlite|postgres|memory|jdbc)\\..*")).isEmpty();
      assertThat(refs).as(pkg)
          .filteredOn(r -> r.matches(".*io\\.mbxrelay\\.(server|http|cli|writer)\\..*")).isEmpty();
      if (!pkg.equals("store/spi")) { // the SPI names the request state a shared store gives (auth.SharedRequestState)
        assertThat(refs).as(pkg).filteredOn(r -> r.contains("io.mbxrelay.auth.")).isEmpty();
      }
    }
  }

  @Test
  void wire_names_no_higher_layer_and_crypto_names_only_wire() throws IOException {
    Path hostMain = Path.of("mbxrelay-host/src/main/java/io/mbxrelay");
    List<String> wire = references(hostMain.resolve("wire"), NAMED);
    assertThat(wire).filteredOn(r -> !r.contains("io.mbxrelay.wire.")).isEmpty();
    List<String> crypto = references(hostMain.resolve("crypto"), NAMED);
    assertThat(crypto).filteredOn(r -> !r.matches(".*io\\.mbxrelay\\.(wire|crypto)\\..*")).isEmpty();
  }
}
