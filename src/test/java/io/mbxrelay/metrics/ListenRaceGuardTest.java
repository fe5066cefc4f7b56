package io.mbxrelay.metrics;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.vertx.core.VertxOptions;
import io.vertx.core.http.HttpServerOptions;
import io.vertx.core.net.SocketAddress;
import io.vertx.core.spi.metrics.HttpServerMetrics;
import io.vertx.core.spi.metrics.VertxMetrics;
import org.junit.jupiter.api.Test;

/**
 * Issue 22 item 2: a connection accepted before its server's metrics existed has no socket metric, and
 * vertx-micrometer-metrics' {@code requestBegin(null, …)} throws, which left the request unanswered. Through the guard
 * every call with a missing socket or request metric is skipped (and counted), and a measured connection is measured
 * as before.
 */
class ListenRaceGuardTest {
  @SuppressWarnings({"rawtypes", "unchecked"})
  @Test
  void a_request_on_a_connection_without_a_socket_metric_is_not_measured_instead_of_failing() {
    RelayMetrics.VertxSetup setup = RelayMetrics.vertxSetup();
    VertxOptions options = new VertxOptions().setMetricsOptions(setup.options().getMetricsOptions());
    ListenRaceGuard guard = (ListenRaceGuard) setup.factory();
    VertxMetrics vertxMetrics = guard.metrics(options);
    SocketAddress local = SocketAddress.inetSocketAddress(7374, "127.0.0.1");
    HttpServerMetrics m = vertxMetrics.createHttpServerMetrics(new HttpServerOptions(), local);

    // the cause, unguarded: the micrometer implementation dereferences the missing socket metric
    VertxMetrics raw = new io.vertx.micrometer.MicrometerMetricsFactory(setup.registry()).metrics(options);
    HttpServerMetrics unguarded = raw.createHttpServerMetrics(new HttpServerOptions(), local);
    assertThatThrownBy(() -> unguarded.requestBegin(null, null)).isInstanceOf(NullPointerException.class);

    assertThatCode(() -> {
      Object request = m.requestBegin(null, null);
      assertThat(request).isNull();
      m.requestRouted(null, "/v2/relay/info");
      m.requestEnd(null, null, 10);
      m.responseBegin(null, null);
      m.responseEnd(null, null, 10);
      m.requestReset(null);
      m.bytesRead(null, local, 10);
      m.bytesWritten(null, local, 10);
      m.exceptionOccurred(null, local, new RuntimeException("x"));
      m.disconnected(null, local);
    }).doesNotThrowAnyException();
    assertThat(guard.unmeasured()).isEqualTo(1);

    Object socket = m.connected(SocketAddress.inetSocketAddress(40000, "127.0.0.1"), null);
    assertThat(socket).as("a connection accepted after the metrics existed is measured").isNotNull();
    m.bytesRead(socket, local, 10);
    m.disconnected(socket, local);
    assertThat(guard.unmeasured()).isEqualTo(1);
    vertxMetrics.close();
    raw.close();
  }
}
