package io.mbxrelay.wire;

import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/** Digests used on the wire ({@code docs/protocol.md §1} "wire_hash"). Stateless and thread-safe. */
public final class Hashes {

  private Hashes() {}

  /**
   * SHA-256 of the exact bytes, lowercase hex (64 characters). For wire bytes: hash the decoded bytes as
   * received, never re-encoded JSON.
   *
   * @param bytes the bytes (not null)
   * @return 64 lowercase hex digits
   */
  public static String sha256Hex(byte[] bytes) {
    return HexFormat.of().formatHex(sha256(bytes));
  }

  /**
   * Raw SHA-256.
   *
   * @param bytes the bytes (not null)
   * @return the 32-byte digest
   */
  public static byte[] sha256(byte[] bytes) {
    try {
      return MessageDigest.getInstance("SHA-256").digest(bytes);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is missing from this JVM", e);
    }
  }
}
