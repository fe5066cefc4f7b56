package io.mbxrelay.crypto;

import java.math.BigInteger;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Arrays;
import java.util.List;

/**
 * Just enough edwards25519 arithmetic (RFC 8032 section 5.1, affine coordinates, {@link BigInteger}, slow and variable time)
 * to build the signatures the libraries disagree about: R or the key with a small-order component, signatures made
 * with a raw scalar, non-canonical encodings. Test code only: never for real keys.
 */
final class Edwards25519 {
  static final BigInteger P = BigInteger.TWO.pow(255).subtract(BigInteger.valueOf(19));
  /** The prime order of the base point. */
  static final BigInteger L = BigInteger.TWO.pow(252).add(new BigInteger("27742317777372353535851937790883648493"));
  private static final BigInteger D =
      BigInteger.valueOf(-121665).multiply(BigInteger.valueOf(121666).modInverse(P)).mod(P);
  private static final BigInteger SQRT_M1 = BigInteger.TWO.modPow(P.subtract(BigInteger.ONE).shiftRight(2), P);

  /** An affine point. */
  record Point(BigInteger x, BigInteger y) {}

  static final Point IDENTITY = new Point(BigInteger.ZERO, BigInteger.ONE);
  static final Point BASE = decode(java.util.HexFormat.of()
      .parseHex("5866666666666666666666666666666666666666666666666666666666666666"));

  /** The eight points of order dividing 8: the identity, one of order 2, two of order 4, four of order 8. */
  static final List<Point> SMALL_ORDER = smallOrder();

  private Edwards25519() {}

  static Point add(Point a, Point b) {
    BigInteger xx = a.x.multiply(b.x);
    BigInteger yy = a.y.multiply(b.y);
    BigInteger dxxyy = D.multiply(xx).multiply(yy).mod(P);
    BigInteger x = a.x.multiply(b.y).add(b.x.multiply(a.y)).multiply(BigInteger.ONE.add(dxxyy).modInverse(P)).mod(P);
    BigInteger y = yy.add(xx).multiply(BigInteger.ONE.subtract(dxxyy).mod(P).modInverse(P)).mod(P);
    return new Point(x, y);
  }

  static Point multiply(BigInteger k, Point p) {
    Point r = IDENTITY;
    for (int i = k.bitLength() - 1; i >= 0; i--) {
      r = add(r, r);
      if (k.testBit(i)) {
        r = add(r, p);
      }
    }
    return r;
  }

  /** The canonical 32-byte encoding. */
  static byte[] encode(Point p) {
    byte[] out = littleEndian(p.y);
    if (p.x.testBit(0)) {
      out[31] |= (byte) 0x80;
    }
    return out;
  }

  /**
   * Decodes leniently: y is taken modulo p (so non-canonical encodings decode too), and x = 0 with the sign bit set
   * is allowed. Null when no point has that y.
   */
  static Point decode(byte[] encoded) {
    byte[] b = encoded.clone();
    boolean sign = (b[31] & 0x80) != 0;
    b[31] &= 0x7f;
    BigInteger y = fromLittleEndian(b).mod(P);
    BigInteger u = y.multiply(y).subtract(BigInteger.ONE);
    BigInteger v = D.multiply(y).multiply(y).add(BigInteger.ONE);
    BigInteger x2 = u.multiply(v.modInverse(P)).mod(P);
    BigInteger x = x2.modPow(P.add(BigInteger.valueOf(3)).shiftRight(3), P);
    if (!x.multiply(x).subtract(x2).mod(P).equals(BigInteger.ZERO)) {
      x = x.multiply(SQRT_M1).mod(P);
    }
    if (!x.multiply(x).subtract(x2).mod(P).equals(BigInteger.ZERO)) {
      return null;
    }
    if (x.testBit(0) != sign) {
      x = P.subtract(x).mod(P);
    }
    return new Point(x, y);
  }

  /** The clamped secret scalar of a seed (RFC 8032 section 5.1.5). */
  static BigInteger secretScalar(byte[] seed) {
    byte[] h = Arrays.copyOf(sha512(seed), 32);
    h[0] &= (byte) 248;
    h[31] &= 127;
    h[31] |= 64;
    return fromLittleEndian(h);
  }

  /** k = SHA-512(R || A || M) mod L. */
  static BigInteger challenge(byte[] r, byte[] a, byte[] message) {
    return fromLittleEndian(sha512(r, a, message)).mod(L);
  }

  /** R || S with S = r + k·a mod L, for any R point (r its discrete log to the base, as the caller built it). */
  static byte[] signature(byte[] rEncoded, BigInteger r, BigInteger a, byte[] aEncoded, byte[] message) {
    BigInteger s = r.add(challenge(rEncoded, aEncoded, message).multiply(a)).mod(L);
    return concat(rEncoded, littleEndian(s));
  }

  static byte[] littleEndian(BigInteger v) {
    byte[] be = v.toByteArray();
    byte[] out = new byte[32];
    for (int i = 0; i < be.length && i < 32; i++) {
      out[i] = be[be.length - 1 - i];
    }
    return out;
  }

  static BigInteger fromLittleEndian(byte[] le) {
    byte[] be = new byte[le.length];
    for (int i = 0; i < le.length; i++) {
      be[i] = le[le.length - 1 - i];
    }
    return new BigInteger(1, be);
  }

  static byte[] concat(byte[]... parts) {
    int n = 0;
    for (byte[] p : parts) {
      n += p.length;
    }
    byte[] out = new byte[n];
    int at = 0;
    for (byte[] p : parts) {
      System.arraycopy(p, 0, out, at, p.length);
      at += p.length;
    }
    return out;
  }

  private static byte[] sha512(byte[]... parts) {
    try {
      MessageDigest d = MessageDigest.getInstance("SHA-512");
      for (byte[] p : parts) {
        d.update(p);
      }
      return d.digest();
    } catch (NoSuchAlgorithmException e) {
      throw new AssertionError(e);
    }
  }

  private static List<Point> smallOrder() {
    // an order-8 point (y from "Taming the many EdDSAs"), and its multiples
    Point t8 = decode(java.util.HexFormat.of().parseHex(
        "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a"));
    List<Point> out = new java.util.ArrayList<>();
    Point p = IDENTITY;
    for (int i = 0; i < 8; i++) {
      out.add(p);
      p = add(p, t8);
    }
    if (!p.equals(IDENTITY)) {
      throw new AssertionError("not of order 8");
    }
    return List.copyOf(out);
  }
}
