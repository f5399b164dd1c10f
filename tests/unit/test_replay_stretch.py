"""The pure rules of a stretched replay (dstream.scheduler.stretch): which files Hadoop's
reader would decompress, which intervals a stretch covers, how a stretch's files are cut
among tasks, and how a record becomes a line of a part file. No Spark."""

from __future__ import annotations

import pytest

from dstream.scheduler.stretch import assign_files, compressed, stretch_span, text_line
from dstream.time import Duration, Time


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("file:/in/a.gz", True),
        ("/in/b.TXT.BZ2", True),
        ("/in/c.zst", True),
        ("/in/d.txt", False),
        ("/in/gz", False),  # a name without a suffix
        ("/in.gz/e", False),  # the directory's suffix does not count
        ("/in/.hidden", False),
    ],
)
def test_a_file_is_compressed_by_its_suffix_as_hadoop_decides(path: str, expected: bool) -> None:
    assert compressed(path) is expected


def test_a_stretch_covers_up_to_most_intervals_and_never_passes_the_last() -> None:
    batch = Duration(1000)
    assert stretch_span(Time(5000), Time(20_000), batch, 4) == [
        Time(5000),
        Time(6000),
        Time(7000),
        Time(8000),
    ]
    assert stretch_span(Time(5000), Time(6000), batch, 32) == [Time(5000), Time(6000)]
    assert stretch_span(Time(6000), Time(6000), batch, 32) == [Time(6000)]
    assert stretch_span(Time(7000), Time(6000), batch, 32) == []


def test_files_are_cut_in_order_into_runs_of_nearly_equal_length_none_empty() -> None:
    items = [(t, f"/in/{t}-{i}") for t in (1000, 2000, 3000) for i in range(3)]
    runs = assign_files(items, 4)
    assert len(runs) == 4
    assert all(runs) and [item for run in runs for item in run] == items
    assert max(map(len, runs)) - min(map(len, runs)) <= 1
    # fewer items than tasks: one item each, no empty task
    assert assign_files(items[:2], 8) == [[items[0]], [items[1]]]
    assert assign_files([], 3) == []
    assert assign_files(items, 0) == [items]


@pytest.mark.parametrize(
    ("record", "line"),
    [
        ("naïve", "naïve".encode()),
        (("a", 3), b"('a', 3)"),
        (7, b"7"),
        (b"raw", b"raw"),
        (b"bad \xff byte", "bad \ufffd byte".encode()),  # the JVM's String round trip
        (None, b"None"),
    ],
)
def test_a_record_is_written_as_pyspark_writes_it(record: object, line: bytes) -> None:
    assert text_line(record) == line
