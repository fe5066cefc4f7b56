package io.mbxrelay.cli;

import io.mbxrelay.host.HostKeys;
import io.mbxrelay.host.HostStore;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.SQLException;
import java.util.List;
import picocli.CommandLine.Option;

/**
 * The options {@code host push} and {@code host pull} share (a picocli mixin): which relay, which host key (or the
 * host directory of {@code host init}), and the relay key fingerprint to expect when none is pinned yet.
 */
final class RelayConnectionOptions {
  @Option(names = "--relay", paramLabel = "URL", converter = RelayUrl.class,
      description = "Relay base URL (default: the first relay of the host in --dir, or next to --key-file).")
  String relay;

  @Option(names = "--key-file", paramLabel = "FILE",
      description = "Host key file (default: DIR/host.key with --dir, else ~/.local/share/mbxrelay-host/host.key).")
  Path keyFile;

  @Option(names = "--dir", paramLabel = "DIR",
      description = "Host directory of `host init` (its host.key, and the relay pins in its host.db).")
  Path dir;

  @Option(names = "--relay-key", paramLabel = "FINGERPRINT",
      description = "Expected relay key fingerprint (needed when no key is pinned for this relay yet).")
  String relayKey;

  /** The host key file: {@code --key-file}, else {@code DIR/host.key}, else the default. */
  Path keyFile() {
    return keyFile != null ? keyFile : dir != null ? dir.resolve(HostKeys.FILE_NAME) : HostSupport.keyFile(null);
  }

  /** The relay URL: {@code --relay}, else the first relay of the host store next to the key file. */
  String relay(Path keyFile) throws HostSupport.Failure {
    if (relay != null) {
      return relay;
    }
    Path db = HostStore.besideKey(keyFile);
    if (Files.exists(db)) {
      try (HostStore s = HostStore.open(db)) {
        List<String> urls = s.relayUrls();
        if (!urls.isEmpty()) {
          return urls.get(0);
        }
      } catch (SQLException e) {
        throw new HostSupport.Failure(HostSupport.USAGE, "cannot open host store " + db + ": " + e.getMessage());
      }
    }
    throw new HostSupport.Failure(HostSupport.USAGE, "--relay URL is required (no relay is set for the host next to "
        + keyFile + ")");
  }
}
