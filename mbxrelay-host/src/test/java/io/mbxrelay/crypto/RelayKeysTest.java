package io.mbxrelay.crypto;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.mbxrelay.wire.B64;
import io.mbxrelay.wire.Json;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.HexFormat;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class RelayKeysTest {

  private static final String SEED = "AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE=";
  private static final String PUB = "iojj3XQJ8ZX9UtstPLpdcspnCb8dlBIb83SIAbQPb1w=";
  private static final String OTHER_PUB = "gTl3Dqh9F19Wo1Rmw0x+zMuNipG07jeiXfYPW4/Js5Q=";

  @TempDir Path dir;

  @Test
  void a_base64_seed_is_a_key_with_surrounding_whitespace_ignored() throws Exception {
    assertThat(RelayKeys.parse(SEED).publicKeyB64()).isEqualTo(PUB);
    assertThat(RelayKeys.parse("  " + SEED + "\n").publicKeyB64()).isEqualTo(PUB);
  }

  @Test
  void json_with_and_without_a_public_key_is_a_key() throws Exception {
    assertThat(RelayKeys.parse("{\"privateKey\":\"" + SEED + "\"}").publicKeyB64()).isEqualTo(PUB);
    assertThat(RelayKeys.parse("{\"publicKey\":\"" + PUB + "\",\"privateKey\":\"" + SEED + "\"}\n").publicKeyB64())
        .isEqualTo(PUB);
  }

  @Test
  void json_whose_public_key_does_not_match_is_refused() {
    assertThatThrownBy(() -> RelayKeys.parse("{\"publicKey\":\"" + OTHER_PUB + "\",\"privateKey\":\"" + SEED + "\"}"))
        .isInstanceOf(RelayKeyException.class)
        .hasMessage("relay key is not valid: publicKey does not match privateKey");
  }

  @Test
  void json_without_a_private_key_is_refused() {
    assertThatThrownBy(() -> RelayKeys.parse("{\"publicKey\":\"" + PUB + "\"}"))
        .isInstanceOf(RelayKeyException.class)
        .hasMessage("relay key is not valid: privateKey is required")
        .hasMessageNotContaining(PUB);
  }

  @Test
  void the_pkcs8_form_node_writes_is_accepted_as_text_and_in_json() throws Exception {
    byte[] der = HexFormat.of().parseHex("302e020100300506032b657004220420" + "01".repeat(32));
    String pkcs8 = B64.encode(der);
    assertThat(RelayKeys.parse(pkcs8).publicKeyB64()).isEqualTo(PUB);
    assertThat(RelayKeys.parse("{\"privateKey\":\"" + pkcs8 + "\"}").publicKeyB64()).isEqualTo(PUB);
    byte[] otherDer = der.clone();
    otherDer[0] = 0x31;
    assertThatThrownBy(() -> RelayKeys.parse(B64.encode(otherDer))).isInstanceOf(RelayKeyException.class);
  }

  @Test
  void garbage_is_refused_and_the_message_never_contains_the_input() {
    String[] inputs = {
      "not a key at all", SEED.substring(0, 40), SEED + SEED, "{\"privateKey\":\"" + SEED.substring(0, 30) + "\"}",
      "{\"privateKey\":\"" + SEED + "\"", "{\"privateKey\": 12}", "[\"" + SEED + "\"]", "", "   ",
      "{\"privateKey\":\"" + SEED + "\",\"publicKey\":\"" + SEED + "\"}",
    };
    for (String input : inputs) {
      assertThatThrownBy(() -> RelayKeys.parse(input))
          .isInstanceOf(RelayKeyException.class)
          .hasMessageStartingWith("relay key is not valid: ")
          .satisfies(e -> {
            assertThat(e.getMessage()).doesNotContain(SEED.substring(0, 12));
            assertThat(e.getMessage()).doesNotContain("not a key");
          });
    }
  }

  @Test
  void the_key_file_is_the_json_form_with_a_newline_and_parses_back() throws Exception {
    Ed25519KeyPair k = RelayKeys.parse(SEED);
    String file = RelayKeys.toFileJson(k);
    assertThat(file).isEqualTo("{\"publicKey\":\"" + PUB + "\",\"privateKey\":\"" + SEED + "\"}\n");
    assertThat(RelayKeys.parse(file).publicKeyB64()).isEqualTo(PUB);
    assertThat(Json.parse(file).get("privateKey").textValue()).isEqualTo(SEED);
  }

  @Test
  void load_or_create_creates_a_0600_key_file_and_reloads_the_same_key() throws Exception {
    Path store = dir.resolve("store");
    Ed25519KeyPair first = RelayKeys.loadOrCreate(store, null);
    Path file = store.resolve("relay.key");
    assertThat(file).exists();
    if (Files.getFileStore(file).supportsFileAttributeView("posix")) {
      assertThat(Files.getPosixFilePermissions(file))
          .containsExactlyInAnyOrderElementsOf(PosixFilePermissions.fromString("rw-------"));
      assertThat(Files.getPosixFilePermissions(store)).doesNotContain(PosixFilePermission.OTHERS_READ);
    }
    assertThat(RelayKeys.parse(Files.readString(file)).publicKeyB64()).isEqualTo(first.publicKeyB64());
    Ed25519KeyPair again = RelayKeys.loadOrCreate(store, "");
    assertThat(again.publicKeyB64()).isEqualTo(first.publicKeyB64());
    try (var files = Files.list(store)) {
      assertThat(files.map(p -> p.getFileName().toString())).containsExactly("relay.key");
    }
  }

  @Test
  void the_environment_value_wins_over_the_key_file() throws Exception {
    Ed25519KeyPair created = RelayKeys.loadOrCreate(dir, null);
    Ed25519KeyPair fromEnv = RelayKeys.loadOrCreate(dir, "\n" + SEED + "  ");
    assertThat(fromEnv.publicKeyB64()).isEqualTo(PUB).isNotEqualTo(created.publicKeyB64());
  }

  @Test
  void a_bad_environment_value_is_reported_without_echoing_it() {
    assertThatThrownBy(() -> RelayKeys.loadOrCreate(dir, "secret-but-wrong"))
        .isInstanceOf(RelayKeyException.class)
        .hasMessageContaining("MBX_RELAY_KEY")
        .hasMessageNotContaining("secret-but-wrong");
    assertThat(dir.resolve("relay.key")).doesNotExist();
  }

  @Test
  void a_corrupt_key_file_is_refused_not_replaced() throws Exception {
    Path file = dir.resolve("relay.key");
    Files.writeString(file, "corrupt");
    assertThatThrownBy(() -> RelayKeys.loadOrCreate(dir, null))
        .isInstanceOf(RelayKeyException.class)
        .hasMessageNotContaining("corrupt\"");
    assertThat(Files.readString(file)).isEqualTo("corrupt");
  }
}
