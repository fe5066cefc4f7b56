package io.mbxrelay.host;

import io.mbxrelay.crypto.Ed25519KeyPair;
import io.mbxrelay.crypto.RelayKeyException;
import io.mbxrelay.crypto.RelayKeys;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.FileAttribute;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Set;

/**
 * The host's Ed25519 key file: load it, or generate a key and create the file (docs/protocol.md §1 "Ed25519 keys").
 *
 * <p>File format: the relay key file's, {@code {"publicKey":"<base64>","privateKey":"<base64 32-byte seed>"}} and a
 * newline ({@link RelayKeys#toFileJson}); a bare base64 seed or Node PKCS#8 key is read too ({@link RelayKeys#parse}).
 * The file is created with POSIX permissions 0600 from the start (never widened later) and its directory 0700 when
 * missing; a concurrent creator is never overwritten. Nothing here prints or logs key material, and error messages
 * never contain the file content. Stateless and thread-safe; blocking file I/O (not for an event loop).
 */
public final class HostKeys {

  /** Default key file name. */
  public static final String FILE_NAME = "host.key";

  private HostKeys() {}

  /**
   * The key and whether this call created its file.
   *
   * @param key the host key pair
   * @param created true when the file did not exist and was written by this call
   */
  public record Loaded(Ed25519KeyPair key, boolean created) {}

  /**
   * The default key file, {@code ~/.local/share/mbxrelay-host/host.key}.
   *
   * @return the path (not created)
   */
  public static Path defaultFile() {
    String xdg = System.getenv("XDG_DATA_HOME");
    String home = System.getenv("HOME");
    Path data = xdg != null && !xdg.isBlank() ? Path.of(xdg)
        : Path.of(home != null && !home.isBlank() ? home : System.getProperty("user.home"), ".local", "share");
    return data.resolve("mbxrelay-host").resolve(FILE_NAME);
  }

  /**
   * Reads an existing key file.
   *
   * @param file the key file
   * @return the key pair
   * @throws NoSuchFileException when the file does not exist
   * @throws HostKeyException when the content is not a valid key (message names the file, not the content)
   * @throws IOException on other read errors
   */
  public static Ed25519KeyPair load(Path file) throws IOException, HostKeyException {
    String text = Files.readString(file, StandardCharsets.UTF_8);
    try {
      return RelayKeys.parse(text);
    } catch (RelayKeyException e) {
      // RelayKeys words its messages for the relay key; the reason after the prefix is key-free.
      String reason = e.getMessage().replaceFirst("^relay key is not valid: ", "");
      throw new HostKeyException("host key file " + file + " is not valid: " + reason);
    }
  }

  /**
   * Loads the key file, or generates a new key and creates the file (0600, directory 0700) when it does not exist.
   * If another process creates the file at the same time, its key wins and is returned.
   *
   * @param file the key file
   * @return the key and whether it was created
   * @throws HostKeyException when an existing file is not a valid key
   * @throws IOException when the file cannot be read or created
   */
  public static Loaded loadOrCreate(Path file) throws IOException, HostKeyException {
    try {
      return new Loaded(load(file), false);
    } catch (NoSuchFileException e) {
      // create below
    }
    Ed25519KeyPair created = Ed25519KeyPair.generate();
    if (createPrivateFile(file, RelayKeys.toFileJson(created))) {
      return new Loaded(created, true);
    }
    return new Loaded(load(file), false);
  }

  /**
   * Creates {@code file} with {@code content}, 0600 from the start (temp file then hard link, so readers never see
   * a partial file and an existing file is never replaced). Creates the parent directory 0700 if missing.
   *
   * @return false if the file appeared meanwhile
   */
  static boolean createPrivateFile(Path file, String content) throws IOException {
    return RelayKeys.createPrivateFile(file, content);
  }

  /** Writes a new 0600 file and forces it to disk. */
  static void writeNew(Path tmp, String content, boolean posix) throws IOException {
    FileAttribute<?>[] attrs = posix
        ? new FileAttribute<?>[] {PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------"))}
        : new FileAttribute<?>[0];
    try (FileChannel ch = FileChannel.open(tmp, Set.of(StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE),
        attrs)) {
      ByteBuffer buf = ByteBuffer.wrap(content.getBytes(StandardCharsets.UTF_8));
      while (buf.hasRemaining()) {
        ch.write(buf);
      }
      ch.force(true);
    }
  }
}
