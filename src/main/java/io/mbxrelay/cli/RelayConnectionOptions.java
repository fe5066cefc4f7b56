package io.mbxrelay.cli;

import java.nio.file.Path;
import picocli.CommandLine.Option;

/**
 * The options {@code host push} and {@code host pull} share (a picocli mixin): which relay, which host key, and the
 * relay key fingerprint to expect when none is pinned yet.
 */
final class RelayConnectionOptions {
  @Option(names = "--relay", required = true, paramLabel = "URL", converter = RelayUrl.class,
      description = "Relay base URL.")
  String relay;

  @Option(names = "--key-file", paramLabel = "FILE",
      description = "Host key file (default: ~/.local/share/mbxrelay-host/host.key).")
  Path keyFile;

  @Option(names = "--relay-key", paramLabel = "FINGERPRINT",
      description = "Expected relay key fingerprint (needed when no key is pinned for this relay yet).")
  String relayKey;
}
