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
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta, tzinfo
from decimal import Decimal, InvalidOperation
from typing import Any, overload

__all__ = ["Duration", "Interval", "Time", "human_time", "to_duration", "to_time"]


def _whole_ms(delta: timedelta, what: str) -> int:
    us = (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
    if us % 1000:
        raise ValueError(
            f"{what} {delta!r} is not a whole number of milliseconds; dstream keeps time in "
            "milliseconds: round it to the millisecond"
        )
    return us // 1000


@dataclass(frozen=True, slots=True, eq=False)
class Duration:
    """A length of time in whole milliseconds.

    It is also a ``timedelta`` as far as programs written for pyspark.streaming can tell:
    ``total_seconds()``, ``days``/``seconds``/``microseconds``, comparison and arithmetic with
    ``timedelta``. It is negative only as the difference of two times (``t1 - t2``); every
    duration a user passes in (batch interval, window, timeout) is checked to be positive.
    """

    ms: int

    def __post_init__(self) -> None:
        if not isinstance(self.ms, int) or isinstance(self.ms, bool):
            raise TypeError(f"Duration takes whole milliseconds as an int, got {self.ms!r}")

    @staticmethod
    def _ms_of(other: object) -> int | None:
        if isinstance(other, Duration):
            return other.ms
        if isinstance(other, timedelta):
            return _whole_ms(other, "timedelta")
        return None

    def __add__(self, other: Duration | timedelta) -> Duration:
        ms = self._ms_of(other)
        if ms is None:
            return NotImplemented
        return Duration(self.ms + ms)

    __radd__ = __add__

    def __sub__(self, other: Duration | timedelta) -> Duration:
        ms = self._ms_of(other)
        if ms is None:
            return NotImplemented
        return Duration(self.ms - ms)

    def __rsub__(self, other: timedelta) -> Duration:
        ms = self._ms_of(other)
        if ms is None:
            return NotImplemented
        return Duration(ms - self.ms)

    def __neg__(self) -> Duration:
        return Duration(-self.ms)

    def __abs__(self) -> Duration:
        return Duration(abs(self.ms))

    def __mul__(self, factor: int) -> Duration:
        if isinstance(factor, bool) or not isinstance(factor, int):
            return NotImplemented
        return Duration(self.ms * factor)

    __rmul__ = __mul__

    @overload
    def __floordiv__(self, other: Duration | timedelta) -> int: ...
    @overload
    def __floordiv__(self, other: int) -> Duration: ...
    def __floordiv__(self, other: Duration | timedelta | int) -> int | Duration:
        if isinstance(other, int) and not isinstance(other, bool):
            return Duration(self.ms // other)
        ms = self._ms_of(other)
        if ms is None:
            return NotImplemented
        return self.ms // ms

    def __truediv__(self, other: Duration | timedelta) -> float:
        ms = self._ms_of(other)
        if ms is None:
            return NotImplemented
        return self.ms / ms

    def __mod__(self, other: Duration | timedelta) -> Duration:
        ms = self._ms_of(other)
        if ms is None:
            return NotImplemented
        return Duration(self.ms % ms)

    def __bool__(self) -> bool:
        return self.ms != 0

    # comparisons: with Durations and timedeltas alike
    def __eq__(self, other: object) -> bool:
        ms = self._ms_of(other) if not isinstance(other, timedelta) else _exact_ms(other)
        return NotImplemented if ms is None else self.ms == ms

    def __hash__(self) -> int:
        return hash(timedelta(milliseconds=self.ms))  # equal to an equal timedelta's

    def __lt__(self, other: Duration | timedelta) -> bool:
        return self._cmp(other, lambda a, b: a < b)

    def __le__(self, other: Duration | timedelta) -> bool:
        return self._cmp(other, lambda a, b: a <= b)

    def __gt__(self, other: Duration | timedelta) -> bool:
        return self._cmp(other, lambda a, b: a > b)

    def __ge__(self, other: Duration | timedelta) -> bool:
        return self._cmp(other, lambda a, b: a >= b)

    def _cmp(self, other: object, op: Callable[[float, float], bool]) -> bool:
        if isinstance(other, Duration):
            return op(self.ms, other.ms)
        if isinstance(other, timedelta):
            return op(self.ms, other / timedelta(milliseconds=1))
        return NotImplemented

    def is_multiple_of(self, other: Duration) -> bool:
        """True when this duration is a whole number (>= 1) of ``other``."""
        return other.ms > 0 and self.ms > 0 and self.ms % other.ms == 0

    # timedelta's view
    def to_timedelta(self) -> timedelta:
        return timedelta(milliseconds=self.ms)

    def total_seconds(self) -> float:
        return self.ms / 1000

    @property
    def days(self) -> int:
        return self.to_timedelta().days

    @property
    def seconds(self) -> int:
        """As ``timedelta.seconds``: the seconds within the last day (0-86399); the whole
        length in seconds is :meth:`total_seconds`."""
        return self.to_timedelta().seconds

    @property
    def microseconds(self) -> int:
        return self.to_timedelta().microseconds

    def __str__(self) -> str:
        return f"{self.ms} ms"

    def __repr__(self) -> str:
        return f"Duration({self.ms})"


def _exact_ms(delta: timedelta) -> int | None:
    """``delta`` in milliseconds when it is whole; None (unequal to any Duration) otherwise."""
    us = (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
    return None if us % 1000 else us // 1000


# What a datetime offers that programs call on the time pyspark.streaming hands them.
_DATETIME_VIEW = frozenset(
    """year month day hour minute second microsecond tzinfo fold weekday isoweekday
    isocalendar date time timetz ctime timetuple utctimetuple toordinal replace astimezone
    utcoffset dst tzname""".split()
)


@dataclass(frozen=True, slots=True, eq=False)
class Time:
    """A point in time: milliseconds since the Unix epoch.

    Programs written for pyspark.streaming get a ``datetime`` (naive, local time) in
    ``foreachRDD``/``transform``; a ``Time`` stands in for it: ``str()``, ``strftime``,
    ``isoformat``, ``timestamp()``, ``.hour`` and the rest of a datetime's attributes give what
    that datetime would, ``time + timedelta(seconds=1)`` and ``time - other_time`` work, and
    times compare with datetimes (naive ones as local time, as PySpark). ``milliseconds()`` is
    the accessor of Spark's own ``Time`` that listener code calls.
    """

    ms: int

    def __post_init__(self) -> None:
        if not isinstance(self.ms, int) or isinstance(self.ms, bool):
            raise TypeError(f"Time takes epoch milliseconds as an int, got {self.ms!r}")

    @overload
    def __sub__(self, other: Time | datetime) -> Duration: ...
    @overload
    def __sub__(self, other: Duration | timedelta) -> Time: ...
    def __sub__(self, other: Time | datetime | Duration | timedelta) -> Duration | Time:
        if isinstance(other, Time):
            return Duration(self.ms - other.ms)
        if isinstance(other, datetime):
            return Duration(self.ms - to_time(other).ms)
        ms = Duration._ms_of(other)
        if ms is None:
            return NotImplemented
        return Time(self.ms - ms)

    def __rsub__(self, other: datetime) -> Duration:
        if isinstance(other, datetime):
            return Duration(to_time(other).ms - self.ms)
        return NotImplemented

    def __add__(self, other: Duration | timedelta) -> Time:
        ms = Duration._ms_of(other)
        if ms is None:
            return NotImplemented
        return Time(self.ms + ms)

    __radd__ = __add__

    # comparisons: with Times and datetimes alike
    @staticmethod
    def _ms_of(other: object) -> int | None:
        if isinstance(other, Time):
            return other.ms
        if isinstance(other, datetime):
            return round(other.timestamp() * 1000)
        return None

    def __eq__(self, other: object) -> bool:
        ms = self._ms_of(other)
        return NotImplemented if ms is None else self.ms == ms

    def __hash__(self) -> int:
        return hash(self.ms)

    def __lt__(self, other: Time | datetime) -> bool:
        ms = self._ms_of(other)
        return NotImplemented if ms is None else self.ms < ms

    def __le__(self, other: Time | datetime) -> bool:
        ms = self._ms_of(other)
        return NotImplemented if ms is None else self.ms <= ms

    def __gt__(self, other: Time | datetime) -> bool:
        ms = self._ms_of(other)
        return NotImplemented if ms is None else self.ms > ms

    def __ge__(self, other: Time | datetime) -> bool:
        ms = self._ms_of(other)
        return NotImplemented if ms is None else self.ms >= ms

    def floor(self, unit: Duration, origin: Time | None = None) -> Time:
        """The latest time <= self that lies on the grid ``origin + k * unit``."""
        base = origin.ms if origin is not None else 0
        return Time(base + (self.ms - base) // unit.ms * unit.ms)

    def is_multiple_of(self, unit: Duration) -> bool:
        return self.ms % unit.ms == 0

    # Spark's Time
    def milliseconds(self) -> int:
        return self.ms

    # the datetime pyspark.streaming would have passed
    def to_datetime(self, tz: tzinfo | None = None) -> datetime:
        """As PySpark's: a naive datetime in local time; with ``tz``, an aware one there."""
        if tz is None:
            return datetime.fromtimestamp(self.ms / 1000)
        return datetime.fromtimestamp(self.ms / 1000, tz=tz)

    def timestamp(self) -> float:
        return self.ms / 1000

    def isoformat(self, sep: str = "T", timespec: str = "auto") -> str:
        return self.to_datetime().isoformat(sep, timespec)

    def strftime(self, fmt: str) -> str:
        return self.to_datetime().strftime(fmt)

    def __format__(self, spec: str) -> str:
        return str(self) if not spec else format(self.to_datetime(), spec)

    def __getattr__(self, name: str) -> Any:
        if name in _DATETIME_VIEW:
            return getattr(self.to_datetime(), name)
        raise AttributeError(f"'Time' object has no attribute {name!r}")

    def __str__(self) -> str:
        return str(self.to_datetime())

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

    Accepts a :class:`Duration`, a ``timedelta``, seconds as ``int``/``float`` (PySpark's
    convention) or a string with a unit: ``"500ms"``, ``"2s"``, ``"1.5s"``, ``"1min"``,
    ``"1h"``. ``what`` names the argument in error messages.
    """
    if isinstance(value, Duration):
        result = value
        if result.ms < 0:
            raise ValueError(f"{what} {value} is negative; give a positive duration")
    elif isinstance(value, timedelta):
        result = Duration(_whole_ms(value, what))
        if result.ms < 0:
            raise ValueError(f"{what} {value!r} is negative; give a positive duration")
    elif isinstance(value, bool) or not isinstance(value, int | float | str | Decimal):
        raise TypeError(
            f"{what} must be seconds (int or float), a string such as '500ms' or '2s', "
            f"a timedelta or a dstream.Duration; got {type(value).__name__} {value!r}"
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
    """Convert a :class:`Time`, a ``datetime`` (naive: local time, as PySpark's; aware: its
    own zone) or epoch seconds (int/float) to :class:`Time`."""
    if isinstance(value, Time):
        return value
    if isinstance(value, datetime):
        return Time(round(value.timestamp() * 1000))
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(
            f"{what} must be a dstream.Time, a datetime or epoch seconds; got "
            f"{type(value).__name__} {value!r}"
        )
    ms = Decimal(repr(value)) * 1000
    if ms != ms.to_integral_value():
        raise ValueError(f"{what} {value!r} is not a whole number of milliseconds")
    return Time(int(ms))


def human_time(t: Time | int | None) -> str | None:
    """``2026-11-26 17:16:57.500``: a time as people read it (local time, milliseconds)."""
    if t is None:
        return None
    ms = t.ms if isinstance(t, Time) else t
    return datetime.fromtimestamp(ms / 1000).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
