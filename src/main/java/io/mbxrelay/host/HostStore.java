package io.mbxrelay.host;

import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * The host's own durable state (issue 5 item 1; docs/protocol.md §6, §7.3 "Sender side", §7.4): one SQLite file per host
 * ({@code journal_mode=WAL}, {@code synchronous=FULL}, one JDBC connection). Tables:
 * <ul>
 *   <li>{@code meta} — host key reference (public key only; the private key stays in its key file), host name,
 *       receipt counter;</li>
 *   <li>{@code relays} — pinned relay key per URL, a presented-but-unconfirmed key, stored epoch, announced limits,
 *       enrolled cache (keyed by relay, relay key, epoch, host key), allowlist digest and last {@code iat}, session
 *       backoff, last session state; the relays the CLI uses are {@code meta.relay_urls};</li>
 *   <li>{@code peers} — accepted peer host keys (the allowlist; receipts are verified with them);</li>
 *   <li>{@code outbox} — one row per (relay, item id, target), a message having a row on each relay it goes to: the
 *       sealed wire bytes (stored before the first attempt, reused on every retry), the key they are sealed for and,
 *       while they may be resealed, the plaintext, state {@code pending | repush | relay-accepted | settled |
 *       unconfirmed | expired | undelivered | dropped | sent}, attempts, {@code next_at} (ms), {@code unsure} (the
 *       relay may hold the bytes), seq/epoch/accept receipt/sig, {@code deadline_at} (ms);</li>
 *   <li>{@code positions} — receive position {@code (relay, epoch, received_through)} and the acked marker;</li>
 *   <li>{@code quarantine} — {@code (relay, epoch, seq, kind, item_id, sender_pubkey, reason, wire, at)};</li>
 *   <li>{@code received} — message ids already handed to the application (receiver dedup);</li>
 *   <li>{@code peer_receipts} — peers that ever sent a delivery receipt; {@code alerts} — alerts for people;</li>
 *   <li>{@code peers} also keeps each peer's encryption key: pinned ({@code enc_pub}) or the newest verified relay
 *       ad ({@code ad_enc_pub}, {@code ad_iat}, {@code ad_exp});</li>
 *   <li>{@code drafts} — messages waiting for a usable encryption key of their target (plaintext envelope, kept on
 *       this host only; sealed into {@code outbox} once the key is known);</li>
 *   <li>{@code inbox} — messages stored by {@link InboxApplication} (sealed wire) or by {@link SealedInbox} (also
 *       the sender address, subject and opened body).</li>
 * </ul>
 *
 * <p><b>Threading.</b> All access is serialized on this object: callers lock it ({@code synchronized (store)}) for
 * the span of a transaction; the public read methods lock it themselves. Blocking I/O: never on an event loop.
 *
 * <p><b>Errors.</b> Storage failures surface as {@link SQLException} (I/O, not expected outcomes); a failed commit is
 * never retried silently.
 */
public final class HostStore implements AutoCloseable {

  /** Default file name of the host store, next to the host key. */
  public static final String FILE_NAME = "host.db";

  /** Row states that are still in the active outbox (will be pushed). */
  public static final List<String> ACTIVE = List.of("pending", "repush");

  private final Connection c;
  private final Path file;
  private int depth;

  private HostStore(Connection c, Path file) {
    this.c = c;
    this.file = file;
  }

  /**
   * Opens (creating when missing) a host store.
   *
   * @param file the SQLite file (its directory must exist)
   * @return the open store
   * @throws SQLException when the file cannot be opened or migrated
   */
  public static HostStore open(Path file) throws SQLException {
    // Owner-only from the start: the store keeps the host's X25519 private key and its mail.
    try {
      if (!java.nio.file.Files.exists(file)
          && file.getFileSystem().supportedFileAttributeViews().contains("posix")) {
        java.nio.file.Files.createFile(file, java.nio.file.attribute.PosixFilePermissions.asFileAttribute(
            java.nio.file.attribute.PosixFilePermissions.fromString("rw-------")));
      }
    } catch (java.nio.file.FileAlreadyExistsException ignored) {
      // created meanwhile
    } catch (java.io.IOException e) {
      throw new SQLException("cannot create the host store " + file + ": " + e.getMessage(), e);
    }
    Connection c = DriverManager.getConnection("jdbc:sqlite:" + file.toAbsolutePath());
    try (Statement s = c.createStatement()) {
      s.execute("PRAGMA journal_mode=WAL");
      s.execute("PRAGMA synchronous=FULL");
      s.execute("PRAGMA busy_timeout=5000");
      s.execute("PRAGMA foreign_keys=ON");
      migrate(c, file);
    } catch (SQLException e) {
      c.close();
      throw e;
    }
    return new HostStore(c, file);
  }

