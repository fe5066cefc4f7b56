package io.mbxrelay.store.postgres;

import static org.assertj.core.api.Assertions.assertThat;

import io.mbxrelay.testing.ChildRelay;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The store commands with {@code MBX_RELAY_STORE_BACKEND=postgresql}: {@code check} checks the database the
 * environment names; {@code backup}, {@code restore}, {@code rotate-epoch} and {@code log} say what to do with
 * PostgreSQL's tools instead of touching a store directory (exit 2).
 */
class PgOpsCommandsIT {
  @SuppressWarnings("try") // a resource held for the block, not used in it
  @Test
  void check_checks_the_database_and_backup_restore_say_what_to_use_instead() throws Exception {
    String url = PgTestServer.shared().createDatabase();
    try (PgStore pg = PgStore.open(new PgStore.Settings(url, PgTestServer.SUPERUSER, "", 2), null,
        System::currentTimeMillis, 0)) {
      // creates the schema and the identity
    }
    Map<String, String> env = Map.of("MBX_RELAY_STORE_BACKEND", "postgresql", "MBX_RELAY_STORE_URL", url,
        "MBX_RELAY_STORE_USER", PgTestServer.SUPERUSER);
    ChildRelay.Cli check = ChildRelay.cli(env, "check", "--full");
    assertThat(check.exit()).as(check.err()).isZero();
    assertThat(check.out()).contains("\"ok\" : true");
    ChildRelay.Cli backup = ChildRelay.cli(env, "backup", "relay-backup.db");
    assertThat(backup.exit()).isEqualTo(2);
    assertThat(backup.err()).contains("pg_dump")
        .as("libpq does not take the jdbc: URL (issue 22 item 8)").contains("\"${MBX_RELAY_STORE_URL#jdbc:}\"");
    ChildRelay.Cli restore = ChildRelay.cli(env, "restore", "relay-backup.db");
    assertThat(restore.exit()).isEqualTo(2);
    assertThat(restore.err()).contains("pg_restore").contains("rotate-epoch");
    assertThat(new java.io.File("relay-backup.db")).doesNotExist();
  }
}
