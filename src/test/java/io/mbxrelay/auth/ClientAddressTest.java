package io.mbxrelay.auth;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** Issue 11 item 6: the rate key of a client address. */
class ClientAddressTest {

  @Test
  void ipv6_addresses_are_keyed_by_their_network_and_ipv4_by_the_address() {
    assertThat(ClientAddress.rateKey("2001:db8:1:2:3:4:5:6", 64)).isEqualTo("2001:db8:1:2::/64");
    assertThat(ClientAddress.rateKey("[2001:DB8:1:2::9]", 64)).isEqualTo("2001:db8:1:2::/64");
    assertThat(ClientAddress.rateKey("fe80::1%eth0", 64)).isEqualTo("fe80::/64");
    assertThat(ClientAddress.rateKey("2001:db8:1:2:3:4:5:6", 48)).isEqualTo("2001:db8:1::/48");
    assertThat(ClientAddress.rateKey("2001:db8:1:2:3:4:5:6", 56)).isEqualTo("2001:db8:1::/56");
    assertThat(ClientAddress.rateKey("2001:db8:1:2ff:3:4:5:6", 56)).isEqualTo("2001:db8:1:200::/56");
    assertThat(ClientAddress.rateKey("2001:db8::1", 128)).isEqualTo("2001:db8::1/128");
    assertThat(ClientAddress.rateKey("203.0.113.9", 64)).isEqualTo("203.0.113.9");
    assertThat(ClientAddress.rateKey("::ffff:203.0.113.9", 64)).isEqualTo("203.0.113.9");
    assertThat(ClientAddress.rateKey("not an address", 64)).isEqualTo("not an address");
    assertThat(ClientAddress.rateKey(null, 64)).isEqualTo("unknown");
  }
}
