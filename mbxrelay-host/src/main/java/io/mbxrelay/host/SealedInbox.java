package io.mbxrelay.host;

import io.mbxrelay.host.seal.EncKeyPair;
import io.mbxrelay.host.seal.SealException;
import io.mbxrelay.host.seal.SealedEnvelope;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Clock;
import java.util.Objects;
import java.util.regex.Pattern;

/**
 * A {@link HostApplication} that opens every envelope before the application sees it (docs/host-library.md
 * "Receiving"): the envelope must be sealed, signed by exactly the pushing peer's host key over its ciphertext, and
 * open with this host's X25519 key ({@link HostEncKey}); otherwise it is refused with the reason (e.g. {@code body
 * does not open}, {@code bad signature}, {@code not sealed (plaintext envelopes are refused)}) and the agent
 * quarantines it. The {@link Handler} receives the plaintext and the verified sender. When the handler accepts, the
 * delivery receipt names the first {@code to} address at this host (else {@code owner@<this host>}), and with
 * {@code keep} the opened message is also stored in the {@code inbox} table (owner-only host store).
 *
 * <p>Runs on the agent's tick thread inside the item's store transaction (see {@link HostApplication}).
 */
public final class SealedInbox implements HostApplication {

  private static final Pattern NAME_RE = Pattern.compile("owner|[a-z0-9][a-z0-9-]{1,39}");

  /**
   * One opened message.
   *
   * @param relay relay URL
   * @param seq the item's seq
   * @param senderPubkey the sending host's key (base64); the envelope signature verified with it
   * @param senderName the peer's name as accepted ({@link HostAgent#addPeer})
   * @param envelope the opened envelope (plaintext body)
   * @param connection the host store connection inside the item's transaction (see {@link HostApplication})
   */
  public record Message(String relay, long seq, String senderPubkey, String senderName,
      SealedEnvelope.Opened envelope, Connection connection) {}

  /** The application's side. */
  @FunctionalInterface
  public interface Handler {
    /**
     * Takes one opened message; same contract as {@link HostApplication#receive}.
     *
     * @param m the message
     * @return the verdict ({@code Accepted(null)} names the default recipient)
     * @throws Exception for local failures (rolled back, offered again next tick)
     */
    Verdict receive(Message m) throws Exception;
  }

  private final HostStore store;
  private final Handler handler;
  private final boolean keep;
  private final Clock clock;
  private EncKeyPair key;

  /**
   * @param store the host store (holds this host's encryption key)
   * @param handler the application
   * @param keep also store accepted messages in the {@code inbox} table
   * @param clock time source for the inbox rows
   */
  public SealedInbox(HostStore store, Handler handler, boolean keep, Clock clock) {
    this.store = Objects.requireNonNull(store);
    this.handler = Objects.requireNonNull(handler);
    this.keep = keep;
    this.clock = Objects.requireNonNull(clock);
  }

  @Override
  public Verdict receive(Delivery d) throws Exception {
    if (key == null) {
      key = HostEncKey.loadOrCreate(store);
    }
    SealedEnvelope.Opened o;
    try {
      o = SealedEnvelope.open(d.wire(), d.senderPubkey(), key);
    } catch (SealException e) {
      return new Verdict.Refused(e.getMessage());
    }
    Verdict v = handler.receive(new Message(d.relay(), d.seq(), d.senderPubkey(), d.senderName(), o,
        d.connection()));
    if (v instanceof Verdict.Accepted a) {
      if (keep) {
        InboxApplication.store(d, clock.millis(), o);
      }
      if (a.recipient() == null) {
        return new Verdict.Accepted(recipient(o));
      }
    }
    return v;
  }

  private String recipient(SealedEnvelope.Opened o) throws SQLException {
    String host = store.setting("host_name").orElse("");
    for (String to : o.to()) {
      int at = to.indexOf('@');
      if (at > 0 && at == to.lastIndexOf('@') && to.substring(at + 1).equalsIgnoreCase(host)
          && NAME_RE.matcher(to.substring(0, at)).matches() && to.length() <= 104) {
        return to.substring(0, at) + "@" + host;
      }
    }
    return null;
  }
}
