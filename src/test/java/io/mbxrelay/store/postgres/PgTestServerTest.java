package io.mbxrelay.store.postgres;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import org.junit.jupiter.api.Test;

/** The test PostgreSQL server starts (also as root), serves SQL, and leaves no data directory behind. */
class PgTestServerTest {
  @Test
  void startsServesAndCleansUp() throws Exception {
    Path dataDir;
    try (PgTestServer pg = PgTestServer.start(false)) {
      String url = pg.createDatabase();
      try (Connection c = DriverManager.getConnection(url, PgTestServer.SUPERUSER, "");
          Statement st = c.createStatement();
          ResultSet rs = st.executeQuery("SELECT current_setting('data_directory'), current_setting('synchronous_commit')")) {
        assertThat(rs.next()).isTrue();
        dataDir = Path.of(rs.getString(1));
        assertThat(rs.getString(2)).isEqualTo("on");
      }
      assertThat(dataDir).isDirectory();
    }
    assertThat(Files.exists(dataDir)).as("data directory deleted on close").isFalse();
  }
}
