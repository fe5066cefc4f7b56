package io.mbxrelay.host;

import io.mbxrelay.crypto.Ed25519KeyPair;
import io.mbxrelay.crypto.RelayKeys;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Clock;
import java.util.Random;

/**
 * A host process for crash drills: {@code HostDrillMain <keyFile> <storeFile> <relayUrl> <name> <appLog>} runs one
 * tick and exits 0. The application appends {@code msgId} lines to {@code appLog} (fsynced, outside the host store)
 * and answers Duplicate for an id it already holds. {@code MBX_HOST_TEST_CRASH=<point>} halts the JVM (like SIGKILL)
 * the first time the agent reaches that hook point.
 */
public final class HostDrillMain {
  private HostDrillMain() {}

  public static void main(String[] args) throws Exception {
    Ed25519KeyPair key = RelayKeys.parse(Files.readString(Path.of(args[0])));
    Path log = Path.of(args[4]);
    String crash = System.getenv("MBX_HOST_TEST_CRASH");
    HostAgent.Hook hook = p -> {
      if (p.equals(crash)) {
        System.out.println("halting at " + p);
        System.out.flush();
        Runtime.getRuntime().halt(137);
      }
    };
    try (HostStore store = HostStore.open(Path.of(args[1]));
        StandaloneTransports t = new StandaloneTransports(key, Clock.systemUTC());
        HostAgent agent = new HostAgent(store, key, args[2], new HostAgent.Options(args[3], "", Clock.systemUTC(),
            new Random(), hook), t, d -> {
              String held = Files.exists(log) ? Files.readString(log) : "";
              if (held.lines().anyMatch(d.msgId()::equals)) {
                return new HostApplication.Verdict.Duplicate();
              }
              Files.writeString(log, d.msgId() + "\n", StandardCharsets.UTF_8, StandardOpenOption.CREATE,
                  StandardOpenOption.APPEND, StandardOpenOption.SYNC);
              return new HostApplication.Verdict.Accepted(null);
            })) {
      TickReport r = agent.tick();
      System.out.println("tick " + r.session() + " delivered=" + r.delivered() + " duplicates=" + r.duplicates()
          + " through=" + r.receivedThrough() + " acked=" + r.ackedThrough());
    }
    System.exit(0);
  }
}
