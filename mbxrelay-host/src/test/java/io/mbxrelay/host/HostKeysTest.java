package io.mbxrelay.host;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.mbxrelay.crypto.Ed25519KeyPair;
import io.mbxrelay.crypto.RelayKeys;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class HostKeysTest {

  @TempDir Path dir;

  @Test
  void aMissingKeyFileIsCreated0600InA0700DirAndLoadedBackUnchanged() throws Exception {
    Path file = dir.resolve("sub/host.key");

    HostKeys.Loaded first = HostKeys.loadOrCreate(file);
    HostKeys.Loaded second = HostKeys.loadOrCreate(file);

    assertThat(first.created()).isTrue();
    assertThat(second.created()).isFalse();
    assertThat(second.key().publicKeyB64()).isEqualTo(first.key().publicKeyB64());
    assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(file))).isEqualTo("rw-------");
    assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(file.getParent()))).isEqualTo("rwx------");
    assertThat(Files.readString(file)).isEqualTo(RelayKeys.toFileJson(first.key()));
    try (var s = Files.list(file.getParent())) {
      assertThat(s).containsExactly(file); // no temp file left behind
    }
  }

  @Test
  void loadingAMissingFileIsNoSuchFile() {
    assertThatThrownBy(() -> HostKeys.load(dir.resolve("none.key"))).isInstanceOf(NoSuchFileException.class);
  }

  @Test
  void anInvalidKeyFileIsRefusedWithoutEchoingItsContent() throws Exception {
    Path file = dir.resolve("host.key");
    Files.writeString(file, "{\"privateKey\":\"c2VjcmV0LXNlY3JldC1zZWNyZXQ=\"}");

    assertThatThrownBy(() -> HostKeys.loadOrCreate(file))
        .isInstanceOf(HostKeyException.class)
        .hasMessageContaining("host key file")
        .hasMessageNotContaining("c2VjcmV0");
  }

  @Test
  void aKeyFileWithAMismatchedPublicKeyIsRefused() throws Exception {
    Path file = dir.resolve("host.key");
    Ed25519KeyPair a = Ed25519KeyPair.generate();
    Files.writeString(file, "{\"publicKey\":\"" + Ed25519KeyPair.generate().publicKeyB64() + "\",\"privateKey\":\""
        + a.seedB64() + "\"}");

    assertThatThrownBy(() -> HostKeys.load(file)).isInstanceOf(HostKeyException.class)
        .hasMessageContaining("publicKey does not match privateKey").hasMessageNotContaining(a.seedB64());
  }

  @Test
  void pinsRoundTripByNormalizedUrlAndIgnoreNonKeys() throws Exception {
    Path file = RelayPins.besideKey(dir.resolve("host.key"));
    String key = Ed25519KeyPair.generate().publicKeyB64();
    assertThat(RelayPins.load(file).get("http://x")).isEmpty();

    RelayPins.load(file).with("http://relay.example:7374/", key).save(file);
    Files.writeString(file, Files.readString(file).replace("}", ",\"http://other\":\"not a key\"}"));

    RelayPins pins = RelayPins.load(file);
    assertThat(pins.get("http://relay.example:7374")).contains(key);
    assertThat(pins.asMap()).containsOnlyKeys("http://relay.example:7374");
    assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(file))).isEqualTo("rw-------");
  }
}
