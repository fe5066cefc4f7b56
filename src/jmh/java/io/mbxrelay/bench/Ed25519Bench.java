package io.mbxrelay.bench;

import com.amazon.corretto.crypto.provider.AmazonCorrettoCryptoProvider;
import com.goterl.lazysodium.LazySodiumJava;
import com.goterl.lazysodium.SodiumJava;
import io.mbxrelay.crypto.HopText;
import io.mbxrelay.wire.AcceptReceipt;
import io.mbxrelay.wire.B64;
import java.nio.charset.StandardCharsets;
import java.security.KeyFactory;
import java.security.PrivateKey;
import java.security.PublicKey;
import java.security.Signature;
import java.security.spec.PKCS8EncodedKeySpec;
import java.security.spec.X509EncodedKeySpec;
import java.util.HexFormat;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.bouncycastle.math.ec.rfc8032.Ed25519;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Ed25519 sign and verify, three libraries and the relay's own entry points (issue 18; docs/performance.md "Ed25519:
 * BouncyCastle vs AWS-LC (ACCP) vs libsodium"). Run with {@code scripts/bench-ed25519}; figures, no assertions.
 *
 * <p>Messages: {@code receipt} is the canonical bytes of a one-target accept receipt (what the relay signs once per
 * stored item); {@code push200} is the signed hop text of a 200-item push of ~3.4 KB items (what it verifies once per
 * push request, ~700 KB).
 *
 * <p>Each library is called the way the relay would call it: BouncyCastle through its stateless RFC 8032 functions
 * with the seed and public key (sign) and a decoded {@code PublicPoint} (verify, as {@code Ed25519.POINTS} caches it);
 * ACCP through JCA with a per-thread {@link Signature} (JMH thread state): signing re-uses one initialized for the
 * relay key (its key never changes), verifying calls {@code initVerify} with a cached {@link PublicKey} every time
 * (each request may come from another host); libsodium through lazysodium's JNA binding with its 64-byte secret key.
 * The {@code relay*} benchmarks go through {@code io.mbxrelay.crypto} as the relay does, on whichever engine it
 * selected at class load (printed once by the setup): {@code relayVerifyBad} is a signature with one flipped bit in
 * S, which the ACCP engine re-checks with BouncyCastle.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 4, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(2)
@State(Scope.Thread)
public class Ed25519Bench {
  private static final HexFormat HEX = HexFormat.of();

  @Param({"receipt", "push200"})
  public String message;

  private byte[] msg;
  private byte[] seed;
  private byte[] pub;
  private byte[] sig;
  private byte[] badSig;
  private String pubB64;
  private String sigB64;
  private String badSigB64;
  private Ed25519.PublicPoint point;

  private Signature accpSigner;
  private Signature accpVerifier;
  private PublicKey accpPublic;

  private LazySodiumJava sodium;
  private byte[] sodiumSecret;

  private io.mbxrelay.crypto.Ed25519KeyPair relayKey;

  @Setup(Level.Trial)
  public void setUp() throws Exception {
    Random random = new Random(18);
    seed = new byte[32];
    random.nextBytes(seed);
    pub = new byte[32];
    Ed25519.generatePublicKey(seed, 0, pub, 0);
    pubB64 = B64.encode(pub);
    msg = message.equals("receipt") ? receipt(pubB64) : push200(random);
    sig = new byte[64];
    Ed25519.sign(seed, 0, pub, 0, msg, 0, msg.length, sig, 0);
    badSig = sig.clone();
    badSig[40] ^= 1;
    sigB64 = B64.encode(sig);
    badSigB64 = B64.encode(badSig);
    point = Ed25519.validatePublicKeyPartialExport(pub, 0);

    AmazonCorrettoCryptoProvider accp = AmazonCorrettoCryptoProvider.INSTANCE;
    accp.assertHealthy();
    KeyFactory kf = KeyFactory.getInstance("Ed25519", "SunEC");
    PrivateKey priv = kf.generatePrivate(new PKCS8EncodedKeySpec(
        HEX.parseHex("302e020100300506032b657004220420" + HEX.formatHex(seed))));
    accpPublic = kf.generatePublic(new X509EncodedKeySpec(HEX.parseHex("302a300506032b6570032100" + HEX.formatHex(pub))));
    accpSigner = Signature.getInstance("Ed25519", accp);
    accpSigner.initSign(priv);
    accpVerifier = Signature.getInstance("Ed25519", accp);

    sodium = new LazySodiumJava(new SodiumJava());
    byte[] sodiumPublic = new byte[32];
    sodiumSecret = new byte[64];
    if (!sodium.cryptoSignSeedKeypair(sodiumPublic, sodiumSecret, seed)) {
      throw new IllegalStateException("libsodium key pair");
    }

    relayKey = io.mbxrelay.crypto.Ed25519KeyPair.fromSeed(seed);

    // the same signature from every path, or the figures compare different work
    check(java.util.Arrays.equals(accpSign(), sig), "ACCP signature differs from BouncyCastle's");
    check(java.util.Arrays.equals(sodiumSign(), sig), "libsodium signature differs from BouncyCastle's");
    check(java.util.Arrays.equals(relaySign(), sig), "relay signature differs from BouncyCastle's");
    check(bcVerify() && accpVerify() && sodiumVerify() && relayVerify() && !relayVerifyBad(), "verify disagrees");
    System.out.println("# message " + message + ": " + msg.length + " bytes; relay engine: "
        + io.mbxrelay.crypto.Ed25519Engine.inUse().description());
  }

