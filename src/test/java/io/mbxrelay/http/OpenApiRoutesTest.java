package io.mbxrelay.http;

import static org.assertj.core.api.Assertions.assertThat;

import io.mbxrelay.server.AdminVerticle;
import io.mbxrelay.server.RelayServer;
import io.mbxrelay.testing.RelayHarness;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Handler;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServer;
import io.vertx.ext.web.Route;
import io.vertx.ext.web.Router;
import java.lang.reflect.Constructor;
import java.lang.reflect.Field;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.yaml.snakeyaml.Yaml;

/**
 * {@code docs/openapi.yaml} describes exactly the routes the relay serves (issue 12 item 2): its paths and methods
 * are compared, both ways, with the routes registered on the Vert.x routers that the real code builds — the relay
 * port's ({@link RelayRoutes#router}, with the services of a running relay) and the admin server's (the real
 * {@code AdminVerticle} started against a Vert.x whose HTTP server only captures the router it is handed). A route
 * added without documenting it, or a documented path that no route serves, fails this test.
 *
 * <p>Paths with their own {@code servers} entry pointing at the admin port belong to the admin server; every other
 * path to the relay port.
 */
class OpenApiRoutesTest {
  private static final Set<String> HTTP_METHODS = Set.of("get", "put", "post", "delete", "options", "head", "patch",
      "trace");

  @Test
  void openapi_yaml_is_openapi_3_1_and_documents_every_route_of_both_listeners_and_nothing_else(@TempDir Path dir)
      throws Exception {
    Map<String, Object> doc = new Yaml().load(Files.readString(Path.of("docs/openapi.yaml")));
    assertThat(doc.get("openapi")).isEqualTo("3.1.0");
    Set<String> documentedRelay = new TreeSet<>();
    Set<String> documentedAdmin = new TreeSet<>();
    Map<String, Map<String, Object>> paths = cast(doc.get("paths"));
    paths.forEach((path, item) -> {
      boolean admin = item.containsKey("servers") && String.valueOf(item.get("servers")).contains(":7375");
      for (String key : item.keySet()) {
        if (HTTP_METHODS.contains(key)) {
          (admin ? documentedAdmin : documentedRelay).add(key.toUpperCase(Locale.ROOT) + " " + path);
          Map<String, Object> op = cast(item.get(key));
          assertThat(op).as(key + " " + path + " has responses").containsKey("responses");
        }
      }
    });

    try (RelayHarness r = RelayHarness.start(dir)) {
      Set<String> relayRoutes = routes(new RelayRoutes(field(r.server, RelayServices.class))
          .router(r.server.vertx()));
      Set<String> adminRoutes = routes(adminRouter(r.server));

      assertThat(documented(relayRoutes, documentedRelay)).as("relay-port routes missing from docs/openapi.yaml")
          .isEmpty();
      assertThat(routed(documentedRelay, relayRoutes)).as("documented relay paths that no route serves").isEmpty();

      assertThat(documented(adminRoutes, documentedAdmin)).as("admin routes missing from docs/openapi.yaml")
          .isEmpty();
      assertThat(routed(documentedAdmin, adminRoutes)).as("documented admin paths that no route serves").isEmpty();
      // sanity: the comparison saw the routes it is about
      assertThat(relayRoutes).contains("POST /v2/relay/items", "GET /v2/relay/items", "* /admin/deny");
      assertThat(adminRoutes).contains("GET /metrics", "GET /ready", "GET /", "GET /status");
    }
  }

  /** The routes ({@code "METHOD /path"}, {@code "* /path"} for a route of every method) of a router. */
  static Set<String> routes(Router router) {
    Set<String> out = new TreeSet<>();
    for (Route route : router.getRoutes()) {
      assertThat(route.isRegexPath()).as("a regex route cannot be compared with the document: " + route).isFalse();
      if (route.getPath() == null) {
        continue; // a handler for every request (body reader, hop check, 404, failure handler)
      }
      Set<HttpMethod> methods = route.methods();
      if (methods == null || methods.isEmpty()) {
        out.add("* " + route.getPath());
      } else {
        methods.forEach(m -> out.add(m.name() + " " + route.getPath()));
      }
    }
    return out;
  }

