"""Times as a person types them at a console: ``"21:00"``, ``"21:00:30.5"``, ``"-5m"``,
``"now"``, ``"2026-11-26 21:00"``; and anything :func:`dstream.time.to_time` takes (a
``Time``, a ``datetime``, epoch seconds). Pure: ``now`` is passed in.

* a clock time (``HH:MM``, ``HH:MM:SS[.fff]``) is the latest such local time not after
  ``now`` (typed at 00:10, ``"23:55"`` is yesterday's);
* ``-<duration>`` is that long before ``now`` (``-5m``, ``-30s``, ``-1.5s``, ``-2h``,
  ``-500ms``); ``now`` is ``now``;
* a date and time (``2026-11-26 21:00``, ``2026-11-26T21:00:30``, optionally with a zone
  offset) is read as :meth:`datetime.fromisoformat` reads it (naive: local time).

>>> parse_when("-5m", Time(3_600_000)) == Time(3_300_000)
True
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta

from dstream.time import Time, to_duration, to_time

__all__ = ["parse_when"]

_CLOCK = re.compile(r"^(\d{1,2}):(\d{2})(?::(\d{2})(?:\.(\d{1,3}))?)?$")
EXAMPLES = "'21:00', '21:00:30', '-5m', 'now', '2026-11-26 21:00', a datetime or epoch seconds"


def parse_when(
    value: object, now: Time, what: str = "time", relative_to: Time | None = None
) -> Time:
    """The :class:`Time` ``value`` stands for, ``now`` being the current time. ``"now"`` and
    ``"-5m"`` count from ``relative_to`` when it is given (a stream's newest completed
    interval: a stream that lags has nothing at the wall clock's "now"); a clock time is
    still placed on the day by ``now``."""
    if not isinstance(value, str):
        try:
            return to_time(value, what)
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"{exc}; or a string such as {EXAMPLES}") from None
    text = value.strip()
    origin = now if relative_to is None else relative_to
    if text.lower() == "now":
        return origin
    if text.startswith("-"):
        try:
            return origin - to_duration(text[1:].strip(), what)
        except (TypeError, ValueError):
            raise ValueError(
                f"{what} {value!r} is not a time before now: write a duration after the '-', "
                f"e.g. '-5m', '-30s', '-500ms' (units ms, s, min or m, h)"
            ) from None
    match = _CLOCK.match(text)
    if match is not None:
        hour, minute = int(match.group(1)), int(match.group(2))
        second = int(match.group(3) or 0)
        milli = int((match.group(4) or "0").ljust(3, "0"))
        if hour > 23 or minute > 59 or second > 59:
            raise ValueError(f"{what} {value!r} is not a time of day: hours 0-23, minutes 0-59")
        today = now.to_datetime().replace(
            hour=hour, minute=minute, second=second, microsecond=milli * 1000
        )
        at = to_time(today)
        return at if at <= now else to_time(today - timedelta(days=1))
    try:
        return to_time(datetime.fromisoformat(text))
    except ValueError:
        raise ValueError(
            f"{what} {value!r} is not a time dstream understands; write e.g. {EXAMPLES}"
        ) from None
