package io.mbxrelay.cli;

import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.joran.JoranConfigurator;
import ch.qos.logback.core.joran.spi.JoranException;
import java.net.URL;
import org.slf4j.LoggerFactory;

/**
 * Selects the log format from the configuration ({@code log.json}, env {@code MBX_RELAY_LOG_JSON}) once it is loaded:
 * sets the system property {@code mbxrelay.log.appender} ({@code JSON} or {@code TEXT}) that {@code logback.xml}
 * reads and reloads that file. Logback has already configured itself (text) by then, so only lines logged before
 * the configuration is read come out as text. Call once, from the CLI thread, before the relay starts.
 */
final class LogSetup {
  /** The system property {@code logback.xml} reads to pick its appender. */
  static final String PROPERTY = "mbxrelay.log.appender";

  private LogSetup() {}

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
    ctx.reset();
    JoranConfigurator jc = new JoranConfigurator();
    jc.setContext(ctx);
    try {
      jc.doConfigure(config);
    } catch (JoranException e) {
      System.err.println("[mbxrelay] cannot apply the log format: " + e.getMessage());
    }
  }
}
