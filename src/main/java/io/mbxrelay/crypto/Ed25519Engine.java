package io.mbxrelay.crypto;

import java.util.Locale;
import java.util.Optional;

/**
 * The Ed25519 implementation behind {@link Ed25519} and {@link Ed25519KeyPair} (issue 18; docs/performance.md
 * "Ed25519: BouncyCastle vs AWS-LC (ACCP) vs libsodium"). Chosen once, when this class is first used: AWS-LC through
 * the Amazon Corretto Crypto Provider when its native code loads, reports itself healthy and passes a known-answer
 * self-test against BouncyCastle; otherwise BouncyCastle, with the reason in {@link #fallbackReason()} (another OS or
 * architecture than linux-x86_64, a missing libc, a temp dir it cannot load code from, or
 * {@code -Dmbxrelay.crypto=bouncycastle}).
 *
 * <p>Both engines accept exactly the same signatures ({@code Ed25519EquivalenceTest}): BouncyCastle's rules are the
 * contract ({@code docs/protocol.md §1}: pure Ed25519, canonical R and S, small-order and non-canonical keys refused,
 * cofactored equation). The ACCP engine refuses what BouncyCastle refuses before AWS-LC sees it (the key check is
 * BouncyCastle's, cached with the key), takes AWS-LC's "valid" as final (AWS-LC's cofactorless check implies
 * BouncyCastle's cofactored one), and on "invalid" asks BouncyCastle again unless both R and the key are in the
 * prime-order subgroup: a small-order component in either is the only way to a signature that BouncyCastle accepts
 * and AWS-LC refuses. Signatures are deterministic (RFC 8032) and byte-identical.
 *
 * <p>Threading: the engine, its signers and its verifiers are safe on any thread (the ACCP engine keeps one JCA
 * {@code Signature} per thread, never a shared one). ACCP is used only through this class; it is never installed as a
 * JCA provider, so nothing else in the process (TLS, JWT checks, SecureRandom) changes.
 */
public abstract sealed class Ed25519Engine permits BouncyCastleEd25519Engine, AccpEd25519Engine {

  /** System property that picks the engine: {@code auto} (the default) or {@code bouncycastle}. */
  public static final String PROPERTY = "mbxrelay.crypto";

  /** Which library signs and verifies; its {@link #label()} is the status field and metric label value. */
  public enum Kind {
    /** AWS-LC through the Amazon Corretto Crypto Provider (native code, linux-x86_64). */
    AWS_LC("aws-lc"),
    /** BouncyCastle's RFC 8032 functions (pure Java, every platform). */
    BOUNCYCASTLE("bouncycastle");

    private final String label;

    Kind(String label) {
      this.label = label;
    }

    /**
     * The stable lower-case name: {@code aws-lc} or {@code bouncycastle}.
     *
     * @return the label
     */
    public String label() {
      return label;
    }
  }

  Ed25519Engine() {}

  /**
   * The engine this process uses, selected on first use (see the class comment).
   *
   * @return the engine
   */
  public static Ed25519Engine inUse() {
    return Selection.ENGINE;
  }

  /**
   * Starts the selection on a daemon thread and returns at once, so that loading ACCP (unpacking and linking its
   * native library, its self-tests and ours: a few hundred ms) overlaps other start-up work; a thread that needs the
   * engine before it is ready waits for it. Calling it again, or after the selection, does nothing.
   */
  public static void loadInBackground() {
    if (BACKGROUND.compareAndSet(false, true)) {
      Thread t = new Thread(Ed25519Engine::inUse, "ed25519-engine-load");
      t.setDaemon(true);
      t.start();
    }
  }

  private static final java.util.concurrent.atomic.AtomicBoolean BACKGROUND =
      new java.util.concurrent.atomic.AtomicBoolean();

  /**
   * Why BouncyCastle is in use instead of AWS-LC: forced by {@value #PROPERTY}, or what stopped ACCP (the exception's
   * class and message, never key material).
   *
   * @return the reason, or empty when AWS-LC is in use
   */
  public static Optional<String> fallbackReason() {
    return Optional.ofNullable(Selection.REASON);
  }

  /**
   * Which library this engine uses.
   *
   * @return the kind
   */
  public abstract Kind kind();

  /**
   * The library and its version for logs, e.g. {@code AWS-LC v1.47.0 (ACCP 2.5.0)} or
   * {@code BouncyCastle (pure Java)}.
   *
   * @return the description
   */
  public abstract String description();

  /**
   * A signer for one key pair.
   *
   * @param seed32 the 32-byte RFC 8032 seed (copied or consumed, never kept by reference)
   * @param pub32 its 32-byte public key, as {@link Ed25519KeyPair} derived it
   * @return the signer; safe on any thread
   */
  abstract Signer signer(byte[] seed32, byte[] pub32);

  /**
   * A verifier for one public key, or null when BouncyCastle refuses the key (not a point, a non-canonical
   * encoding, or one of the small-order points); such a key verifies nothing.
   *
   * @param pub32 the 32-byte public key (not kept by reference)
   * @return the verifier, or null
   */
  abstract Verifier verifier(byte[] pub32);

  /** Signs with one key pair. Safe on any thread. */
  interface Signer {
    /**
     * Pure Ed25519 (RFC 8032 section 5.1.6) of {@code message}.
     *
     * @param message the bytes to sign
     * @return the 64-byte signature
     */
    byte[] sign(byte[] message);
  }

  /** Verifies with one public key. Safe on any thread. */
  interface Verifier {
    /**
     * Whether {@code sig64} is a valid signature of {@code message} by BouncyCastle's rules. Never throws.
     *
     * @param message the signed bytes
     * @param sig64 exactly 64 bytes
     * @return true only for a valid signature
     */
    boolean verify(byte[] message, byte[] sig64);
  }

  /** The selection, in a holder so that it runs once, after both engine classes can initialize. */
  private static final class Selection {
    static final Ed25519Engine ENGINE;
    static final String REASON;

    static {
      Ed25519Engine engine = BouncyCastleEd25519Engine.INSTANCE;
      String reason;
      String wanted = System.getProperty(PROPERTY, "auto").strip().toLowerCase(Locale.ROOT);
      if (wanted.equals("bouncycastle")) {
        reason = "forced by -D" + PROPERTY + "=bouncycastle";
      } else if (!wanted.equals("auto") && !wanted.isEmpty()) {
        reason = "-D" + PROPERTY + " must be auto or bouncycastle";
      } else {
        try {
          engine = AccpEd25519Engine.load(BouncyCastleEd25519Engine.INSTANCE);
          reason = null;
        } catch (Exception | LinkageError e) {
          // LinkageError: the ACCP jar missing (NoClassDefFoundError) or its native code not loadable
          reason = "AWS-LC (ACCP) not available: " + summary(e);
        }
      }
      ENGINE = engine;
      REASON = reason;
    }

    private static String summary(Throwable e) {
      StringBuilder b = new StringBuilder();
      for (Throwable t = e; t != null && b.length() < 300; t = t.getCause() == t ? null : t.getCause()) {
        if (b.length() > 0) {
          b.append(" <- ");
        }
        b.append(t.getClass().getSimpleName());
        if (t.getMessage() != null) {
          b.append(": ").append(t.getMessage().strip());
        }
      }
      return b.length() > 300 ? b.substring(0, 300) + "…" : b.toString();
    }
  }
}
