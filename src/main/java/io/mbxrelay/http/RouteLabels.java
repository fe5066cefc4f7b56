package io.mbxrelay.http;

import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.ext.web.Route;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The {@code route} label of the HTTP server meters for requests answered before their route matched (issue 12
 * item 4). Vert.x Web names a request's route only when a route with a path matches it; the relay answers 401, 413,
 * 429, 408 and 503 from its path-less guard routes (body cap, hop headers, hop signature) before that, so every such
 * answer used to carry {@code route=""} and the dashboard's per-route panels never showed one. This names them after
 * the route template they were addressed to, through {@link HttpServerRequest#routed(String)}, the hook Vert.x Web
 * itself uses for the label.
 *
 * <p>Only the templates of the router's own routes are used, never the request's path as sent, so the label stays
 * bounded: a request to any other path keeps {@code route=""}.
 *
 * <p>Threading: immutable; safe on any event loop.
 */
final class RouteLabels {
  /** No templates: labels nothing. */
  static final RouteLabels NONE = new RouteLabels(Map.of());

  /** Path template to the methods its routes take (empty set: any method). */
  private final Map<String, Set<HttpMethod>> templates;

  private RouteLabels(Map<String, Set<HttpMethod>> templates) {
    this.templates = templates;
  }

  /**
   * The templates of these routes (routes without a path are skipped).
   *
   * @param routes routes of a router, in order
   * @return the labels
   */
  static RouteLabels of(List<Route> routes) {
    Map<String, Set<HttpMethod>> out = new HashMap<>();
    for (Route route : routes) {
      String path = route.getPath();
      if (path == null) {
        continue;
      }
      Set<HttpMethod> methods = route.methods();
      Set<HttpMethod> known = out.computeIfAbsent(path, p -> new HashSet<>());
      if (methods == null || methods.isEmpty()) {
        known.clear();
        known.add(null); // any method
      } else if (!known.contains(null)) {
        known.addAll(methods);
      }
    }
    Map<String, Set<HttpMethod>> frozen = new HashMap<>();
    out.forEach((path, methods) -> frozen.put(path, methods.contains(null) ? Set.of()
        : Set.copyOf(methods)));
    return new RouteLabels(Map.copyOf(frozen));
  }

  /**
   * Names the request's route after its template when its method and path are one of ours; else leaves it unnamed.
   * Call once, and only for a request that no route with a path has matched (a second name would be appended).
   *
   * @param req the request about to be answered
   */
  void label(HttpServerRequest req) {
    String path = req.path();
    Set<HttpMethod> methods = path == null ? null : templates.get(path);
    if (methods != null && (methods.isEmpty() || methods.contains(req.method()))) {
      req.routed(path);
    }
  }

  /** The templates known (tests). */
  Set<String> templates() {
    return templates.keySet();
  }
}
