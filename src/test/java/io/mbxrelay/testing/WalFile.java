package io.mbxrelay.testing;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Reads an SQLite write-ahead log the way recovery does (sqlite.org/fileformat2.html "WAL File Format"): the 32-byte
 * header, then frames of a 24-byte header and one page, each valid while its salts match the header's and its
 * cumulative checksum verifies. Used by the crash drills to damage exactly one live frame.
 */
public final class WalFile {
  /** A valid frame: its index, byte offset in the file, page number, and whether it ends a transaction. */
  public record Frame(int index, long offset, int page, boolean commit) {}

  private WalFile() {}

  /** The valid frames of the WAL, in order (recovery stops at the first invalid one). */
  public static List<Frame> validFrames(Path wal) throws IOException {
    byte[] b = Files.readAllBytes(wal);
    List<Frame> out = new ArrayList<>();
    if (b.length < 32) {
      return out;
    }
    ByteBuffer be = ByteBuffer.wrap(b).order(ByteOrder.BIG_ENDIAN);
    int magic = be.getInt(0);
    if (magic != 0x377f0682 && magic != 0x377f0683) {
      return out;
    }
    boolean bigEndianSums = (magic & 1) == 1;
    int pageSize = be.getInt(8);
    int salt1 = be.getInt(16);
    int salt2 = be.getInt(20);
    int[] sum = checksum(b, 0, 24, new int[] {0, 0}, bigEndianSums);
    if (sum[0] != be.getInt(24) || sum[1] != be.getInt(28)) {
      return out;
    }
    int frameSize = 24 + pageSize;
    for (int i = 0; 32L + (long) (i + 1) * frameSize <= b.length; i++) {
      int off = 32 + i * frameSize;
      if (be.getInt(off + 8) != salt1 || be.getInt(off + 12) != salt2) {
        break;
      }
      sum = checksum(b, off, 8, sum, bigEndianSums);
      sum = checksum(b, off + 24, pageSize, sum, bigEndianSums);
      if (sum[0] != be.getInt(off + 16) || sum[1] != be.getInt(off + 20)) {
        break;
      }
      out.add(new Frame(i, off, be.getInt(off), be.getInt(off + 4) != 0));
    }
    return out;
  }

  private static int[] checksum(byte[] b, int off, int len, int[] seed, boolean bigEndian) {
    ByteBuffer buf = ByteBuffer.wrap(b, off, len).order(bigEndian ? ByteOrder.BIG_ENDIAN : ByteOrder.LITTLE_ENDIAN);
    int s0 = seed[0];
    int s1 = seed[1];
    for (int i = 0; i < len; i += 8) {
      s0 += buf.getInt(off + i) + s1;
      s1 += buf.getInt(off + i + 4) + s0;
    }
    return new int[] {s0, s1};
  }

  /** {@code nBackfill} of the WAL index (the {@code -shm} file): frames already copied into the database. */
  public static int backfilled(Path shm) throws IOException {
    byte[] b = Files.readAllBytes(shm);
    return ByteBuffer.wrap(b).order(ByteOrder.nativeOrder()).getInt(96);
  }

  /** Flips one bit of one byte at {@code offset} of a file. */
  public static void flip(Path file, long offset) throws IOException {
    byte[] b = Files.readAllBytes(file);
    b[Math.toIntExact(offset)] ^= 0x20;
    Files.write(file, b);
  }
}
