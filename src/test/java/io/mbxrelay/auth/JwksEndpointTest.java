package io.mbxrelay.auth;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

/** Issue 11 item 7: the JWKS URL is parsed, and the loopback rule is checked on the parsed host. */
class JwksEndpointTest {

  @Test
  void https_anywhere_and_plain_http_to_a_loopback_host_are_accepted() throws Exception {
    assertThat(JwksEndpoint.parse("https://issuer.example/.well-known/jwks.json?v=1"))
        .isEqualTo(new JwksEndpoint(true, "issuer.example", 443, "/.well-known/jwks.json?v=1"));
    assertThat(JwksEndpoint.parse("http://127.0.0.1:8080/jwks"))
        .isEqualTo(new JwksEndpoint(false, "127.0.0.1", 8080, "/jwks"));
    assertThat(JwksEndpoint.parse("http://127.5.6.7/jwks").host()).isEqualTo("127.5.6.7");
    assertThat(JwksEndpoint.parse("http://LOCALHOST").pathAndQuery()).isEqualTo("/");
    assertThat(JwksEndpoint.parse("http://[::1]:9000/k")).isEqualTo(new JwksEndpoint(false, "::1", 9000, "/k"));
  }

  @Test
  void user_info_a_look_alike_loopback_name_and_other_schemes_are_refused() {
    for (String bad : new String[] {"http://127.0.0.1@127.0.0.2/jwks", "http://localhost.attacker.invalid/jwks",
        "http://localhost@evil.example/jwks", "https://user:pw@issuer.example/jwks", "http://127.0.0.1.nip.io/jwks",
        "http://evil.example#@localhost/", "http://10.0.0.1/jwks", "ftp://localhost/jwks", "http:/localhost/jwks",
        "//localhost/jwks", "http://local host/", "", "http://127.0.0.1\\@evil.example/"}) {
      assertThatThrownBy(() -> JwksEndpoint.parse(bad)).as(bad).isInstanceOf(JwksEndpoint.BadUrl.class)
          .hasMessageNotContaining("evil").hasMessageNotContaining("attacker");
    }
  }
}
