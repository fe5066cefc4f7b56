package io.mbxrelay.crypto;

import com.amazon.corretto.crypto.provider.AmazonCorrettoCryptoProvider;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.PrivateKey;
import java.security.Provider;
import java.security.PublicKey;
import java.security.Signature;
import java.security.spec.PKCS8EncodedKeySpec;
import java.security.spec.X509EncodedKeySpec;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.SplittableRandom;

/**
 * Ed25519 with AWS-LC through the Amazon Corretto Crypto Provider's JCA {@code Signature "Ed25519"}, glued so that it
 * accepts exactly what {@link BouncyCastleEd25519Engine} accepts (the rules in {@link Ed25519Engine}'s class comment;
 * evidence in {@code Ed25519EquivalenceTest}).
 *
 * <p>ACCP has no Ed25519 {@code KeyFactory}: keys are built by the JDK's ({@code SunEC}) from the fixed DER prefixes
 * of {@code docs/protocol.md §1} and handed to ACCP, which converts them to AWS-LC keys. A JCA {@code Signature} is
 * not thread-safe, so each thread has its own: for signing one per key pair and thread, initialized once (a
 * {@code sign()} leaves it ready for the next message); for verifying one per thread, initialized with the caller's
 * key for each message.
 *
 * <p>Threading: safe on any thread; the per-thread objects are never shared.
 */
final class AccpEd25519Engine extends Ed25519Engine {

  private static final HexFormat HEX = HexFormat.of();
  /** PKCS#8 {@code PrivateKeyInfo} of an Ed25519 seed, before the 32 seed bytes (docs/protocol.md §1). */
  private static final byte[] PKCS8_PREFIX = HEX.parseHex("302e020100300506032b657004220420");
  /** X.509 {@code SubjectPublicKeyInfo} of an Ed25519 key, before the 32 key bytes (docs/protocol.md §1). */
  private static final byte[] SPKI_PREFIX = HEX.parseHex("302a300506032b6570032100");

  /** RFC 8032 section 7.1 TEST 2: the known answer the self-test needs before the engine is used. */
  private static final byte[] KAT_SEED =
      HEX.parseHex("4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb");
  private static final byte[] KAT_PUBLIC =
      HEX.parseHex("3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c");
  private static final byte[] KAT_MESSAGE = HEX.parseHex("72");
  private static final byte[] KAT_SIGNATURE = HEX.parseHex("92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223"
      + "ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00");

  private final Provider accp;
  private final Provider sunEc;
  private final String description;
  private final ThreadLocal<KeyFactory> keyFactories = ThreadLocal.withInitial(this::newKeyFactory);
  private final ThreadLocal<Signature> verifiers = ThreadLocal.withInitial(this::newSignature);

  private AccpEd25519Engine(AmazonCorrettoCryptoProvider accp, Provider sunEc) {
    this.accp = accp;
    this.sunEc = sunEc;
    this.description = accp.getAwsLcVersionStr() + " (ACCP " + accp.getVersionStr() + ")";
  }

  /**
   * Loads ACCP and tests it: its native library loaded and it reports healthy ({@code assertHealthy()}), the JDK
   * builds Ed25519 keys, and the known-answer and BouncyCastle comparison tests pass.
   *
   * @param bc the reference the self-test compares with
   * @return the engine
   * @throws GeneralSecurityException when a JCA piece is missing
   * @throws IllegalStateException when a self-test fails
   * @throws LinkageError when the ACCP classes or its native library cannot be loaded
   * @throws RuntimeException ACCP's own {@code RuntimeCryptoException} when it is not healthy
   */
  static AccpEd25519Engine load(BouncyCastleEd25519Engine bc) throws GeneralSecurityException {
    AmazonCorrettoCryptoProvider accp = AmazonCorrettoCryptoProvider.INSTANCE;
    accp.assertHealthy();
    AccpEd25519Engine engine = new AccpEd25519Engine(accp, KeyFactory.getInstance("Ed25519", "SunEC").getProvider());
    Signature.getInstance("Ed25519", accp); // fails here rather than on a thread's first use
    engine.selfTest();
    return engine;
  }

