"""Integer time: ``Time`` (a point, epoch milliseconds), ``Duration`` (milliseconds) and the
half-open ``Interval[begin, end)``.

Floats are never used for time: ``10000000 % 0.1`` is not 0 in binary floating point, and a
window check built on it fails at random. Seconds given as ``int``/``float`` (PySpark's
convention) and strings such as ``"500ms"`` or ``"2s"`` are converted exactly, through
``Decimal``, by :func:`to_duration`; a value that is not a whole number of milliseconds is
refused.

>>> Time(1500) + Duration(500)
Time(2000)
>>> to_duration("2s") // Duration(500)
4
>>> Interval(Time(0), Time(3000)).contains(Time(2999))
True
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from typing import overload

__all__ = ["Duration", "Interval", "Time", "to_duration", "to_time"]


@dataclass(frozen=True, order=True, slots=True)
class Duration:
    """A length of time in whole milliseconds (never negative)."""

    ms: int

    def __post_init__(self) -> None:
        if not isinstance(self.ms, int) or isinstance(self.ms, bool):
            raise TypeError(f"Duration takes whole milliseconds as an int, got {self.ms!r}")
        if self.ms < 0:
            raise ValueError(f"Duration {self.ms} ms is negative; a duration must be 0 ms or more")

    def __add__(self, other: Duration) -> Duration:
        return Duration(self.ms + other.ms)

    def __sub__(self, other: Duration) -> Duration:
        return Duration(self.ms - other.ms)

    def __mul__(self, factor: int) -> Duration:
        return Duration(self.ms * factor)

    __rmul__ = __mul__

    @overload
    def __floordiv__(self, other: Duration) -> int: ...
    @overload
    def __floordiv__(self, other: int) -> Duration: ...
    def __floordiv__(self, other: Duration | int) -> int | Duration:
        if isinstance(other, Duration):
            return self.ms // other.ms
        return Duration(self.ms // other)

    def __mod__(self, other: Duration) -> Duration:
        return Duration(self.ms % other.ms)

    def __bool__(self) -> bool:
        return self.ms != 0

    def is_multiple_of(self, other: Duration) -> bool:
        """True when this duration is a whole number (>= 1) of ``other``."""
        return other.ms > 0 and self.ms > 0 and self.ms % other.ms == 0

    @property
    def seconds(self) -> float:
        """For display and for APIs that want seconds; never for arithmetic."""
        return self.ms / 1000

    def __str__(self) -> str:
        return f"{self.ms} ms"

    def __repr__(self) -> str:
        return f"Duration({self.ms})"


@dataclass(frozen=True, order=True, slots=True)
class Time:
    """A point in time: milliseconds since the Unix epoch (UTC)."""

    ms: int

    def __post_init__(self) -> None:
        if not isinstance(self.ms, int) or isinstance(self.ms, bool):
            raise TypeError(f"Time takes epoch milliseconds as an int, got {self.ms!r}")

    @overload
    def __sub__(self, other: Time) -> Duration: ...
    @overload
    def __sub__(self, other: Duration) -> Time: ...
    def __sub__(self, other: Time | Duration) -> Duration | Time:
        if isinstance(other, Time):
            return Duration(self.ms - other.ms)
        return Time(self.ms - other.ms)

    def __add__(self, other: Duration) -> Time:
        return Time(self.ms + other.ms)

    def floor(self, unit: Duration, origin: Time | None = None) -> Time:
        """The latest time <= self that lies on the grid ``origin + k * unit``."""
        base = origin.ms if origin is not None else 0
        return Time(base + (self.ms - base) // unit.ms * unit.ms)

    def is_multiple_of(self, unit: Duration) -> bool:
        return self.ms % unit.ms == 0

    # datetime-like helpers: pyspark.streaming hands a datetime to foreachRDD functions;
    # programs that format it keep working, always in UTC (never a naive local time).
    def to_datetime(self) -> datetime:
        return datetime.fromtimestamp(self.ms / 1000, tz=UTC)

    def timestamp(self) -> float:
        return self.ms / 1000

    def isoformat(self) -> str:
        return self.to_datetime().isoformat(timespec="milliseconds")

    def strftime(self, fmt: str) -> str:
        return self.to_datetime().strftime(fmt)

    def __str__(self) -> str:
        return f"{self.ms} ms"

    def __repr__(self) -> str:
        return f"Time({self.ms})"


@dataclass(frozen=True, order=True, slots=True)
class Interval:
    """The half-open span ``[begin, end)``."""

    begin: Time
    end: Time

    def __post_init__(self) -> None:
        if self.end < self.begin:
            raise ValueError(
                f"Interval end {self.end} is before its begin {self.begin}; "
                "give the earlier time first"
            )

    @property
    def duration(self) -> Duration:
        return self.end - self.begin

    def contains(self, t: Time) -> bool:
        return self.begin <= t < self.end

    def __str__(self) -> str:
        return f"[{self.begin.ms} ms, {self.end.ms} ms)"


_UNITS_MS = {"ms": 1, "s": 1000, "sec": 1000, "m": 60_000, "min": 60_000, "h": 3_600_000}
_DURATION_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|sec|s|min|m|h)\s*$")


def to_duration(value: object, what: str = "duration", *, allow_zero: bool = False) -> Duration:
    """Convert a user's duration to :class:`Duration`.

    Accepts a :class:`Duration`, seconds as ``int``/``float`` (PySpark's convention) or a
    string with a unit: ``"500ms"``, ``"2s"``, ``"1.5s"``, ``"1min"``, ``"1h"``. ``what`` names
    the argument in error messages.
    """
    if isinstance(value, Duration):
        result = value
    elif isinstance(value, bool) or not isinstance(value, int | float | str | Decimal):
        raise TypeError(
            f"{what} must be seconds (int or float), a string such as '500ms' or '2s', "
            f"or a dstream.Duration; got {type(value).__name__} {value!r}"
        )
    else:
        if isinstance(value, str):
            match = _DURATION_RE.match(value)
            if match is None:
                raise ValueError(
                    f"{what} {value!r} is not a duration: write a number and a unit "
                    "(ms, s, min, h), e.g. '500ms' or '2s'"
                )
            amount, unit = Decimal(match.group(1)), _UNITS_MS[match.group(2)]
        else:
            try:
                amount, unit = Decimal(repr(value)), 1000
            except InvalidOperation:
                raise ValueError(f"{what} {value!r} is not a finite number of seconds") from None
            if not amount.is_finite():
                raise ValueError(f"{what} {value!r} is not a finite number of seconds")
        ms = amount * unit
        if ms < 0:
            raise ValueError(f"{what} {value!r} is negative; give a positive duration")
        if ms != ms.to_integral_value():
            raise ValueError(
                f"{what} {value!r} is not a whole number of milliseconds; "
                "round it to the millisecond"
            )
        result = Duration(int(ms))
    if result.ms == 0 and not allow_zero:
        raise ValueError(f"{what} is 0 ms; it must be positive, e.g. '500ms' or 1 (second)")
    return result


def to_time(value: object, what: str = "time") -> Time:
    """Convert a :class:`Time`, epoch seconds (int/float, PySpark's convention for
    ``slice``) or an aware ``datetime`` to :class:`Time`."""
    if isinstance(value, Time):
        return value
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise ValueError(
                f"{what} {value!r} is a naive datetime; give it a timezone "
                "(e.g. datetime(..., tzinfo=timezone.utc)) or pass a dstream.Time"
            )
        return Time(round(value.timestamp() * 1000))
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(
            f"{what} must be a dstream.Time, epoch seconds or an aware datetime; got {value!r}"
        )
    ms = Decimal(repr(value)) * 1000
    if ms != ms.to_integral_value():
        raise ValueError(f"{what} {value!r} is not a whole number of milliseconds")
    return Time(int(ms))
