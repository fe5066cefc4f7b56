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
    return serve(new ServeCommand(), extraEnv, args);
  }

  private static Run serve(ServeCommand cmd, Map<String, String> extraEnv, String... args) {
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

  /** Issue 22 item 5: a path that can never be a directory is a usage error (2), not "restart may help" (1). */
  @Test
  void a_store_dir_that_is_a_file_or_under_one_is_a_usage_error_that_names_the_file() throws Exception {
    Path file = Files.writeString(dir.resolve("a-file"), "x");
    Run under = serve(Map.of(), "--port", "0", "--store-dir", file.resolve("store").toString());
    assertThat(under.code()).isEqualTo(2);
    assertThat(under.err()).contains("cannot start: the store dir " + file.resolve("store") + " cannot be a directory: "
        + file + " is a file; point --store-dir or $MBX_RELAY_DIR at a directory");
    Run itself = serve(Map.of(), "--port", "0", "--store-dir", file.toString());
    assertThat(itself.code()).isEqualTo(2);
    assertThat(itself.err()).contains("cannot start: the store dir " + file + " is a file, not a directory");
  }

  /** Issue 22 item 5: a bind that is not an address was looked up by DNS and failed as "NXDOMAIN". */
  @Test
  void a_bind_that_is_not_an_ip_address_is_a_usage_error_that_names_bind() {
    Run r = serve(Map.of(), "--port", "0", "--bind", "not-an-ip", "--store-dir", dir.resolve("s").toString());
    assertThat(r.code()).isEqualTo(2);
    assertThat(r.err()).contains("--bind must be an IP address of this machine").contains("(is not-an-ip)")
        .doesNotContain("NXDOMAIN");
    assertThat(Files.exists(dir.resolve("s"))).isFalse();
  }

  /** Issue 22 item 5: an address of another machine used to suggest "--port or $PORT". 192.0.2.1 is TEST-NET-1. */
  @Test
  void a_bind_to_an_address_this_machine_does_not_have_names_bind_not_the_port() {
    Run r = serve(Map.of(), "--port", "0", "--bind", "192.0.2.1", "--store-dir", dir.resolve("s").toString());
    assertThat(r.code()).isEqualTo(1);
    assertThat(r.err()).contains("192.0.2.1 is not an address of this machine; choose an address of this machine with"
        + " --bind (0.0.0.0 for every address)").doesNotContain("--port or $PORT");
  }

  /**
   * Issue 22 item 5: a second relay on a store in use waited 60 s after one line and looked hung. It now fails at once
   * naming the holder, or with {@code --wait} says every few seconds that it waits, and for whom.
   */
  @Test
  void a_second_serve_on_a_store_in_use_fails_at_once_or_with_wait_says_whom_it_waits_for() throws Exception {
    Path store = dir.resolve("s");
    io.mbxrelay.testing.RelayHarness.start(store).close(); // a store that lived: relay.db, relay.key, relay.lock
    try (io.mbxrelay.store.sqlite.StoreLock held = io.mbxrelay.store.sqlite.StoreLock.acquire(store, 0)) {
      assertThat(held).isNotNull();
      String pid = "pid " + ProcessHandle.current().pid();
      long t0 = System.nanoTime();
      Run once = serve(Map.of(), "--port", "0", "--store-dir", store.toString());
      assertThat(once.code()).isEqualTo(1);
      assertThat(java.util.concurrent.TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0)).isLessThan(4_000);
      assertThat(once.err()).contains("cannot start: the store " + store.toAbsolutePath() + " is in use by " + pid
          + " (another relay process serves it); stop that one first, or start with --wait");
      ServeCommand waiting = new ServeCommand();
      waiting.waitMaxMs = 6_000;
      Run waited = serve(waiting, Map.of(), "--port", "0", "--wait", "--store-dir", store.toString());
      assertThat(waited.code()).isEqualTo(1);
      assertThat(waited.err().lines().filter(l -> l.contains("waiting for " + pid + " to release the store")))
          .hasSizeGreaterThanOrEqualTo(2);
      assertThat(waited.err()).contains("is still in use by " + pid);
    }
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
