package io.mbxrelay.cli;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.mbxrelay.crypto.Ed25519KeyPair;
import io.mbxrelay.crypto.Fingerprint;
import io.mbxrelay.host.BadAnswer;
import io.mbxrelay.host.HostKeyException;
import io.mbxrelay.host.HostKeys;
import io.mbxrelay.host.RelayKeyChanged;
import io.mbxrelay.host.RelayPin;
import io.mbxrelay.host.RelayPins;
import io.mbxrelay.host.Refused;
import io.mbxrelay.wire.Json;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Optional;

/**
 * What the {@code mbxrelay host} commands share: key file and pin file handling, the relay pin decision, and exit
 * codes (0 success, 1 relay refusal or unreachable relay, 2 usage or local configuration error). People read stderr
 * (lines prefixed {@code [mbxrelay]}); machines read the JSON on stdout. Key material is never printed.
 */
final class HostSupport {

  static final int OK = 0;
  static final int REFUSED = 1;
  static final int USAGE = 2;
  /** Per-request timeout of the CLI, ms. */
  static final long REQUEST_TIMEOUT_MS = 30_000;

  private HostSupport() {}

  /** A failure that ends the command with an exit code and a line for people. */
  static final class Failure extends Exception {
    final int code;

    Failure(int code, String message) {
      super(message, null, false, false);
      this.code = code;
    }
  }

  /** The relay pin decision and the pin file it came from. */
  record Pinning(RelayPin pin, RelayPins pins, Path pinFile, boolean tofu) {}

  static Path keyFile(Path option) {
    return option != null ? option : HostKeys.defaultFile();
  }

  /** Loads an existing key (push, pull). */
  static Ed25519KeyPair loadKey(Path keyFile) throws Failure {
    try {
      return HostKeys.load(keyFile);
    } catch (NoSuchFileException e) {
      throw new Failure(USAGE, "no host key at " + keyFile + ": run `mbxrelay host enrol` first");
    } catch (HostKeyException e) {
      throw new Failure(USAGE, e.getMessage());
    } catch (IOException e) {
      throw new Failure(USAGE, "cannot read host key " + keyFile + ": " + e.getClass().getSimpleName());
    }
  }

  /**
   * Decides how to trust the relay key: the stored pin for the URL; {@code --relay-key} (must agree with a stored
   * pin); else trust on first use only when {@code allowTofu} (enrol), else a usage failure.
   */
  static Pinning pinning(String url, Path keyFile, String relayKeyOption, boolean allowTofu) throws Failure {
    Path pinFile = RelayPins.besideKey(keyFile);
    RelayPins pins;
    try {
      pins = RelayPins.load(pinFile);
    } catch (IOException e) {
      throw new Failure(USAGE, e.getMessage());
    }
    Optional<String> stored = pins.get(url);
    if (stored.isEmpty()) {
      stored = hostStorePin(url, keyFile); // the durable host's pins (`host relay set`), issue 21 bug 7
    }
    if (relayKeyOption != null) {
      Optional<String> fp = Fingerprint.normalize(relayKeyOption);
      if (fp.isEmpty()) {
        throw new Failure(USAGE, "--relay-key must be a relay key fingerprint (e.g. 3f9a-0c11-7d2e-b845) or key");
      }
      if (stored.isPresent() && !Fingerprint.ofB64(stored.get()).equals(fp.get())) {
        throw new Failure(REFUSED, "relay key for " + url + " is pinned as " + Fingerprint.ofB64(stored.get())
            + ", not " + fp.get() + "; refusing (edit " + pinFile + " if the relay really changed its key)");
      }
      return new Pinning(stored.<RelayPin>map(RelayPin.Key::new).orElse(new RelayPin.Fingerprint(fp.get())), pins,
          pinFile, false);
    }
    if (stored.isPresent()) {
      return new Pinning(new RelayPin.Key(stored.get()), pins, pinFile, false);
    }
    if (!allowTofu) {
      throw new Failure(USAGE, "no relay key pinned for " + url
          + ": run `mbxrelay host enrol` first or pass --relay-key FINGERPRINT");
    }
    return new Pinning(new RelayPin.TrustOnFirstUse(), pins, pinFile, true);
  }

  /**
   * The relay key pinned for {@code url} in the host store next to the key file ({@code host init} and
   * {@code host relay set} keep their pins there, not in {@code relays.json}); empty when there is no such store.
   */
  static Optional<String> hostStorePin(String url, Path keyFile) throws Failure {
    Path db = io.mbxrelay.host.HostStore.besideKey(keyFile);
    if (!java.nio.file.Files.exists(db)) {
      return Optional.empty();
    }
    try (io.mbxrelay.host.HostStore s = io.mbxrelay.host.HostStore.open(db)) {
      return s.relay(url).map(io.mbxrelay.host.HostStore.RelayState::relayPubkey);
    } catch (java.sql.SQLException e) {
      throw new Failure(USAGE, "cannot open host store " + db + ": " + e.getMessage());
    }
  }

  /** Stores a newly learned relay key in the pin file (no-op when already pinned). */
  static void savePin(Pinning p, String url, Optional<String> relayKey, PrintWriter err) throws Failure {
    if (relayKey.isEmpty() || p.pin() instanceof RelayPin.Key || p.pins().get(url).equals(relayKey)) {
      return; // known before the call (relays.json or the host store)
    }
    try {
      p.pins().with(url, relayKey.get()).save(p.pinFile());
    } catch (IOException e) {
      throw new Failure(REFUSED, "cannot write relay pin file " + p.pinFile() + ": " + e.getClass().getSimpleName());
    }
    err.println("[mbxrelay] pinned relay key " + Fingerprint.ofB64(relayKey.get()) + " for " + RelayPins.normalizeUrl(url)
        + (p.tofu() ? " (trust on first use; compare it with the relay operator's fingerprint)" : ""));
  }

  /** The failure for the outcomes every command treats the same way. */
  static Failure failureOf(Object outcome, String what) {
    if (outcome instanceof Refused r) {
      return new Failure(REFUSED, "relay refused " + what + ": " + r.status() + " " + r.error()
          + (r.code() == null ? "" : " (" + r.code() + ")"));
    }
    if (outcome instanceof RelayKeyChanged c) {
      return new Failure(REFUSED, "relay key changed: pinned " + c.pinnedFingerprint() + ", the relay presents "
          + Fingerprint.ofB64(c.presentedPubkey()) + "; refusing to talk to it");
    }
    if (outcome instanceof BadAnswer b) {
      return new Failure(REFUSED, "relay answer to " + what + " is not usable (" + b.status() + "): " + b.why());
    }
    return new Failure(REFUSED, "unexpected outcome of " + what + ": " + outcome.getClass().getSimpleName());
  }

  static void printJson(PrintWriter out, ObjectNode o) {
    out.println(Json.stringify(o));
    out.flush();
  }

  static int fail(PrintWriter err, Failure f) {
    err.println("[mbxrelay] " + f.getMessage());
    err.flush();
    return f.code;
  }
}
