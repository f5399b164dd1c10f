"""Times as a person types them at the console, against the clock they are typed at."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from dstream import Time
from dstream.timetext import parse_when


def local(y: int, mo: int, d: int, h: int, mi: int, s: int = 0, ms: int = 0) -> Time:
    return Time(round(datetime(y, mo, d, h, mi, s, ms * 1000).timestamp() * 1000))


NOW = local(2026, 11, 26, 21, 30, 15)


@pytest.mark.parametrize(
    ("typed", "expected"),
    [
        ("21:00", local(2026, 11, 26, 21, 0)),
        ("21:30:15", NOW),  # exactly now: today
        ("21:00:30", local(2026, 11, 26, 21, 0, 30)),
        ("21:00:30.5", local(2026, 11, 26, 21, 0, 30, 500)),
        ("7:05", local(2026, 11, 26, 7, 5)),
        ("23:55", local(2026, 11, 25, 23, 55)),  # later than now today: yesterday's
        ("-5m", NOW - timedelta(minutes=5)),
        ("-30s", NOW - timedelta(seconds=30)),
        ("-1.5s", NOW - timedelta(milliseconds=1500)),
        ("- 2h", NOW - timedelta(hours=2)),
        ("now", NOW),
        (" NOW ", NOW),
        ("2026-11-26 20:59", local(2026, 11, 26, 20, 59)),
        ("2026-11-26T20:59:01", local(2026, 11, 26, 20, 59, 1)),
        ("2026-11-26T20:59:01+00:00", Time(round(datetime(2026, 11, 26, 20, 59, 1, tzinfo=UTC).timestamp() * 1000))),
        (Time(5), Time(5)),
        (1_700_000_000, Time(1_700_000_000_000)),
        (datetime.fromtimestamp(12.5), Time(12_500)),
    ],
)  # fmt: skip
def test_what_people_type(typed: object, expected: Time) -> None:
    assert parse_when(typed, NOW) == expected


@pytest.mark.parametrize(
    ("typed", "message"),
    [
        ("21h", r"'21h' is not a time dstream understands; write e.g. '21:00', '21:00:30', '-5m'"),
        ("25:00", r"'25:00' is not a time of day: hours 0-23"),
        ("-5 parsecs", r"'-5 parsecs' is not a time before now: write a duration after the '-', e.g. '-5m'"),
        ("", r"'' is not a time dstream understands"),
    ],
)  # fmt: skip
def test_a_time_that_does_not_parse_says_what_works(typed: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_when(typed, NOW, "slice begin")


def test_a_wrong_type_says_what_works() -> None:
    with pytest.raises(TypeError, match=r"got list \[1\]; or a string such as '21:00'"):
        parse_when([1], NOW)
