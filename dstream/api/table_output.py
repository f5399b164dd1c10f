"""``saveToTable``: each interval's records appended to a Parquet table exactly once, and
``read_table``, the table as a DataFrame (live, from any Spark session).

The table's format and its commit are :mod:`dstream.storage.parquet_table`; the per-record
fitting of a record to the schema, in the tasks, is :mod:`dstream.tasks.table_rows`."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from dstream.jvm import session_of
from dstream.storage.filesystem import filesystem_for
from dstream.storage.parquet_table import (
    MODES,
    PARTITION_COLUMN,
    UPSERT,
    commit_table_interval,
    ensure_table,
    read_layout,
)
from dstream.streams.output import OutputDStream
from dstream.streams.transformed import RecordsDStream
from dstream.tasks.table_rows import row_fitter, unique_keys
from dstream.time import Time

if TYPE_CHECKING:
    from collections.abc import Sequence

    from pyspark import RDD, SparkContext
    from pyspark.sql import DataFrame, SparkSession

    from dstream.api.common import CommonOps

__all__ = ["read_table", "save_to_table"]

OPERATION = "saveToTable()"


def save_to_table(
    ops: CommonOps[Any], path: object, schema: object, mode: object = None, key: object = None
) -> None:
    """See :meth:`dstream.api.outputs.OutputOps.saveToTable`."""
    if not isinstance(path, str) or not path:
        raise ValueError(
            f"{OPERATION} path {path!r} must be a non-empty path string: the table's "
            "directory, e.g. '/data/tables/counts' or 'hdfs://nn:8020/tables/counts'"
        )
    if mode is not None and mode not in MODES:
        raise ValueError(
            f"{OPERATION} mode {mode!r} must be 'append' (every interval's rows) or 'upsert' "
            "(each interval's changed rows, merged by key=...: the table's view is each "
            "key's newest row)"
        )
    keys = _key_columns(key, f"{OPERATION} key")
    node = ops._node
    graph = node.graph
    graph.check_can_add("saveToTable")
    sc = graph.sc
    fs = filesystem_for(path, sc)
    layout = ensure_table(
        fs, path, _schema_json(schema, sc), OPERATION, None if mode is None else str(mode), keys
    )
    schema_json = layout.schema_json

    # The records, fitted to the schema by a per-record step of their own: a record that does
    # not fit follows bad_records like a map that raises (fails the interval, or is set aside).
    fit = ops._user("saveToTable", row_fitter(schema_json))
    rows = RecordsDStream(node, "map", fit, True)

    def commit(time: Time, rdd: RDD[Any]) -> None:
        from pyspark.sql.types import StructType

        struct = StructType.fromJson(json.loads(schema_json))
        lease = graph.runtime.lease
        epoch = 0 if lease is None else lease.epoch

        written = rdd
        if layout.mode == UPSERT:
            # One row per key in an interval, or the view's newest row would be either: the
            # rows of a key meet in one task (a shuffle by key), which fails the interval,
            # before anything of it is committed, on a second one.
            check = unique_keys(schema_json, layout.key, path, time.ms)
            n = max(1, rdd.getNumPartitions())
            written = rdd.keyBy(check.key_of).partitionBy(n).mapPartitions(check, True)

        def write(tmp: str) -> None:
            df = _session(rdd.context).createDataFrame(written, struct, verifySchema=False)
            df.write.parquet(tmp)

        commit_table_interval(filesystem_for(path, rdd.context), path, time.ms, write, epoch)

    # Tentative results never reach the table (no tentative_fn): the table holds exact
    # intervals only, each committed once.
    OutputDStream(rows, commit, name="saveToTable")


def read_table(
    spark: SparkSession,
    path: str,
    key: str | Sequence[str] | None = None,
    *,
    changes: bool = False,
) -> DataFrame:
    """The table ``saveToTable`` writes at ``path``, as a DataFrame: the schema's columns and
    ``batch_ms`` (the interval's batch time, ms, a ``long``), the intervals committed when it
    is called (also none: an empty DataFrame of the schema).

    An append table: every row of every interval. An upsert table (``saveToTable(...,
    mode="upsert", key=...)``): its current view, one row per key, the one of the newest
    interval that wrote the key; ``changes=True`` gives every interval's rows instead.

    A DataFrame keeps the listing it was made with: call this again for the intervals
    committed since. A SQL query over ``parquet.`<path>` `` (or a temporary view defined as
    one, ``CREATE TEMP VIEW counts AS SELECT * FROM parquet.`<path>` ``) lists the table at
    every query instead, once an interval is committed (docs/tables.md has an upsert
    table's view in SQL).

    ``key`` (a column or a list of columns) merges an append table by key on read, one row
    per key, the one of its newest interval: e.g. ``totals.saveToTable(path, "word string,
    count long")`` then ``read_table(spark, path, key="word")`` is the running totals. An
    upsert table is merged by its own key (``key`` may repeat it, not name another).
    """
    from pyspark.sql.types import LongType, StructField, StructType

    layout = read_layout(filesystem_for(path, spark.sparkContext), path)
    if layout is None:
        raise FileNotFoundError(
            f"read_table(): {path} is not a table saveToTable() wrote (no schema file there); "
            "pass the path given to saveToTable()"
        )
    struct = StructType.fromJson(json.loads(layout.schema_json))
    full = StructType([*struct.fields, StructField(PARTITION_COLUMN, LongType(), False)])
    df = spark.read.schema(full).parquet(path)
    keys = _key_columns(key, "read_table() key")
    if layout.mode == UPSERT:
        if keys is not None and keys != layout.key:
            raise ValueError(
                f"read_table(): key {list(keys)} differs from the upsert table {path}'s key "
                f"{list(layout.key)}; leave key out (the table's is used)"
            )
        keys = None if changes else layout.key
    if keys is None:
        return df
    unknown = [k for k in keys if k not in struct.names]
    if unknown:
        raise ValueError(
            f"read_table(): key {key!r} must name columns of the table {path} "
            f"({', '.join(struct.names)}); {', '.join(map(repr, unknown))} is not one"
        )
    from pyspark.sql import Window
    from pyspark.sql import functions as f

    newest = Window.partitionBy(*keys).orderBy(f.col(PARTITION_COLUMN).desc())
    rank = "__dstream_newest"
    return df.withColumn(rank, f.row_number().over(newest)).where(f.col(rank) == 1).drop(rank)


def _key_columns(key: object, what: str) -> tuple[str, ...] | None:
    if key is None:
        return None
    keys = (key,) if isinstance(key, str) else key
    if (
        not isinstance(keys, (list, tuple))
        or not keys
        or not all(isinstance(k, str) and k for k in keys)
    ):
        raise ValueError(
            f"{what} {key!r} must be a column name or a list of column names, e.g. 'word' "
            "or ['user', 'day']"
        )
    return tuple(keys)


def _schema_json(schema: object, sc: SparkContext) -> str | None:
    from pyspark.sql.types import DataType, StructType

    if schema is None:
        return None
    if isinstance(schema, str):
        _session(sc)  # DDL is parsed by Spark's JVM parser
        try:
            parsed = DataType.fromDDL(schema)
        except Exception as exc:
            raise ValueError(
                f"{OPERATION} schema {schema!r} is not a DDL column list Spark parses "
                f"({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}); "
                "write it as 'word string, count long'"
            ) from None
        schema = parsed
    if not isinstance(schema, StructType):
        raise TypeError(
            f"{OPERATION} schema must be a DDL string ('word string, count long'), a "
            f"StructType or None (the existing table's), got {type(schema).__name__}"
        )
    if PARTITION_COLUMN in schema.names:
        raise ValueError(
            f"{OPERATION} schema {schema.simpleString()} has a column {PARTITION_COLUMN!r}, "
            "the column the table adds (each row's interval, ms); rename that column"
        )
    return schema.json()


def _session(sc: SparkContext) -> SparkSession:
    return session_of(sc)
