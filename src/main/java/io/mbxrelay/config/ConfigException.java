package io.mbxrelay.config;

import java.util.List;

/**
 * The configuration is not valid. {@link #violations()} lists every problem found, one line each, so an operator
 * fixes them all in one go.
 */
public final class ConfigException extends Exception {
  private static final long serialVersionUID = 1L;
  private final List<String> violations;

  /** @param violations every problem found, in a stable order; never empty */
  public ConfigException(List<String> violations) {
    super("invalid configuration: " + String.join("; ", violations), null, false, false);
    this.violations = List.copyOf(violations);
  }

  /** Every problem found, one per entry. */
  public List<String> violations() {
    return violations;
  }
}
