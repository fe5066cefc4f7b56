package io.mbxrelay.writer;

import io.vertx.core.buffer.Buffer;
import io.vertx.core.eventbus.MessageCodec;

/**
 * Pass-through codec for typed command and result records on the local event bus. The relay never clusters, so
 * nothing is serialised; {@link #encodeToWire} refuses to make that explicit.
 */
public final class LocalCodec implements MessageCodec<Object, Object> {
  /** Codec name used in {@code DeliveryOptions}. */
  public static final String NAME = "mbx-local";

  @Override
  public void encodeToWire(Buffer buffer, Object o) {
    throw new UnsupportedOperationException("local-only codec");
  }

  @Override
  public Object decodeFromWire(int pos, Buffer buffer) {
    throw new UnsupportedOperationException("local-only codec");
  }

  @Override
  public Object transform(Object o) {
    return o;
  }

  @Override
  public String name() {
    return NAME;
  }

  @Override
  public byte systemCodecID() {
    return -1;
  }
}
