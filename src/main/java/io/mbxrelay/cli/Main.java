package io.mbxrelay.cli;

import picocli.CommandLine;
import picocli.CommandLine.Command;

/**
 * {@code mbxrelay}: the relay server and its operator and host commands (docs/protocol.md §5 "CLI", §6).
 *
 * <p>Exit codes: 0 success, 1 runtime failure, 2 usage or configuration error, 3 the store was refused or failed its
 * check ({@code serve}, {@code check}: damaged, empty or missing where a store lived, invalid metadata, unsafe files;
 * the message names the file and the remedy).
 */
@Command(name = "mbxrelay", mixinStandardHelpOptions = true, versionProvider = Main.Version.class,
    description = "Durable, content-blind store-and-forward relay for AgentMBX hosts.",
    subcommands = {ServeCommand.class, KeygenCommand.class, OpsCommands.RotateEpoch.class, OpsCommands.Backup.class,
        OpsCommands.Restore.class, OpsCommands.Check.class, OpsCommands.Log.class, DenyCommand.class, ClockCommand.class, HostCommand.class,
        HealthcheckCommand.class,
        CommandLine.HelpCommand.class})
public final class Main implements Runnable {

  /**
   * Entry point.
   *
   * @param args command line
   */
  public static void main(String[] args) {
    // Netty 4.2's default "adaptive" allocator keeps about 40 MB of bookkeeping queues on the heap whatever the load
    // (measured, issue 9 goal 5: a 512 MiB heap must also hold 10,000 connections); the pooled allocator does not.
    // Set before anything loads Netty; -Dio.netty.allocator.type wins.
    if (System.getProperty("io.netty.allocator.type") == null) {
      System.setProperty("io.netty.allocator.type", "pooled");
    }
    int code = commandLine().execute(args);
    if (code != 0 || args.length == 0 || !"serve".equals(args[0])) {
      System.exit(code);
    }
  }

  /** The configured picocli command line (tests run commands through it). */
  public static CommandLine commandLine() {
    return new CommandLine(new Main()).setCaseInsensitiveEnumValuesAllowed(true);
  }

  @Override
  public void run() {
    CommandLine.usage(this, System.err);
  }

  /** Version from the jar manifest. */
  static final class Version implements CommandLine.IVersionProvider {
    @Override
    public String[] getVersion() {
      return new String[] {"mbxrelay " + io.mbxrelay.server.RelayServer.version()};
    }
  }
}
