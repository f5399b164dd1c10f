"""Player events: what a video player reports about one playback session.

An event is a plain tuple whose first three fields are the kind, the event time (epoch ms)
and the session id; the rest depends on the kind::

    ("J", t, sid, viewer, customer, content, cdn, isp, device, region, bitrate)   join attempt
    ("H", t, sid, bitrate, buffering_ms, played_ms, dropped_frames)                heartbeat
    ("X", t, sid, buffering)                                                        exit
    ("E", t, sid, code)                                                             error

* ``join``: a play attempt starts; it carries every dimension of the session and the bitrate
  the player requests (kbps).
* ``heartbeat``: sent every few seconds while the session lives: the bitrate now (kbps), the
  buffering and played milliseconds since the previous heartbeat, and the frames dropped.
  The first heartbeat's buffering is the session's startup (join) time.
* ``exit``: the viewer left; ``buffering`` is 1 if the player was buffering at that moment.
* ``error``: a fatal error with its code; before playback started it is a join failure,
  after, a playback failure. Nothing follows it.

On disk an event is one line of tab-separated fields in the same order
(:func:`format_event`, :func:`parse_event`), so that text files, the in-memory batches of
the tests and the oracle all see the very same records.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "DIMENSIONS",
    "ERROR",
    "EXIT",
    "HEARTBEAT",
    "JOIN",
    "Event",
    "format_event",
    "parse_event",
]

JOIN, HEARTBEAT, EXIT, ERROR = "J", "H", "X", "E"

# The dimensions a join carries, in its field order (fields 4..9).
DIMENSIONS = ("customer", "content", "cdn", "isp", "device", "region")

Event = tuple[Any, ...]

# Which fields of each kind are integers (after kind, time and session id, also ints).
_INT_FIELDS = {
    JOIN: (3, 10),  # viewer, bitrate
    HEARTBEAT: (3, 4, 5, 6),
    EXIT: (3,),
    ERROR: (),
}
_LENGTHS = {JOIN: 11, HEARTBEAT: 7, EXIT: 4, ERROR: 4}


def format_event(event: Event) -> str:
    """One line of text (no newline) for an event."""
    return "\t".join(str(f) for f in event)


def parse_event(line: str) -> Event:
    """The event a line of :func:`format_event` holds; a malformed line raises ValueError
    naming the line and the expected form."""
    fields: list[Any] = line.rstrip("\r\n").split("\t")
    kind = fields[0]
    want = _LENGTHS.get(kind)
    if want is None or len(fields) != want:
        raise ValueError(
            f"player event {line!r}: expected a kind J, H, X or E followed by tab-separated "
            f"fields ({', '.join(f'{k}: {n}' for k, n in _LENGTHS.items())} fields in all); "
            "write events with video.events.format_event"
        )
    try:
        fields[1] = int(fields[1])
        fields[2] = int(fields[2])
        for i in _INT_FIELDS[kind]:
            fields[i] = int(fields[i])
    except ValueError:
        raise ValueError(
            f"player event {line!r}: the time, session id and numeric fields must be integers"
        ) from None
    return tuple(fields)
