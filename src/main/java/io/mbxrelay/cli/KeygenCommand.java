package io.mbxrelay.cli;

import io.mbxrelay.crypto.Ed25519KeyPair;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;

/**
 * {@code mbxrelay keygen} (docs/protocol.md §5 "Keys"): prints {@code MBX_RELAY_KEY=<base64 seed>} on stdout (a deploy secret)
 * and the key's fingerprint on stderr.
 */
@Command(name = "keygen", mixinStandardHelpOptions = true,
    description = "Generate a relay key: MBX_RELAY_KEY=<base64 seed> on stdout, its fingerprint on stderr.")
public final class KeygenCommand implements Callable<Integer> {
  @Override
  public Integer call() {
    Ed25519KeyPair key = Ed25519KeyPair.generate();
    System.out.println("MBX_RELAY_KEY=" + key.seedB64());
    System.err.println("[mbxrelay] relay key fingerprint " + key.fingerprint());
    return 0;
  }
}