  /**
   * The default store file next to a key file.
   *
   * @param keyFile the host key file
   * @return {@code <dir>/host.db}
   */
  public static Path besideKey(Path keyFile) {
    return keyFile.toAbsolutePath().resolveSibling(FILE_NAME);
  }

  /**
   * @return the store file
   */
  public Path file() {
    return file;
  }

  /**
   * @return whether the file exists on disk
   */
  public boolean exists() {
    return Files.exists(file);
  }

  private static final String[] SCHEMA = {
      "CREATE TABLE IF NOT EXISTS meta(k TEXT PRIMARY KEY, v TEXT NOT NULL)",
      "CREATE TABLE IF NOT EXISTS relays(url TEXT PRIMARY KEY, relay_pubkey TEXT NOT NULL, pinned_at INTEGER NOT NULL,"
          + " presented_pubkey TEXT, presented_at INTEGER, epoch TEXT, retention_days INTEGER NOT NULL DEFAULT 14,"
          + " max_batch INTEGER NOT NULL DEFAULT 200, max_pull INTEGER NOT NULL DEFAULT 500,"
          + " enrolled_cache TEXT, enrol_failures INTEGER NOT NULL DEFAULT 0, enrol_next_at INTEGER NOT NULL DEFAULT 0,"
          + " allowlist_digest TEXT, allowlist_next_at INTEGER NOT NULL DEFAULT 0,"
          + " session_failures INTEGER NOT NULL DEFAULT 0, session_next_at INTEGER NOT NULL DEFAULT 0, last_error TEXT,"
          + " last_ok_at INTEGER)",
      "CREATE TABLE IF NOT EXISTS peers(host_pubkey TEXT PRIMARY KEY, name TEXT NOT NULL, added_at INTEGER NOT NULL)",
      "CREATE TABLE IF NOT EXISTS outbox(id INTEGER PRIMARY KEY AUTOINCREMENT, relay TEXT NOT NULL, kind TEXT NOT NULL,"
          + " item_id TEXT NOT NULL, msg_id TEXT NOT NULL, target_pubkey TEXT NOT NULL, wire BLOB NOT NULL,"
          + " wire_hash TEXT NOT NULL, state TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0,"
          + " next_at INTEGER NOT NULL, last_error TEXT, created_at INTEGER NOT NULL, seq INTEGER, epoch TEXT,"
          + " accept TEXT, accept_sig TEXT, accepted_at INTEGER, deadline_at INTEGER, done_at INTEGER,"
          + " UNIQUE(relay, item_id, target_pubkey))",
      "CREATE INDEX IF NOT EXISTS outbox_state ON outbox(relay, state, next_at)",
      "CREATE TABLE IF NOT EXISTS positions(relay TEXT PRIMARY KEY, epoch TEXT NOT NULL,"
          + " received_through INTEGER NOT NULL, acked_through INTEGER NOT NULL)",
      "CREATE TABLE IF NOT EXISTS quarantine(id INTEGER PRIMARY KEY AUTOINCREMENT, relay TEXT NOT NULL,"
          + " epoch TEXT NOT NULL, seq INTEGER NOT NULL, kind TEXT NOT NULL, item_id TEXT NOT NULL,"
          + " sender_pubkey TEXT NOT NULL, reason TEXT NOT NULL, wire BLOB NOT NULL, at INTEGER NOT NULL)",
      "CREATE TABLE IF NOT EXISTS received(sender_pubkey TEXT NOT NULL, msg_id TEXT NOT NULL, relay TEXT NOT NULL,"
          + " epoch TEXT NOT NULL, seq INTEGER NOT NULL, at INTEGER NOT NULL, PRIMARY KEY(sender_pubkey, msg_id))",
      "CREATE TABLE IF NOT EXISTS peer_receipts(host_pubkey TEXT PRIMARY KEY, last_at INTEGER NOT NULL)",
      "CREATE TABLE IF NOT EXISTS alerts(id INTEGER PRIMARY KEY AUTOINCREMENT, at INTEGER NOT NULL, kind TEXT NOT NULL,"
          + " relay TEXT, target_pubkey TEXT, item_id TEXT, text TEXT NOT NULL)",
      "CREATE TABLE IF NOT EXISTS inbox(id INTEGER PRIMARY KEY AUTOINCREMENT, relay TEXT NOT NULL,"
          + " sender_pubkey TEXT NOT NULL, msg_id TEXT NOT NULL, wire BLOB NOT NULL, at INTEGER NOT NULL)",
      "CREATE TABLE IF NOT EXISTS drafts(id INTEGER PRIMARY KEY AUTOINCREMENT, relay TEXT NOT NULL,"
          + " msg_id TEXT NOT NULL, target_pubkey TEXT NOT NULL, envelope TEXT NOT NULL, last_error TEXT,"
          + " attempts INTEGER NOT NULL DEFAULT 0, next_at INTEGER NOT NULL DEFAULT 0, created_at INTEGER NOT NULL,"
          + " UNIQUE(msg_id, target_pubkey))",
  };

