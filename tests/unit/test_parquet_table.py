"""The table saveToTable writes (dstream.storage.parquet_table) and the fitting of records to
its schema in the tasks (dstream.tasks.table_rows): pure logic, no Spark."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from pyspark.sql import Row
from pyspark.sql.types import ArrayType, LongType, StringType, StructField, StructType

from dstream.storage.commits import COMMIT_MARKER
from dstream.storage.filesystem import LocalFileSystem
from dstream.storage.parquet_table import (
    META_NAME,
    commit_table_interval,
    committed_intervals,
    ensure_table,
    interval_dir,
)
from dstream.tasks.table_rows import row_fitter, unique_keys

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
    assert StructType.fromJson(json.loads(first.schema_json)) == SCHEMA
    assert (first.mode, first.key) == ("append", ())
    # An append table's metadata file is the format's version 1, as before modes.
    assert json.loads(Path(table, META_NAME).read_text())["version"] == 1
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


def test_an_upsert_table_keeps_its_mode_and_key_and_refuses_others(tmp_path: Path) -> None:
    fs, table = LocalFileSystem(), str(tmp_path / "t")
    layout = ensure_table(fs, table, SCHEMA.json(), "saveToTable()", "upsert", ("word",))
    assert (layout.mode, layout.key) == ("upsert", ("word",))
    meta = json.loads(Path(table, META_NAME).read_text())
    assert (meta["version"], meta["mode"], meta["key"]) == (2, "upsert", ["word"])
    assert ensure_table(fs, table, None, "saveToTable()") == layout  # the table's own
    assert ensure_table(fs, table, None, "saveToTable()", "upsert") == layout
    with pytest.raises(ValueError) as err:
        ensure_table(fs, table, None, "saveToTable()", "append")
    assert str(err.value) == (
        f"saveToTable(): mode='append' differs from the table {table}'s mode='upsert' "
        f"key=['word'] ({META_NAME}); pass the table's (or leave mode and key out to use "
        "them), or write to a new path"
    )
    with pytest.raises(ValueError, match=r"mode='upsert' key=\['count'\] differs from .*'s "):
        ensure_table(fs, table, None, "saveToTable()", "upsert", ("count",))
    appended = str(tmp_path / "a")
    ensure_table(fs, appended, SCHEMA.json(), "saveToTable()")
    with pytest.raises(
        ValueError, match=r"mode='upsert' key=\['word'\] differs from .*'s mode='append'"
    ):
        ensure_table(fs, appended, None, "saveToTable()", "upsert", ("word",))


@pytest.mark.parametrize(
    ("mode", "key", "message"),
    [
        (
            "upsert",
            None,
            r"mode='upsert' needs key= one or more distinct columns of the schema "
            r"\(word, count\) that identify a row, got \[\]; e.g. key='word'",
        ),
        ("upsert", ("w",), r"needs key= .* got \['w'\]"),
        ("upsert", ("word", "word"), r"needs key= .* distinct"),
        (None, ("word",), r"key \['word'\] is for mode='upsert'; pass mode='upsert'"),
        ("merge", ("word",), r"mode 'merge' must be 'append' .* or 'upsert'"),
    ],
)
def test_a_bad_mode_or_key_is_refused_before_the_table_is_made(
    tmp_path: Path, mode: str | None, key: tuple[str, ...] | None, message: str
) -> None:
    fs, table = LocalFileSystem(), str(tmp_path / "t")
    with pytest.raises(ValueError, match=message):
        ensure_table(fs, table, SCHEMA.json(), "saveToTable()", mode, key)
    assert not os.path.exists(table)


def test_an_upsert_key_is_made_of_atomic_columns(tmp_path: Path) -> None:
    tags = StructType([StructField("tags", ArrayType(StringType())), *SCHEMA.fields])
    with pytest.raises(ValueError, match=r"key column 'tags' is a array; an upsert key is made"):
        ensure_table(
            LocalFileSystem(),
            str(tmp_path / "t"),
            tags.json(),
            "saveToTable()",
            "upsert",
            ("tags",),
        )


def test_an_upsert_interval_takes_one_row_per_key() -> None:
    check = unique_keys(SCHEMA.json(), ("word",), "/t", 3000)
    assert check.key_of(("a", 1)) == ("a",)
    rows = [("a", 1), ("b", 2)]
    assert list(check([(check.key_of(r), r) for r in rows])) == rows
    with pytest.raises(ValueError) as err:
        list(check([(check.key_of(r), r) for r in [*rows, ("a", 5)]]))
    assert str(err.value) == (
        "saveToTable(): interval 3000 ms has two rows of key word='a' for the upsert table /t "
        "(the second: ('a', 5)); an upsert table takes at most one row per key per interval: "
        "reduce the stream by key first (e.g. reduceByKey), or write with mode='append'"
    )
