package io.mbxrelay.bench;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import io.mbxrelay.wire.Json;
import io.vertx.core.buffer.Buffer;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

/**
 * What the benchmark needs from a pull answer (docs/protocol.md §3 {@code {epoch, head_seq, items:[{seq, kind, item_id,
 * sender_pubkey, wire_b64}], last_seq, more}}): read with Jackson's streaming parser, which skips the wire bytes
 * without building strings, so a page of hundreds of items costs the generator little.
 *
 * @param epoch the relay epoch
 * @param lastSeq the page's {@code last_seq}
 * @param more whether more items wait
 * @param seqs the items' seqs, in page order
 * @param itemIds the items' ids, in page order
 */
record PullPage(String epoch, long lastSeq, boolean more, long[] seqs, List<String> itemIds) {

  /** Parses a 200 pull answer; throws {@link IOException} on anything that is not a page. */
  static PullPage parse(Buffer body) throws IOException {
    String epoch = null;
    long last = -1;
    boolean more = false;
    List<String> ids = new ArrayList<>();
    long[] seqs = new long[16];
    try (JsonParser p = Json.MAPPER.getFactory().createParser(body.getBytes())) {
      if (p.nextToken() != JsonToken.START_OBJECT) {
        throw new IOException("pull answer is not an object");
      }
      while (p.nextToken() == JsonToken.FIELD_NAME) {
        String f = p.currentName();
        p.nextToken();
        switch (f) {
          case "epoch" -> epoch = p.getText();
          case "last_seq" -> last = p.getLongValue();
          case "more" -> more = p.getBooleanValue();
          case "items" -> {
            while (p.nextToken() == JsonToken.START_OBJECT) {
              long seq = -1;
              String id = null;
              while (p.nextToken() == JsonToken.FIELD_NAME) {
                String g = p.currentName();
                p.nextToken();
                if (g.equals("seq")) {
                  seq = p.getLongValue();
                } else if (g.equals("item_id")) {
                  id = p.getText();
                } else {
                  p.skipChildren();
                }
              }
              if (ids.size() == seqs.length) {
                seqs = java.util.Arrays.copyOf(seqs, seqs.length * 2);
              }
              seqs[ids.size()] = seq;
              ids.add(id);
            }
          }
          default -> p.skipChildren();
        }
      }
    }
    if (epoch == null || last < 0) {
      throw new IOException("pull answer without epoch or last_seq");
    }
    return new PullPage(epoch, last, more, java.util.Arrays.copyOf(seqs, ids.size()), ids);
  }
}
