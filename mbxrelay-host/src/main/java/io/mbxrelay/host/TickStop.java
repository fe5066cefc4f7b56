package io.mbxrelay.host;

/** Thrown inside a tick to end it with a session state ({@link TickReport#session()}) and a note. */
final class TickStop extends Exception {

  private static final long serialVersionUID = 1L;

  final String session;

  TickStop(String session, String note) {
    super(note, null, false, false);
    this.session = session;
  }
}
