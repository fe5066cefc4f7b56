package io.mbxrelay.cli;

import picocli.CommandLine;
import picocli.CommandLine.Command;

/**
 * {@code mbxrelay host …}: the host side (wire.md §6), for hosts talking to a relay: {@code enrol}, {@code push},
 * {@code pull}. Host key file default {@code ~/.local/share/mbxrelay-host/host.key}, relay key pins in
 * {@code relays.json} next to it. Exit codes: 0 success, 1 relay refusal (or unreachable relay), 2 usage error.
 */
@Command(name = "host", mixinStandardHelpOptions = true, description = "Host-side commands (enrol, push, pull).",
    subcommands = {HostEnrolCommand.class, HostPushCommand.class, HostPullCommand.class})
public final class HostCommand implements Runnable {
  @Override
  public void run() {
    CommandLine.usage(this, System.err);
  }
}
