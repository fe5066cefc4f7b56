package io.mbxrelay.cli;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;

/**
 * POSIX signal handlers for {@code serve} (issue 12 item 1): SIGTERM and SIGINT start the drain and the process exits
 * 0, SIGHUP reloads instead of ending the process. Without them the JVM ends on each of the three with status 128 +
 * the signal (143 for SIGTERM), which systemd counts as a failure.
 *
 * <p>Java has no supported API for this; {@code sun.misc.Signal} (module {@code jdk.unsupported}, exported and kept
 * for exactly this use) is the one every JVM server uses. It is called reflectively because javac warns about
 * {@code sun.misc} and that warning cannot be suppressed. A handler replaces the JVM's own for that signal; it runs on
 * a thread the JVM starts for each delivery.
 */
final class Signals {
  private Signals() {}

  /** What {@link #handle} did. */
  enum Result {
    /** The handler is installed. */
    INSTALLED,
    /**
     * The signal was ignored when the process started ({@code nohup} ignores SIGHUP; a non-interactive shell starts
     * a background job with SIGINT and SIGQUIT ignored; a parent may pass any disposition on). The JVM keeps an
     * ignored HUP, INT or TERM ignored and installs nothing (HotSpot's {@code JVM_RegisterSignal}), so the signal
     * still does nothing: say so and name another way.
     */
    IGNORED_AT_LAUNCH,
    /** The JVM does not let us handle it (run with {@code -Xrs}, or no {@code sun.misc.Signal}). */
    UNAVAILABLE
  }

  /**
   * Installs {@code action} as the handler of a signal.
   *
   * @param name the signal without {@code SIG}: {@code TERM}, {@code INT}, {@code HUP}
   * @param action what to run on each delivery
   * @return {@link Result#INSTALLED}; {@link Result#IGNORED_AT_LAUNCH} when the signal was ignored at launch and so
   *     stays ignored (issue 22 item 4: {@code sun.misc.Signal.handle} then returns {@code SIG_IGN} and installs
   *     nothing); {@link Result#UNAVAILABLE} when the JVM does not let us handle it
   */
  static Result handle(String name, Runnable action) {
    try {
      Class<?> signal = Class.forName("sun.misc.Signal");
      Class<?> handler = Class.forName("sun.misc.SignalHandler");
      Object sig = signal.getConstructor(String.class).newInstance(name);
      Object h = Proxy.newProxyInstance(Signals.class.getClassLoader(), new Class<?>[] {handler}, (proxy, m, args) ->
          switch (m.getName()) {
            case "handle" -> {
              action.run();
              yield null;
            }
            case "hashCode" -> System.identityHashCode(proxy);
            case "equals" -> proxy == args[0];
            default -> "mbxrelay SIG" + name + " handler";
          });
      Object previous = signal.getMethod("handle", signal, handler).invoke(null, sig, h);
      Object ignored = handler.getField("SIG_IGN").get(null);
      return previous == ignored ? Result.IGNORED_AT_LAUNCH : Result.INSTALLED;
    } catch (InvocationTargetException e) {
      return Result.UNAVAILABLE; // IllegalArgumentException: the signal is in use by the VM or the OS refused it
    } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
      return Result.UNAVAILABLE;
    }
  }

  /**
   * What to tell the operator about a signal that was ignored at launch: what no longer works and what to use
   * instead.
   *
   * @param name {@code TERM}, {@code INT} or {@code HUP}
   * @param termWorks whether SIGTERM stops the relay (it was not ignored too)
   * @return one line
   */
  static String ignoredAdvice(String name, boolean termWorks) {
    String start = "SIG" + name + " was ignored when the relay was started, and the JVM keeps it ignored: ";
    return switch (name) {
      case "HUP" -> start + "kill -HUP does not reload the configuration (started under nohup or by a parent that"
          + " ignores SIGHUP). Restart the relay to apply changes, or start it without nohup (setsid mbxrelay serve"
          + " ... >log 2>&1 &, or a service manager such as deploy/systemd/mbxrelay.service) to reload with SIGHUP";
      case "INT" -> start + "Ctrl-C and kill -INT do not stop it (a background job of a script or a non-interactive"
          + " shell). " + (termWorks ? "Stop it with SIGTERM (kill PID), which drains the same way"
          : "SIGTERM is ignored too: start it without ignored signals, or stop it with SIGKILL (a crash: safe, with"
          + " the slower start-up check afterwards)");
      default -> start + "kill PID does not stop it. Stop it with SIGINT (kill -INT PID), which drains the same way,"
          + " or start it without ignored signals";
    };
  }
}
