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
}
