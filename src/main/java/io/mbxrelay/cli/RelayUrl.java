package io.mbxrelay.cli;

import io.mbxrelay.host.RelayPins;
import java.net.URI;
import java.net.URISyntaxException;
import picocli.CommandLine;

/**
 * Picocli converter for relay URL arguments ({@code --relay}, {@code host relay set URL}): a value that is not an
 * absolute {@code http(s)://host[:port][/path]} URL is a usage error (exit 2, one plain line) before anything runs
 * (issue 12 item 5; the host library's {@code IllegalArgumentException} used to end {@code relay set} with exit 1 and
 * the exception's class name). The same rule as {@code io.mbxrelay.host.RelayClient}.
 */
final class RelayUrl implements CommandLine.ITypeConverter<String> {
  @Override
  public String convert(String value) {
    String base = RelayPins.normalizeUrl(value);
    try {
      URI u = new URI(base);
      if (u.getScheme() != null && (u.getScheme().equals("http") || u.getScheme().equals("https"))
          && u.getHost() != null && u.getRawQuery() == null && u.getRawFragment() == null) {
        return value;
      }
    } catch (URISyntaxException e) {
      // below
    }
    throw new CommandLine.TypeConversionException("a relay URL is http(s)://host[:port][/path], e.g."
        + " https://relay.example or http://127.0.0.1:7374 (is '" + value + "')");
  }
}
