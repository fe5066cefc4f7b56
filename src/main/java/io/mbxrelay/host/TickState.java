package io.mbxrelay.host;

import java.util.ArrayList;
import java.util.List;

/** What one {@link HostAgent#tick()} has done so far (becomes its {@link TickReport}). Tick thread only. */
final class TickState {
  String session = "ok";
  boolean epochChanged;
  int accepted;
  int notAccepted;
  int delivered;
  int duplicates;
  int receipts;
  int notices;
  int quarantined;
  boolean freshEnrol;
  int epochChanges;
  final List<String> notes = new ArrayList<>();
  /** Each peer's encryption key as resolved this tick (one relay look-up per peer per tick). */
  final java.util.Map<String, PeerEncKeys.Resolution> keys = new java.util.HashMap<>();
}
