package io.mbxrelay.auth;

import com.fasterxml.jackson.databind.JsonNode;
import com.nimbusds.jose.JOSEException;
import com.nimbusds.jose.JWSAlgorithm;
import com.nimbusds.jose.JWSVerifier;
import com.nimbusds.jose.crypto.ECDSAVerifier;
import com.nimbusds.jose.crypto.Ed25519Verifier;
import com.nimbusds.jose.crypto.RSASSAVerifier;
import com.nimbusds.jose.jwk.Curve;
import com.nimbusds.jose.jwk.ECKey;
import com.nimbusds.jose.jwk.JWK;
import com.nimbusds.jose.jwk.OctetKeyPair;
import com.nimbusds.jose.jwk.RSAKey;
import com.nimbusds.jose.util.Base64URL;
import com.nimbusds.jwt.JWTClaimsSet;
import com.nimbusds.jwt.SignedJWT;
import io.mbxrelay.wire.B64;
import java.text.ParseException;
import java.time.Clock;
import java.util.Date;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * The hosted relay's enrolment authority (docs/protocol.md §7.8 "account tokens"; {@code docs/account-tokens.md}): the
 * enrolment's {@code proof} carries a short-lived JWT access token from the accounts issuer, verified offline against
 * the issuer's JWKS ({@link JwksCache}). Granted only when every check passes, in this order (the first failure is
 * the denial reason, answered as 403 DENIED {@code enrolment not authorized: <reason>}):
 * <ol>
 *   <li>a token is present ({@code proof} is the compact JWT, or an object with {@code access_token} or
 *       {@code token}) — {@code no account token};</li>
 *   <li>it parses as a signed JWT with a {@code kid} — {@code malformed account token};</li>
 *   <li>the key is known (one refresh on an unknown kid, at most once a minute, waited for at most the fetch
 *       deadline) — {@code unknown token signing key}; the cache is within its lifetime — {@code token signing keys
 *       unavailable}, answered at once without waiting for a fetch (a refresh is started in the background, at most
 *       once a minute; issue 11 item 7);</li>
 *   <li>the signature verifies with that key (RSA or EC keys; the header {@code alg} must fit the key and equal the
 *       key's {@code alg} when it names one) — {@code bad token signature};</li>
 *   <li>{@code iss} — {@code wrong token issuer}; {@code aud} names only this relay — {@code token audience is not
 *       this relay}; {@code exp} and {@code iat} present — {@code token lacks exp or iat}; not expired — {@code token
 *       expired}; {@code iat} not more than 60 s ahead — {@code token issued in the future}; {@code nbf}, when
 *       present, not more than 60 s ahead — {@code token not yet valid} (issue 11 item 10); {@code exp − iat} within
 *       the maximum — {@code token lifetime over the maximum}; {@code sub}, {@code account}, {@code org},
 *       {@code client_id}, {@code jti} non-empty strings — {@code token lacks <claim>};</li>
 *   <li>{@code cnf.jkt} equals the RFC 7638 thumbprint of the enrolling host key as an Ed25519 OKP JWK —
 *       {@code token is not bound to this host key}.</li>
 * </ol>
 * Reasons never contain token or key material.
 *
 * <p>Thread-safe and non-blocking: runs on event loops; an unknown kid waits on the cache's asynchronous fetch.
 */
public final class AccountTokenAuthority implements EnrolmentAuthority {
  /** Authority name stored in {@code enrolments.authorized_by}. */
  public static final String NAME = "account-token";
  private static final long IAT_SKEW_MS = 60_000;

  private final JwksCache jwks;
  private final String issuer;
  private final String audience;
  private final long maxLifetimeMs;
  private final Clock clock;

  /**
   * @param jwks the issuer's key cache
   * @param issuer the only {@code iss} accepted
   * @param audience this relay's URL, the only {@code aud} accepted (one trailing slash ignored)
   * @param maxLifetimeMs most {@code exp − iat}, ms (docs/protocol.md §7.8: 15 min)
   * @param clock time source
   */
  public AccountTokenAuthority(JwksCache jwks, String issuer, String audience, long maxLifetimeMs, Clock clock) {
    this.jwks = Objects.requireNonNull(jwks);
    this.issuer = Objects.requireNonNull(issuer);
    this.audience = stripSlash(Objects.requireNonNull(audience));
    this.maxLifetimeMs = maxLifetimeMs;
    this.clock = Objects.requireNonNull(clock);
  }

  @Override
  public String name() {
    return NAME;
  }

  /** Synchronous form: does not refresh on an unknown kid. Prefer {@link #decide}. */
  @Override
  public Decision authorize(Request request) {
    return check(request, false).decision;
  }

  /**
   * Decides asynchronously. Waits only for a refresh asked for by an unknown {@code kid} while the cache is usable
   * (bounded by the fetch deadline); when the keys are unavailable it answers {@code token signing keys unavailable}
   * at once and starts a rate-limited refresh in the background (issue 11 item 7: enrolments must not hang on a slow
   * or dead issuer).
   */
  @Override
  public CompletionStage<Decision> decide(Request request) {
    Step first = check(request, true);
    if (!first.wantsRefresh) {
      return CompletableFuture.completedFuture(first.decision);
    }
    return jwks.refreshForUnknownKid().thenApply(refreshed -> check(request, false).decision);
  }

  private record Step(Decision decision, boolean wantsRefresh) {}

  private static Step deny(String reason) {
    return new Step(new Decision(false, null, null, reason), false);
  }

  private Step check(Request request, boolean mayRefresh) {
    Optional<String> token = token(request.proof());
    if (token.isEmpty()) {
      return deny("no account token");
    }
    SignedJWT jwt;
    JWTClaimsSet claims;
    try {
      jwt = SignedJWT.parse(token.get());
      claims = jwt.getJWTClaimsSet();
    } catch (ParseException | RuntimeException e) {
      return deny("malformed account token");
    }
    String kid = jwt.getHeader().getKeyID();
    if (kid == null || kid.isEmpty()) {
      return deny("malformed account token");
    }
    JwksCache.Lookup lookup = jwks.lookup(kid);
    if (lookup == JwksCache.Lookup.UNAVAILABLE) {
      if (mayRefresh) {
        jwks.refreshForUnknownKid(); // background: this enrolment is answered now, a later one may find keys
      }
      return deny("token signing keys unavailable");
    }
    if (lookup == JwksCache.Lookup.UNKNOWN) {
      if (mayRefresh) {
        return new Step(null, true);
      }
      return deny("unknown token signing key");
    }
    if (!verify(jwt, jwks.key(kid))) {
      return deny("bad token signature");
    }
    if (!issuer.equals(claims.getIssuer())) {
      return deny("wrong token issuer");
    }
    List<String> aud = claims.getAudience();
    if (aud == null || aud.isEmpty() || !aud.stream().allMatch(a -> a != null && audience.equals(stripSlash(a)))) {
      return deny("token audience is not this relay");
    }
    Date exp = claims.getExpirationTime();
    Date iat = claims.getIssueTime();
    if (exp == null || iat == null) {
      return deny("token lacks exp or iat");
    }
    long now = clock.millis();
    if (exp.getTime() <= now) {
      return deny("token expired");
    }
    if (iat.getTime() > now + IAT_SKEW_MS) {
      return deny("token issued in the future");
    }
    // Own comparison rather than Nimbus' DefaultJWTClaimsVerifier: the reasons and their order are the documented
    // answer (docs/account-tokens.md), and the verifier's exceptions do not map onto them one to one.
    Date nbf = claims.getNotBeforeTime();
    if (nbf != null && nbf.getTime() > now + IAT_SKEW_MS) {
      return deny("token not yet valid");
    }
    if (exp.getTime() - iat.getTime() > maxLifetimeMs) {
      return deny("token lifetime over the maximum");
    }
    for (String claim : new String[] {"sub", "account", "org", "client_id", "jti"}) {
      Object v = claims.getClaim(claim);
      if (!(v instanceof String s) || s.isEmpty()) {
        return deny("token lacks " + claim);
      }
    }
    Object cnf = claims.getClaim("cnf");
    Object jkt = cnf instanceof Map<?, ?> m ? m.get("jkt") : null;
    Optional<String> expected = thumbprint(request.hostPubkey());
    if (!(jkt instanceof String) || expected.isEmpty() || !expected.get().equals(jkt)) {
      return deny("token is not bound to this host key");
    }
    return new Step(new Decision(true, (String) claims.getClaim("account"), (String) claims.getClaim("org"), null,
        (String) claims.getClaim("client_id")), false);
  }

  private static Optional<String> token(JsonNode proof) {
    if (proof == null || proof.isNull()) {
      return Optional.empty();
    }
    if (proof.isTextual() && !proof.textValue().isEmpty()) {
      return Optional.of(proof.textValue());
    }
    for (String field : new String[] {"access_token", "token"}) {
      JsonNode n = proof.get(field);
      if (n != null && n.isTextual() && !n.textValue().isEmpty()) {
        return Optional.of(n.textValue());
      }
    }
    return Optional.empty();
  }

  private static boolean verify(SignedJWT jwt, JWK key) {
    JWSAlgorithm alg = jwt.getHeader().getAlgorithm();
    if (key.getAlgorithm() != null && !key.getAlgorithm().getName().equals(alg.getName())) {
      return false;
    }
    try {
      JWSVerifier verifier;
      if (key instanceof RSAKey rsa) {
        verifier = new RSASSAVerifier(rsa);
      } else if (key instanceof ECKey ec) {
        verifier = new ECDSAVerifier(ec);
      } else if (key instanceof OctetKeyPair okp && Curve.Ed25519.equals(okp.getCurve())) {
        verifier = new Ed25519Verifier(okp.toPublicJWK()); // EdDSA; Nimbus does it with Tink (on the class path)
      } else {
        return false;
      }
      return verifier.supportedJWSAlgorithms().contains(alg) && jwt.verify(verifier);
    } catch (JOSEException | RuntimeException e) {
      return false;
    }
  }

  /**
   * The RFC 7638 thumbprint (SHA-256, base64url) of a host key as an Ed25519 OKP JWK ({@code {"crv":"Ed25519",
   * "kty":"OKP","x":<base64url of the 32 raw bytes>}}): the value {@code cnf.jkt} must carry.
   *
   * @param hostPubkeyB64 the host key, standard base64 (docs/protocol.md §1)
   * @return the thumbprint, or empty when the key does not decode to 32 bytes
   */
  public static Optional<String> thumbprint(String hostPubkeyB64) {
    Optional<byte[]> raw = B64.decodeLenient(hostPubkeyB64);
    if (raw.isEmpty() || raw.get().length != 32) {
      return Optional.empty();
    }
    try {
      return Optional.of(new OctetKeyPair.Builder(Curve.Ed25519, Base64URL.encode(raw.get())).build()
          .computeThumbprint().toString());
    } catch (JOSEException e) {
      return Optional.empty();
    }
  }

  private static String stripSlash(String s) {
    return s.endsWith("/") ? s.substring(0, s.length() - 1) : s;
  }
}
