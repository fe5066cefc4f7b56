package io.mbxrelay.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectWriter;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.mbxrelay.store.sqlite.OpsException;
import io.mbxrelay.store.sqlite.SqliteOps;
import io.mbxrelay.store.spi.StoreBackendFactory;
import io.mbxrelay.wire.Json;
import java.nio.file.Path;
import java.time.Clock;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * Operator commands on a store directory (docs/protocol.md §5 "CLI", "Ops"): receipts as 2-space JSON on stdout, human lines
 * on stderr; exit 0 on success, 1 when refused or failed.
 */
final class OpsCommands {
  private OpsCommands() {}

  private static final ObjectWriter PRETTY = Json.MAPPER.writerWithDefaultPrettyPrinter();

  static int print(JsonNode receipt, String human) {
    try {
      System.out.println(PRETTY.writeValueAsString(receipt));
    } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
      throw new IllegalStateException(e);
    }
    System.err.println("[mbxrelay] " + human);
    return 0;
  }

  static int refused(OpsException e) {
    System.err.println("[mbxrelay] " + e.code() + ": " + e.getMessage());
    return 1;
  }

  /**
   * The configuration the relay on this machine starts with, as {@code serve} loads it without {@code --config}: the
   * file {@code $MBX_RELAY_CONFIG} (if set) under the {@code MBX_RELAY_*} variables.
   *
   * @return the validated configuration
   * @throws io.mbxrelay.config.ConfigException when it is invalid
   */
  static io.mbxrelay.config.RelayConfig config() throws io.mbxrelay.config.ConfigException {
    String file = System.getenv("MBX_RELAY_CONFIG");
    return io.mbxrelay.config.ConfigLoader.load(file == null || file.isBlank() ? null : Path.of(file),
        System.getenv());
  }

  /**
   * The store backend of the loaded configuration ({@code store.backend}), or null after printing why the
   * configuration is invalid.
   */
  static StoreBackendFactory backend() {
    try {
      return StoreBackendFactory.of(config().store());
    } catch (io.mbxrelay.config.ConfigException e) {
      System.err.println("[mbxrelay] invalid configuration: " + String.join("; ", e.violations()));
      return null;
    }
  }

  /**
   * The commands that work on the store directory's files say what to do instead when the configured store is in a
   * database ({@code store.backend} {@code postgresql}; docs/scale-out.md "Backup, restore, check"). The advice is
   * PostgreSQL's own (its tools, its SQL): the one backend without a store directory.
   *
   * @return the exit code (2) when the store is not in the store directory or the configuration is invalid, else null
   */
  static Integer onPostgres(String command) {
    StoreBackendFactory backend = backend();
    if (backend == null) {
      return 2;
    }
    if (backend.storeInDirectory()) {
      return null;
    }
    String what = switch (command) {
      case "backup" -> "back up the database with PostgreSQL's tools while the relays run, e.g.\n"
          + "  PGUSER=\"$MBX_RELAY_STORE_USER\" PGPASSWORD=\"$MBX_RELAY_STORE_PASSWORD\" \\\n"
          + "    pg_dump --format=custom --file=relay.dump \"${MBX_RELAY_STORE_URL#jdbc:}\"\n"
          + "(pg_dump takes libpq's postgresql://HOST:PORT/DATABASE, the relay's URL without \"jdbc:\"; drop JDBC-only"
          + " parameters), or continuous archiving (base backup + WAL) for point-in-time recovery";
      case "restore" -> "stop every relay instance, restore with PostgreSQL's tools into an empty database, e.g.\n"
          + "  pg_restore --dbname=\"postgresql://HOST:PORT/NEWDATABASE\" relay.dump\n"
          + "then rotate the epoch there, as rotate-epoch does on SQLite (hosts re-push what they hold and pull again):\n"
          + "  UPDATE meta SET v = gen_random_uuid()::text WHERE k = 'epoch';";
      case "rotate-epoch" -> "stop every relay instance, then in the database:\n"
          + "  UPDATE meta SET v = gen_random_uuid()::text WHERE k = 'epoch';\n"
          + "(docs/scale-out.md \"Backup, restore, check\")";
      default -> "read the ops table:\n  SELECT at, op, receipt FROM ops ORDER BY id DESC LIMIT 50;";
    };
    System.err.println("[mbxrelay] " + command + " works on the embedded SQLite store; this relay's store is"
        + " PostgreSQL (MBX_RELAY_STORE_BACKEND=postgresql): " + what);
    return 2;
  }

  /** Shared {@code --store-dir} option. */
  static class StoreDirOption {
    @Option(names = "--store-dir", description = "Store directory (default: $MBX_RELAY_DIR or ~/.local/share/mbxrelay).")
    Path storeDir;

    Path dir() {
      return ServeCommand.resolveStoreDir(storeDir, System.getenv());
    }
  }

  /** {@code mbxrelay rotate-epoch}. */
  @Command(name = "rotate-epoch", mixinStandardHelpOptions = true,
      description = "Write a new epoch (after a restore that did not use 'restore', e.g. a volume snapshot). The relay must be stopped.")
  static final class RotateEpoch extends StoreDirOption implements Callable<Integer> {
    @Override
    public Integer call() {
      Integer pg = onPostgres("rotate-epoch");
      if (pg != null) {
        return pg;
      }
      try {
        ObjectNode r = SqliteOps.rotateEpoch(dir(), Clock.systemUTC());
        return print(r, "epoch rotated " + r.get("from").asText() + " -> " + r.get("to").asText()
            + "; hosts re-push and re-pull");
      } catch (OpsException e) {
        return refused(e);
      }
    }
  }

  /** {@code mbxrelay backup <file>}. */
  @Command(name = "backup", mixinStandardHelpOptions = true,
      description = "Online backup of the store to a new file (safe while the relay runs; never overwrites).")
  static final class Backup extends StoreDirOption implements Callable<Integer> {
    @Parameters(index = "0", description = "Backup file to create.")
    Path file;

    @Override
    public Integer call() {
      Integer pg = onPostgres("backup");
      if (pg != null) {
        return pg;
      }
      try {
        ObjectNode r = SqliteOps.backup(dir(), file, Clock.systemUTC());
        return print(r, "backup written to " + r.get("file").asText() + " (" + r.get("bytes").asLong()
            + " bytes, sha256 " + r.get("sha256").asText() + ")");
      } catch (OpsException e) {
        return refused(e);
      }
    }
  }

  /** {@code mbxrelay restore <file> [--force]}. */
  @Command(name = "restore", mixinStandardHelpOptions = true,
      description = "Restore a backup into the store dir (relay stopped). Keeps the live store under rollback/,"
          + " carries revocations, newer allowlists and ads and seq floors, and rotates the epoch.")
  static final class Restore extends StoreDirOption implements Callable<Integer> {
    @Parameters(index = "0", description = "Backup file.")
    Path file;

    @Option(names = "--force", description = "Proceed over a recent heartbeat in a lock-less dir or an unreadable current store.")
    boolean force;

    @Override
    public Integer call() {
      Integer pg = onPostgres("restore");
      if (pg != null) {
        return pg;
      }
      try {
        ObjectNode r = SqliteOps.restore(dir(), file, force, Clock.systemUTC(), false);
        return print(r, "restored " + file + "; epoch " + r.get("epoch").get("from").asText() + " -> "
            + r.get("epoch").get("to").asText() + "; " + r.get("next").asText());
      } catch (OpsException e) {
        return refused(e);
      }
    }
  }

  /**
   * {@code mbxrelay check [--full] [--store-dir DIR | --file FILE]} (issue 10 item 2): checks a store (or a backup
   * file) without writing to it; safe while the relay runs. Exit 0 when it passes, 3 when it fails (the receipt lists
   * every problem), 1 when it cannot run (no store, unreadable), 2 on usage errors.
   */
  @Command(name = "check", mixinStandardHelpOptions = true,
      description = "Check a store (or a backup file) without writing to it: quick_check and metadata; with --full,"
          + " integrity_check, metadata and every item's wire hash. Safe while the relay runs."
          + " Exit 0 passed, 3 failed, 1 could not check, 2 usage.")
  static final class Check extends StoreDirOption implements Callable<Integer> {
    @Option(names = "--full", description = "integrity_check plus every item's wire bytes against its wire_hash.")
    boolean full;

    @Option(names = "--file", description = "Check this database file (e.g. a backup) instead of <store-dir>/relay.db.")
    Path file;

    @Override
    public Integer call() {
      if (file == null) {
        StoreBackendFactory backend = backend();
        if (backend == null) {
          return 2;
        }
        if (!backend.storeInDirectory()) {
          return checkPostgres(); // the database's own check (schema, identity, counters): PgCheck
        }
      }
      Path db = file != null ? file : dir().resolve(io.mbxrelay.store.sqlite.SqliteSettings.DB_FILE);
      try {
        ObjectNode r = SqliteOps.check(db, full, Clock.systemUTC());
        String what = (full ? "integrity_check" : "quick_check") + ", metadata"
            + (r.get("items").isNull() ? "" : ", " + r.get("items").get("checked").asLong() + " items' wire hashes");
        if (r.get("ok").asBoolean()) {
          return print(r, "check passed (" + what + ") in " + r.get("took_ms").asLong() + " ms: " + db);
        }
        JsonNode wm = r.get("watermark");
        if (wm != null && wm.path("behind").asBoolean()) {
          print(r, "check FAILED: " + db + (wm.path("damaged").asBoolean() ? " has a damaged commit watermark"
              : " is behind its commit watermark (store at commit " + wm.get("store_commits").asLong()
              + ", watermark " + wm.get("commits").asLong() + "): committed transactions were lost. Keep the files;"
              + " restore the latest backup, or accept the loss with 'mbxrelay serve --accept-lost-commits'"
              + " (docs/operations.md \"Store refused\")"));
          return io.mbxrelay.cli.ServeCommand.EXIT_STORE_REFUSED;
        }
        print(r, "check FAILED (" + what + "): " + db + " is damaged; see the problems above. Keep the files, restore"
            + " the latest backup that passes 'mbxrelay check --full --file BACKUP' (docs/operations.md \"Store refused\")");
        return io.mbxrelay.cli.ServeCommand.EXIT_STORE_REFUSED;
      } catch (OpsException e) {
        return refused(e);
      }
    }
    /** The PostgreSQL store of the loaded configuration (store.url, user, password), as serve reads it. */
    private int checkPostgres() {
      io.mbxrelay.config.RelayConfig cfg;
      try {
        cfg = config();
      } catch (io.mbxrelay.config.ConfigException e) {
        System.err.println("[mbxrelay] invalid configuration: " + String.join("; ", e.violations()));
        return 2;
      }
      io.mbxrelay.config.RelayConfig.Store sc = cfg.store();
      try {
        ObjectNode r = io.mbxrelay.store.postgres.PgCheck.check(new io.mbxrelay.store.postgres.PgStore.Settings(
            sc.url(), sc.user(), sc.resolvedPassword(), 1), full);
        if (r.get("ok").asBoolean()) {
          return print(r, "check passed (schema, identity, counters against rows" + (full ? ", every item's wire hash"
              : "") + ") in " + r.get("took_ms").asLong() + " ms: " + r.get("store").asText());
        }
        print(r, "check FAILED: " + r.get("store").asText() + "; see the problems above (docs/scale-out.md)");
        return io.mbxrelay.cli.ServeCommand.EXIT_STORE_REFUSED;
      } catch (java.sql.SQLException e) {
        System.err.println("[mbxrelay] cannot check the PostgreSQL store: " + e.getMessage());
        return 1;
      }
    }
  }

  /** {@code mbxrelay log [--json] [--limit N]}. */
  @Command(name = "log", mixinStandardHelpOptions = true, description = "Show the relay's ops log (last 1,000 kept).")
  static final class Log extends StoreDirOption implements Callable<Integer> {
    @Option(names = "--json", description = "Print the entries as a JSON array.")
    boolean json;

    @Option(names = "--limit", description = "Entries to show, 1..1000 (default 50).", defaultValue = "50")
    int limit;

    @Override
    public Integer call() {
      Integer pg = onPostgres("log");
      if (pg != null) {
        return pg;
      }
      if (limit < 1 || limit > 1000) {
        System.err.println("[mbxrelay] --limit must be between 1 and 1000");
        return 2;
      }
      try {
        List<ObjectNode> entries = SqliteOps.log(dir(), limit);
        if (json) {
          System.out.println(PRETTY.writeValueAsString(SqliteOps.array(entries)));
        } else {
          for (ObjectNode e : entries) {
            System.out.println(e.get("at").asText() + "  " + e.get("op").asText() + "  " + Json.stringify(e.get("receipt")));
          }
        }
        return 0;
      } catch (OpsException e) {
        return refused(e);
      } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
        throw new IllegalStateException(e);
      }
    }
  }
}
