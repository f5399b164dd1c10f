"""saveToTable(mode="upsert", key=...): each interval writes the rows of a keyed state's
keys that changed, and the table's current view, read back with the SQL
view docs/tables.md gives and with read_table, is the oracle's totals after every interval;
a bad mode or key, or a table reopened with another, is refused naming both; a key twice
in one interval fails that interval whole."""

from __future__ import annotations

import os
from collections import Counter
from operator import add
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from dstream import StreamingJobError, StreamingSettings, read_table
from dstream.storage.filesystem import LocalFileSystem
from dstream.storage.parquet_table import META_NAME, committed_intervals

from .conftest import Harness

B = 1000
SCHEMA = "word string, count long"
WORDS = ["ant", "bee", "cat", "dog", "eel", "fox"]


def words_of(i: int) -> list[str]:
    return [WORDS[(i * 5 + j * 7) % len(WORDS)] for j in range(1 + i % 4)]


def current_view_sql(path: Path) -> str:
    """The current view of an upsert table keyed by ``word``, as docs/tables.md writes it."""
    return f"""
        SELECT word, count, batch_ms FROM (
          SELECT *, row_number() OVER (PARTITION BY word ORDER BY batch_ms DESC) AS newest
          FROM parquet.`{path}`
        ) WHERE newest = 1"""


def rows(df: Any) -> dict[str, int]:
    return {r["word"]: r["count"] for r in df.collect()}


def test_a_running_total_upserted_each_interval_is_the_oracle_total(
    harness: Any, tmp_path: Path
) -> None:
    changed = tmp_path / "changed"
    h: Harness = harness()
    h.ssc.checkpoint(str(tmp_path / "ckpt"))
    sc = h.ssc.sparkContext
    n = 4
    batches = [sc.parallelize(words_of(i), 2) for i in range(1, n + 1)]
    counts = h.ssc.queueStream(batches).map(lambda w: (w, 1)).reduceByKey(add)
    totals = counts.updateStateByKey(lambda new, old: (old or 0) + sum(new), 2)
    # Only the keys this interval changed (the whole state each interval works the same).
    totals.join(counts).mapValues(lambda tc: tc[0]).saveToTable(
        str(changed), SCHEMA, mode="upsert", key=["word"]
    )
    spark = SparkSession.builder.getOrCreate()
    h.ssc.start()
    for i in range(1, n + 1):
        h.run_batches(1)
        if i == 1:  # parquet.`path` finds the schema in a committed interval
            spark.sql(f"CREATE OR REPLACE TEMP VIEW totals_now AS {current_view_sql(changed)}")
        oracle = dict(Counter(w for j in range(1, i + 1) for w in words_of(j)))
        assert rows(spark.sql("SELECT * FROM totals_now")) == oracle, i
    assert rows(read_table(spark, str(changed))) == oracle
    # The changed table holds each interval's changed keys only: the interval's words.
    history = read_table(spark, str(changed), changes=True).collect()
    per_interval = {
        t: {r["word"] for r in history if r["batch_ms"] == t} for t in range(B, (n + 1) * B, B)
    }
    assert per_interval == {i * B: set(words_of(i)) for i in range(1, n + 1)}
    # The current view names each key's newest interval.
    newest = {r["word"]: r["batch_ms"] for r in read_table(spark, str(changed)).collect()}
    assert newest == {w: max(i * B for i in range(1, n + 1) if w in words_of(i)) for w in newest}
    with pytest.raises(ValueError, match=r"key \['count'\] differs from the upsert table"):
        read_table(spark, str(changed), key="count")


def test_a_bad_mode_or_key_is_refused_naming_the_value_and_the_fix(
    harness: Any, tmp_path: Path
) -> None:
    h: Harness = harness()
    stream = h.ssc.queueStream([[("a", 1)]])
    table = str(tmp_path / "t")
    with pytest.raises(ValueError, match=r"mode 'merge' must be 'append' .* or 'upsert'"):
        stream.saveToTable(table, SCHEMA, mode="merge", key="word")
    with pytest.raises(ValueError, match=r"mode='upsert' needs key= one or more distinct"):
        stream.saveToTable(table, SCHEMA, mode="upsert")
    with pytest.raises(ValueError, match=r"needs key= .* \(word, count\) .* got \['w'\]"):
        stream.saveToTable(table, SCHEMA, mode="upsert", key="w")
    with pytest.raises(ValueError, match=r"key \['word'\] is for mode='upsert'"):
        stream.saveToTable(table, SCHEMA, key="word")
    with pytest.raises(ValueError, match=r"key 3 must be a column name or a list"):
        stream.saveToTable(table, SCHEMA, mode="upsert", key=3)  # type: ignore[arg-type]
    assert not os.path.exists(table)  # nothing was made by a refused call
    stream.saveToTable(table, SCHEMA, mode="upsert", key="word")
    stream.saveToTable(table)  # the table's schema, mode and key
    with pytest.raises(ValueError) as err:
        stream.saveToTable(table, mode="append")
    assert str(err.value) == (
        f"saveToTable(): mode='append' differs from the table {table}'s mode='upsert' "
        f"key=['word'] ({META_NAME}); pass the table's (or leave mode and key out to use "
        "them), or write to a new path"
    )
    with pytest.raises(ValueError, match=r"mode='upsert' key=\['count'\] differs from"):
        stream.saveToTable(table, key="count")


def test_a_key_twice_in_one_interval_fails_that_interval_whole(
    harness: Any, tmp_path: Path
) -> None:
    table = tmp_path / "t"
    h: Harness = harness(settings=StreamingSettings(output_retries=0))
    sc = h.ssc.sparkContext
    batches = [[("a", 1)], [("b", 2), ("c", 3), ("b", 4)], [("a", 5)]]
    stream = h.ssc.queueStream([sc.parallelize(b, 3) for b in batches])
    stream.saveToTable(str(table), SCHEMA, mode="upsert", key="word")
    h.ssc.start()
    h.run_batches(3)
    with pytest.raises(StreamingJobError) as info:
        h.ssc.awaitTerminationOrTimeout(0)
    assert "interval 2000 ms has two rows of key word='b' for the upsert table" in str(info.value)
    assert "reduce the stream by key first" in str(info.value)
    assert committed_intervals(LocalFileSystem(), str(table)) == [1 * B, 3 * B]
    assert sorted(os.listdir(table)) == [META_NAME, "batch_ms=1000", "batch_ms=3000"]
    spark = SparkSession.builder.getOrCreate()
    assert sorted(tuple(r) for r in read_table(spark, str(table)).collect()) == [("a", 5, 3 * B)]
