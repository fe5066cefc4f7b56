package io.mbxrelay.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.mbxrelay.testing.Tmpfs;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * {@code serve} errors that name the thing (issue 12 item 6): which port is in use and where, and what failed in the
 * store dir, in words and without temporary file names.
 */
class ServeErrorsTest {
  @TempDir
  Path dir;

  private record Run(int code, String err) {}

  private static Run serve(Map<String, String> extraEnv, String... args) {
    ServeCommand cmd = new ServeCommand();
    Map<String, String> env = new HashMap<>(Map.of("MBX_RELAY_ADMIN_PORT", "0"));
    env.putAll(extraEnv);
    cmd.env = env;
    PrintStream sysErr = System.err;
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
    int code;
    try {
      code = new CommandLine(cmd).execute(args);
    } finally {
      System.setErr(sysErr);
    }
    return new Run(code, err.toString(StandardCharsets.UTF_8));
  }

  @Test
  void a_relay_port_in_use_is_named_with_its_address_and_the_option_to_change() throws Exception {
    try (ServerSocket taken = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"))) {
      int p = taken.getLocalPort();
      Run r = serve(Map.of(), "--port", Integer.toString(p), "--bind", "127.0.0.1", "--store-dir",
          dir.resolve("s").toString());
      assertThat(r.code()).isEqualTo(1);
      assertThat(r.err()).contains("cannot start: the relay port " + p + " on 127.0.0.1 is in use (another relay or"
          + " program listens there); choose another with --port or $PORT").doesNotContain("BindException");
    }
  }

  @Test
  void an_admin_port_in_use_is_named_as_the_admin_port() throws Exception {
    try (ServerSocket taken = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"))) {
      int p = taken.getLocalPort();
      Run r = serve(Map.of("MBX_RELAY_ADMIN_PORT", Integer.toString(p)), "--port", "0", "--bind", "127.0.0.1",
          "--store-dir", dir.resolve("s").toString());
      assertThat(r.code()).isEqualTo(1);
      assertThat(r.err()).contains("cannot start: the admin port " + p + " on 127.0.0.1 is in use")
          .contains("admin.port (MBX_RELAY_ADMIN_PORT)");
    }
  }

  @Test
  void a_store_dir_that_cannot_be_created_says_why_in_words() throws Exception {
    Path file = Files.writeString(dir.resolve("a-file"), "x");
    Run r = serve(Map.of(), "--port", "0", "--store-dir", file.resolve("store").toString());
    assertThat(r.code()).isEqualTo(1);
    assertThat(r.err()).contains("cannot create the store directory " + file.resolve("store") + ": not a directory");
  }

  @Test
  void in_json_log_mode_start_notes_and_the_reason_it_did_not_start_are_json_lines_too() throws Exception {
    // a store dir others can read (tightened: a start note) with a directory where relay.key goes (cannot read it)
    Path store = Files.createDirectories(dir.resolve("s"));
    Files.setPosixFilePermissions(store, java.nio.file.attribute.PosixFilePermissions.fromString("rwxr-xr-x"));
    Files.createDirectory(store.resolve("relay.key"));
    Run r;
    try {
      r = serve(Map.of("MBX_RELAY_LOG_JSON", "true"), "--port", "0", "--store-dir", store.toString());
    } finally {
      LogSetup.apply(false); // the shipped default, for the tests after this one
    }
    assertThat(r.code()).isEqualTo(1);
    java.util.List<String> lines = r.err().lines().filter(l -> !l.isBlank()).toList();
    assertThat(lines).as(r.err()).isNotEmpty().allSatisfy(l -> assertThat(l).startsWith("{"));
    java.util.List<String> messages = lines.stream()
        .map(l -> io.mbxrelay.wire.Json.parse(l).path("formattedMessage").asText()).toList();
    assertThat(messages).anyMatch(m -> m.startsWith("tightened the store dir"))
        .anyMatch(m -> m.startsWith("cannot read the relay key file " + store.resolve("relay.key")));
  }

  @Test
  void a_full_disk_names_the_relay_key_file_and_no_temporary_file(@TempDir Path parent) throws Exception {
    try (Tmpfs fs = Tmpfs.mount(parent, "64k")) {
      Path store = Files.createDirectory(fs.dir.resolve("store"));
      fs.fill("filler", 1 << 20);
      Run r = serve(Map.of(), "--port", "0", "--store-dir", store.toString());
      assertThat(r.code()).isEqualTo(1);
      assertThat(r.err()).contains("cannot create the relay key file " + store.resolve("relay.key")
          + ": no space left on device").doesNotContain("partial").doesNotContain("IOException");
    }
  }
}
