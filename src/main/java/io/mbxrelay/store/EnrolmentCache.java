package io.mbxrelay.store;

import io.mbxrelay.store.model.Enrolment;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The live rows of the committed {@code enrolments} table held in memory (docs/protocol.md §7.2, §2 hop lookups), so
 * that verifying a hop and checking a push's targets never wait on a database read. Revoked rows are not held (every
 * rotation leaves one, so they would grow without bound); a key that is absent here is not a live enrolment, and the
 * writer reads a revoked row from the database when it needs one.
 *
 * <p>The store loads every row when it opens and is the only writer: it updates this copy right after the COMMIT that
 * changed a row and before any reply of that transaction is sent, so a request that arrives after a revocation was
 * answered sees the revocation (issue 9 "a revoked key must fail on the next request"). A change made by another
 * process (the {@code deny} CLI beside a running relay) is picked up when the writer notices the database changed
 * (SQLite {@code data_version}, checked at every transaction and every second).
 *
 * <p>Threading: reads are safe on any thread (event loops); {@link #put}, {@link #replaceAll} are called by the writer
 * thread only. Memory: about 400 bytes per enrolment (100,000 enrolments, the default cap, ≈ 40 MB).
 */
public final class EnrolmentCache {
  private static final Comparator<Enrolment> NEWEST_FIRST =
      Comparator.comparing(Enrolment::enrolledAt, Comparator.reverseOrder());

  private final ConcurrentHashMap<String, Enrolment> byKey = new ConcurrentHashMap<>();
  /** ASCII-lower-cased name → live enrolments with that name, newest enrolled first (immutable lists). */
  private final ConcurrentHashMap<String, List<Enrolment>> liveByName = new ConcurrentHashMap<>();

  /**
   * The live enrolment of a key.
   *
   * @param hostPubkey the key string as stored (base64, 44 chars)
   * @return the committed live row, or empty (revoked or never enrolled)
   */
  public Optional<Enrolment> get(String hostPubkey) {
    return hostPubkey == null ? Optional.empty() : Optional.ofNullable(byKey.get(hostPubkey));
  }

  /**
   * Live enrolments carrying a name, compared case-insensitively for ASCII letters exactly like SQLite's
   * {@code lower()} (docs/protocol.md §2 v1 hop, §4.6), newest enrolled first.
   *
   * @param name the name as sent
   * @param limit most rows returned
   * @return at most {@code limit} rows
   */
  public List<Enrolment> liveByName(String name, int limit) {
    if (name == null) {
      return List.of();
    }
    List<Enrolment> all = liveByName.getOrDefault(asciiLower(name), List.of());
    return all.size() <= limit ? all : all.subList(0, limit);
  }

  /** Number of live enrolments (the {@code mbxrelay_enrolments_live} gauge). */
  public long liveCount() {
    return byKey.size();
  }

  /**
   * Stores a committed row (writer thread only), replacing the key's previous row; a revoked row removes the key.
   *
   * @param e the row as committed
   */
  public void put(Enrolment e) {
    Objects.requireNonNull(e);
    if (!e.live()) {
      remove(e.hostPubkey());
      return;
    }
    Enrolment old = byKey.put(e.hostPubkey(), e);
    if (old != null) {
      unindex(old);
    }
    if (e.live()) {
      liveByName.compute(asciiLower(e.hostName()), (k, list) -> {
        List<Enrolment> next = new ArrayList<>(list == null ? List.of() : list);
        next.add(e);
        next.sort(NEWEST_FIRST);
        return List.copyOf(next);
      });
    }
  }

  /**
   * Removes a key whose row no longer exists (writer thread only).
   *
   * @param hostPubkey the key
   */
  public void remove(String hostPubkey) {
    Enrolment old = byKey.remove(hostPubkey);
    if (old != null) {
      unindex(old);
    }
  }

  /**
   * Replaces the whole content with a fresh read of the table (writer thread only: at open, and after a change this
   * process did not make).
   *
   * @param rows every row of {@code enrolments} (revoked ones are skipped)
   */
  public void replaceAll(Collection<Enrolment> rows) {
    Map<String, Enrolment> fresh = new java.util.HashMap<>(rows.size() * 2);
    Map<String, List<Enrolment>> names = new java.util.HashMap<>();
    for (Enrolment e : rows) {
      if (e.live()) {
        fresh.put(e.hostPubkey(), e);
        names.computeIfAbsent(asciiLower(e.hostName()), k -> new ArrayList<>()).add(e);
      }
    }
    byKey.keySet().retainAll(fresh.keySet());
    byKey.putAll(fresh);
    liveByName.keySet().retainAll(names.keySet());
    names.forEach((k, list) -> {
      list.sort(NEWEST_FIRST);
      liveByName.put(k, List.copyOf(list));
    });
  }

  private void unindex(Enrolment old) {
    if (old.live()) {
      liveByName.computeIfPresent(asciiLower(old.hostName()), (k, list) -> {
        List<Enrolment> next = new ArrayList<>(list);
        next.removeIf(x -> x.hostPubkey().equals(old.hostPubkey()));
        return next.isEmpty() ? null : List.copyOf(next);
      });
    }
  }

  /** SQLite's built-in {@code lower()}: ASCII letters only. */
  static String asciiLower(String s) {
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c >= 'A' && c <= 'Z') {
        return lowerAscii(s);
      }
    }
    return s;
  }

  private static String lowerAscii(String s) {
    char[] out = s.toCharArray();
    for (int i = 0; i < out.length; i++) {
      if (out[i] >= 'A' && out[i] <= 'Z') {
        out[i] = (char) (out[i] + 32);
      }
    }
    return new String(out);
  }
}