  private void selfTest() {
    check(Arrays.equals(signer(KAT_SEED, KAT_PUBLIC).sign(KAT_MESSAGE), KAT_SIGNATURE), "RFC 8032 TEST 2 signature");
    check(accpVerify(publicKey(KAT_PUBLIC), KAT_MESSAGE, KAT_SIGNATURE), "RFC 8032 TEST 2 verifies");
    byte[] flipped = KAT_SIGNATURE.clone();
    flipped[40] ^= 1;
    check(!accpVerify(publicKey(KAT_PUBLIC), KAT_MESSAGE, flipped), "a flipped bit in S is refused");
    // one fresh key and message against BouncyCastle
    SplittableRandom random = new SplittableRandom();
    byte[] seed = new byte[32];
    byte[] message = new byte[300];
    for (int i = 0; i < seed.length; i++) {
      seed[i] = (byte) random.nextInt();
    }
    for (int i = 0; i < message.length; i++) {
      message[i] = (byte) random.nextInt();
    }
    byte[] pub = new byte[32];
    org.bouncycastle.math.ec.rfc8032.Ed25519.generatePublicKey(seed, 0, pub, 0);
    byte[] reference = BouncyCastleEd25519Engine.sign(seed, pub, message);
    check(Arrays.equals(signer(seed, pub).sign(message), reference), "signature equals BouncyCastle's");
    check(accpVerify(publicKey(pub), message, reference), "BouncyCastle's signature verifies");
    Arrays.fill(seed, (byte) 0);
  }

  private static void check(boolean ok, String what) {
    if (!ok) {
      throw new IllegalStateException("self-test failed: " + what);
    }
  }

  @Override
  public Kind kind() {
    return Kind.AWS_LC;
  }

  @Override
  public String description() {
    return description;
  }

  @Override
  Signer signer(byte[] seed32, byte[] pub32) {
    byte[] der = new byte[PKCS8_PREFIX.length + 32];
    System.arraycopy(PKCS8_PREFIX, 0, der, 0, PKCS8_PREFIX.length);
    System.arraycopy(seed32, 0, der, PKCS8_PREFIX.length, 32);
    try {
      PrivateKey key = keyFactories.get().generatePrivate(new PKCS8EncodedKeySpec(der));
      return new AccpSigner(key, BouncyCastleEd25519Engine.INSTANCE.signer(seed32, pub32));
    } catch (GeneralSecurityException | RuntimeException e) {
      return BouncyCastleEd25519Engine.INSTANCE.signer(seed32, pub32); // every seed is a key: not expected
    } finally {
      Arrays.fill(der, (byte) 0);
    }
  }

  @Override
  Verifier verifier(byte[] pub32) {
    org.bouncycastle.math.ec.rfc8032.Ed25519.PublicPoint point = BouncyCastleEd25519Engine.point(pub32);
    if (point == null) {
      return null; // refused by BouncyCastle, so never shown to AWS-LC (which accepts small-order keys)
    }
    PublicKey key = publicKey(pub32);
    if (key == null) {
      return (message, sig64) -> BouncyCastleEd25519Engine.verify(point, message, sig64);
    }
    PrimeOrder primeOrderKey = new PrimeOrder(pub32.clone());
    return (message, sig64) -> {
      Verdict awsLc = awsLc(key, message, sig64);
      if (awsLc == Verdict.VALID) {
        return true; // cofactorless [S]B = R + [k]A implies BouncyCastle's cofactored equation
      }
      if (awsLc == Verdict.INVALID && primeOrderKey.get() && primeOrderR(sig64)) {
        // with R and A both in the prime-order subgroup the cofactored equation is the cofactorless one, which
        // AWS-LC has just refused: BouncyCastle would refuse too, and it need not hash the message again
        return false;
      }
      // R or the key has a small-order component (or AWS-LC failed): only BouncyCastle can decide (issue 18; tested)
      return BouncyCastleEd25519Engine.verify(point, message, sig64);
    };
  }

  /**
   * Whether a key is in the prime-order subgroup, decided on first need. Every key made from a seed is; a mixed-order
   * key can make BouncyCastle accept what AWS-LC refuses whatever R is. Deciding it costs one scalar multiplication
   * (as much as a verification), and only a signature AWS-LC refuses needs it: computed then, once per key (issue 18:
   * computed eagerly for every key new to the cache, it was 15 % of the event loops' CPU with 100,000 hosts).
   * Threading: two threads may both compute it the first time; they get the same answer.
   */
  private static final class PrimeOrder {
    private final byte[] pub32;
    /** 0 not decided, 1 prime order, 2 not. */
    private volatile int state;

