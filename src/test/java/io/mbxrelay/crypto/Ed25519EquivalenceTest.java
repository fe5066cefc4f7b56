package io.mbxrelay.crypto;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.mbxrelay.wire.B64;
import io.mbxrelay.wire.Json;
import java.io.InputStream;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HexFormat;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The AWS-LC engine signs byte for byte like BouncyCastle and accepts exactly what the relay accepted before issue 18
 * (BouncyCastle alone): RFC 8032 section 7.1, the shared vectors, thousands of random keys and messages with corrupted
 * variants, non-canonical S, small-order and mixed-order R and keys (built from the eight small-order points, and the
 * twelve cases of "Taming the many EdDSAs"), non-canonical R and key encodings, wrong lengths and lenient base64.
 *
 * <p>Every verdict is compared three ways: with {@link #before} (the code the relay ran before, kept here verbatim),
 * with each engine's verifier, and through the public {@link Ed25519#verify} entry points. Where AWS-LC alone
 * ({@link AccpEd25519Engine#awsLcAlone}) disagrees with BouncyCastle, the test says so: those are the cases the
 * engine's glue exists for.
 */
class Ed25519EquivalenceTest {
  private static final HexFormat HEX = HexFormat.of();
  private static final BouncyCastleEd25519Engine BC = BouncyCastleEd25519Engine.INSTANCE;
  /** The AWS-LC engine, loaded directly (whatever engine is in use); null where its native code cannot load. */
  private static AccpEd25519Engine accp;
  private static String accpFailure;

  @BeforeAll
  static void loadAccp() {
    try {
      accp = AccpEd25519Engine.load(BC);
    } catch (Exception | LinkageError e) {
      accpFailure = e.toString();
    }
  }

  private static boolean linuxX8664() {
    String arch = System.getProperty("os.arch", "").toLowerCase(Locale.ROOT);
    return System.getProperty("os.name", "").toLowerCase(Locale.ROOT).startsWith("linux")
        && (arch.equals("amd64") || arch.equals("x86_64"));
  }

  /** The engines under test: the one in use and the AWS-LC one (the same object where it is in use). */
  private static List<Ed25519Engine> engines() {
    Set<Ed25519Engine> out = new LinkedHashSet<>();
    out.add(Ed25519Engine.inUse());
    out.add(BC);
    if (accp != null) {
      out.add(accp);
    }
    return new ArrayList<>(out);
  }

  // ---- the behaviour to keep: Ed25519.verify as it was before issue 18, BouncyCastle only ----

  /** {@code Ed25519.verify(String, byte[], String)} before issue 18. */
  static boolean before(String pubkeyB64, byte[] message, String sigB64) {
    if (pubkeyB64 == null || message == null) {
      return false;
    }
    Optional<byte[]> sig = B64.decodeLenient(sigB64);
    if (sig.isEmpty() || sig.get().length != 64) {
      return false;
    }
    Optional<byte[]> pub = B64.decodeLenient(pubkeyB64);
    if (pub.isEmpty() || pub.get().length != 32) {
      return false;
    }
    org.bouncycastle.math.ec.rfc8032.Ed25519.PublicPoint point =
        org.bouncycastle.math.ec.rfc8032.Ed25519.validatePublicKeyPartialExport(pub.get(), 0);
    if (point == null) {
      return false;
    }
    try {
      return org.bouncycastle.math.ec.rfc8032.Ed25519.verify(sig.get(), 0, point, message, 0, message.length);
    } catch (RuntimeException e) {
      return false;
    }
  }

  /** {@code Ed25519.verify(byte[], byte[], byte[])} before issue 18. */
  static boolean before(byte[] pub32, byte[] message, byte[] sig64) {
    if (pub32 == null || message == null || sig64 == null || pub32.length != 32 || sig64.length != 64) {
      return false;
    }
    try {
      return org.bouncycastle.math.ec.rfc8032.Ed25519.verify(sig64, 0, pub32, 0, message, 0, message.length);
    } catch (RuntimeException e) {
      return false;
    }
  }

  /**
   * Asserts that every engine and both public entry points give {@link #before}'s verdict.
   *
   * @return that verdict
   */
  private static boolean sameVerdict(String what, byte[] pub, byte[] message, byte[] sig) {
    boolean expected = before(pub, message, sig);
    assertThat(before(B64.encode(pub), message, B64.encode(sig))).as(what + ": the old paths agree").isEqualTo(expected);
    for (Ed25519Engine engine : engines()) {
      Ed25519Engine.Verifier v = engine.verifier(pub);
      assertThat(v != null && v.verify(message, sig)).as(what + " on " + engine.kind()).isEqualTo(expected);
    }
    assertThat(Ed25519.verify(pub, message, sig)).as(what + ": Ed25519.verify(bytes)").isEqualTo(expected);
    assertThat(Ed25519.verify(B64.encode(pub), message, B64.encode(sig))).as(what + ": Ed25519.verify(base64)")
        .isEqualTo(expected);
    return expected;
  }

  /** AWS-LC's verdict without the glue, or empty where it cannot load. */
  private static Optional<Boolean> awsLcAlone(byte[] pub, byte[] message, byte[] sig) {
    return accp == null ? Optional.empty() : Optional.of(accp.awsLcAlone(pub, message, sig));
  }

  private static byte[] signWith(Ed25519Engine engine, byte[] seed, byte[] message) {
    byte[] pub = new byte[32];
    org.bouncycastle.math.ec.rfc8032.Ed25519.generatePublicKey(seed, 0, pub, 0);
    return engine.signer(seed, pub).sign(message);
  }

  private static JsonNode resource(String name) throws Exception {
    try (InputStream in = Ed25519EquivalenceTest.class.getResourceAsStream(name)) {
      return Json.parse(new String(in.readAllBytes(), StandardCharsets.UTF_8));
    }
  }

  // ---- tests ----

  @Test
  void on_linux_x86_64_the_aws_lc_engine_loads_and_is_the_one_in_use() {
    assumeTrue(linuxX8664(), "ACCP's native code is built for linux-x86_64 only");
    assertThat(accp).as("AWS-LC engine: " + accpFailure).isNotNull();
    assertThat(accp.description()).startsWith("AWS-LC");
    if (System.getProperty(Ed25519Engine.PROPERTY) == null) {
      assertThat(Ed25519Engine.inUse().kind()).isEqualTo(Ed25519Engine.Kind.AWS_LC);
      assertThat(Ed25519Engine.fallbackReason()).isEmpty();
    }
  }

  @Test
  void rfc_8032_section_7_1_vectors_are_signed_to_the_published_bytes_and_verify_on_every_engine() throws Exception {
    JsonNode vectors = resource("/crypto/rfc8032-ed25519.json").get("vectors");
    assertThat(vectors).hasSize(5);
    for (JsonNode v : vectors) {
      String name = v.get("name").textValue();
      byte[] seed = HEX.parseHex(v.get("secret_key").textValue());
      byte[] pub = HEX.parseHex(v.get("public_key").textValue());
      byte[] message = HEX.parseHex(v.get("message").textValue());
      byte[] sig = HEX.parseHex(v.get("signature").textValue());
      Ed25519KeyPair pair = Ed25519KeyPair.fromSeed(seed);
      assertThat(pair.publicKey()).as(name).isEqualTo(pub);
      assertThat(pair.sign(message)).as(name).isEqualTo(sig);
      for (Ed25519Engine engine : engines()) {
        assertThat(engine.signer(seed, pub).sign(message)).as(name + " on " + engine.kind()).isEqualTo(sig);
      }
      assertThat(sameVerdict(name, pub, message, sig)).as(name).isTrue();
      byte[] flipped = sig.clone();
      flipped[63] ^= 0x01;
      assertThat(sameVerdict(name + " with a flipped bit in S", pub, message, flipped)).isFalse();
    }
  }

  @Test
  void the_shared_vectors_are_signed_to_the_given_signatures_on_every_engine() throws Exception {
    JsonNode vectors = resource("/vectors.json");
    List<byte[]> seeds = new ArrayList<>();
    vectors.get("keys").forEach(k -> seeds.add(B64.decodeLenient(k.get("seed_b64").textValue()).orElseThrow()));
    int checked = 0;
    for (JsonNode v : vectors.get("signatures")) {
      String what = v.get("what").textValue();
      byte[] seed = seeds.get(what.contains("key 2") ? 1 : 0);
      byte[] message = v.get("signed_text").textValue().getBytes(StandardCharsets.UTF_8);
      byte[] sig = B64.decodeLenient(v.get("signature").textValue()).orElseThrow();
      for (Ed25519Engine engine : engines()) {
        assertThat(signWith(engine, seed, message)).as(what + " on " + engine.kind()).isEqualTo(sig);
      }
      assertThat(sameVerdict(what, Ed25519KeyPair.fromSeed(seed).publicKey(), message, sig)).isTrue();
      checked++;
    }
    assertThat(checked).isGreaterThanOrEqualTo(5);
  }

  @Test
  void random_keys_and_messages_sign_identically_and_verify_alike_also_with_a_bit_flipped_in_r_s_message_or_key() {
    Random random = new Random(18);
    int corruptedAccepted = 0;
    for (int i = 0; i < 2000; i++) {
      byte[] seed = new byte[32];
      random.nextBytes(seed);
      byte[] message = new byte[i % 10 == 0 ? random.nextInt(4) : random.nextInt(1200)];
      random.nextBytes(message);
      Ed25519KeyPair pair = Ed25519KeyPair.fromSeed(seed);
      byte[] pub = pair.publicKey();
      byte[] reference = BouncyCastleEd25519Engine.sign(seed, pub, message);
      assertThat(pair.sign(message)).isEqualTo(reference);
      if (accp != null) {
        assertThat(accp.signer(seed, pub).sign(message)).isEqualTo(reference);
      }
      assertThat(sameVerdict("valid #" + i, pub, message, reference)).isTrue();

      byte[] r = reference.clone();
      r[random.nextInt(32)] ^= (byte) (1 << random.nextInt(8));
      byte[] s = reference.clone();
      s[32 + random.nextInt(32)] ^= (byte) (1 << random.nextInt(8));
      byte[] k = pub.clone();
      k[random.nextInt(32)] ^= (byte) (1 << random.nextInt(8));
      corruptedAccepted += sameVerdict("R flipped #" + i, pub, message, r) ? 1 : 0;
      corruptedAccepted += sameVerdict("S flipped #" + i, pub, message, s) ? 1 : 0;
      corruptedAccepted += sameVerdict("key flipped #" + i, k, message, reference) ? 1 : 0;
      if (message.length > 0) {
        byte[] m = message.clone();
        m[random.nextInt(m.length)] ^= (byte) (1 << random.nextInt(8));
        corruptedAccepted += sameVerdict("message flipped #" + i, pub, m, reference) ? 1 : 0;
      }
    }
    assertThat(corruptedAccepted).isZero();
  }

  @Test
  void s_at_or_above_l_is_refused_everywhere_though_the_equation_holds_modulo_l() {
    Random random = new Random(2);
    for (int i = 0; i < 100; i++) {
      byte[] seed = new byte[32];
      random.nextBytes(seed);
      byte[] message = ("non-canonical S " + i).getBytes(StandardCharsets.UTF_8);
      Ed25519KeyPair pair = Ed25519KeyPair.fromSeed(seed);
      byte[] sig = pair.sign(message);
      BigInteger s = Edwards25519.fromLittleEndian(java.util.Arrays.copyOfRange(sig, 32, 64));
      // S + L·j stays below 2^256 for j ≤ 15: the same point equation, a different (malleated) signature
      for (int j : new int[] {1, 2, 8, 15}) {
        byte[] malleated = Edwards25519.concat(java.util.Arrays.copyOf(sig, 32),
            Edwards25519.littleEndian(s.add(Edwards25519.L.multiply(BigInteger.valueOf(j)))));
        assertThat(sameVerdict("S + " + j + "L #" + i, pair.publicKey(), message, malleated)).isFalse();
        awsLcAlone(pair.publicKey(), message, malleated).ifPresent(v -> assertThat(v).isFalse());
      }
    }
    byte[] pub = Ed25519KeyPair.fromSeed(new byte[32]).publicKey();
    for (BigInteger s : List.of(Edwards25519.L, Edwards25519.L.add(BigInteger.ONE),
        BigInteger.TWO.pow(256).subtract(BigInteger.ONE), BigInteger.TWO.pow(255))) {
      byte[] sig = Edwards25519.concat(Edwards25519.encode(Edwards25519.BASE), Edwards25519.littleEndian(s));
      assertThat(sameVerdict("S = " + s.toString(16), pub, new byte[0], sig)).isFalse();
    }
  }

  /** BouncyCastle 1.82's verdicts on the twelve cases, pinned: a BouncyCastle upgrade that changes them shows here. */
  private static final boolean[] TAMING_BOUNCYCASTLE =
      {false, false, true, true, true, true, false, false, false, false, false, false};

  @Test
  void the_twelve_taming_the_many_eddsas_cases_get_bouncycastles_verdicts_where_aws_lc_alone_differs_on_four()
      throws Exception {
    JsonNode cases = resource("/crypto/taming-eddsa-cases.json").get("cases");
    assertThat(cases).hasSize(12);
    List<Integer> awsLcDiffers = new ArrayList<>();
    for (int i = 0; i < cases.size(); i++) {
      JsonNode c = cases.get(i);
      byte[] message = HEX.parseHex(c.get("msg").textValue());
      byte[] pub = HEX.parseHex(c.get("pub").textValue());
      byte[] sig = HEX.parseHex(c.get("sig").textValue());
      boolean verdict = sameVerdict("taming case " + i, pub, message, sig);
      assertThat(verdict).as("taming case " + i).isEqualTo(TAMING_BOUNCYCASTLE[i]);
      int n = i;
      awsLcAlone(pub, message, sig).filter(v -> v != verdict).ifPresent(v -> awsLcDiffers.add(n));
    }
    if (accp != null) {
      // 0, 1: a small-order key, which AWS-LC accepts and BouncyCastle refuses (refused before AWS-LC sees it);
      // 4, 5: a mixed-order key, valid only by the cofactored equation (BouncyCastle's), so re-checked by it
      assertThat(awsLcDiffers).containsExactly(0, 1, 4, 5);
    }
  }

  @Test
  void small_order_keys_and_r_values_in_every_encoding_are_refused_everywhere() {
    List<byte[]> encodings = new ArrayList<>();
    for (Edwards25519.Point t : Edwards25519.SMALL_ORDER) {
      byte[] e = Edwards25519.encode(t);
      encodings.add(e);
      byte[] otherSign = e.clone();
      otherSign[31] ^= (byte) 0x80; // the other x, or for x = 0 the encoding RFC 8032 forbids
      encodings.add(otherSign);
      BigInteger y = t.y();
      if (y.add(Edwards25519.P).bitLength() <= 255) { // y + p still fits: a non-canonical encoding of the same point
        byte[] nc = Edwards25519.littleEndian(y.add(Edwards25519.P));
        encodings.add(nc);
        byte[] ncSign = nc.clone();
        ncSign[31] |= (byte) 0x80;
        encodings.add(ncSign);
      }
    }
    assertThat(encodings).hasSizeGreaterThanOrEqualTo(20);
    Random random = new Random(8);
    int awsLcAccepted = 0;
    for (byte[] a : encodings) {
      for (byte[] r : encodings) {
        for (BigInteger s : List.of(BigInteger.ZERO, BigInteger.ONE, new BigInteger(250, random))) {
          byte[] sig = Edwards25519.concat(r, Edwards25519.littleEndian(s));
          byte[] message = new byte[8];
          random.nextBytes(message);
          assertThat(sameVerdict("small-order A " + HEX.formatHex(a) + " R " + HEX.formatHex(r), a, message, sig))
              .isFalse();
          awsLcAccepted += awsLcAlone(a, message, sig).orElse(false) ? 1 : 0;
        }
      }
    }
    if (accp != null) {
      assertThat(awsLcAccepted).as("AWS-LC alone accepts some (e.g. A = R = identity, S = 0)").isPositive();
    }
  }

  @Test
  void r_with_a_small_order_component_is_accepted_as_bouncycastle_does_though_aws_lc_alone_refuses_it() {
    Random random = new Random(4);
    byte[] seed = new byte[32];
    random.nextBytes(seed);
    BigInteger a = Edwards25519.secretScalar(seed);
    byte[] pub = Ed25519KeyPair.fromSeed(seed).publicKey();
    assertThat(Edwards25519.encode(Edwards25519.multiply(a, Edwards25519.BASE))).isEqualTo(pub);
    int awsLcRefused = 0;
    for (int t = 0; t < Edwards25519.SMALL_ORDER.size(); t++) {
      for (int i = 0; i < 8; i++) {
        BigInteger r = new BigInteger(252, random);
        // R = rB + T; S = r + k·a: [S]B = R + [k]A holds up to T, so only the cofactored check accepts (T ≠ identity)
        byte[] rEncoded = Edwards25519.encode(
            Edwards25519.add(Edwards25519.multiply(r, Edwards25519.BASE), Edwards25519.SMALL_ORDER.get(t)));
        byte[] message = ("torsion R " + t + " " + i).getBytes(StandardCharsets.UTF_8);
        byte[] sig = Edwards25519.signature(rEncoded, r, a, pub, message);
        assertThat(sameVerdict("R + T" + t + " #" + i, pub, message, sig)).isTrue();
        awsLcRefused += awsLcAlone(pub, message, sig).orElse(true) ? 0 : 1;
      }
      // R = T alone (r = 0)
      byte[] rEncoded = Edwards25519.encode(Edwards25519.SMALL_ORDER.get(t));
      byte[] message = ("R = T" + t).getBytes(StandardCharsets.UTF_8);
      assertThat(sameVerdict("R = T" + t, pub, message,
          Edwards25519.signature(rEncoded, BigInteger.ZERO, a, pub, message))).isTrue();
    }
    if (accp != null) {
      assertThat(awsLcRefused).as("all but the identity's 8").isEqualTo(7 * 8);
    }
  }

  @Test
  void keys_with_a_small_order_component_verify_as_bouncycastle_verifies_them() {
    Random random = new Random(5);
    int valid = 0;
    for (int t = 1; t < Edwards25519.SMALL_ORDER.size(); t++) {
      byte[] seed = new byte[32];
      random.nextBytes(seed);
      BigInteger a = Edwards25519.secretScalar(seed);
      byte[] mixed = Edwards25519.encode(
          Edwards25519.add(Edwards25519.multiply(a, Edwards25519.BASE), Edwards25519.SMALL_ORDER.get(t)));
      for (int i = 0; i < 16; i++) {
        BigInteger r = new BigInteger(252, random);
        byte[] rEncoded = Edwards25519.encode(Edwards25519.multiply(r, Edwards25519.BASE));
        byte[] message = ("mixed key " + t + " " + i).getBytes(StandardCharsets.UTF_8);
        byte[] sig = Edwards25519.signature(rEncoded, r, a, mixed, message);
        valid += sameVerdict("A + T" + t + " #" + i, mixed, message, sig) ? 1 : 0;
        byte[] other = sig.clone();
        other[33] ^= 4;
        assertThat(sameVerdict("A + T" + t + " #" + i + " corrupted", mixed, message, other)).isFalse();
      }
    }
    assertThat(valid).as("BouncyCastle's equation is cofactored: all are valid").isEqualTo(7 * 16);
  }

  @Test
  void non_canonical_r_and_key_encodings_are_refused_everywhere() {
    Random random = new Random(6);
    byte[] seed = new byte[32];
    random.nextBytes(seed);
    Ed25519KeyPair pair = Ed25519KeyPair.fromSeed(seed);
    int found = 0;
    // every y < 19 on the curve has the second encoding y + p (< 2^255); with both signs
    for (int y = 0; y < 19; y++) {
      byte[] nonCanonical = Edwards25519.littleEndian(BigInteger.valueOf(y).add(Edwards25519.P));
      for (int sign = 0; sign < 2; sign++) {
        byte[] enc = nonCanonical.clone();
        enc[31] |= (byte) (sign << 7);
        if (Edwards25519.decode(enc) == null) {
          continue;
        }
        found++;
        byte[] message = ("nc " + y + " " + sign).getBytes(StandardCharsets.UTF_8);
        byte[] valid = pair.sign(message);
        byte[] asR = Edwards25519.concat(enc, java.util.Arrays.copyOfRange(valid, 32, 64));
        assertThat(sameVerdict("non-canonical R y=" + y, pair.publicKey(), message, asR)).isFalse();
        // as the key, with a signature that would hold for the point it names (its discrete log is unknown: any S)
        assertThat(sameVerdict("non-canonical A y=" + y, enc, message, valid)).isFalse();
      }
    }
    assertThat(found).as("y = 0 and y = 1 at least").isGreaterThanOrEqualTo(3);
    // all-ones: y = 2^255 - 1 ≥ p
    byte[] ones = new byte[32];
    java.util.Arrays.fill(ones, (byte) 0xff);
    byte[] message = "ones".getBytes(StandardCharsets.UTF_8);
    assertThat(sameVerdict("R all ones", pair.publicKey(), message,
        Edwards25519.concat(ones, java.util.Arrays.copyOfRange(pair.sign(message), 32, 64)))).isFalse();
    assertThat(sameVerdict("A all ones", ones, message, pair.sign(message))).isFalse();
  }

  @Test
  void random_32_byte_keys_and_64_byte_signatures_get_the_old_answers() {
    Random random = new Random(9);
    for (int i = 0; i < 2000; i++) {
      byte[] key = new byte[32];
      byte[] sig = new byte[64];
      random.nextBytes(key);
      random.nextBytes(sig);
      if (i % 2 == 0) {
        sig[63] &= 0x0f; // S below 2^252: past the S check, so R and the key are what is decided on
      }
      assertThat(sameVerdict("junk #" + i, key, "junk".getBytes(StandardCharsets.UTF_8), sig)).isFalse();
    }
  }

  @Test
  void wrong_lengths_nulls_and_lenient_base64_give_the_answers_they_gave_before() {
    Ed25519KeyPair k = Ed25519KeyPair.fromSeed(HEX.parseHex(
        "4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb"));
    byte[] message = "lenient".getBytes(StandardCharsets.UTF_8);
    byte[] sig = k.sign(message);
    String std = B64.encode(sig);
    String key = k.publicKeyB64();
    Base64.Encoder url = Base64.getUrlEncoder().withoutPadding();
    List<String[]> cases = List.of(
        new String[] {key, std},
        new String[] {url.encodeToString(k.publicKey()), url.encodeToString(sig)},
        new String[] {key.replace("=", ""), std.replace("=", "")},
        new String[] {" " + key + "\n", "\t" + std + " "},
        new String[] {key, std.substring(0, 20) + "!*" + std.substring(20)},
        new String[] {key, std + "AAAA"},
        new String[] {key, B64.encode(java.util.Arrays.copyOf(sig, 63))},
        new String[] {key, B64.encode(java.util.Arrays.copyOf(sig, 65))},
        new String[] {B64.encode(java.util.Arrays.copyOf(k.publicKey(), 31)), std},
        new String[] {B64.encode(java.util.Arrays.copyOf(k.publicKey(), 33)), std},
        new String[] {"", std},
        new String[] {key, ""},
        new String[] {"%%%%", std},
        new String[] {null, std},
        new String[] {key, null});
    for (String[] c : cases) {
      boolean expected = before(c[0], message, c[1]);
      assertThat(Ed25519.verify(c[0], message, c[1])).as(c[0] + " / " + c[1]).isEqualTo(expected);
      assertThat(Ed25519.verify(c[0], message, c[1])).as("cached, again").isEqualTo(expected);
    }
    assertThat(before(url.encodeToString(k.publicKey()), message, url.encodeToString(sig))).isTrue();
    assertThat(Ed25519.verify(key, null, std)).isFalse();
    for (byte[][] c : new byte[][][] {
        {k.publicKey(), java.util.Arrays.copyOf(sig, 63)}, {k.publicKey(), java.util.Arrays.copyOf(sig, 65)},
        {java.util.Arrays.copyOf(k.publicKey(), 31), sig}, {java.util.Arrays.copyOf(k.publicKey(), 33), sig},
        {null, sig}, {k.publicKey(), null}}) {
      assertThat(Ed25519.verify(c[0], message, c[1])).isEqualTo(before(c[0], message, c[1])).isFalse();
    }
  }

  @Test
  void many_threads_sign_and_verify_at_once_with_one_key_pair_and_many_keys() throws Exception {
    Ed25519KeyPair relay = Ed25519KeyPair.generate();
    byte[] relaySeed = B64.decodeLenient(relay.seedB64()).orElseThrow();
    List<Ed25519KeyPair> hosts = new ArrayList<>();
    for (int i = 0; i < 16; i++) {
      hosts.add(Ed25519KeyPair.generate());
    }
    ExecutorService pool = Executors.newFixedThreadPool(8);
    try {
      List<Future<Boolean>> results = new ArrayList<>();
      for (int i = 0; i < 800; i++) {
        int n = i;
        results.add(pool.submit(() -> {
          byte[] m = ("message " + n).getBytes(StandardCharsets.UTF_8);
          Ed25519KeyPair host = hosts.get(n % hosts.size());
          byte[] sig = host.sign(m);
          byte[] bad = sig.clone();
          bad[5] ^= 1;
          return java.util.Arrays.equals(relay.sign(m), BouncyCastleEd25519Engine.sign(relaySeed, relay.publicKey(), m))
              && Ed25519.verify(host.publicKeyB64(), m, B64.encode(sig))
              && !Ed25519.verify(host.publicKeyB64(), m, B64.encode(bad))
              && !Ed25519.verify(hosts.get((n + 1) % hosts.size()).publicKeyB64(), m, B64.encode(sig));
        }));
      }
      for (Future<Boolean> r : results) {
        assertThat(r.get()).isTrue();
      }
    } finally {
      pool.shutdownNow();
    }
  }
}
