package io.mbxrelay.cli;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.mbxrelay.config.RelayConfig;
import io.mbxrelay.crypto.RelayKeys;
import io.mbxrelay.store.migrate.SqliteToPostgres;
import io.mbxrelay.store.postgres.PgStore;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code mbxrelay migrate-store --from sqlite:DIR --to postgresql:URL} (docs/scale-out.md "Moving from SQLite"). The
 * PostgreSQL user and password come from {@code MBX_RELAY_STORE_USER} and {@code MBX_RELAY_STORE_PASSWORD} (or
 * {@code MBX_RELAY_STORE_PASSWORD_FILE}), as for {@code serve}. Exit 0 migrated, 1 refused or failed (nothing written),
 * 2 usage.
 */
@Command(name = "migrate-store", mixinStandardHelpOptions = true,
    description = "Copy a stopped relay's SQLite store (key, epoch, enrolments, queues, dedup, allowlists, ads, deny"
        + " list, ops log) into an empty PostgreSQL database, in one transaction. Then start the relay(s) with"
        + " store.backend postgresql and store.url set (MBX_RELAY_STORE_BACKEND, MBX_RELAY_STORE_URL or the --config"
        + " file). Exit 0 migrated, 1 refused (nothing written), 2 usage.")
public final class MigrateStoreCommand implements Callable<Integer> {
  @Option(names = "--from", required = true, description = "sqlite:DIR, the store directory of the stopped relay.")
  String from;

  @Option(names = "--to", required = true,
      description = "postgresql:URL, URL being jdbc:postgresql://HOST[:PORT]/DATABASE (or postgresql://...).")
  String to;

  Map<String, String> env = System.getenv();

  @Override
  public Integer call() {
    if (!from.startsWith("sqlite:") || from.length() == "sqlite:".length()) {
      System.err.println("[mbxrelay] --from must be sqlite:DIR (is " + from + ")");
      return 2;
    }
    if (!to.startsWith("postgresql:")) {
      System.err.println("[mbxrelay] --to must be postgresql:URL (is " + to.replaceAll("\\?.*$", "") + ")");
      return 2;
    }
    String url = to.substring("postgresql:".length());
    if (url.startsWith("//")) {
      url = "jdbc:postgresql:" + url;
    } else if (url.startsWith("postgresql://")) {
      url = "jdbc:" + url;
    }
    if (!url.startsWith("jdbc:postgresql://")) {
      System.err.println("[mbxrelay] --to must be postgresql:jdbc:postgresql://HOST[:PORT]/DATABASE");
      return 2;
    }
    String password = env.getOrDefault("MBX_RELAY_STORE_PASSWORD", "");
    String file = env.get("MBX_RELAY_STORE_PASSWORD_FILE");
    if (password.isEmpty() && file != null && !file.isEmpty()) {
      try {
        password = java.nio.file.Files.readString(Path.of(file)).replaceAll("\\r?\\n$", "");
      } catch (java.io.IOException e) {
        System.err.println("[mbxrelay] MBX_RELAY_STORE_PASSWORD_FILE " + file + " cannot be read");
        return 1;
      }
    }
    PgStore.Settings target = new PgStore.Settings(url, env.getOrDefault("MBX_RELAY_STORE_USER", ""), password, 2);
    try {
      ObjectNode r = SqliteToPostgres.migrate(Path.of(from.substring("sqlite:".length())), target,
          env.get(RelayKeys.ENV), System.currentTimeMillis());
      return OpsCommands.print(r, "migrated to " + r.get("to").asText() + ": " + r.get("rows").get("enrolments")
          + " enrolments, " + r.get("rows").get("items") + " queued items, " + r.get("rows").get("dedup")
          + " dedup rows; epoch " + r.get("epoch").asText() + " kept. Start the relay(s) with store.backend "
          + RelayConfig.Store.POSTGRESQL + " and store.url " + r.get("to").asText() + " (in the --config file, or"
          + " MBX_RELAY_STORE_BACKEND=" + RelayConfig.Store.POSTGRESQL + " MBX_RELAY_STORE_URL=" + r.get("to").asText()
          + ") and keep the old store directory until they serve");
    } catch (SqliteToPostgres.Refused e) {
      System.err.println("[mbxrelay] migrate-store refused: " + e.getMessage());
      return 1;
    }
  }
}
