package io.mbxrelay.store.spi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.mbxrelay.config.ConfigLoader;
import io.mbxrelay.config.RelayConfig;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The backend factory is chosen from {@code store.backend} alone (issue 19 item 2). */
class StoreBackendFactoryTest {
  private static final String URL = "jdbc:postgresql://db:5432/relay?password=urlsecret";

  private static RelayConfig.Store store(String backend) throws Exception {
    return ConfigLoader.load(null, RelayConfig.Store.POSTGRESQL.equals(backend)
        ? Map.of("MBX_RELAY_STORE_BACKEND", backend, "MBX_RELAY_STORE_URL", URL)
        : Map.of("MBX_RELAY_STORE_BACKEND", backend)).store();
  }

  @Test
  void every_configurable_backend_has_its_factory() throws Exception {
    for (String backend : RelayConfig.STORE_BACKENDS) {
      assertThat(StoreBackendFactory.of(store(backend)).backend()).isEqualTo(backend);
    }
  }

  @Test
  void the_sqlite_store_lives_in_the_store_dir_and_the_postgresql_store_does_not() throws Exception {
    Path dir = Path.of("/var/lib/mbxrelay");
    StoreBackendFactory sqlite = StoreBackendFactory.of(store("sqlite"));
    assertThat(sqlite.storeInDirectory()).isTrue();
    assertThat(sqlite.describe(store("sqlite"), dir)).isEqualTo(dir.toAbsolutePath().toString());
    StoreBackendFactory pg = StoreBackendFactory.of(store("postgresql"));
    assertThat(pg.storeInDirectory()).isFalse();
    assertThat(pg.describe(store("postgresql"), dir)).isEqualTo("jdbc:postgresql://db:5432/relay")
        .doesNotContain("urlsecret");
  }

  @Test
  void a_backend_no_factory_opens_is_named_with_the_ones_in_this_build() throws Exception {
    RelayConfig.Store s = store("sqlite");
    RelayConfig.Store other = new RelayConfig.Store("mysql", s.readPoolSize(), s.writerBatchMax(), s.writerTimeoutMs(),
        s.busyTimeoutMs(), s.writerBatchMaxRows(), s.writerBatchMaxBytes(), s.writerCommitDelayMs(),
        s.watermarkIntervalMs(), s.watermarkBeforeAnswers(), s.minFreeBytes(), s.walAutocheckpointPages(),
        s.checkpointIntervalMs(), s.url(),
        s.user(), s.password(), s.passwordFile(), s.poolSize());
    assertThatThrownBy(() -> StoreBackendFactory.of(other)).isInstanceOf(IllegalArgumentException.class)
        .hasMessage("store.backend mysql is not in this build (sqlite, postgresql)");
  }
}
