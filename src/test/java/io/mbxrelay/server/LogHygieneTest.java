package io.mbxrelay.server;

import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.classic.spi.IThrowableProxy;
import ch.qos.logback.core.read.ListAppender;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.mbxrelay.crypto.Ed25519KeyPair;
import io.mbxrelay.testing.Envelopes;
import io.mbxrelay.testing.Http;
import io.mbxrelay.testing.RelayHarness;
import io.mbxrelay.testing.TestHost;
import io.mbxrelay.wire.B64;
import io.mbxrelay.wire.CanonicalJson;
import io.mbxrelay.wire.Json;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Clock;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.LoggerFactory;

/**
 * docs/architecture.md "Logs and metrics" (logs never contain keys, tokens, wire bytes, envelope fields or challenge nonces): a full
 * enrol/push/pull/ack cycle, including rejected pushes, failed hops and a scrape, logged at DEBUG, carries none of the
 * secrets or content it handled.
 */
class LogHygieneTest {
  @TempDir
  Path dir;

  @Test
  void a_full_enrol_push_pull_ack_cycle_logs_no_key_seed_challenge_item_id_signature_or_wire() throws Exception {
    Logger root = (Logger) LoggerFactory.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);
    Level level = root.getLevel();
    ListAppender<ILoggingEvent> captured = new ListAppender<>();
    captured.start();
    root.addAppender(captured);
    root.setLevel(Level.DEBUG);
    List<String> secrets = new ArrayList<>();
    try {
      Ed25519KeyPair relayKey = Ed25519KeyPair.generate();
      secrets.add(relayKey.publicKeyB64());
      secrets.add(relayKey.seedB64());
      try (RelayHarness relay = RelayHarness.start(dir, Map.of(), Clock.systemUTC(), relayKey)) {
        TestHost a = new TestHost(relay.url(), "alpha-host");
        secrets.add(a.pub());
        secrets.add(a.key.seedB64());
        // enrol by hand to see the challenge nonce and the enrolment signature
        ObjectNode c = Json.MAPPER.createObjectNode().put("host", a.name).put("pubkey", a.pub());
        String challenge = Http.send(relay.url(), "POST", "/v1/relay/challenge", Json.stringify(c)).json()
            .get("challenge").asText();
        secrets.add(challenge);
        ObjectNode rec = Json.MAPPER.createObjectNode().put("v", 1).put("challenge", challenge).put("host", a.name)
            .put("pubkey", a.pub()).put("owner_fp", "");
        String enrolSig = a.key.signB64(CanonicalJson.canonicalBytes(rec));
        secrets.add(enrolSig);
        ObjectNode body = Json.MAPPER.createObjectNode().put("host", a.name).put("pubkey", a.pub())
            .put("owner_fp", "").put("sig", enrolSig);
        assertThat(Http.send(relay.url(), "POST", "/v1/relay/enrol", Json.stringify(body)).status()).isEqualTo(200);
        TestHost b = new TestHost(relay.url(), "beta-host").enrol();
        secrets.add(b.pub());

        String id = Envelopes.newId();
        byte[] wire = Envelopes.sealed(id);
        secrets.add(id);
        secrets.add(B64.encode(wire));
        secrets.add(new String(wire, StandardCharsets.UTF_8));
        JsonNode res = a.pushEnvelope(b, id, wire).json().get("results").get(0);
        assertThat(res.get("status").asText()).isEqualTo("accepted");
        secrets.add(res.get("sig").asText());
        // a conflict and a bad envelope: rejected items must not leak either
        String id2 = Envelopes.newId();
        secrets.add(id2);
        a.pushEnvelope(b, id2, "{\"v\":1}".getBytes(StandardCharsets.UTF_8));
        a.pushEnvelope(b, id, (" " + new String(wire, StandardCharsets.UTF_8)).getBytes(StandardCharsets.UTF_8));
        // failed hops: a wrong signature and a stale timestamp
        String path = "/v2/relay/items?after=0";
        String now = Long.toString(System.currentTimeMillis());
        String badSig = Http.sign(Ed25519KeyPair.generate(), "GET", path, now, null);
        secrets.add(badSig);
        Http.send(relay.url(), "GET", path, null, b.pub(), null, now, badSig);
        String hopSig = Http.sign(b.key, "GET", path, now, null);
        secrets.add(hopSig);
        Http.Resp pull = Http.send(relay.url(), "GET", path, null, b.pub(), null, now, hopSig);
        assertThat(pull.json().get("items").size()).isEqualTo(1);
        long seq = pull.json().get("last_seq").asLong();
        assertThat(b.ack(relay.server.epoch(), seq).status()).isEqualTo(200);
        assertThat(Http.send(relay.adminUrl(), "GET", "/metrics", null).status()).isEqualTo(200);
        assertThat(Http.send(relay.adminUrl(), "GET", "/ready", null).status()).isIn(200, 503);
      }
    } finally {
      root.detachAppender(captured);
      root.setLevel(level);
    }
    List<String> lines = new ArrayList<>();
    for (ILoggingEvent e : captured.list) {
      StringBuilder sb = new StringBuilder(e.getLoggerName()).append(' ').append(e.getFormattedMessage());
      for (IThrowableProxy t = e.getThrowableProxy(); t != null; t = t.getCause()) {
        sb.append(' ').append(t.getMessage());
      }
      lines.add(sb.toString());
    }
    for (String line : lines) {
      for (String secret : secrets) {
        assertThat(line).as("log line must not contain a secret or content").doesNotContain(secret);
      }
    }
  }
}
