package io.mbxrelay.host.seal;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.mbxrelay.crypto.Ed25519;
import io.mbxrelay.crypto.Ed25519KeyPair;
import io.mbxrelay.crypto.Fingerprint;
import io.mbxrelay.wire.CanonicalJson;
import io.mbxrelay.wire.EnvelopeCheck;
import io.mbxrelay.wire.IsoTime;
import io.mbxrelay.wire.Json;
import io.mbxrelay.wire.Utf8;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * AgentMBX 0.5.x v3 envelopes, sealed for one recipient host and signed by the sending host (docs/host-library.md
 * "Envelopes"). The wire form is the envelope with {@code body} replaced by the base64 ciphertext, {@code enc} filled
 * ({@link BodySeal}) and {@code sig = {alg:"ed25519", host, key:<fingerprint of the host key>, value}} appended; the
 * signature is Ed25519 over the canonical JSON of everything but {@code sig}, so it commits to the exact ciphertext.
 * Members are written in the reference's order, so the bytes equal its {@code JSON.stringify} output.
 *
 * <p>{@code meta} is sent with empty {@code mentions}, {@code directives}, {@code tags} and {@code task_refs}: the
 * reference derives them from the plaintext body and sends them in the clear, which would put pieces of a sealed body
 * on the relay. Receivers that want them parse the opened body.
 *
 * <p>Stateless and thread-safe.
 */
public final class SealedEnvelope {

  /** Characters a subject may not contain (the reference turns them into spaces). */
  private static final Pattern CONTROL = Pattern.compile("[\\u0000-\\u001f\\u007f\\u0085\\u2028\\u2029]");
  private static final int MAX_SUBJECT = 200;

  private SealedEnvelope() {}

  /**
   * What the application wants to send.
   *
   * @param from sender address {@code name@host}
   * @param to recipient addresses {@code name@host} (1–100, each ≤ 300 characters)
   * @param kind one of {@link EnvelopeCheck#KINDS}
   * @param subject one line, not blank (control characters become spaces; cut to 200 characters)
   * @param body the plaintext body, at most {@link EnvelopeCheck#MAX_BODY} UTF-8 bytes
   * @param thread thread id, or null for a new thread (the envelope id)
   * @param replyTo the envelope id this answers, or null
   * @param needsReply whether an answer is expected
   * @param refs references (URLs, paths), ≤ 100, each ≤ 2,048 characters
   */
  public record Draft(String from, List<String> to, String kind, String subject, String body, String thread,
      String replyTo, boolean needsReply, List<String> refs) {
    /** Copies the lists; null kind means {@code message}, null refs none. */
    public Draft {
      Objects.requireNonNull(from, "from");
      to = List.copyOf(to);
      kind = kind == null ? "message" : kind;
      Objects.requireNonNull(subject, "subject");
      Objects.requireNonNull(body, "body");
      refs = refs == null ? List.of() : List.copyOf(refs);
    }

    /**
     * A plain {@code message} to one address.
     *
     * @param from sender address
     * @param to recipient address
     * @param subject the subject
     * @param body the body
     * @return the draft
     */
    public static Draft message(String from, String to, String subject, String body) {
      return new Draft(from, List.of(to), "message", subject, body, null, null, false, List.of());
    }
  }

  /**
   * Builds the unsealed, unsigned envelope ({@code enc: null}, plaintext body). Keep it only on this host.
   *
   * @param d the draft
   * @param id the envelope id (a {@link Ulid})
   * @param nowMs its {@code ts}, ms since the epoch
   * @return the envelope
   * @throws IllegalArgumentException {@code subject is required}, {@code body is over 256 KB}, or
   *     {@code bad envelope: <reason>} with the shape check's reason
   */
  public static ObjectNode build(Draft d, String id, long nowMs) {
    if (d.subject().isBlank()) {
      throw new IllegalArgumentException("subject is required");
    }
    if (EnvelopeCheck.utf8Length(d.body()) > EnvelopeCheck.MAX_BODY) {
      throw new IllegalArgumentException("body is over 256 KB (" + EnvelopeCheck.MAX_BODY + " bytes)");
    }
    String subject = CONTROL.matcher(d.subject()).replaceAll(" ");
    if (subject.length() > MAX_SUBJECT) {
      subject = subject.substring(0, MAX_SUBJECT);
    }
    ObjectNode e = Json.MAPPER.createObjectNode();
    e.put("v", 3).put("id", id).put("ts", IsoTime.format(nowMs)).put("from", d.from());
    ArrayNode to = e.putArray("to");
    d.to().forEach(to::add);
    e.put("thread", d.thread() != null ? d.thread() : id);
    if (d.replyTo() != null) {
      e.put("reply_to", d.replyTo());
    } else {
      e.putNull("reply_to");
    }
    e.put("kind", d.kind()).put("subject", subject).put("body", d.body()).put("needs_reply", d.needsReply());
    ArrayNode refs = e.putArray("refs");
    d.refs().forEach(refs::add);
    ObjectNode meta = e.putObject("meta");
    meta.putArray("mentions");
    meta.putArray("directives");
    meta.putArray("tags");
    meta.putArray("task_refs");
    e.putNull("authority");
    e.putNull("enc");
    Optional<String> bad = EnvelopeCheck.check(e);
    if (bad.isPresent()) {
      throw new IllegalArgumentException("bad envelope: " + bad.get());
    }
    return e;
  }

