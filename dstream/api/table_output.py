"""``saveToTable``: each interval's records appended to a Parquet table exactly once, and
``read_table``, the table as a DataFrame (live, from any Spark session).

The table's format and its commit are :mod:`dstream.storage.parquet_table`; the per-record
fitting of a record to the schema, in the tasks, is :mod:`dstream.tasks.table_rows`."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from dstream.storage.filesystem import filesystem_for
from dstream.storage.parquet_table import (
    PARTITION_COLUMN,
    commit_table_interval,
    ensure_table,
    read_schema_json,
)
from dstream.streams.output import OutputDStream
from dstream.streams.transformed import RecordsDStream
from dstream.tasks.table_rows import row_fitter
from dstream.time import Time

if TYPE_CHECKING:
    from pyspark import RDD, SparkContext
    from pyspark.sql import DataFrame, SparkSession

    from dstream.api.common import CommonOps

__all__ = ["read_table", "save_to_table"]

OPERATION = "saveToTable()"


def save_to_table(ops: CommonOps[Any], path: object, schema: object) -> None:
    """See :meth:`dstream.api.outputs.OutputOps.saveToTable`."""
    if not isinstance(path, str) or not path:
        raise ValueError(
            f"{OPERATION} path {path!r} must be a non-empty path string: the table's "
            "directory, e.g. '/data/tables/counts' or 'hdfs://nn:8020/tables/counts'"
        )
    node = ops._node
    graph = node._graph
    graph.check_can_add("saveToTable")
    sc = graph.sc
    fs = filesystem_for(path, sc)
    schema_json = ensure_table(fs, path, _schema_json(schema, sc), OPERATION)

    # The records, fitted to the schema by a per-record step of their own: a record that does
    # not fit follows bad_records like a map that raises (fails the interval, or is set aside).
    fit = ops._user("saveToTable", row_fitter(schema_json))
    rows = RecordsDStream(node, "map", fit, True)

    def commit(time: Time, rdd: RDD[Any]) -> None:
        from pyspark.sql.types import StructType

        struct = StructType.fromJson(json.loads(schema_json))
        lease = graph.runtime.lease
        epoch = 0 if lease is None else lease.epoch

        def write(tmp: str) -> None:
            df = _session(rdd.context).createDataFrame(rdd, struct, verifySchema=False)
            df.write.parquet(tmp)

        commit_table_interval(filesystem_for(path, rdd.context), path, time.ms, write, epoch)

    # Tentative results never reach the table (no tentative_fn): the table holds exact
    # intervals only, each committed once.
    OutputDStream(rows, commit, name="saveToTable")


def read_table(spark: SparkSession, path: str) -> DataFrame:
    """The table ``saveToTable`` writes at ``path``, as a DataFrame: the schema's columns and
    ``batch_ms`` (the interval's batch time, ms, a ``long``), the intervals committed when it
    is called (also none: an empty DataFrame of the schema).

    A DataFrame keeps the listing it was made with: call this again for the intervals
    committed since. A SQL query over ``parquet.`<path>` `` (or a temporary view defined as
    one, ``CREATE TEMP VIEW counts AS SELECT * FROM parquet.`<path>` ``) lists the table at
    every query instead, once an interval is committed.
    """
    from pyspark.sql.types import LongType, StructField, StructType

    have = read_schema_json(filesystem_for(path, spark.sparkContext), path)
    if have is None:
        raise FileNotFoundError(
            f"read_table(): {path} is not a table saveToTable() wrote (no schema file there); "
            "pass the path given to saveToTable()"
        )
    struct = StructType.fromJson(json.loads(have))
    full = StructType([*struct.fields, StructField(PARTITION_COLUMN, LongType(), False)])
    return spark.read.schema(full).parquet(path)


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
    from pyspark.sql import SparkSession

    return SparkSession.builder.config(conf=sc.getConf()).getOrCreate()
