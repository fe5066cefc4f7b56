package io.mbxrelay.docs;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * Issue 22 item 8: docs/scale-out.md's commands work as written. Two instances on one machine need distinct relay and
 * admin ports (the second would fail on either), instances behind a load balancer bind beyond loopback, and the
 * {@code pg_dump}/{@code pg_restore} lines use libpq's URL form, not the relay's {@code jdbc:} URL.
 */
class ScaleOutDocTest {
  private static String doc() throws Exception {
    return Files.readString(Path.of("docs/scale-out.md"));
  }

  @Test
  void two_instances_on_one_machine_get_distinct_relay_and_admin_ports() throws Exception {
    Matcher m = Pattern.compile("(?m)^(MBX_RELAY_ADMIN_PORT=(\\d+) )?mbxrelay serve --port (\\d+) &").matcher(doc());
    List<String[]> instances = new java.util.ArrayList<>();
    while (m.find()) {
      instances.add(new String[] {m.group(2) == null ? "7375" : m.group(2), m.group(3)});
    }
    assertThat(instances).hasSize(2);
    assertThat(instances.get(0)[0]).isNotEqualTo(instances.get(1)[0]);
    assertThat(instances.get(0)[1]).isNotEqualTo(instances.get(1)[1]);
    for (String[] i : instances) {
      assertThat(i[0]).as("admin port differs from every relay port").isNotIn(instances.get(0)[1],
          instances.get(1)[1]);
    }
  }

  @Test
  void backup_and_restore_use_the_libpq_url_form_and_instances_bind_beyond_loopback() throws Exception {
    String doc = doc();
    assertThat(doc).contains("pg_dump --format=custom --file=relay.dump \"${MBX_RELAY_STORE_URL#jdbc:}\"")
        .doesNotContain("\"$URL\"").doesNotContain("\"$NEW_URL\"");
    assertThat(doc).containsPattern("pg_restore --dbname=\"postgresql://");
    assertThat(doc).contains("mbxrelay serve --port 7374 --bind 0.0.0.0");
  }
}