  /** Routes not covered by the document; a route of every method needs at least one documented method. */
  private static List<String> documented(Set<String> routes, Set<String> documented) {
    List<String> missing = new ArrayList<>();
    for (String route : routes) {
      if (route.startsWith("* ")) {
        String path = route.substring(2);
        if (documented.stream().noneMatch(d -> d.substring(d.indexOf(' ') + 1).equals(path))) {
          missing.add(route);
        }
      } else if (!documented.contains(route)) {
        missing.add(route);
      }
    }
    return missing;
  }

  /** Documented operations no route serves. */
  private static List<String> routed(Set<String> documented, Set<String> routes) {
    List<String> missing = new ArrayList<>();
    for (String op : documented) {
      String path = op.substring(op.indexOf(' ') + 1);
      if (!routes.contains(op) && !routes.contains("* " + path)) {
        missing.add(op);
      }
    }
    return missing;
  }

  /**
   * The admin server's router as the real {@code AdminVerticle.start()} builds it: a second instance, made from the
   * running one's collaborators, is started against a Vert.x that delegates everything to the relay's Vert.x except
   * {@code createHttpServer}, whose server keeps the request handler it is given and listens nowhere.
   */
  static Router adminRouter(RelayServer server) throws Exception {
    AdminVerticle live = field(server, AdminVerticle.class);
    AdminVerticle copy = copyOf(live);
    Vertx real = server.vertx();
    CompletableFuture<Router> captured = new CompletableFuture<>();
    HttpServer[] fake = new HttpServer[1];
    fake[0] = (HttpServer) Proxy.newProxyInstance(OpenApiRoutesTest.class.getClassLoader(),
        new Class<?>[] {HttpServer.class}, (proxy, m, args) -> {
          if (m.getName().equals("requestHandler") && args != null && args.length == 1) {
            Handler<?> h = (Handler<?>) args[0];
            if (h instanceof Router router) {
              captured.complete(router);
            }
            return proxy;
          }
          if (HttpServer.class.isAssignableFrom(m.getReturnType())) {
            return proxy;
          }
          if (Future.class.isAssignableFrom(m.getReturnType())) {
            return Future.succeededFuture(proxy);
          }
          if (m.getReturnType() == int.class) {
            return -1;
          }
          if (m.getReturnType() == boolean.class) {
            return false;
          }
          return null;
        });
    Vertx capturing = (Vertx) Proxy.newProxyInstance(OpenApiRoutesTest.class.getClassLoader(),
        new Class<?>[] {Vertx.class}, (proxy, m, args) -> {
          if (m.getName().equals("createHttpServer")) {
            return fake[0];
          }
          try {
            return m.invoke(real, args);
          } catch (InvocationTargetException e) {
            throw e.getCause();
          }
        });
    Context context = real.getOrCreateContext();
    copy.init(capturing, context);
    context.runOnContext(v -> {
      try {
        copy.start();
      } catch (Exception e) {
        captured.completeExceptionally(e);
      }
    });
    return captured.get(10, TimeUnit.SECONDS);
  }

  /** A new instance of the verticle, its constructor fed with the running instance's fields of matching types. */
  private static AdminVerticle copyOf(AdminVerticle live) throws Exception {
    Constructor<?> ctor = AdminVerticle.class.getConstructors()[0];
    Object[] args = new Object[ctor.getParameterCount()];
    Class<?>[] types = ctor.getParameterTypes();
    for (int i = 0; i < types.length; i++) {
      args[i] = field(live, types[i]);
    }
    return (AdminVerticle) ctor.newInstance(args);
  }

  /** The one field of {@code owner}'s class whose type is {@code type}. */
  @SuppressWarnings("unchecked")
  private static <T> T field(Object owner, Class<T> type) throws IllegalAccessException {
    Field found = null;
    for (Field f : owner.getClass().getDeclaredFields()) {
      if (type.isAssignableFrom(f.getType()) && !java.lang.reflect.Modifier.isStatic(f.getModifiers())) {
        assertThat(found).as("more than one " + type.getSimpleName() + " field in " + owner.getClass()).isNull();
        found = f;
      }
    }
    assertThat(found).as("no " + type.getSimpleName() + " field in " + owner.getClass()).isNotNull();
    found.setAccessible(true);
    return (T) found.get(owner);
  }

  @SuppressWarnings("unchecked")
  private static <T> T cast(Object o) {
    return (T) o;
  }
}