    PrimeOrder(byte[] pub32) {
      this.pub32 = pub32;
    }

    boolean get() {
      int s = state;
      if (s == 0) {
        s = org.bouncycastle.math.ec.rfc8032.Ed25519.validatePublicKeyFull(pub32, 0) ? 1 : 2;
        state = s;
      }
      return s == 1;
    }
  }

  /**
   * Whether R (the signature's first 32 bytes) is a canonical encoding of a point of the prime-order subgroup other
   * than the identity (BouncyCastle's full key validation applied to R: one scalar multiplication).
   */
  private static boolean primeOrderR(byte[] sig64) {
    try {
      return org.bouncycastle.math.ec.rfc8032.Ed25519.validatePublicKeyFull(sig64, 0);
    } catch (RuntimeException e) {
      return false; // then BouncyCastle's verify decides
    }
  }

  /** AWS-LC's answer; {@link #FAILED} when it threw instead of answering. */
  private enum Verdict {
    VALID,
    INVALID,
    FAILED
  }

  /**
   * AWS-LC's verdict alone, without the BouncyCastle key check before it or the re-check after it: for
   * {@code Ed25519EquivalenceTest}, which shows where the two libraries differ. Never for deciding anything.
   */
  boolean awsLcAlone(byte[] pub32, byte[] message, byte[] sig64) {
    PublicKey key = publicKey(pub32);
    return key != null && accpVerify(key, message, sig64);
  }

  /** The JDK's key object for a raw public key; null when the JDK refuses it (then BouncyCastle alone decides). */
  private PublicKey publicKey(byte[] pub32) {
    byte[] der = new byte[SPKI_PREFIX.length + 32];
    System.arraycopy(SPKI_PREFIX, 0, der, 0, SPKI_PREFIX.length);
    System.arraycopy(pub32, 0, der, SPKI_PREFIX.length, 32);
    try {
      return keyFactories.get().generatePublic(new X509EncodedKeySpec(der));
    } catch (GeneralSecurityException | RuntimeException e) {
      return null;
    }
  }

  /** AWS-LC's verdict, as a boolean: true only for {@link Verdict#VALID}. */
  private boolean accpVerify(PublicKey key, byte[] message, byte[] sig64) {
    return awsLc(key, message, sig64) == Verdict.VALID;
  }

  /** AWS-LC's verdict through this thread's {@code Signature}. */
  private Verdict awsLc(PublicKey key, byte[] message, byte[] sig64) {
    Signature s = verifiers.get();
    try {
      s.initVerify(key);
      s.update(message);
      return s.verify(sig64) ? Verdict.VALID : Verdict.INVALID;
    } catch (GeneralSecurityException | RuntimeException e) {
      return Verdict.FAILED;
    }
  }

  private KeyFactory newKeyFactory() {
    try {
      return KeyFactory.getInstance("Ed25519", sunEc);
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException(e); // present at load time
    }
  }

  private Signature newSignature() {
    try {
      return Signature.getInstance("Ed25519", accp);
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException(e); // present at load time
    }
  }

  /** One key pair's signer: a {@code Signature} per thread, initialized once with the key. */
  private final class AccpSigner implements Signer {
    private final PrivateKey key;
    private final Signer fallback;
    private final ThreadLocal<Signature> perThread = new ThreadLocal<>();

    AccpSigner(PrivateKey key, Signer fallback) {
      this.key = key;
      this.fallback = fallback;
    }

    @Override
    public byte[] sign(byte[] message) {
      try {
        Signature s = perThread.get();
        if (s == null) {
          s = newSignature();
          s.initSign(key);
          perThread.set(s);
        }
        s.update(message);
        return s.sign();
      } catch (GeneralSecurityException | RuntimeException e) {
        // not expected (the self-test signed); the same deterministic signature from BouncyCastle, and a fresh
        // Signature next time in case this one was left half-way
        perThread.remove();
        return fallback.sign(message);
      }
    }
  }
}