  /**
   * Columns added to the version-1 layout while it was current (before stores carried a {@code schema_version}):
   * (table, column, type), added when missing, so every version-1 store reaches the same layout.
   */
  private static final String[][] V1_ADDED_COLUMNS = {
      {"peers", "enc_pub", "TEXT"},
      {"peers", "ad_enc_pub", "TEXT"},
      {"peers", "ad_iat", "TEXT"},
      {"peers", "ad_exp", "TEXT"},
      {"inbox", "from_addr", "TEXT"},
      {"inbox", "subject", "TEXT"},
      {"inbox", "body", "TEXT"},
  };

  /**
   * Version 2 (issue 21): several relays per host ({@code meta.relay_urls}), the relay's announced item limit, the
   * allowlist's last {@code iat}, each relay's last session state; per outbox row the key it was sealed for, the
   * plaintext kept while it may be resealed and whether the relay may hold its bytes (and indexes that find a
   * message's rows on every relay); a draft's key-wait alert.
   */
  private static final String[][] V2_ADDED_COLUMNS = {
      {"relays", "max_item_bytes", "INTEGER NOT NULL DEFAULT 524288"},
      {"relays", "allowlist_iat", "INTEGER NOT NULL DEFAULT 0"},
      {"relays", "last_session", "TEXT"},
      {"outbox", "enc_pub", "TEXT"},
      {"outbox", "plain", "TEXT"},
      {"outbox", "unsure", "INTEGER NOT NULL DEFAULT 0"},
      {"drafts", "alerted_at", "INTEGER"},
  };

  /** The schema version this code writes ({@code meta.schema_version}); a store without the key is version 1. */
  public static final int SCHEMA_VERSION = 2;

  /**
   * Brings a store to {@link #SCHEMA_VERSION} in one transaction (nothing changes when a step fails): creates what a
   * new store lacks, adds the columns of each version, and migrates data (version 2: the one relay URL of
   * {@code meta.relay_url} becomes the list {@code meta.relay_urls}; rows pushed before may be held by the relay, so
   * they are marked {@code unsure} and never resealed). Every step is idempotent. A newer store is refused: this code
   * would not know what its columns mean.
   */
  private static void migrate(Connection c, Path file) throws SQLException {
    int version = storedVersion(c);
    if (version > SCHEMA_VERSION) {
      throw new SQLException("the host store " + file + " has schema version " + version + ", newer than this"
          + " program's " + SCHEMA_VERSION + ": use a newer mbxrelay");
    }
    if (version == SCHEMA_VERSION) {
      return; // no write lock at every open (a `host send` beside a running `host run`)
    }
    try (Statement s = c.createStatement()) {
      s.execute("BEGIN IMMEDIATE");
    }
    boolean ok = false;
    try (Statement s = c.createStatement()) {
      for (String ddl : SCHEMA) {
        s.execute(ddl);
      }
      addMissingColumns(c, V1_ADDED_COLUMNS);
      if (version < 2) {
        addMissingColumns(c, V2_ADDED_COLUMNS);
        // a message's rows on the other relays are found by item or message id and target
        s.execute("CREATE INDEX IF NOT EXISTS outbox_item ON outbox(item_id, target_pubkey)");
        s.execute("CREATE INDEX IF NOT EXISTS outbox_msg ON outbox(msg_id, target_pubkey)");
        s.execute("CREATE INDEX IF NOT EXISTS outbox_by_state ON outbox(state, kind)"); // live rows among the settled
        s.execute("UPDATE outbox SET unsure=1 WHERE attempts>0");
        try (ResultSet rs = s.executeQuery("SELECT v FROM meta WHERE k='relay_url'")) {
          if (rs.next()) {
            String urls = io.mbxrelay.wire.Json.stringify(io.mbxrelay.wire.Json.MAPPER.createArrayNode()
                .add(RelayPins.normalizeUrl(rs.getString(1))));
            try (PreparedStatement ps = c.prepareStatement("INSERT OR IGNORE INTO meta(k, v) VALUES('relay_urls', ?)")) {
              ps.setString(1, urls);
              ps.executeUpdate();
            }
          }
        }
      }
      s.execute("INSERT INTO meta(k, v) VALUES('schema_version', '" + SCHEMA_VERSION + "')"
          + " ON CONFLICT(k) DO UPDATE SET v=excluded.v");
      s.execute("COMMIT");
      ok = true;
    } finally {
      if (!ok) {
        try (Statement s = c.createStatement()) {
          s.execute("ROLLBACK");
        } catch (SQLException ignored) {
          // the original failure is what matters
        }
      }
    }
  }

