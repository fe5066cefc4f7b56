package io.mbxrelay.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;

/**
 * A private temporary directory for one child JVM (a relay or a host started by a test or a benchmark). sqlite-jdbc
 * copies its native library into {@code org.sqlite.tmpdir} and Vert.x makes its file cache under
 * {@code vertx.cacheDirBase}; both default to the shared temp dir and are removed only by a JVM that exits normally,
 * so every SIGKILLed or halted child used to leave a {@code libsqlitejdbc.so} copy and a {@code vertx-cache-*} dir
 * behind (issue 12 item 9). A child started with {@link #jvmArgs()} writes them here instead, and {@link #delete()}
 * removes the directory once the child is gone. Under Maven the directory is made in {@code target/} (the
 * {@code org.sqlite.tmpdir} the build gives the test JVM), elsewhere in {@code java.io.tmpdir}.
 */
public final class ChildTmp {
  private final Path dir;

  private ChildTmp(Path dir) {
    this.dir = dir;
  }

  /** Makes a new directory for one child. */
  public static ChildTmp create() {
    String base = System.getProperty("org.sqlite.tmpdir");
    try {
      Path parent = Path.of(base != null ? base : System.getProperty("java.io.tmpdir"));
      Files.createDirectories(parent);
      return new ChildTmp(Files.createTempDirectory(parent, "mbxrelay-child"));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** The directory. */
  public Path dir() {
    return dir;
  }

  /** JVM options that put the child's native library copy and Vert.x file cache here. */
  public List<String> jvmArgs() {
    return List.of("-Dorg.sqlite.tmpdir=" + dir, "-Dvertx.cacheDirBase=" + dir.resolve("vertx-cache"));
  }

  /** Removes the directory and everything in it; call once the child has exited. Never throws. */
  public void delete() {
    deleteTree(dir);
  }

  /** Removes a directory tree (a benchmark's store), ignoring what is already gone. Never throws. */
  public static void deleteTree(Path root) {
    if (root == null || !Files.exists(root)) {
      return;
    }
    try (Stream<Path> s = Files.walk(root)) {
      s.sorted(Comparator.reverseOrder()).forEach(p -> {
        try {
          Files.deleteIfExists(p);
        } catch (IOException ignored) {
          // best effort: a file still held open
        }
      });
    } catch (IOException ignored) {
      // best effort
    }
  }
}
