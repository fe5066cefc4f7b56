package io.mbxrelay.store.jdbc;

import io.mbxrelay.store.model.Page;
import io.mbxrelay.store.model.PulledItem;
import io.mbxrelay.wire.Hashes;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;

/**
 * One pull page read with three statements on a JDBC store whose tables have the relay's shape (docs/protocol.md
 * "Pull v2"): plan the page on {@code (seq, bytes)} within the item and byte limits, read those rows (a row whose wire
 * no longer matches its {@code wire_hash} is withheld and named as damaged), then the head. The caller runs them in
 * one snapshot (a read transaction). Shared by the SQLite and PostgreSQL reads.
 */
public final class JdbcPage {
  private JdbcPage() {}

  /**
   * Reads one page.
   *
   * @param plan prepared {@link SqlCatalogue#PAGE_PLAN}
   * @param fetch prepared {@link SqlCatalogue#PAGE_FETCH}
   * @param head prepared: the target's next seq, one parameter ({@link SqlCatalogue#NEXT_SEQ} or SQLite's own)
   * @param target the caller's key
   * @param after exclusive lower seq bound
   * @param limit most items
   * @param maxBytes byte budget; one oversize item still goes out alone
   * @return the page
   * @throws SQLException when a read fails
   */
  public static Page read(PreparedStatement plan, PreparedStatement fetch, PreparedStatement head, String target,
      long after, int limit, long maxBytes) throws SQLException {
    plan.setString(1, target);
    plan.setLong(2, after);
    plan.setInt(3, limit + 1);
    int n = 0;
    int fetched = 0;
    boolean full = false;
    long total = 0;
    long through = after;
    try (ResultSet rs = plan.executeQuery()) {
      while (rs.next()) {
        fetched++;
        if (full || n == limit) {
          continue; // counted for `more` only
        }
        long bytes = rs.getLong(2);
        if (n > 0 && total + bytes > maxBytes) {
          full = true;
          continue;
        }
        total += bytes;
        through = rs.getLong(1);
        n++;
      }
    }
    List<PulledItem> items = new ArrayList<>(n);
    List<Long> damaged = List.of();
    if (n > 0) {
      fetch.setString(1, target);
      fetch.setLong(2, after);
      fetch.setLong(3, through);
      try (ResultSet rs = fetch.executeQuery()) {
        while (rs.next()) {
          byte[] wire = rs.getBytes(5);
          // never serve bytes that are not what was accepted (issue 10 item 1): ~1 µs per KiB
          if (!Hashes.sha256Hex(wire).equals(rs.getString(7))) {
            damaged = damaged.isEmpty() ? new ArrayList<>() : damaged;
            damaged.add(rs.getLong(1));
            continue;
          }
          items.add(new PulledItem(rs.getLong(1), rs.getString(2), rs.getString(3), rs.getString(4), wire,
              rs.getString(6)));
        }
      }
    }
    head.setString(1, target);
    long headSeq;
    try (ResultSet rs = head.executeQuery()) {
      headSeq = rs.next() ? rs.getLong(1) - 1 : 0;
    }
    return new Page(headSeq, items, fetched > n, n > 0 ? through : -1, damaged);
  }
}