  /** The stored schema version: 0 for an empty file, 1 for a store from before the version key. */
  private static int storedVersion(Connection c) throws SQLException {
    try (Statement s = c.createStatement()) {
      try (ResultSet rs = s.executeQuery("SELECT 1 FROM sqlite_master WHERE type='table' AND name='meta'")) {
        if (!rs.next()) {
          return 0;
        }
      }
      try (ResultSet rs = s.executeQuery("SELECT v FROM meta WHERE k='schema_version'")) {
        if (!rs.next()) {
          return 1;
        }
        try {
          return Integer.parseInt(rs.getString(1));
        } catch (NumberFormatException e) {
          throw new SQLException("the host store's schema_version is not a number: " + rs.getString(1));
        }
      }
    }
  }

  private static void addMissingColumns(Connection c, String[][] columns) throws SQLException {
    for (String[] col : columns) {
      boolean present = false;
      try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("PRAGMA table_info(" + col[0] + ")")) {
        while (rs.next()) {
          present |= rs.getString("name").equals(col[1]);
        }
      }
      if (!present) {
        try (Statement s = c.createStatement()) {
          s.execute("ALTER TABLE " + col[0] + " ADD COLUMN " + col[1] + " " + col[2]);
        }
      }
    }
  }

  // ---- transactions ----

  /** Work inside a transaction. */
  @FunctionalInterface
  interface Work<T> {
    T run(Connection c) throws SQLException;
  }

  /**
   * Runs {@code w} in one {@code BEGIN IMMEDIATE … COMMIT} (joins an open one). Caller holds the lock. A failure rolls
   * back and rethrows; a RuntimeException from {@code w} rolls back too.
   */
  <T> T tx(Work<T> w) throws SQLException {
    if (depth > 0) {
      return w.run(c);
    }
    try (Statement s = c.createStatement()) {
      s.execute("BEGIN IMMEDIATE");
    }
    depth++;
    boolean ok = false;
    try {
      T t = w.run(c);
      try (Statement s = c.createStatement()) {
        s.execute("COMMIT");
      }
      ok = true;
      return t;
    } finally {
      depth--;
      if (!ok) {
        try (Statement s = c.createStatement()) {
          s.execute("ROLLBACK");
        } catch (SQLException ignored) {
          // the original failure is what matters
        }
      }
    }
  }

  Connection connection() {
    return c;
  }

  // ---- small SQL helpers (caller holds the lock) ----

  int update(String sql, Object... args) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(sql)) {
      bind(ps, args);
      return ps.executeUpdate();
    }
  }

  <T> List<T> query(String sql, RowMapper<T> m, Object... args) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(sql)) {
      bind(ps, args);
      try (ResultSet rs = ps.executeQuery()) {
        List<T> out = new ArrayList<>();
        while (rs.next()) {
          out.add(m.map(rs));
        }
        return out;
      }
    }
  }

  <T> Optional<T> one(String sql, RowMapper<T> m, Object... args) throws SQLException {
    List<T> l = query(sql, m, args);
    return l.isEmpty() ? Optional.empty() : Optional.of(l.get(0));
  }

  /** Maps one result row. */
  @FunctionalInterface
  interface RowMapper<T> {
    T map(ResultSet rs) throws SQLException;
  }

  private static void bind(PreparedStatement ps, Object... args) throws SQLException {
    for (int i = 0; i < args.length; i++) {
      Object a = args[i];
      if (a instanceof byte[] b) {
        ps.setBytes(i + 1, b);
      } else {
        ps.setObject(i + 1, a);
      }
    }
  }

  /** Records an alert (caller holds the lock); {@code targetPubkey} and {@code itemId} may be null. */
  void insertAlert(long at, String kind, String relay, String targetPubkey, String itemId, String text)
      throws SQLException {
    update("INSERT INTO alerts(at, kind, relay, target_pubkey, item_id, text) VALUES(?, ?, ?, ?, ?, ?)", at, kind,
        relay, targetPubkey, itemId, text);
  }

  /** Records a {@code relay-key-changed} alert (caller holds the lock). */
  void insertKeyChangedAlert(long at, String relay, String text) throws SQLException {
    update("INSERT INTO alerts(at, kind, relay, text) VALUES(?, 'relay-key-changed', ?, ?)", at, relay, text);
  }

  /**
   * Adds or renames a peer (caller holds the lock); a null {@code encPub} keeps the pinned encryption key.
   */
  void upsertPeer(String hostPubkey, String name, long addedAt, String encPub) throws SQLException {
    update("INSERT INTO peers(host_pubkey, name, added_at, enc_pub) VALUES(?, ?, ?, ?)"
        + " ON CONFLICT(host_pubkey) DO UPDATE SET name=excluded.name, enc_pub=coalesce(excluded.enc_pub, enc_pub)",
        hostPubkey, name, addedAt, encPub);
  }

  /** Records a peer's newest verified encryption-key ad (caller holds the lock; times as served, ISO 8601). */
  void putPeerAd(String hostPubkey, String encPub, String iat, String exp) throws SQLException {
    update("UPDATE peers SET ad_enc_pub=?, ad_iat=?, ad_exp=? WHERE host_pubkey=?", encPub, iat, exp, hostPubkey);
  }

  Optional<String> meta(String k) throws SQLException {
    return one("SELECT v FROM meta WHERE k=?", rs -> rs.getString(1), k);
  }

  void putMeta(String k, String v) throws SQLException {
    update("INSERT INTO meta(k, v) VALUES(?, ?) ON CONFLICT(k) DO UPDATE SET v=excluded.v", k, v);
  }

  /**
   * A stored setting ({@code meta} table), e.g. {@code host_name}, {@code relay_url}, {@code host_pubkey}.
   *
   * @param name the setting
   * @return its value, or empty
   * @throws SQLException on storage errors
   */
  public synchronized Optional<String> setting(String name) throws SQLException {
    return meta(name);
  }

  /**
   * Stores a setting in its own transaction.
   *
   * @param name the setting
   * @param value its value (no key material)
   * @throws SQLException on storage errors
   */
  public synchronized void putSetting(String name, String value) throws SQLException {
    tx(x -> {
      putMeta(name, value);
      return null;
    });
  }

  /**
   * The relays this host uses, in order ({@code meta.relay_urls}, written by the CLI's {@code host relay set|add|remove}
   * and {@link #putRelayUrls}). A library {@link HostAgent} uses the list it is given; this one is what the CLI runs,
   * shows and checks.
   *
   * @return normalized relay URLs, first = the one {@code relay set} chose; empty when none is set
   * @throws SQLException on storage errors
   */
  public synchronized List<String> relayUrls() throws SQLException {
    Optional<String> v = meta("relay_urls");
    if (v.isEmpty()) {
      return meta("relay_url").map(u -> List.of(RelayPins.normalizeUrl(u))).orElse(List.of());
    }
    List<String> out = new ArrayList<>();
    io.mbxrelay.wire.Json.parse(v.get()).forEach(n -> out.add(n.asText()));
    return List.copyOf(out);
  }

  /**
   * Stores the relays this host uses (in one transaction; {@code relay_url} keeps the first for older readers).
   *
   * @param urls relay URLs (normalized here, duplicates dropped, order kept)
   * @throws SQLException on storage errors
   */
  public synchronized void putRelayUrls(List<String> urls) throws SQLException {
    java.util.LinkedHashSet<String> set = new java.util.LinkedHashSet<>();
    urls.forEach(u -> set.add(RelayPins.normalizeUrl(u)));
    com.fasterxml.jackson.databind.node.ArrayNode a = io.mbxrelay.wire.Json.MAPPER.createArrayNode();
    set.forEach(a::add);
    tx(x -> {
      putMeta("relay_urls", io.mbxrelay.wire.Json.stringify(a));
      if (set.isEmpty()) {
        update("DELETE FROM meta WHERE k='relay_url'");
      } else {
        putMeta("relay_url", set.iterator().next());
      }
      return null;
    });
  }

  // ---- public read model ----

  /**
   * One outbox row as stored (wire bytes omitted).
   *
   * @param id row id
   * @param relay relay URL
   * @param kind {@code envelope} or {@code receipt}
   * @param itemId the pushed item id
   * @param msgId the message id (envelope id; for a receipt, the message it confirms)
   * @param targetPubkey target host key (base64)
   * @param wireHash lowercase hex SHA-256 of the wire bytes
   * @param state this relay's: {@code pending | repush | relay-accepted | settled | unconfirmed | expired | undelivered
   *     | dropped} (its relay no longer used) {@code | sent} (a receipt the relay accepted)
   * @param attempts push attempts so far
   * @param nextAt earliest next push, ms since the epoch
   * @param lastError last push problem, or null
   * @param seq the relay seq from the accept receipt, or null
   * @param epoch the relay epoch from the accept receipt, or null
   * @param deadlineAt sender deadline (accepted_at + retention + 24 h), ms, or null before the first accept
   */
  public record OutboxRow(long id, String relay, String kind, String itemId, String msgId, String targetPubkey,
      String wireHash, String state, int attempts, long nextAt, String lastError, Long seq, String epoch,
      Long deadlineAt) {}

  /**
   * One quarantined item (docs/protocol.md §7.4, §6).
   *
   * @param relay relay URL
   * @param epoch relay epoch
   * @param seq the item's seq
   * @param kind item kind as pulled
   * @param itemId item id
   * @param senderPubkey the pushing host's key (the relay key for notices)
   * @param reason why it was refused
   * @param wireBytes size of the stored wire bytes
   * @param at when, ms since the epoch
   */
  public record QuarantineRow(String relay, String epoch, long seq, String kind, String itemId, String senderPubkey,
      String reason, int wireBytes, long at) {}

  /**
   * An alert for people.
   *
   * @param at ms since the epoch
   * @param kind {@code unconfirmed | expired | relay-key-changed | undelivered | waiting-for-key}
   * @param relay relay URL or null
   * @param targetPubkey the peer concerned or null
   * @param itemId the item concerned or null
   * @param text the human text
   */
  public record Alert(long at, String kind, String relay, String targetPubkey, String itemId, String text) {}

  /**
   * A relay's pin and session state.
   *
   * @param url relay URL
   * @param relayPubkey the pinned relay key (base64)
   * @param presentedPubkey a different key the relay presented and the owner has not confirmed, or null
   * @param epoch the last seen epoch, or null
   * @param retentionDays retention from the relay's info (days)
   * @param lastError last session problem, or null
   * @param lastOkAt last successful session, ms, or null
   * @param lastSession how the relay's part of the last tick went ({@link TickReport.Relay#session()}), or null
   *     before the first
   * @param maxItemBytes the relay's {@code max_item_bytes} from its last info (524,288 before any)
   */
  public record RelayState(String url, String relayPubkey, String presentedPubkey, String epoch, int retentionDays,
      String lastError, Long lastOkAt, String lastSession, int maxItemBytes) {}

  /**
   * The receive position for one relay (docs/protocol.md §7.4).
   *
   * @param relay relay URL
   * @param epoch the epoch the seqs belong to
   * @param receivedThrough highest seq durably processed contiguously
   * @param ackedThrough highest seq acked to the relay in this epoch
   */
  public record Position(String relay, String epoch, long receivedThrough, long ackedThrough) {}

  private static Long nullableLong(ResultSet rs, String col) throws SQLException {
    long v = rs.getLong(col);
    return rs.wasNull() ? null : v;
  }

  static final RowMapper<OutboxRow> OUTBOX = rs -> new OutboxRow(rs.getLong("id"), rs.getString("relay"),
      rs.getString("kind"), rs.getString("item_id"), rs.getString("msg_id"), rs.getString("target_pubkey"),
      rs.getString("wire_hash"), rs.getString("state"), rs.getInt("attempts"), rs.getLong("next_at"),
      rs.getString("last_error"), nullableLong(rs, "seq"), rs.getString("epoch"),
      nullableLong(rs, "deadline_at"));

  static final RowMapper<RelayState> RELAY = rs -> new RelayState(rs.getString("url"), rs.getString("relay_pubkey"),
      rs.getString("presented_pubkey"), rs.getString("epoch"), rs.getInt("retention_days"),
      rs.getString("last_error"), nullableLong(rs, "last_ok_at"), rs.getString("last_session"),
      rs.getInt("max_item_bytes"));

  static final RowMapper<Position> POSITION = rs -> new Position(rs.getString("relay"), rs.getString("epoch"),
      rs.getLong("received_through"), rs.getLong("acked_through"));

  /**
   * All outbox rows, oldest first.
   *
   * @return the rows
   * @throws SQLException on storage errors
   */
  public synchronized List<OutboxRow> outbox() throws SQLException {
    return query("SELECT * FROM outbox ORDER BY id", OUTBOX);
  }

  /**
   * The outbox rows of one message.
   *
   * @param msgId the message (envelope) id
   * @return its rows (one per target and kind)
   * @throws SQLException on storage errors
   */
  public synchronized List<OutboxRow> outboxFor(String msgId) throws SQLException {
    return query("SELECT * FROM outbox WHERE msg_id=? ORDER BY id", OUTBOX, msgId);
  }

  /**
   * The wire bytes of one outbox row.
   *
   * @param id row id
   * @return the exact bytes stored before the first attempt
   * @throws SQLException on storage errors
   */
  public synchronized Optional<byte[]> outboxWire(long id) throws SQLException {
    return one("SELECT wire FROM outbox WHERE id=?", rs -> rs.getBytes(1), id);
  }

  /**
   * All quarantined items, oldest first.
   *
   * @return the rows
   * @throws SQLException on storage errors
   */
  public synchronized List<QuarantineRow> quarantine() throws SQLException {
    return query("SELECT relay, epoch, seq, kind, item_id, sender_pubkey, reason, length(wire), at FROM quarantine"
        + " ORDER BY id", rs -> new QuarantineRow(rs.getString(1), rs.getString(2), rs.getLong(3), rs.getString(4),
            rs.getString(5), rs.getString(6), rs.getString(7), rs.getInt(8), rs.getLong(9)));
  }

  /**
   * All alerts, oldest first.
   *
   * @return the alerts
   * @throws SQLException on storage errors
   */
  public synchronized List<Alert> alerts() throws SQLException {
    return query("SELECT at, kind, relay, target_pubkey, item_id, text FROM alerts ORDER BY id",
        rs -> new Alert(rs.getLong(1), rs.getString(2), rs.getString(3), rs.getString(4), rs.getString(5),
            rs.getString(6)));
  }

  /**
   * All relays with a pinned key.
   *
   * @return relay states, by URL
   * @throws SQLException on storage errors
   */
  public synchronized List<RelayState> relays() throws SQLException {
    return query("SELECT * FROM relays ORDER BY url", RELAY);
  }

  /**
   * One relay's state.
   *
   * @param url normalized relay URL
   * @return the state, or empty when no key is pinned for it
   * @throws SQLException on storage errors
   */
  public synchronized Optional<RelayState> relay(String url) throws SQLException {
    return one("SELECT * FROM relays WHERE url=?", RELAY, RelayPins.normalizeUrl(url));
  }

  /**
   * One relay's receive position.
   *
   * @param url normalized relay URL
   * @return the position, or empty before the first session
   * @throws SQLException on storage errors
   */
  public synchronized Optional<Position> position(String url) throws SQLException {
    return one("SELECT * FROM positions WHERE relay=?", POSITION, RelayPins.normalizeUrl(url));
  }

  /**
   * Messages stored by {@link InboxApplication}, oldest first.
   *
   * @return {@code (sender_pubkey, msg_id, wire)} entries
   * @throws SQLException on storage errors
   */
  public synchronized List<InboxApplication.Message> inbox() throws SQLException {
    return query("SELECT sender_pubkey, msg_id, wire, at, from_addr, subject, body FROM inbox ORDER BY id",
        rs -> new InboxApplication.Message(rs.getString(1), rs.getString(2), rs.getBytes(3), rs.getLong(4),
            rs.getString(5), rs.getString(6), rs.getString(7)));
  }

  /**
   * A message waiting for its target's encryption key (nothing was sealed or pushed yet).
   *
   * @param msgId envelope id
   * @param targetPubkey target host key (base64)
   * @param relay relay URL it is queued for
   * @param lastError why no key is usable yet (e.g. {@code no encryption key: the relay has no ad for that host})
   * @param attempts key look-ups so far
   * @param createdAt when queued, ms since the epoch
   */
  public record DraftRow(String msgId, String targetPubkey, String relay, String lastError, int attempts,
      long createdAt) {}

  /**
   * Messages waiting for an encryption key, oldest first (docs/host-library.md "Peer encryption keys").
   *
   * @return the rows (the plaintext is not returned)
   * @throws SQLException on storage errors
   */
  public synchronized List<DraftRow> drafts() throws SQLException {
    return query("SELECT msg_id, target_pubkey, relay, last_error, attempts, created_at FROM drafts ORDER BY id",
        rs -> new DraftRow(rs.getString(1), rs.getString(2), rs.getString(3), rs.getString(4), rs.getInt(5),
            rs.getLong(6)));
  }

  /**
   * An accepted peer.
   *
   * @param hostPubkey its host key (base64)
   * @param name its host name (as its envelopes, ads and addresses name it)
   * @param encPub its pinned X25519 key, or null
   * @param adEncPub the key of the newest verified relay ad, or null
   * @param adIat that ad's {@code iat} (ISO), or null
   * @param adExp that ad's {@code exp} (ISO), or null
   */
  public record Peer(String hostPubkey, String name, String encPub, String adEncPub, String adIat, String adExp) {}

  static final RowMapper<Peer> PEER = rs -> new Peer(rs.getString("host_pubkey"), rs.getString("name"),
      rs.getString("enc_pub"), rs.getString("ad_enc_pub"), rs.getString("ad_iat"), rs.getString("ad_exp"));

  /**
   * One peer by key.
   *
   * @param hostPubkey the host key (base64)
   * @return the peer, or empty when not accepted
   * @throws SQLException on storage errors
   */
  public synchronized Optional<Peer> peer(String hostPubkey) throws SQLException {
    return one("SELECT * FROM peers WHERE host_pubkey=?", PEER, hostPubkey);
  }

  /**
   * The peers with a name (case-insensitive; names are host names).
   *
   * @param name the host name
   * @return matching peers (more than one when two keys were accepted under one name)
   * @throws SQLException on storage errors
   */
  public synchronized List<Peer> peersNamed(String name) throws SQLException {
    return query("SELECT * FROM peers WHERE lower(name)=lower(?) ORDER BY added_at", PEER, name);
  }

  /**
   * The relay's {@code max_batch} from its last info (items per push), 200 before any.
   *
   * @param url normalized relay URL
   * @return the limit
   * @throws SQLException on storage errors
   */
  synchronized int maxBatch(String url) throws SQLException {
    return one("SELECT max_batch FROM relays WHERE url=?", rs -> rs.getInt(1), url).orElse(200);
  }

  /**
   * The relay's {@code max_pull} from its last info (items per page), 500 before any.
   *
   * @param url normalized relay URL
   * @return the limit
   * @throws SQLException on storage errors
   */
  synchronized int maxPull(String url) throws SQLException {
    return one("SELECT max_pull FROM relays WHERE url=?", rs -> rs.getInt(1), url).orElse(500);
  }

  /**
   * The relay's {@code max_item_bytes} from its last info (decoded wire bytes per item), 524,288 before any
   * (docs/protocol.md §4.7).
   *
   * @param url normalized relay URL
   * @return the limit
   * @throws SQLException on storage errors
   */
  synchronized int maxItemBytes(String url) throws SQLException {
    return one("SELECT max_item_bytes FROM relays WHERE url=?", rs -> rs.getInt(1), url).orElse(524_288);
  }

  /**
   * The relay's {@code retention_days} from its last info, 14 before any.
   *
   * @param url normalized relay URL
   * @return days
   * @throws SQLException on storage errors
   */
  synchronized int retentionDays(String url) throws SQLException {
    return one("SELECT retention_days FROM relays WHERE url=?", rs -> rs.getInt(1), url).orElse(14);
  }

  /**
   * Whether a key is an accepted peer.
   *
   * @param hostPubkey the host key (base64)
   * @return true when accepted
   * @throws SQLException on storage errors
   */
  synchronized boolean isPeer(String hostPubkey) throws SQLException {
    return one("SELECT 1 FROM peers WHERE host_pubkey=?", rs -> 1, hostPubkey).isPresent();
  }

  /**
   * Accepted peers.
   *
   * @return host key → name, by key
   * @throws SQLException on storage errors
   */
  public synchronized java.util.Map<String, String> peers() throws SQLException {
    java.util.Map<String, String> m = new java.util.TreeMap<>();
    for (String[] p : query("SELECT host_pubkey, name FROM peers", rs -> new String[] {rs.getString(1),
        rs.getString(2)})) {
      m.put(p[0], p[1]);
    }
    return m;
  }

  /**
   * Closes the connection.
   *
   * @throws SQLException on close errors
   */
  @Override
  public synchronized void close() throws SQLException {
    c.close();
  }
}
