package io.mbxrelay.testing;

import io.mbxrelay.crypto.Ed25519KeyPair;
import io.mbxrelay.crypto.HopText;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/**
 * HTTP/1.1 over a raw socket, for requests the JDK client will not send (paths with dot segments, huge headers,
 * bodies that are declared but never sent) and for reading exactly what the relay answered.
 */
public final class RawHttp {
  private RawHttp() {}

  /** One answer: status (0 when none arrived), lower-cased headers, body, and whether the relay closed the socket. */
  public record Answer(int status, Map<String, String> headers, String body, boolean closed) {
    public String header(String name) {
      return headers.get(name.toLowerCase(Locale.ROOT));
    }
  }

  /** The request head for a signed v2 hop (x-mbx-key, x-mbx-ts, x-mbx-sig) over {@code pathAndQuery}. */
  public static String signedHead(Ed25519KeyPair key, String keyField, String method, String pathAndQuery, long ts,
      byte[] body, long contentLength) {
    int q = pathAndQuery.indexOf('?');
    String path = q < 0 ? pathAndQuery : pathAndQuery.substring(0, q);
    String query = q < 0 ? null : pathAndQuery.substring(q + 1);
    String tsText = Long.toString(ts);
    byte[] text = HopText.signedBytes(method, HopText.signedPath(path, query), tsText, body == null ? new byte[0] : body);
    StringBuilder h = new StringBuilder(method).append(' ').append(pathAndQuery).append(" HTTP/1.1\r\nHost: relay\r\n")
        .append("content-type: application/json\r\n")
        .append("x-mbx-key: ").append(keyField).append("\r\n")
        .append("x-mbx-ts: ").append(tsText).append("\r\n")
        .append("x-mbx-sig: ").append(key.signB64(text)).append("\r\n");
    if (contentLength >= 0) {
      h.append("content-length: ").append(contentLength).append("\r\n");
    }
    return h.append("\r\n").toString();
  }

  /** Sends {@code head} then {@code body} (may be null) and reads one answer, waiting at most {@code timeoutMs}. */
  public static Answer exchange(int port, String head, byte[] body, int timeoutMs) throws IOException {
    return exchange(port, head, body, timeoutMs, false);
  }

  /**
   * As {@link #exchange(int, String, byte[], int)}; with {@code awaitClose}, after an answer that says
   * {@code connection: close} it also waits (within the timeout) for the relay to close the socket.
   */
  public static Answer exchange(int port, String head, byte[] body, int timeoutMs, boolean awaitClose)
      throws IOException {
    try (Socket s = new Socket("127.0.0.1", port)) {
      s.setSoTimeout(timeoutMs);
      OutputStream out = s.getOutputStream();
      out.write(head.getBytes(StandardCharsets.ISO_8859_1));
      if (body != null) {
        out.write(body);
      }
      out.flush();
      return read(s.getInputStream(), awaitClose);
    }
  }

  /**
   * Reads one HTTP/1.1 answer (content-length, chunked, or until close). Status 0 when the socket closed or timed
   * out before a status line.
   */
  public static Answer read(InputStream in, boolean awaitClose) throws IOException {
    String statusLine;
    try {
      statusLine = line(in);
    } catch (SocketTimeoutException e) {
      return new Answer(0, Map.of(), "", false);
    }
    if (statusLine == null) {
      return new Answer(0, Map.of(), "", true);
    }
    int status = Integer.parseInt(statusLine.split(" ", 3)[1]);
    Map<String, String> headers = new LinkedHashMap<>();
    String l;
    while ((l = line(in)) != null && !l.isEmpty()) {
      int c = l.indexOf(':');
      headers.put(l.substring(0, c).trim().toLowerCase(Locale.ROOT), l.substring(c + 1).trim());
    }
    ByteArrayOutputStream body = new ByteArrayOutputStream();
    if (headers.containsKey("content-length")) {
      int n = Integer.parseInt(headers.get("content-length"));
      body.write(in.readNBytes(n));
    } else if ("chunked".equalsIgnoreCase(headers.get("transfer-encoding"))) {
      while (true) {
        String size = line(in);
        int n = Integer.parseInt(size.trim(), 16);
        if (n == 0) {
          line(in);
          break;
        }
        body.write(in.readNBytes(n));
        line(in);
      }
    }
    boolean closed = false;
    if (awaitClose && "close".equalsIgnoreCase(headers.get("connection"))) {
      try {
        closed = in.read() < 0;
      } catch (IOException e) {
        closed = true; // reset counts as closed
      }
    }
    return new Answer(status, headers, body.toString(StandardCharsets.UTF_8), closed);
  }

  private static String line(InputStream in) throws IOException {
    StringBuilder b = new StringBuilder();
    int c;
    while ((c = in.read()) >= 0) {
      if (c == '\n') {
        int n = b.length();
        return n > 0 && b.charAt(n - 1) == '\r' ? b.substring(0, n - 1) : b.toString();
      }
      b.append((char) c);
    }
    return b.length() == 0 ? null : b.toString();
  }
}