  private static void check(boolean ok, String what) {
    if (!ok) {
      throw new IllegalStateException(what);
    }
  }

  /** A one-target accept receipt, as {@code ItemRoutes.answerPush} signs it. */
  private static byte[] receipt(String relayPub) {
    String host = B64.encode(new byte[32]).replace('A', 'h');
    return new AcceptReceipt(relayPub, "3f1c2d4e-5a6b-4c7d-8e9f-0a1b2c3d4e5f", host, "01KB0000000000000000000000",
        List.of(new AcceptReceipt.Target(host.replace('h', 't'), 123456,
            "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08")),
        "2026-11-30T12:00:00.000Z").canonicalBytes();
  }

  /** The hop text of a 200-item push, each item a ~3.4 KB envelope as base64. */
  private static byte[] push200(Random random) {
    StringBuilder body = new StringBuilder(720_000).append("{\"items\":[");
    for (int i = 0; i < 200; i++) {
      byte[] wire = new byte[2560];
      random.nextBytes(wire);
      body.append(i == 0 ? "" : ",").append("{\"kind\":\"envelope\",\"item_id\":\"01KB").append(String.format("%022d", i))
          .append("\",\"targets\":[{\"host_pubkey\":\"").append(B64.encode(new byte[32]))
          .append("\"}],\"wire_b64\":\"").append(B64.encode(wire)).append("\"}");
    }
    body.append("]}");
    return HopText.signedBytes("POST", "/v2/relay/items", "1764400000000",
        body.toString().getBytes(StandardCharsets.UTF_8));
  }

  @Benchmark
  public byte[] bcSign() {
    byte[] out = new byte[64];
    Ed25519.sign(seed, 0, pub, 0, msg, 0, msg.length, out, 0);
    return out;
  }

  @Benchmark
  public boolean bcVerify() {
    return Ed25519.verify(sig, 0, point, msg, 0, msg.length);
  }

  @Benchmark
  public byte[] accpSign() throws Exception {
    accpSigner.update(msg);
    return accpSigner.sign();
  }

  @Benchmark
  public boolean accpVerify() throws Exception {
    accpVerifier.initVerify(accpPublic);
    accpVerifier.update(msg);
    return accpVerifier.verify(sig);
  }

  @Benchmark
  public byte[] sodiumSign() {
    byte[] out = new byte[64];
    sodium.cryptoSignDetached(out, msg, msg.length, sodiumSecret);
    return out;
  }

  @Benchmark
  public boolean sodiumVerify() {
    return sodium.cryptoSignVerifyDetached(sig, msg, msg.length, pub);
  }

  @Benchmark
  public byte[] relaySign() {
    return relayKey.sign(msg);
  }

  @Benchmark
  public boolean relayVerify() {
    return io.mbxrelay.crypto.Ed25519.verify(pubB64, msg, sigB64);
  }

  @Benchmark
  public boolean relayVerifyBad() {
    return io.mbxrelay.crypto.Ed25519.verify(pubB64, msg, badSigB64);
  }
}
