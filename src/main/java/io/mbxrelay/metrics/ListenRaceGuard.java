package io.mbxrelay.metrics;

import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import io.vertx.core.datagram.DatagramSocketOptions;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServerOptions;
import io.vertx.core.http.ServerWebSocket;
import io.vertx.core.json.JsonObject;
import io.vertx.core.metrics.MetricsOptions;
import io.vertx.core.net.NetClientOptions;
import io.vertx.core.net.NetServerOptions;
import io.vertx.core.net.SocketAddress;
import io.vertx.core.spi.VertxMetricsFactory;
import io.vertx.core.spi.metrics.ClientMetrics;
import io.vertx.core.spi.metrics.DatagramSocketMetrics;
import io.vertx.core.spi.metrics.EventBusMetrics;
import io.vertx.core.spi.metrics.HttpClientMetrics;
import io.vertx.core.spi.metrics.HttpServerMetrics;
import io.vertx.core.spi.metrics.PoolMetrics;
import io.vertx.core.spi.metrics.TCPMetrics;
import io.vertx.core.spi.metrics.VertxMetrics;
import io.vertx.core.spi.observability.HttpRequest;
import io.vertx.core.spi.observability.HttpResponse;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Wraps a Vert.x metrics factory so that a connection accepted before its server's metrics existed is served, only
 * not measured (issue 22 item 2).
 *
 * <p>The ordering, in Vert.x 5.0.7: {@code NetServerImpl.bind} binds the listening socket and only in the bind's
 * completion listener sets {@code metrics = createMetrics(…)}. A connection accepted in between (a load balancer probe
 * or a host retrying right after a restart, while the listener opens) runs {@code connected()} on a child event loop,
 * finds {@code getMetrics()} null and gets no socket metric; the HTTP layer reads the server's metrics a moment later,
 * finds them, and calls {@code HttpServerMetrics.requestBegin(null, request)}. vertx-micrometer-metrics dereferences
 * that socket metric ({@code socketMetric.tags}), the NPE escapes the request's setup ({@code "this.response" is null}
 * next) and the request is never answered: the connection sits until the idle timeout (75 s) and closes without a
 * status line. Every HTTP server metrics call here passes on only when its socket or request metric exists, so such a
 * request is answered normally and left out of the {@code vertx_http_server_*} families; {@link #unmeasured()} counts
 * them.
 *
 * <p>Thread-safe (the delegate is; the guard adds a counter).
 */
public final class ListenRaceGuard implements VertxMetricsFactory {
  private final VertxMetricsFactory delegate;
  private final AtomicLong unmeasured = new AtomicLong();

  /** @param delegate the real factory (vertx-micrometer-metrics) */
  public ListenRaceGuard(VertxMetricsFactory delegate) {
    this.delegate = Objects.requireNonNull(delegate);
  }

  /** Requests served without HTTP server metrics because their connection came before the metrics, since start. */
  public long unmeasured() {
    return unmeasured.get();
  }

  @Override
  public VertxMetrics metrics(VertxOptions options) {
    VertxMetrics m = delegate.metrics(options);
    return m == null ? null : new Guarded(m);
  }

  @Override
  public MetricsOptions newOptions() {
    return delegate.newOptions();
  }

  @Override
  public MetricsOptions newOptions(MetricsOptions options) {
    return delegate.newOptions(options);
  }

  @Override
  public MetricsOptions newOptions(JsonObject json) {
    return delegate.newOptions(json);
  }

  /** The delegate's metrics, with every HTTP server's metrics guarded. */
  private final class Guarded implements VertxMetrics {
    private final VertxMetrics d;

    Guarded(VertxMetrics d) {
      this.d = d;
    }

    @Override
    public EventBusMetrics<?> createEventBusMetrics() {
      return d.createEventBusMetrics();
    }

    @Override
    public HttpServerMetrics<?, ?, ?> createHttpServerMetrics(HttpServerOptions options, SocketAddress localAddress) {
      HttpServerMetrics<?, ?, ?> m = d.createHttpServerMetrics(options, localAddress);
      return m == null ? null : new GuardedHttpServer(m);
    }

    @Override
    public ClientMetrics<?, ?, ?> createClientMetrics(SocketAddress remoteAddress, String type, String namespace) {
      return d.createClientMetrics(remoteAddress, type, namespace);
    }

    @Override
    public HttpClientMetrics<?, ?, ?> createHttpClientMetrics(HttpClientOptions options) {
      return d.createHttpClientMetrics(options);
    }

    @Override
    public TCPMetrics<?> createNetServerMetrics(NetServerOptions options, SocketAddress localAddress) {
      return d.createNetServerMetrics(options, localAddress);
    }

    @Override
    public TCPMetrics<?> createNetClientMetrics(NetClientOptions options) {
      return d.createNetClientMetrics(options);
    }

    @Override
    public DatagramSocketMetrics createDatagramSocketMetrics(DatagramSocketOptions options) {
      return d.createDatagramSocketMetrics(options);
    }

    @Override
    public PoolMetrics<?, ?> createPoolMetrics(String type, String name, int maxSize) {
      return d.createPoolMetrics(type, name, maxSize);
    }

    @Override
    public void vertxCreated(Vertx vertx) {
      d.vertxCreated(vertx);
    }

    @Override
    public boolean isMetricsEnabled() {
      return d.isMetricsEnabled();
    }

    @Override
    public void close() {
      d.close();
    }
  }

  /** An HTTP server's metrics that pass a call on only with the socket or request metric it needs. */
  @SuppressWarnings({"rawtypes", "unchecked"})
  private final class GuardedHttpServer implements HttpServerMetrics<Object, Object, Object> {
    private final HttpServerMetrics d;

    GuardedHttpServer(HttpServerMetrics<?, ?, ?> d) {
      this.d = d;
    }

    @Override
    public Object requestBegin(Object socketMetric, HttpRequest request) {
      if (socketMetric == null) {
        unmeasured.incrementAndGet();
        return null;
      }
      return d.requestBegin(socketMetric, request);
    }

    @Override
    public void requestEnd(Object requestMetric, HttpRequest request, long bytesRead) {
      if (requestMetric != null) {
        d.requestEnd(requestMetric, request, bytesRead);
      }
    }

    @Override
    public void requestReset(Object requestMetric) {
      if (requestMetric != null) {
        d.requestReset(requestMetric);
      }
    }

    @Override
    public void responseBegin(Object requestMetric, HttpResponse response) {
      if (requestMetric != null) {
        d.responseBegin(requestMetric, response);
      }
    }

    @Override
    public Object responsePushed(Object socketMetric, HttpMethod method, String uri, HttpResponse response) {
      return socketMetric == null ? null : d.responsePushed(socketMetric, method, uri, response);
    }

    @Override
    public void responseEnd(Object requestMetric, HttpResponse response, long bytesWritten) {
      if (requestMetric != null) {
        d.responseEnd(requestMetric, response, bytesWritten);
      }
    }

    @Override
    public Object connected(Object socketMetric, Object requestMetric, ServerWebSocket serverWebSocket) {
      return socketMetric == null || requestMetric == null ? null
          : d.connected(socketMetric, requestMetric, serverWebSocket);
    }

    @Override
    public void disconnected(Object serverWebSocketMetric) {
      if (serverWebSocketMetric != null) {
        d.disconnected(serverWebSocketMetric);
      }
    }

    @Override
    public void requestRouted(Object requestMetric, String route) {
      if (requestMetric != null) {
        d.requestRouted(requestMetric, route);
      }
    }

    @Override
    public Object connected(SocketAddress remoteAddress, String remoteName) {
      return d.connected(remoteAddress, remoteName);
    }

    @Override
    public void disconnected(Object socketMetric, SocketAddress remoteAddress) {
      if (socketMetric != null) {
        d.disconnected(socketMetric, remoteAddress);
      }
    }

    @Override
    public void bytesRead(Object socketMetric, SocketAddress remoteAddress, long numberOfBytes) {
      if (socketMetric != null) {
        d.bytesRead(socketMetric, remoteAddress, numberOfBytes);
      }
    }

    @Override
    public void bytesWritten(Object socketMetric, SocketAddress remoteAddress, long numberOfBytes) {
      if (socketMetric != null) {
        d.bytesWritten(socketMetric, remoteAddress, numberOfBytes);
      }
    }

    @Override
    public void exceptionOccurred(Object socketMetric, SocketAddress remoteAddress, Throwable t) {
      if (socketMetric != null) {
        d.exceptionOccurred(socketMetric, remoteAddress, t);
      }
    }

    @Override
    public void close() {
      d.close();
    }
  }
}
