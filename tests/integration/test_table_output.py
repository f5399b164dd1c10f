"""saveToTable: each interval appended to a Parquet table once, read live with Spark SQL from
another session; a program run again over committed intervals, and a replay of them, add
nothing; a record that does not fit the schema follows bad_records and never half-commits
its interval."""

from __future__ import annotations

import os
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from dstream import (
    ManualClock,
    StreamingContext,
    StreamingJobError,
    StreamingSettings,
    Time,
    read_table,
)
from dstream.storage.commits import COMMIT_MARKER
from dstream.storage.filesystem import LocalFileSystem
from dstream.storage.parquet_table import META_NAME, committed_intervals

from .conftest import Harness

B = 1000
SCHEMA = "word string, count long"


def by_interval(rows: list[Any]) -> dict[int, list[tuple[Any, ...]]]:
    """A table's rows (``batch_ms`` last) by interval, each interval's sorted."""
    found: dict[int, list[tuple[Any, ...]]] = defaultdict(list)
    for row in rows:
        *values, batch_ms = row
        found[batch_ms].append(tuple(values))
    return {t: sorted(values) for t, values in found.items()}


def stamps(table: Path) -> dict[str, tuple[int, int]]:
    """Every committed interval directory's inode and modification time."""
    return {
        d.name: (d.stat().st_ino, (d / COMMIT_MARKER).stat().st_mtime_ns)
        for d in table.iterdir()
        if d.name.startswith("batch_ms=")
    }


def test_each_interval_is_appended_once_and_read_live_with_spark_sql(
    harness: Any, tmp_path: Path
) -> None:
    table = tmp_path / "counts"
    batches = [[("a", 1), ("b", 2)], [], [("c", 3)], [{"word": "a", "count": 4}]]
    h: Harness = harness()
    sc = h.ssc.sparkContext
    h.ssc.queueStream([sc.parallelize(b, 2) for b in batches]).saveToTable(str(table), SCHEMA)
    other = SparkSession.builder.getOrCreate().newSession()
    assert read_table(other, str(table)).count() == 0  # created, nothing committed yet
    h.ssc.start()
    h.run_batches(2)
    # Live, from another session on the same Spark: the intervals committed so far; a view
    # over the path lists the table again at each query.
    query = f"SELECT word, count, batch_ms FROM parquet.`{table}`"
    other.sql(f"CREATE TEMP VIEW live AS {query}")
    assert by_interval(other.sql("SELECT * FROM live").collect()) == {1 * B: [("a", 1), ("b", 2)]}
    h.run_batches(2)
    want = {1 * B: [("a", 1), ("b", 2)], 3 * B: [("c", 3)], 4 * B: [("a", 4)]}
    assert by_interval(other.sql("SELECT * FROM live").collect()) == want
    assert by_interval(read_table(other, str(table)).collect()) == want
    fs = LocalFileSystem()
    assert committed_intervals(fs, str(table)) == [1 * B, 2 * B, 3 * B, 4 * B]  # 2 s: empty
    visible = sorted(n for n in os.listdir(table) if not n.startswith("."))
    assert visible == [META_NAME, *(f"batch_ms={t * B}" for t in (1, 2, 3, 4))]  # no leftover
    before = stamps(table)

    # The same program again over the same intervals (as a restarted driver would), other
    # data in them: the committed intervals are not written again; the new one is appended.
    h.ssc.stop(stopSparkContext=False)
    h2: Harness = harness()
    again = [[("X", 9)], [("Y", 9)], [("Z", 9)], [("W", 9)], [("d", 5)]]
    h2.ssc.queueStream([sc.parallelize(b) for b in again]).saveToTable(str(table))  # its schema
    h2.ssc.start()
    h2.run_batches(5)
    assert by_interval(read_table(other, str(table)).collect()) == {**want, 5 * B: [("d", 5)]}
    assert {k: v for k, v in stamps(table).items() if k in before} == before


T0 = 1_800_000_000_000  # a batch boundary


def lines_program(sc: Any, indir: Path, table: Path, ckpt: Path, clock: Any = None) -> Any:
    ssc = StreamingContext(sc, 1, clock=clock)
    ssc.checkpoint(str(ckpt))
    ssc.textFileStream(str(indir)).saveToTable(str(table), "line string")
    return ssc


def test_a_replay_of_committed_intervals_adds_no_commit(sc: Any, tmp_path: Path) -> None:
    indir, table = tmp_path / "in", tmp_path / "lines"
    indir.mkdir()
    clock = ManualClock(T0)
    live = lines_program(sc, indir, table, tmp_path / "ckpt", clock)
    live.start()
    for i in range(3):  # files arrive during the run, each within its interval
        name = indir / f"f{i}.txt"
        name.write_text(f"line {i}.0\nline {i}.1\n")
        os.utime(name, ns=((T0 + i * B + 500) * 1_000_000,) * 2)
        clock.advance(B)
        assert live.wait_for_batch(clock.now(), 60)
    live.stop(stopSparkContext=False, stopGraceFully=True)
    spark = SparkSession.builder.getOrCreate()
    want = {T0 + (i + 1) * B: [(f"line {i}.0",), (f"line {i}.1",)] for i in range(3)}
    assert by_interval(read_table(spark, str(table)).collect()) == want
    before = stamps(table)

    report = StreamingContext.replay(
        lambda: lines_program(sc, indir, table, tmp_path / "replay-ckpt"),
        Time(T0),
        Time(T0 + 3 * B),
    )
    assert report.intervals == 3
    assert stamps(table) == before  # not one interval written again
    assert sorted(os.listdir(table)) == sorted([META_NAME, *before])
    assert by_interval(read_table(spark, str(table)).collect()) == want


