"""The table saveToTable writes (dstream.storage.parquet_table) and the fitting of records to
its schema in the tasks (dstream.tasks.table_rows): pure logic, no Spark."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from pyspark.sql import Row
from pyspark.sql.types import LongType, StringType, StructField, StructType

from dstream.storage.commits import COMMIT_MARKER
from dstream.storage.filesystem import LocalFileSystem
from dstream.storage.parquet_table import (
    META_NAME,
    commit_table_interval,
    committed_intervals,
    ensure_table,
    interval_dir,
)
from dstream.tasks.table_rows import row_fitter

SCHEMA = StructType([StructField("word", StringType()), StructField("count", LongType())])


def part_writer(calls: list[str]):  # type: ignore[no-untyped-def]
    def write(tmp: str) -> None:
        calls.append(tmp)
        os.makedirs(tmp)
        Path(tmp, "part-00000.parquet").write_bytes(b"rows")

    return write


def test_each_interval_is_one_hidden_write_renamed_into_its_partition_once(
    tmp_path: Path,
) -> None:
    fs, table = LocalFileSystem(), str(tmp_path / "t")
    ensure_table(fs, table, SCHEMA.json(), "saveToTable()")
    calls: list[str] = []
    assert commit_table_interval(fs, table, 2000, part_writer(calls), epoch=3)
    assert os.path.basename(calls[0]).startswith(".batch_ms=2000.tmp-e3-")  # hidden
    assert interval_dir(table, 2000) == f"{table}/batch_ms=2000"
    assert sorted(os.listdir(interval_dir(table, 2000))) == [COMMIT_MARKER, "part-00000.parquet"]
    # Again (a retry, a recomputation, a restarted driver, a replay): nothing is written.
    assert not commit_table_interval(fs, table, 2000, part_writer(calls), epoch=4)
    assert len(calls) == 1
    assert commit_table_interval(fs, table, 1000, part_writer(calls))
    assert committed_intervals(fs, table) == [1000, 2000]
    # Every name beside the committed partitions is hidden from Spark's listing.
    visible = [n for n in os.listdir(table) if not n.startswith(("_", "."))]
    assert sorted(visible) == ["batch_ms=1000", "batch_ms=2000"]


def test_a_failed_write_leaves_no_interval(tmp_path: Path) -> None:
    fs, table = LocalFileSystem(), str(tmp_path / "t")
    ensure_table(fs, table, SCHEMA.json(), "saveToTable()")

    def failing(tmp: str) -> None:
        os.makedirs(tmp)
        Path(tmp, "part-00000.parquet").write_bytes(b"half")
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        commit_table_interval(fs, table, 1000, failing)
    assert committed_intervals(fs, table) == []
    assert os.listdir(table) == [META_NAME]


def test_the_schema_is_kept_by_the_table(tmp_path: Path) -> None:
    fs, table = LocalFileSystem(), str(tmp_path / "t")
    with pytest.raises(ValueError, match=r"does not exist yet, so its schema is needed: pass"):
        ensure_table(fs, table, None, "saveToTable()")
    first = ensure_table(fs, table, SCHEMA.json(), "saveToTable()")
    assert StructType.fromJson(json.loads(first)) == SCHEMA
    assert ensure_table(fs, table, None, "saveToTable()") == first  # the table's own
    assert ensure_table(fs, table, SCHEMA.json(), "saveToTable()") == first
    other = StructType([StructField("word", StringType())])
    with pytest.raises(ValueError) as err:
        ensure_table(fs, table, other.json(), "saveToTable()")
    assert str(err.value) == (
        f"saveToTable(): schema <word string> differs from the table {table}'s "
        f"<word string, count long> ({META_NAME}); pass the table's schema (or schema=None "
        "to use it), or write to a new path"
    )


def test_a_directory_with_other_data_is_not_taken(tmp_path: Path) -> None:
    fs = LocalFileSystem()
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "data.csv").write_text("x")
    with pytest.raises(FileExistsError, match="exists and is not a dstream table"):
        ensure_table(fs, str(tmp_path / "t"), SCHEMA.json(), "saveToTable()")
    (tmp_path / "empty").mkdir()
    ensure_table(fs, str(tmp_path / "empty"), SCHEMA.json(), "saveToTable()")


def test_records_fit_the_schema_by_name_position_or_as_the_one_value() -> None:
    fit = row_fitter(SCHEMA.json())
    assert fit(("a", 1)) == ("a", 1)
    assert fit(["a", 1]) == ("a", 1)
    assert fit({"count": 2, "word": "b"}) == ("b", 2)
    assert fit(Row(count=3, word="c")) == ("c", 3)
    assert fit(("d", None)) == ("d", None)  # nullable
    one = row_fitter(StructType([StructField("line", StringType())]).json())
    assert one("a line") == ("a line",)
    assert one(("a line",)) == ("a line",)


@pytest.mark.parametrize(
    ("record", "message"),
    [
        (("a", "1"), r"record \('a', '1'\) does not fit the table's schema "),
        (("a", 1, 2), r"has 3 values; the table's schema struct<word:string,count:bigint> has 2"),
        ({"word": "a"}, r"does not fit .*: no field count"),
        ({"word": "a", "count": 1, "x": 0}, r"fields x not in the schema"),
        ("a b", r"is a str; the table's schema .* takes a tuple, a list, a dict or a Row"),
    ],
)
def test_a_record_that_does_not_fit_raises_naming_it_and_the_schema(
    record: object, message: str
) -> None:
    with pytest.raises((TypeError, ValueError), match=message):
        row_fitter(SCHEMA.json())(record)
