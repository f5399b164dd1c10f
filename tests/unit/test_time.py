"""Integer time arithmetic and the parsing of user durations."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from dstream.time import Duration, Interval, Time, to_duration, to_time


@pytest.mark.parametrize(
    ("value", "ms"),
    [
        (1, 1000),
        (0.5, 500),
        (0.1, 100),  # exact: 0.1 * 1000 is not 100.0 in binary floating point
        (2.25, 2250),
        ("500ms", 500),
        ("2s", 2000),
        ("1.5s", 1500),
        ("2 sec", 2000),
        ("1min", 60_000),
        ("1m", 60_000),
        ("1h", 3_600_000),
        (Duration(250), 250),
    ],
)
def test_to_duration_accepts_seconds_strings_and_durations(value: object, ms: int) -> None:
    assert to_duration(value) == Duration(ms)


@pytest.mark.parametrize(
    ("value", "error", "message"),
    [
        (-1, ValueError, "negative"),
        ("-2s", ValueError, "not a duration"),
        (0, ValueError, "it must be positive"),
        ("0ms", ValueError, "it must be positive"),
        (0.0005, ValueError, "not a whole number of milliseconds"),
        ("1.0005s", ValueError, "not a whole number of milliseconds"),
        ("two seconds", ValueError, "write a number and a unit"),
        ("5", ValueError, "write a number and a unit"),
        (True, TypeError, "must be seconds"),
        (None, TypeError, "must be seconds"),
        ([1], TypeError, "must be seconds"),
        (float("inf"), ValueError, "not a finite number"),
        (float("nan"), ValueError, "not a finite number"),
    ],
)
def test_to_duration_rejects_bad_values_with_the_value_and_the_fix(
    value: object, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message) as info:
        to_duration(value, "windowDuration")
    assert "windowDuration" in str(info.value)


def test_zero_is_allowed_only_when_asked() -> None:
    assert to_duration(0, allow_zero=True) == Duration(0)


def test_time_and_duration_arithmetic() -> None:
    assert Time(1500) + Duration(500) == Time(2000)
    assert Time(2000) - Time(500) == Duration(1500)
    assert Time(2000) - Duration(500) == Time(1500)
    assert Duration(300) * 3 == Duration(900) == 3 * Duration(300)
    assert Duration(2000) // Duration(500) == 4
    assert Duration(2000) // 4 == Duration(500)
    assert Duration(2500) % Duration(1000) == Duration(500)
    assert Duration(3000).is_multiple_of(Duration(1000))
    assert not Duration(2500).is_multiple_of(Duration(1000))
    assert not Duration(0).is_multiple_of(Duration(1000))
    assert sorted([Time(3), Time(1), Time(2)]) == [Time(1), Time(2), Time(3)]


def test_differences_are_signed_and_times_are_ints() -> None:
    assert Duration(500) - Duration(1000) == Duration(-500)
    assert Time(1000) - Time(3000) == Duration(-2000) == timedelta(seconds=-2)
    with pytest.raises(ValueError, match="negative"):
        to_duration(-1)  # what users pass in is checked
    with pytest.raises(TypeError, match="whole milliseconds"):
        Duration(1.5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="epoch milliseconds"):
        Time(1.5)  # type: ignore[arg-type]


def test_floor_aligns_to_a_grid_with_an_origin() -> None:
    assert Time(2999).floor(Duration(1000)) == Time(2000)
    assert Time(3000).floor(Duration(1000)) == Time(3000)
    assert Time(3700).floor(Duration(1000), origin=Time(500)) == Time(3500)
    assert Time(-1).floor(Duration(1000)) == Time(-1000)


def test_interval_is_half_open() -> None:
    window = Interval(Time(1000), Time(4000))
    assert window.contains(Time(1000))
    assert window.contains(Time(3999))
    assert not window.contains(Time(4000))
    assert window.duration == Duration(3000)
    with pytest.raises(ValueError, match="before its begin"):
        Interval(Time(5), Time(4))


def test_time_is_the_datetime_pyspark_would_have_passed() -> None:
    """pyspark.streaming hands foreachRDD a naive local datetime; a Time formats, prints and
    exposes attributes exactly as that datetime does."""
    t = Time(1_500)
    pyspark = datetime.fromtimestamp(1.5)  # what PySpark passes
    assert t.to_datetime() == pyspark and t.to_datetime().tzinfo is None
    assert t.to_datetime(UTC) == datetime(1970, 1, 1, 0, 0, 1, 500_000, tzinfo=UTC)
    assert str(t) == str(pyspark)
    assert f"Time: {t}" == f"Time: {pyspark}"
    assert f"{t:%H:%M:%S.%f}" == f"{pyspark:%H:%M:%S.%f}"
    assert t.isoformat() == pyspark.isoformat()
    assert t.isoformat(" ", "milliseconds") == pyspark.isoformat(" ", "milliseconds")
    assert t.strftime("%Y-%m-%d %H:%M:%S") == pyspark.strftime("%Y-%m-%d %H:%M:%S")
    assert t.timestamp() == 1.5 == pyspark.timestamp()
    for name in ("year", "month", "day", "hour", "minute", "second", "microsecond"):
        assert getattr(t, name) == getattr(pyspark, name), name
    assert t.weekday() == pyspark.weekday() and t.date() == pyspark.date()
    assert t.milliseconds() == 1500  # Spark's Time accessor, for listener code
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        t.nope  # noqa: B018


def test_time_and_timedelta_arithmetic_as_programs_use_it() -> None:
    t, begin = Time(5_000), Time(2_000)
    assert t + timedelta(seconds=1) == Time(6_000)
    assert timedelta(milliseconds=250) + t == Time(5_250)
    assert t - timedelta(seconds=2) == Time(3_000)
    elapsed = t - begin
    assert elapsed == timedelta(seconds=3) and elapsed.total_seconds() == 3.0
    assert (elapsed.days, elapsed.seconds, elapsed.microseconds) == (0, 3, 0)
    assert elapsed > timedelta(seconds=2) and elapsed <= timedelta(seconds=3)
    assert Duration(1500) + timedelta(milliseconds=500) == Duration(2000)
    assert Duration(3000) / timedelta(seconds=1) == 3.0
    assert hash(Duration(1500)) == hash(timedelta(milliseconds=1500))
    with pytest.raises(ValueError, match="not a whole number of milliseconds"):
        t + timedelta(microseconds=1)
    assert Duration(1) != timedelta(microseconds=1500)


def test_times_compare_with_datetimes() -> None:
    t = Time(10_000)
    local = datetime.fromtimestamp(10)  # naive: local time, as PySpark's
    assert t == local and local == t
    assert t < datetime.fromtimestamp(11) and datetime.fromtimestamp(9) < t
    assert t >= datetime(1970, 1, 1, 0, 0, 10, tzinfo=UTC)
    assert datetime.fromtimestamp(12) - t == timedelta(seconds=2)
    assert t - datetime.fromtimestamp(4) == Duration(6_000)
    assert sorted([datetime.fromtimestamp(11), Time(10_500)]) == [
        Time(10_500),
        datetime.fromtimestamp(11),
    ]


def test_to_time_takes_seconds_aware_datetimes_and_times() -> None:
    assert to_time(12) == Time(12_000)
    assert to_time(Time(5)) == Time(5)
    tz = timezone(timedelta(hours=2))
    assert to_time(datetime(1970, 1, 1, 2, 0, 3, tzinfo=tz)) == Time(3000)
    assert to_time(datetime.fromtimestamp(7.25)) == Time(7_250)  # naive: local time
    with pytest.raises(TypeError, match=r"dstream\.Time"):
        to_time("12")
