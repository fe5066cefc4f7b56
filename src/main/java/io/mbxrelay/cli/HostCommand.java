package io.mbxrelay.cli;

import picocli.CommandLine;
import picocli.CommandLine.Command;

/**
 * {@code mbxrelay host …}: the host side (docs/protocol.md §6), for hosts talking to relays: {@code enrol},
 * {@code push}, {@code pull} (stateless), and the durable host over {@code host.db}: {@code init}, {@code relay
 * set|add|remove|list}, {@code peer add}, {@code send}, {@code run}, {@code status}, {@code quarantine},
 * {@code doctor}. Host key file default {@code ~/.local/share/mbxrelay-host/host.key}; the stateless commands keep
 * relay key pins in {@code relays.json} next to it and also read the durable host's pins in {@code host.db}. Exit
 * codes: 0 success, 1 relay refusal (or unreachable relay), 2 usage error.
 */
@Command(name = "host", mixinStandardHelpOptions = true, description = "Host-side commands (durable: init, relay"
        + " set|add|remove|list, peer add, send, run, status, quarantine, doctor; stateless: enrol, push, pull).",
    subcommands = {HostEnrolCommand.class, HostPushCommand.class, HostPullCommand.class,
        HostStateCommands.Init.class, HostStateCommands.Relay.class, HostStateCommands.Peer.class,
        HostStateCommands.Send.class, HostStateCommands.Run.class, HostStateCommands.Status.class,
        HostStateCommands.Quarantine.class, HostStateCommands.Doctor.class})
public final class HostCommand implements Runnable {
  @Override
  public void run() {
    CommandLine.usage(this, System.err);
  }
}