  /**
   * Seals an envelope's body for one recipient host and signs it with this host's key.
   *
   * @param plain the envelope from {@link #build} (not modified)
   * @param recipientEncPub the recipient host's X25519 key (32 bytes)
   * @param hostName this host's name ({@code sig.host})
   * @param hostKey this host's Ed25519 key
   * @return the wire bytes (UTF-8 JSON)
   * @throws SealException {@code bad recipient encryption key}
   */
  public static byte[] seal(ObjectNode plain, byte[] recipientEncPub, String hostName, Ed25519KeyPair hostKey)
      throws SealException {
    String id = plain.path("id").asText();
    BodySeal.Enc enc = BodySeal.seal(plain.path("body").asText().getBytes(StandardCharsets.UTF_8), recipientEncPub, id);
    return signed(plain, enc, hostName, hostKey);
  }

  /** {@link #seal} with the ephemeral key and nonce fixed: test vectors only. */
  static byte[] seal(ObjectNode plain, byte[] recipientEncPub, String hostName, Ed25519KeyPair hostKey,
      byte[] ephemeralPriv, byte[] nonce) throws SealException {
    String id = plain.path("id").asText();
    BodySeal.Enc enc = BodySeal.seal(plain.path("body").asText().getBytes(StandardCharsets.UTF_8), recipientEncPub, id,
        ephemeralPriv, nonce);
    return signed(plain, enc, hostName, hostKey);
  }

  private static byte[] signed(ObjectNode plain, BodySeal.Enc enc, String hostName, Ed25519KeyPair hostKey) {
    ObjectNode e = plain.deepCopy();
    e.remove("sig");
    e.put("body", enc.bodyB64());
    e.set("enc", enc.toJson());
    String value = hostKey.signB64(signedBytes(e));
    e.putObject("sig").put("alg", "ed25519").put("host", hostName).put("key", Fingerprint.ofB64(hostKey.publicKeyB64()))
        .put("value", value);
    return Json.stringify(e).getBytes(StandardCharsets.UTF_8);
  }

  /** The bytes the host key signs: canonical JSON of all but {@code sig}, {@code body} = the ciphertext. */
  static byte[] signedBytes(JsonNode envelope) {
    ObjectNode u = envelope.deepCopy();
    u.remove("sig");
    JsonNode enc = u.get("enc");
    if (enc != null && enc.isObject() && enc.get("body") != null) {
      u.set("body", enc.get("body"));
    }
    return CanonicalJson.canonicalBytes(u);
  }

  /**
   * An opened envelope.
   *
   * @param id envelope id
   * @param ts the sender's timestamp (ISO text as sent)
   * @param from sender address as written by the sender (its host part is not checked)
   * @param to recipient addresses
   * @param kind envelope kind
   * @param subject subject
   * @param thread thread id
   * @param replyTo envelope answered, or null
   * @param needsReply whether an answer is expected
   * @param refs references
   * @param body the plaintext body (invalid UTF-8 decoded as U+FFFD, as the reference does)
   * @param signedByHost {@code sig.host}: the name the sending host signed with
   */
  public record Opened(String id, String ts, String from, List<String> to, String kind, String subject, String thread,
      String replyTo, boolean needsReply, List<String> refs, String body, String signedByHost) {
    /** Copies the lists. */
    public Opened {
      to = List.copyOf(to);
      refs = List.copyOf(refs);
    }
  }

  /**
   * Checks and opens a sealed envelope from a known sender host: shape (docs/protocol.md §4.9 rules), sealed (a
   * plaintext envelope is refused), signed by exactly that host key over the ciphertext, body opens with this host's
   * key.
   *
   * @param wire the wire bytes as pulled
   * @param senderPubkey the pushing host's Ed25519 key (base64), as the relay recorded it
   * @param me this host's encryption key pair
   * @return the opened envelope
   * @throws SealException with the reason: {@code bad envelope: <shape reason>}, {@code not sealed},
   *     {@code unsigned}, {@code signed by another host key}, {@code bad signature}, enc reasons of
   *     {@link BodySeal.Enc#fromJson}, {@code body does not open}
   */
  public static Opened open(byte[] wire, String senderPubkey, EncKeyPair me) throws SealException {
    JsonNode e;
    try {
      e = Json.parse(wire);
    } catch (IllegalArgumentException x) {
      throw new SealException("bad envelope: not JSON");
    }
    Optional<String> bad = EnvelopeCheck.check(e);
    if (bad.isPresent()) {
      throw new SealException("bad envelope: " + bad.get());
    }
    if (e.get("enc").isNull()) {
      throw new SealException("not sealed (plaintext envelopes are refused)");
    }
    BodySeal.Enc enc = BodySeal.Enc.fromJson(e.get("enc"));
    JsonNode sig = e.get("sig");
    if (sig == null || !sig.isObject() || !"ed25519".equals(sig.path("alg").asText(null))
        || !sig.path("value").isTextual()) {
      throw new SealException("unsigned");
    }
    if (!Fingerprint.ofB64(senderPubkey).equals(sig.path("key").asText(null))) {
      throw new SealException("signed by another host key");
    }
    if (!Ed25519.verify(senderPubkey, signedBytes(e), sig.get("value").textValue())) {
      throw new SealException("bad signature");
    }
    String id = e.get("id").textValue();
    String body = Utf8.decode(BodySeal.open(enc, me, id));
    return new Opened(id, e.get("ts").textValue(), e.get("from").textValue(), strings(e.get("to")),
        e.get("kind").textValue(), e.get("subject").textValue(), e.get("thread").textValue(),
        e.get("reply_to").isNull() ? null : e.get("reply_to").textValue(), e.get("needs_reply").booleanValue(),
        strings(e.get("refs")), body, sig.path("host").asText(""));
  }

  private static List<String> strings(JsonNode a) {
    List<String> out = new ArrayList<>(a.size());
    a.forEach(n -> out.add(n.textValue()));
    return out;
  }
}
