package io.mbxrelay.cli;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.joran.JoranConfigurator;
import ch.qos.logback.core.joran.spi.JoranException;
import io.mbxrelay.config.ConfigLoader;
import java.net.URL;
import java.util.Locale;
import java.util.Optional;
import org.slf4j.LoggerFactory;

/**
 * Applies the log settings once the configuration is loaded: the format ({@code log.json}, env
 * {@code MBX_RELAY_LOG_JSON}) by setting the system property {@code mbxrelay.log.appender} ({@code JSON} or
 * {@code TEXT}) that {@code logback.xml} reads and reloading that file, and the root level ({@code log.level}, env
 * {@code MBX_RELAY_LOG_LEVEL}; issue 12 item 5). Logback has already configured itself (text, INFO) by then, so only
 * lines logged before the configuration is read come out as text. Format: once, from the CLI thread, before the relay
 * starts; level: any thread, any time (SIGHUP).
 */
final class LogSetup {
  /** The system property {@code logback.xml} reads to pick its appender. */
  static final String PROPERTY = "mbxrelay.log.appender";

  private LogSetup() {}

  /**
   * Applies the format and the level.
   *
   * @param json true for one JSON object per line (logback's {@code JsonEncoder}), false for the text pattern
   * @param level a root level already validated by {@link ConfigLoader} ({@link ConfigLoader#LOG_LEVELS}, any case)
   */
  static void apply(boolean json, String level) {
    apply(json);
    level(level);
  }

  /**
   * Applies the format.
   *
   * @param json true for one JSON object per line (logback's {@code JsonEncoder}), false for the text pattern
   */
  static void apply(boolean json) {
    String want = json ? "JSON" : "TEXT";
    if (want.equals(System.getProperty(PROPERTY, "TEXT"))) {
      return;
    }
    System.setProperty(PROPERTY, want);
    if (!(LoggerFactory.getILoggerFactory() instanceof LoggerContext ctx)) {
      return;
    }
    URL config = LogSetup.class.getResource("/logback.xml");
    if (config == null) {
      return;
    }
    Level root = ctx.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME).getLevel();
    ctx.reset();
    JoranConfigurator jc = new JoranConfigurator();
    jc.setContext(ctx);
    try {
      jc.doConfigure(config);
    } catch (JoranException e) {
      System.err.println("[mbxrelay] cannot apply the log format: " + e.getMessage());
    }
    ctx.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME).setLevel(root); // the reload would reset it to the file's
  }

  /**
   * Sets the root level.
   *
   * @param level one of {@link ConfigLoader#LOG_LEVELS}, any case
   * @return false (nothing changed) when it is not one of them
   */
  static boolean level(String level) {
    Optional<Level> l = parse(level);
    if (l.isEmpty()) {
      return false;
    }
    if (LoggerFactory.getILoggerFactory() instanceof LoggerContext ctx) {
      ctx.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME).setLevel(l.get());
    }
    return true;
  }

  /** The root level now, e.g. {@code INFO}. */
  static String level() {
    if (LoggerFactory.getILoggerFactory() instanceof LoggerContext ctx) {
      Level l = ctx.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME).getLevel();
      return l == null ? "INFO" : l.toString();
    }
    return "INFO";
  }

  /**
   * A level name as Logback's level, refusing what {@link Level#toLevel(String)} would silently read as DEBUG.
   *
   * @param name the name, any case; null or blank is empty
   * @return the level, or empty when it is not one of {@link ConfigLoader#LOG_LEVELS}
   */
  static Optional<Level> parse(String name) {
    if (name == null || !ConfigLoader.LOG_LEVELS.contains(name.trim().toUpperCase(Locale.ROOT))) {
      return Optional.empty();
    }
    return Optional.of(Level.toLevel(name.trim().toUpperCase(Locale.ROOT)));
  }
}
