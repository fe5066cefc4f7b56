package io.mbxrelay.crypto;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.mbxrelay.wire.B64;
import io.mbxrelay.wire.Json;
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
import java.util.Arrays;
import java.util.HexFormat;
import java.util.regex.Pattern;

/**
 * Loading, parsing and first-start creation of the relay's signing key ({@code docs/protocol.md §5} "Keys").
 *
 * <p>Accepted text: starting with <code>&#123;</code> (after trimming) → JSON {@code {"publicKey","privateKey"}} with
 * {@code privateKey} required and a given {@code publicKey} that must match; otherwise the trimmed text is the
 * private key. A private key is base64 of the 32-byte seed or of Node's 48-byte PKCS#8 DER (prefix
 * {@code 302e020100300506032b657004220420} + seed). Errors never echo the input or key material.
 * Stateless and thread-safe; {@link #loadOrCreate} is safe against a concurrent creator (no clobbering).
 */
public final class RelayKeys {

  /** Key file name inside the store dir. */
  public static final String FILE_NAME = "relay.key";
  /** Environment variable that overrides the key file. */
  public static final String ENV = "MBX_RELAY_KEY";

  private static final byte[] PKCS8_PREFIX = HexFormat.of().parseHex("302e020100300506032b657004220420");
  private static final Pattern BASE64_TEXT = Pattern.compile("[A-Za-z0-9+/_-]+={0,2}");
  private static final String INVALID = "relay key is not valid: ";

  private RelayKeys() {}

  /**
   * Parses key text (see the class comment).
   *
   * @param text the key text (env value or file content)
   * @return the key pair
   * @throws RelayKeyException when the text is not a usable key; the message never contains the text
   */
  public static Ed25519KeyPair parse(String text) throws RelayKeyException {
    if (text == null || text.isBlank()) {
      throw new RelayKeyException(INVALID + "empty");
    }
    String t = text.strip();
    if (!t.startsWith("{")) {
      return Ed25519KeyPair.fromSeed(seedOf(t));
    }
    JsonNode json;
    try {
      json = Json.parse(t);
    } catch (IllegalArgumentException e) {
      throw new RelayKeyException(INVALID + "malformed JSON"); // the parser message could quote key text
    }
    if (!json.isObject()) {
      throw new RelayKeyException(INVALID + "expected a JSON object");
    }
    JsonNode priv = json.get("privateKey");
    if (priv == null || !priv.isTextual()) {
      throw new RelayKeyException(INVALID + "privateKey is required");
    }
    Ed25519KeyPair pair = Ed25519KeyPair.fromSeed(seedOf(priv.textValue().strip()));
    JsonNode pub = json.get("publicKey");
    if (pub != null && !pub.isNull()) {
      byte[] given = pub.isTextual() ? B64.decodeLenient(pub.textValue().strip()).orElse(new byte[0]) : new byte[0];
      if (!Arrays.equals(given, pair.publicKey())) {
        throw new RelayKeyException(INVALID + "publicKey does not match privateKey");
      }
    }
    return pair;
  }

  /**
   * The key file content: {@code {"publicKey":"<base64>","privateKey":"<base64 seed>"}} and a newline.
   *
   * @param pair the key pair
   * @return the file text (secret)
   */
  public static String toFileJson(Ed25519KeyPair pair) {
    ObjectNode o = Json.MAPPER.createObjectNode();
    o.put("publicKey", pair.publicKeyB64());
    o.put("privateKey", pair.seedB64());
    return Json.stringify(o) + "\n";
  }

