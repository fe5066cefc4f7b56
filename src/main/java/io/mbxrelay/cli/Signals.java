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

  /**
   * Installs {@code action} as the handler of a signal.
   *
   * @param name the signal without {@code SIG}: {@code TERM}, {@code INT}, {@code HUP}
   * @param action what to run on each delivery
   * @return false when the JVM does not let us handle it (e.g. run with {@code -Xrs}, or no {@code sun.misc.Signal})
   */
  static boolean handle(String name, Runnable action) {
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
      signal.getMethod("handle", signal, handler).invoke(null, sig, h);
      return true;
    } catch (InvocationTargetException e) {
      return false; // IllegalArgumentException: the signal is in use by the VM or the OS refused it
    } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
      return false;
    }
  }
}
