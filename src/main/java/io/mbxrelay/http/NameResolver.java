package io.mbxrelay.http;

import io.mbxrelay.store.spi.RelayReads;
import io.mbxrelay.store.model.Enrolment;
import io.vertx.core.Future;
import java.util.List;

/**
 * v1 name resolution (docs/protocol.md §4.6, §7.2): live enrolments with that name, case-insensitively; more than
 * {@code maxPerName} → ambiguous; exactly one → it; else, when the viewer has a proven account and exactly one of
 * them shares it → it; else none (ambiguous when more than one). Safe on any event loop.
 */
final class NameResolver {
  private NameResolver() {}

  /** The outcome of a lookup. */
  sealed interface Resolution permits Found, Ambiguous, Unknown {}

  /** Exactly one host. @param enrolment it */
  record Found(Enrolment enrolment) implements Resolution {}

  /** Several hosts carry the name. */
  record Ambiguous() implements Resolution {}

  /** No live host carries the name. */
  record Unknown() implements Resolution {}

  static Future<Resolution> resolve(RelayReads reads, int maxPerName, String name, Enrolment viewer) {
    return reads.liveByName(name, maxPerName + 1).map(list -> pick(list, maxPerName, viewer));
  }

  private static Resolution pick(List<Enrolment> list, int maxPerName, Enrolment viewer) {
    if (list.isEmpty()) {
      return new Unknown();
    }
    if (list.size() > maxPerName) {
      return new Ambiguous();
    }
    if (list.size() == 1) {
      return new Found(list.get(0));
    }
    if (viewer != null && viewer.account() != null) {
      List<Enrolment> same = list.stream().filter(e -> viewer.account().equals(e.account())).toList();
      if (same.size() == 1) {
        return new Found(same.get(0));
      }
    }
    return new Ambiguous();
  }
}
