package io.mbxrelay.store.sqlite;

import io.mbxrelay.crypto.Fingerprint;
import io.mbxrelay.store.StoreRefusedException;
import io.mbxrelay.wire.B64;
import io.mbxrelay.wire.IsoTime;
import io.mbxrelay.wire.Json;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.regex.Pattern;

/**
 * Checks that tell a damaged store from a good one (issue 10 items 1, 2, 5, 6): SQLite's structural checks
 * ({@code PRAGMA quick_check}, {@code PRAGMA integrity_check}), every item's {@code wire_hash} against its wire bytes
 * (docs/protocol.md §1 "wire_hash": SHA-256 of the exact bytes, lower-case hex), and the {@code meta} values of §5.
 *
 * <p>Problems are described for operators: table and column names, seqs, rowids and host-key fingerprints; never wire
 * bytes or keys. Threading: plain JDBC on the caller's connection; the caller owns it.
 */
public final class StoreIntegrity {
  /** Most problem lines SQLite reports per structural check (its own bound on the answer). */
  public static final int MAX_PROBLEMS = 20;

  private static final Pattern EPOCH = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._:-]{0,127}");
  private static final Pattern MS = Pattern.compile("[0-9]{1,15}");

  private StoreIntegrity() {}

  /**
   * {@code PRAGMA quick_check(N)}: every b-tree page, cell, freelist and record format, without cross-checking index
   * entries against table rows (which {@link #integrityCheck} adds). O(store size): one read of every page.
   *
   * @param c an open connection to the store (it sees the WAL)
   * @return problem lines, at most {@link #MAX_PROBLEMS}; empty when the store passes
   * @throws SQLException when the check cannot run (SQLITE_CORRUPT or NOTADB on the first pages included)
   */
  public static List<String> quickCheck(Connection c) throws SQLException {
    return check(c, "quick_check");
  }

  /**
   * {@code PRAGMA integrity_check(N)}: {@link #quickCheck} plus every index against its table and UNIQUE constraints.
   *
   * @param c an open connection to the store
   * @return problem lines, at most {@link #MAX_PROBLEMS}; empty when the store passes
   * @throws SQLException when the check cannot run
   */
  public static List<String> integrityCheck(Connection c) throws SQLException {
    return check(c, "integrity_check");
  }

  private static List<String> check(Connection c, String pragma) throws SQLException {
    List<String> out = new ArrayList<>();
    try (Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("PRAGMA " + pragma + "(" + MAX_PROBLEMS + ")")) {
      while (rs.next()) {
        String line = rs.getString(1);
        if (!"ok".equals(line)) {
          out.add(line);
        }
      }
    }
    return out;
  }

  /**
   * What {@link #verifyHashes} found.
   *
   * @param items items read
   * @param bytes wire bytes hashed
   * @param mismatched items whose {@code sha256(wire)} differs from their {@code wire_hash} (or whose {@code bytes}
   *     differs from the wire length)
   * @param rows up to {@code maxRows} of them, described as {@code "seq N for target <fingerprint> (rowid R)"}
   */
  public record HashReport(long items, long bytes, long mismatched, List<String> rows) {
    /** True when every item matched. */
    public boolean ok() {
      return mismatched == 0;
    }
  }

  /**
   * Recomputes the SHA-256 of every item's wire bytes and compares it with the stored {@code wire_hash} (and the
   * length with {@code bytes}). Reads every blob once: O(stored bytes).
   *
   * @param c an open connection to the store
   * @param maxRows most mismatching rows to describe
   * @return the report
   * @throws SQLException on a read failure (corruption included)
   */
  public static HashReport verifyHashes(Connection c, int maxRows) throws SQLException {
    MessageDigest md;
    try {
      md = MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
    long items = 0;
    long bytes = 0;
    long bad = 0;
    List<String> rows = new ArrayList<>();
    try (Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT rowid, target_pubkey, seq, wire_hash, bytes, wire FROM items")) {
      while (rs.next()) {
        byte[] wire = rs.getBytes(6);
        if (wire == null) {
          wire = new byte[0];
        }
        items++;
        bytes += wire.length;
        String hash = HexFormat.of().formatHex(md.digest(wire));
        if (!hash.equals(rs.getString(4)) || rs.getLong(5) != wire.length) {
          bad++;
          if (rows.size() < maxRows) {
            rows.add("seq " + rs.getLong(3) + " for target " + fingerprint(rs.getString(2)) + " (rowid "
                + rs.getLong(1) + ")");
          }
        }
      }
    }
    return new HashReport(items, bytes, bad, rows);
  }

  /**
   * Whether a driver error means the file is damaged ({@code SQLITE_CORRUPT*}, {@code SQLITE_NOTADB}) rather than
   * unavailable.
   *
   * @param e the error
   * @return true for corruption
   */
  public static boolean isCorruption(SQLException e) {
    if (e instanceof org.sqlite.SQLiteException se && se.getResultCode() != null) {
      String name = se.getResultCode().name();
      return name.startsWith("SQLITE_CORRUPT") || name.startsWith("SQLITE_NOTADB");
    }
    return false;
  }

  private static String fingerprint(String key) {
    try {
      return Fingerprint.ofB64(key);
    } catch (RuntimeException e) {
      return "(not a key)";
    }
  }

  /**
   * Validates the {@code meta} values the relay acts on (docs/protocol.md §5 "Tables"): a value that is present must parse;
   * {@code epoch} must be present from schema version 2 on. Absent optional keys are not problems (a store written by
   * the reference may lack {@code expiry_from} or {@code heartbeat}; docs/protocol.md §5 says what their absence means).
   *
   * @param c an open connection to a store that has a {@code meta} table
   * @return problem lines naming the key and why, never the value when it might be key material; empty when valid
   * @throws SQLException on a read failure
   */
  public static List<String> metadataProblems(Connection c) throws SQLException {
    List<String> out = new ArrayList<>();
    String version = meta(c, "schema_version");
    int v = -1;
    if (version == null) {
      out.add("meta.schema_version is missing");
    } else if (!version.matches("[0-9]{1,4}")) {
      out.add("meta.schema_version is " + quote(version) + ", not a version number");
    } else {
      v = Integer.parseInt(version);
      if (v < 1) {
        out.add("meta.schema_version is " + v + ", not a version of this store");
      }
    }
    String epoch = meta(c, "epoch");
    if (epoch == null ? v >= 2 : !EPOCH.matcher(epoch).matches()) {
      out.add(epoch == null ? "meta.epoch is missing" : "meta.epoch is " + quote(epoch) + ", not an epoch id");
    }
    String pub = meta(c, "relay_pubkey");
    if (pub != null && !B64.isPubkey(pub)) {
      out.add("meta.relay_pubkey is not a base64 Ed25519 public key");
    }
    String hb = meta(c, "heartbeat");
    if (hb != null && !MS.matcher(hb).matches()) {
      out.add("meta.heartbeat is " + quote(hb) + ", not a time in ms");
    }
    String commits = meta(c, CommitWatermark.META_KEY);
    if (commits != null && !commits.matches("[0-9]{1,18}")) {
      out.add("meta." + CommitWatermark.META_KEY + " is " + quote(commits) + ", not a count of transactions");
    }
    String expiryFrom = meta(c, "expiry_from");
    if (expiryFrom != null && !IsoTime.isZodDatetime(expiryFrom)) {
      out.add("meta.expiry_from is " + quote(expiryFrom) + ", not an ISO time");
    }
    for (String k : new String[] {"epoch_rotated", "restored", "restored_paths"}) {
      String j = meta(c, k);
      if (j != null && !isJsonObject(j)) {
        out.add("meta." + k + " is not a JSON object");
      }
    }
    return out;
  }

  /**
   * The open-time gate of the writer (issue 10 item 2): refuses a store that fails {@code quick_check}.
   *
   * @param c the writer connection
   * @param file the database file (for the message)
   * @throws StoreRefusedException when the check finds problems or cannot run on a damaged file
   */
  public static void requireQuickCheck(Connection c, Path file) throws StoreRefusedException {
    prefetch(file);
    List<String> problems;
    try {
      problems = quickCheck(c);
    } catch (SQLException e) {
      problems = List.of(e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage());
    }
    if (!problems.isEmpty()) {
      throw new StoreRefusedException(file + " fails its integrity check (quick_check: "
          + String.join("; ", problems.subList(0, Math.min(3, problems.size())))
          + (problems.size() > 3 ? "; …" : "") + "): the store is damaged and will not be served. "
          + remedy(file.getParent()));
    }
  }

  /**
   * Reads the database file once, sequentially, so the page cache holds it before a check walks its b-trees: the
   * walk reads pages in tree order, which on a cold cache is random I/O (measured on a 1.3 GB store: quick_check 16 s
   * cold, 0.6 s after one sequential read of 0.5 s; docs/operations.md "Store refused"). Best effort: an I/O error
   * here is left to the check itself to report.
   *
   * @param file the database file
   */
  public static void prefetch(Path file) {
    java.nio.ByteBuffer buf = java.nio.ByteBuffer.allocateDirect(1 << 20);
    try (java.nio.channels.FileChannel ch = java.nio.channels.FileChannel.open(file,
        java.nio.file.StandardOpenOption.READ)) {
      while (ch.read(buf) > 0) {
        buf.clear();
      }
    } catch (java.io.IOException | RuntimeException e) {
      // the check reports what matters
    }
  }

  /**
   * The open-time gate on metadata (issue 10 item 5): refuses a store whose {@code meta} values do not validate;
   * nothing is rewritten.
   *
   * @param c the writer connection
   * @param file the database file (for the message)
   * @throws StoreRefusedException naming every problem
   * @throws SQLException on a read failure
   */
  public static void requireValidMetadata(Connection c, Path file) throws StoreRefusedException, SQLException {
    List<String> problems = metadataProblems(c);
    if (!problems.isEmpty()) {
      throw new StoreRefusedException(file + " has invalid metadata (" + String.join("; ", problems)
          + "); nothing was changed and the store will not be served. " + remedy(file.getParent())
          + " An operator who knows the right value may instead correct that meta row by hand.");
    }
  }

  /** What an operator does about a damaged store in {@code dir}. */
  static String remedy(Path dir) {
    return "Keep the files for analysis; check the latest backup (mbxrelay check --full --file BACKUP) and restore it"
        + " (mbxrelay restore BACKUP --force --store-dir " + dir + "; --force because the damaged store is kept"
        + " under rollback/ without carrying its state). Run mbxrelay check --full --store-dir " + dir
        + " for the full list of problems.";
  }

  private static String meta(Connection c, String k) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement("SELECT v FROM meta WHERE k=?")) {
      ps.setString(1, k);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() ? rs.getString(1) : null;
      }
    }
  }

  private static boolean isJsonObject(String s) {
    try {
      return Json.parse(s).isObject();
    } catch (RuntimeException e) {
      return false;
    }
  }

  private static String quote(String v) {
    String shown = v.length() > 40 ? v.substring(0, 40) + "…" : v;
    return "'" + shown.replaceAll("[^\\x20-\\x7e]", "?") + "'";
  }
}