  /**
   * The relay key at start: a non-blank {@code envValueOrNull} (the trimmed {@code MBX_RELAY_KEY}) wins;
   * else {@code <storeDir>/relay.key} is read and parsed; if it does not exist, a new key is generated and the
   * file created atomically with POSIX permissions 0600 from the start (temp file created 0600, then
   * hard-linked into place so a concurrent creator is never overwritten). The store dir is created (0700) if
   * missing. On file systems without POSIX permissions the file is created with default permissions.
   *
   * @param storeDir the relay store directory
   * @param envValueOrNull the value of {@code MBX_RELAY_KEY}, or null when unset
   * @return the key pair
   * @throws RelayKeyException when the env value or the file content is not a valid key (message names the
   *     source, never the content)
   * @throws IOException when the file cannot be read or created
   */
  public static Ed25519KeyPair loadOrCreate(Path storeDir, String envValueOrNull)
      throws RelayKeyException, IOException {
    if (envValueOrNull != null && !envValueOrNull.isBlank()) {
      try {
        return parse(envValueOrNull.strip());
      } catch (RelayKeyException e) {
        throw new RelayKeyException(e.getMessage() + " (from " + ENV + ")");
      }
    }
    Path file = storeDir.resolve(FILE_NAME);
    try {
      return read(file);
    } catch (NoSuchFileException e) {
      // first start: create below
    }
    Ed25519KeyPair created = Ed25519KeyPair.generate();
    if (createPrivateFile(file, toFileJson(created))) {
      return created;
    }
    return read(file); // someone else created it first: theirs wins
  }

  private static Ed25519KeyPair read(Path file) throws IOException, RelayKeyException {
    String text = Files.readString(file, StandardCharsets.UTF_8);
    try {
      return parse(text);
    } catch (RelayKeyException e) {
      throw new RelayKeyException(e.getMessage() + " (in " + file + ")");
    }
  }

  /**
   * Creates an owner-only file for key material: its directory 0700 when missing, the file written 0600 from the
   * start (never chmod after writing), forced to disk, then linked into place so a concurrent creator's file is never
   * replaced. Shared by the relay key and the host key.
   *
   * @param file the file to create
   * @param content its text
   * @return false if the file appeared meanwhile (the caller reads that one)
   * @throws IOException on I/O failure
   */
  public static boolean createPrivateFile(Path file, String content) throws IOException {
    Path dir = file.toAbsolutePath().getParent();
    boolean posix = dir.getFileSystem().supportedFileAttributeViews().contains("posix");
    if (!Files.isDirectory(dir)) {
      if (posix) {
        Files.createDirectories(dir, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
      } else {
        Files.createDirectories(dir);
      }
    }
    Path tmp = dir.resolve(FILE_NAME + ".partial-" + ProcessHandle.current().pid() + "-" + System.nanoTime());
    FileAttribute<?>[] attrs =
        posix
            ? new FileAttribute<?>[] {PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------"))}
            : new FileAttribute<?>[0];
    try {
      try (FileChannel ch =
          FileChannel.open(tmp, java.util.Set.of(StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE), attrs)) {
        ByteBuffer buf = ByteBuffer.wrap(content.getBytes(StandardCharsets.UTF_8));
        while (buf.hasRemaining()) {
          ch.write(buf);
        }
        ch.force(true);
      }
      try {
        Files.createLink(file, tmp);
      } catch (FileAlreadyExistsException e) {
        return false;
      } catch (UnsupportedOperationException e) {
        try {
          Files.move(tmp, file); // no REPLACE_EXISTING: never clobbers
        } catch (FileAlreadyExistsException e2) {
          return false;
        }
      }
      syncDirectory(dir);
      return true;
    } finally {
      Files.deleteIfExists(tmp);
    }
  }

  private static void syncDirectory(Path dir) {
    try (FileChannel ch = FileChannel.open(dir, StandardOpenOption.READ)) {
      ch.force(true);
    } catch (IOException | RuntimeException e) {
      // not supported everywhere (e.g. Windows); the file itself is already forced
    }
  }

  private static byte[] seedOf(String b64) throws RelayKeyException {
    if (!BASE64_TEXT.matcher(b64).matches()) {
      throw new RelayKeyException(INVALID + "expected 32-byte base64 seed");
    }
    byte[] raw = B64.decodeLenient(b64).orElse(new byte[0]);
    if (raw.length == 32) {
      return raw;
    }
    if (raw.length == 48 && Arrays.equals(raw, 0, 16, PKCS8_PREFIX, 0, 16)) {
      return Arrays.copyOfRange(raw, 16, 48);
    }
    throw new RelayKeyException(INVALID + "expected 32-byte base64 seed");
  }
}
