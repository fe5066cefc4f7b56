package io.mbxrelay.server;

import java.util.Locale;

/**
 * TEST-ONLY crash harness (issue: crash windows of docs/protocol.md §7.5). When the environment variable
 * {@value #ENV} names a point, the relay halts the JVM ({@code Runtime.halt}, no shutdown hooks, like SIGKILL) the
 * first time a transaction containing a push reaches that point. Off by default; never set it in production.
 */
public enum CrashPoint {
  /** Never crash (default). */
  NONE,
  /** Halt after all push commands ran, before COMMIT: the retry must be accepted exactly once. */
  BEFORE_COMMIT,
  /** Halt right after COMMIT, before any reply: the retry must be a duplicate with the same seq. */
  AFTER_COMMIT_BEFORE_REPLY;

  /** Environment variable naming the crash point ({@code before-commit} or {@code after-commit-before-reply}). */
  public static final String ENV = "MBX_RELAY_TEST_CRASH";

  /**
   * Parses the variable's value.
   *
   * @param value {@code null}, empty, {@code before-commit} or {@code after-commit-before-reply}
   * @return the crash point
   * @throws IllegalArgumentException for any other value
   */
  public static CrashPoint parse(String value) {
    if (value == null || value.isBlank()) {
      return NONE;
    }
    return switch (value.trim().toLowerCase(Locale.ROOT)) {
      case "before-commit" -> BEFORE_COMMIT;
      case "after-commit-before-reply" -> AFTER_COMMIT_BEFORE_REPLY;
      default -> throw new IllegalArgumentException(ENV + " must be before-commit or after-commit-before-reply");
    };
  }
}
