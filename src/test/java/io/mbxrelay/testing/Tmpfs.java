package io.mbxrelay.testing;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;

/**
 * A small tmpfs mounted for one test (issue 10 item 9: a disk that really fills up). Needs root (CI runs as root);
 * other users skip the test. {@link #close()} unmounts it, lazily if something still holds a file open.
 */
public final class Tmpfs implements AutoCloseable {
  public final Path dir;

  private Tmpfs(Path dir) {
    this.dir = dir;
  }

  /**
   * Mounts a tmpfs of {@code size} (mount syntax, e.g. {@code 8m}) on a new directory {@code parent/mnt}.
   *
   * @param parent a temporary directory of the test
   * @param size the size
   * @return the mounted file system
   */
  public static Tmpfs mount(Path parent, String size) throws Exception {
    Assumptions.assumeTrue("root".equals(System.getProperty("user.name")), "mounting a tmpfs needs root");
    Path dir = Files.createDirectories(parent.resolve("mnt"));
    run("mount", "-t", "tmpfs", "-o", "size=" + size + ",mode=0700", "tmpfs", dir.toString());
    return new Tmpfs(dir);
  }

  /** Changes the size of the mounted file system (e.g. more room for the pull after the test). */
  public void resize(String size) throws Exception {
    run("mount", "-o", "remount,size=" + size, dir.toString());
  }

  /**
   * Writes a filler file until the file system is full or {@code maxBytes} are written.
   *
   * @param name file name inside the mount
   * @param maxBytes most bytes to write
   * @return the file
   */
  public Path fill(String name, long maxBytes) throws IOException {
    Path f = dir.resolve(name);
    byte[] block = new byte[4096];
    long written = 0;
    try (OutputStream out = Files.newOutputStream(f)) {
      while (written < maxBytes) {
        out.write(block);
        written += block.length;
      }
    } catch (IOException full) {
      // no space left: that is the point
    }
    return f;
  }

  /** Usable free bytes now. */
  public long free() {
    return dir.toFile().getUsableSpace();
  }

  private static void run(String... cmd) throws Exception {
    Process p = new ProcessBuilder(List.of(cmd)).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes());
    if (!p.waitFor(30, TimeUnit.SECONDS) || p.exitValue() != 0) {
      throw new IllegalStateException(String.join(" ", cmd) + " failed: " + out);
    }
  }

  /** Unmounts; an interrupt is kept and reported as an I/O failure (so try-with-resources need not catch it). */
  @Override
  public void close() throws java.io.IOException {
    try {
      run("umount", "-l", dir.toString());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new java.io.IOException("interrupted while unmounting " + dir, e);
    } catch (java.io.IOException | RuntimeException e) {
      throw e;
    } catch (Exception e) {
      throw new java.io.IOException(e);
    }
  }
}
