package io.mbxrelay.host;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.mbxrelay.wire.B64;
import io.mbxrelay.wire.Json;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Collections;
import java.util.Iterator;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;

/**
 * The host's relay key pins (docs/protocol.md §6 "Session open", step 1): a small JSON file, by default
 * {@code relays.json} next to the host key, mapping a relay base URL to the relay's base64 public key, e.g.
 * {@code {"https://relay.example":"<44-char base64>"}}. Entries whose value is not a 32-byte base64 key are ignored.
 *
 * <p>Immutable value; {@link #load} and {@link #save} do blocking file I/O (not for an event loop). {@link #save}
 * writes a temp file (0600) and renames it over the old one.
 */
public final class RelayPins {

  /** Pin file name, next to the host key. */
  public static final String FILE_NAME = "relays.json";

  private final Map<String, String> pins;

  private RelayPins(Map<String, String> pins) {
    this.pins = Collections.unmodifiableMap(new TreeMap<>(pins));
  }

  /**
   * The pin file next to a key file.
   *
   * @param keyFile the host key file
   * @return {@code <dir of keyFile>/relays.json}
   */
  public static Path besideKey(Path keyFile) {
    return keyFile.toAbsolutePath().resolveSibling(FILE_NAME);
  }

  /**
   * The canonical form of a relay base URL used as the pin key: trimmed, without trailing {@code /}.
   *
   * @param url the URL as typed
   * @return the normalized URL
   */
  public static String normalizeUrl(String url) {
    String u = url.strip();
    while (u.endsWith("/")) {
      u = u.substring(0, u.length() - 1);
    }
    return u;
  }

  /**
   * Reads the pin file; a missing file is an empty set of pins.
   *
   * @param file the pin file
   * @return the pins
   * @throws IOException when the file cannot be read or is not a JSON object
   */
  public static RelayPins load(Path file) throws IOException {
    String text;
    try {
      text = Files.readString(file, StandardCharsets.UTF_8);
    } catch (NoSuchFileException e) {
      return new RelayPins(Map.of());
    }
    JsonNode n;
    try {
      n = Json.parse(text);
    } catch (IllegalArgumentException e) {
      throw new IOException("relay pin file " + file + " is not valid JSON");
    }
    if (!n.isObject()) {
      throw new IOException("relay pin file " + file + " is not a JSON object");
    }
    Map<String, String> m = new TreeMap<>();
    for (Iterator<Map.Entry<String, JsonNode>> it = n.fields(); it.hasNext(); ) {
      Map.Entry<String, JsonNode> e = it.next();
      if (e.getValue().isTextual() && B64.isPubkey(e.getValue().textValue())) {
        m.put(normalizeUrl(e.getKey()), e.getValue().textValue());
      }
    }
    return new RelayPins(m);
  }

  /**
   * The pinned relay key of a URL.
   *
   * @param url the relay base URL (normalized here)
   * @return the base64 relay public key, or empty when not pinned
   */
  public Optional<String> get(String url) {
    return Optional.ofNullable(pins.get(normalizeUrl(url)));
  }

  /**
   * These pins plus (or with a replaced) one entry.
   *
   * @param url the relay base URL (normalized here)
   * @param relayPubkey the relay's base64 public key
   * @return the new pins
   */
  public RelayPins with(String url, String relayPubkey) {
    Map<String, String> m = new TreeMap<>(pins);
    m.put(normalizeUrl(url), relayPubkey);
    return new RelayPins(m);
  }

  /**
   * Writes the pins (temp file created 0600, then renamed over {@code file}; the directory must exist).
   *
   * @param file the pin file
   * @throws IOException on write errors
   */
  public void save(Path file) throws IOException {
    ObjectNode o = Json.MAPPER.createObjectNode();
    pins.forEach(o::put);
    Path abs = file.toAbsolutePath();
    boolean posix = abs.getFileSystem().supportedFileAttributeViews().contains("posix");
    Path tmp = abs.resolveSibling(abs.getFileName() + ".partial-" + ProcessHandle.current().pid() + "-"
        + System.nanoTime());
    try {
      HostKeys.writeNew(tmp, Json.stringify(o) + "\n", posix);
      Files.move(tmp, abs, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    } finally {
      Files.deleteIfExists(tmp);
    }
  }

  /**
   * All pins.
   *
   * @return URL → base64 relay public key, sorted by URL, unmodifiable
   */
  public Map<String, String> asMap() {
    return pins;
  }
}