BAD = [[("a", 1)], [("b", 2), ("c", "three"), ("d", 4)], [("e", 5)]]


def test_by_default_a_row_that_does_not_fit_fails_its_interval_whole(
    harness: Any, tmp_path: Path
) -> None:
    table = tmp_path / "t"
    h: Harness = harness(settings=StreamingSettings(output_retries=0))
    sc = h.ssc.sparkContext
    h.ssc.queueStream([sc.parallelize(b, 2) for b in BAD]).saveToTable(str(table), SCHEMA)
    h.ssc.start()
    h.run_batches(3)
    with pytest.raises(StreamingJobError) as info:
        h.ssc.awaitTerminationOrTimeout(0)
    message = str(info.value)
    assert "saveToTable at test_table_output.py" in message
    assert "record ('c', 'three') does not fit the table's schema" in message
    assert "StreamingSettings(bad_records='quarantine')" in message
    # Interval 2 s is not in the table, not even its good rows; no half-written leftover.
    assert committed_intervals(LocalFileSystem(), str(table)) == [1 * B, 3 * B]
    assert sorted(os.listdir(table)) == [META_NAME, "batch_ms=1000", "batch_ms=3000"]


def test_under_quarantine_a_row_that_does_not_fit_is_set_aside(
    harness: Any, tmp_path: Path
) -> None:
    table = tmp_path / "t"
    h: Harness = harness(settings=StreamingSettings(bad_records="quarantine"))
    sc = h.ssc.sparkContext
    h.ssc.queueStream([sc.parallelize(b, 2) for b in BAD]).saveToTable(str(table), SCHEMA)
    h.ssc.start()
    h.run_batches(3)
    spark = SparkSession.builder.getOrCreate()
    assert by_interval(read_table(spark, str(table)).collect()) == {
        1 * B: [("a", 1)],
        2 * B: [("b", 2), ("d", 4)],
        3 * B: [("e", 5)],
    }
    (record,) = h.ssc.quarantined()
    assert record.time == Time(2 * B)
    assert record.operator.startswith("saveToTable at test_table_output.py")
    assert record.record == "('c', 'three')"


def test_arguments_are_checked_naming_the_value_and_the_fix(harness: Any, tmp_path: Path) -> None:
    h: Harness = harness()
    stream = h.ssc.queueStream([[("a", 1)]])
    with pytest.raises(ValueError, match=r"path '' must be a non-empty path string"):
        stream.saveToTable("", SCHEMA)
    with pytest.raises(ValueError, match=r"schema 'word strin' is not a DDL column list"):
        stream.saveToTable(str(tmp_path / "t"), "word strin")
    with pytest.raises(TypeError, match=r"schema must be a DDL string"):
        stream.saveToTable(str(tmp_path / "t"), 3)
    with pytest.raises(ValueError, match=r"has a column 'batch_ms', the column the table adds"):
        stream.saveToTable(str(tmp_path / "t"), "batch_ms long")
    with pytest.raises(ValueError, match=r"does not exist yet, so its schema is needed"):
        stream.saveToTable(str(tmp_path / "t"))
    stream.saveToTable(str(tmp_path / "t"), SCHEMA)
    with pytest.raises(ValueError, match=r"schema <word string> differs from the table"):
        stream.saveToTable(str(tmp_path / "t"), "word string")


def test_read_table_by_key_is_the_newest_row_of_each_key(harness: Any, tmp_path: Path) -> None:
    table = tmp_path / "totals"
    h: Harness = harness()
    sc = h.ssc.sparkContext
    changes = [[("a", 1), ("b", 1)], [("a", 2)], [("b", 5), ("c", 1)]]
    h.ssc.queueStream([sc.parallelize(b, 2) for b in changes]).saveToTable(str(table), SCHEMA)
    h.ssc.start()
    h.run_batches(3)
    spark = SparkSession.builder.getOrCreate()
    merged = read_table(spark, str(table), key="word").collect()
    assert sorted(tuple(r) for r in merged) == [
        ("a", 2, 2 * B),
        ("b", 5, 3 * B),
        ("c", 1, 3 * B),
    ]
    assert read_table(spark, str(table)).count() == 5  # the table itself: every row appended
    with pytest.raises(
        ValueError, match=r"key 'w' must name columns of the table .* \(word, count\)"
    ):
        read_table(spark, str(table), key="w")
