package io.mbxrelay.cli;

import picocli.CommandLine;
import picocli.CommandLine.Command;

/**
 * {@code mbxrelay host …}: the host side (wire.md §6), for hosts talking to a relay.
 */
@Command(name = "host", mixinStandardHelpOptions = true, description = "Host-side commands (enrol, push, pull).",
    subcommands = {})
public final class HostCommand implements Runnable {
  @Override
  public void run() {
    CommandLine.usage(this, System.err);
  }
}
