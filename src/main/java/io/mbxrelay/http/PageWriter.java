package io.mbxrelay.http;

import io.mbxrelay.store.model.Page;
import io.mbxrelay.store.model.PulledItem;
import io.mbxrelay.wire.Json;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpServerResponse;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.Iterator;
import java.util.Objects;

/**
 * Writes one pull page (docs/protocol.md §3 key order {@code epoch, head_seq, items, last_seq, more}) to a client
 * that may read slowly or not at all (issue 22 item 1), and says when its bytes are no longer in the relay.
 *
 * <p>The page goes out in chunks of at most {@link #CHUNK_WIRE_BYTES} wire bytes (64 KiB of base64), and a chunk is
 * handed to the connection only while less than {@link #WINDOW_BYTES} of what was handed before is still unwritten:
 * a chunk counts as written when its write completed, i.e. when Netty gave its last byte to the kernel. So a client
 * that stops reading makes the relay hold its page's wire bytes (in the budget) plus at most the window, never a
 * growing queue. {@code HttpServerResponse.writeQueueFull} is not used for this: in Vert.x 5 it turns only after
 * 16 messages wait behind an unwritable channel (16 items of up to 512 KiB each), and the response's end handler runs
 * when the last chunk is handed over, not when it was written; both together let a stalled reader hold ~10 MB that
 * the budget no longer counted.
 *
 * <p>{@code onDone} runs once: after the last byte of the answer was written, or the connection closed, or the page
 * was cut. A page whose writes make no progress for {@code stallMs} is cut: the connection is closed at once (nothing
 * was acked, so nothing is lost) and {@code onCut} runs first. Vert.x's own {@code close()} and
 * {@code HttpServerResponse.reset()} would not do: both flush what is queued before the socket closes, and a client
 * that reads nothing never lets that flush end, so the connection and its page stayed until the idle timeout. The bytes are exactly those of
 * {@code JSON.stringify} of the whole answer; only the transfer is chunked.
 *
 * <p>Runs on the response's event loop; not thread-safe.
 */
final class PageWriter {
  /** Most bytes handed to the connection and not yet written before the next chunk waits. */
  static final int WINDOW_BYTES = 256 * 1024;
  /** Wire bytes per base64 chunk: a multiple of 3, so the chunks' base64 texts concatenate to the whole one. */
  static final int CHUNK_WIRE_BYTES = 48 * 1024;

  private final Vertx vertx;
  private final HttpServerResponse resp;
  private final Iterator<PulledItem> items;
  private final String head;
  private final String tail;
  private final long stallNanos;
  private final Runnable onCut;
  private final Runnable onDone;
  private final Runnable closeNow;
  private long unwritten;
  private long lastProgress;
  private long timer = -1;
  private boolean ended;
  private boolean done;
  private boolean pumping;
  private boolean first = true;
  private PulledItem item;
  private int offset;

  private PageWriter(Vertx vertx, HttpServerResponse resp, Runnable closeNow, Page page, String head, String tail,
      long stallMs, Runnable onCut, Runnable onDone) {
    this.closeNow = closeNow;
    this.vertx = vertx;
    this.resp = resp;
    this.items = page.items().iterator();
    this.head = head;
    this.tail = tail;
    this.stallNanos = stallMs * 1_000_000L;
    this.onCut = onCut;
    this.onDone = onDone;
    this.lastProgress = System.nanoTime();
  }

  /**
   * Starts writing {@code page}; the status and headers must be set, the response chunked.
   *
   * @param closeNow closes the connection at once, without flushing what is queued (a cut page)
   * @param epoch the epoch the page is of
   * @param after the {@code after} of the request ({@code last_seq} when the page holds nothing past it)
   * @param stallMs a page without progress this long is cut, ms
   * @param onCut runs when the page is cut (before {@code onDone})
   * @param onDone runs once, when the page's bytes have left the relay or will never leave it
   */
  static void start(Vertx vertx, HttpServerResponse resp, Runnable closeNow, Page page, String epoch, long after,
      long stallMs, Runnable onCut, Runnable onDone) {
    Objects.requireNonNull(onDone);
    String head = "{\"epoch\":" + Json.stringify(Json.MAPPER.getNodeFactory().textNode(epoch)) + ",\"head_seq\":"
        + page.headSeq() + ",\"items\":[";
    long last = page.throughSeq() >= 0 ? page.throughSeq() : after; // past withheld damaged rows too
    String tail = "],\"last_seq\":" + last + ",\"more\":" + page.more() + "}";
    PageWriter w = new PageWriter(vertx, resp, closeNow, page, head, tail, stallMs, onCut, onDone);
    long check = Math.max(50, Math.min(1000, stallMs / 4));
    w.timer = vertx.setPeriodic(check, id -> w.checkStall());
    w.write(Buffer.buffer(w.head));
    w.pump();
  }

  private void pump() {
    if (pumping) {
      return; // a write that completed at once; the loop below goes on
    }
    pumping = true;
    try {
      while (!done && !ended && unwritten < WINDOW_BYTES) {
        if (resp.closed()) {
          finish();
          return;
        }
        Buffer next = nextChunk();
        if (next == null) {
          ended = true;
          resp.end(Buffer.buffer(tail)).onComplete(ar -> finish());
          return;
        }
        write(next);
      }
    } finally {
      pumping = false;
    }
  }

  /** The next piece of the items array, or null when every item was written. */
  private Buffer nextChunk() {
    if (item == null) {
      if (!items.hasNext()) {
        return null;
      }
      item = items.next();
      offset = 0;
      StringBuilder b = new StringBuilder(160);
      b.append(first ? "{\"seq\":" : ",{\"seq\":").append(Json.number(item.seq())).append(",\"kind\":");
      Json.appendString(item.kind(), b);
      b.append(",\"item_id\":");
      Json.appendString(item.itemId(), b);
      b.append(",\"sender_pubkey\":");
      Json.appendString(item.senderPubkey(), b);
      b.append(",\"wire_b64\":\"");
      first = false;
      Buffer out = Buffer.buffer(b.toString().getBytes(StandardCharsets.UTF_8));
      appendWire(out);
      return out;
    }
    Buffer out = Buffer.buffer(CHUNK_WIRE_BYTES * 4 / 3 + 8);
    appendWire(out);
    return out;
  }

  /** Appends the next slice of the current item's base64, and the item's end after its last slice. */
  private void appendWire(Buffer out) {
    byte[] wire = item.wire();
    int n = Math.min(CHUNK_WIRE_BYTES, wire.length - offset);
    if (n > 0) {
      out.appendBytes(Base64.getEncoder().encode(java.nio.ByteBuffer.wrap(wire, offset, n)).array());
      offset += n;
    }
    if (offset >= wire.length) {
      out.appendString("\"}");
      item = null;
    }
  }

  private void write(Buffer chunk) {
    int n = chunk.length();
    unwritten += n;
    resp.write(chunk).onComplete(ar -> {
      if (ar.failed()) {
        finish(); // the connection closed: this page's bytes go with it
        return;
      }
      unwritten -= n;
      lastProgress = System.nanoTime();
      pump();
    });
  }

  private void checkStall() {
    if (done) {
      vertx.cancelTimer(timer);
      return;
    }
    if (resp.closed()) {
      finish();
      return;
    }
    if (System.nanoTime() - lastProgress > stallNanos) {
      onCut.run();
      finish();
      closeNow.run();
    }
  }

  private void finish() {
    if (done) {
      return;
    }
    done = true;
    vertx.cancelTimer(timer);
    item = null;
    onDone.run();
  }
}
