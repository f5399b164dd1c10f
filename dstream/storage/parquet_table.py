"""A Parquet table a stream appends to, one interval at a time and each interval exactly once,
that Spark reads as a table (``spark.read.parquet(path)``, ``SELECT ... FROM parquet.`path```).

Why not Delta Lake or Iceberg: neither has a release that runs on Spark 4.3 (docs/tables.md
says what was tried). This format keeps their promise for a streaming writer with what every
Spark reader already understands, a partitioned Parquet directory::

    table/_dstream_table.json                    its schema and format version (written once)
    table/batch_ms=1000/part-*.parquet, _DSTREAM_COMMIT     interval 1000 ms (committed)
    table/.batch_ms=2000.tmp-e3-4f1c…/                      interval 2000 ms being written
              │  rename (no replace): the commit
              ▼
    table/batch_ms=2000/part-*.parquet, _DSTREAM_COMMIT

An interval's rows are written into a hidden directory and renamed into place as the
partition ``batch_ms=<interval ms>`` (:func:`dstream.storage.commits.commit_interval`, the
same commit as ``saveAsTextFiles``): the rename is atomic and refuses to replace, so an
interval is in the table whole or not at all, and a recomputed, retried or replayed interval
never twice. Spark's file listing skips names that start with ``.`` or ``_``, so a reader
sees committed intervals only, and a committed directory never changes afterwards.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dstream.storage.commits import COMMIT_MARKER, commit_interval
from dstream.storage.filesystem import FileSystem, join, publish

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = [
    "FORMAT",
    "META_NAME",
    "PARTITION_COLUMN",
    "TableLayout",
    "commit_table_interval",
    "committed_intervals",
    "ensure_table",
    "interval_dir",
    "read_schema_json",
]

FORMAT = "dstream-parquet-table"
VERSION = 1
META_NAME = "_dstream_table.json"
PARTITION_COLUMN = "batch_ms"  # the interval's batch time, ms: one partition per interval
_PREFIX = f"{PARTITION_COLUMN}="


def interval_dir(table: str, time_ms: int) -> str:
    """Where interval ``time_ms``'s rows are once committed: ``<table>/batch_ms=<ms>``."""
    return join(table, f"{_PREFIX}{time_ms}")


@dataclass(frozen=True)
class TableLayout:
    """A table's metadata file: the schema of its rows (Spark's StructType JSON, without the
    partition column) and the format's version."""

    schema_json: str

    def to_bytes(self) -> bytes:
        meta = {"format": FORMAT, "version": VERSION, "partition_column": PARTITION_COLUMN}
        return json.dumps({**meta, "schema": json.loads(self.schema_json)}, indent=1).encode()

    @staticmethod
    def from_bytes(data: bytes, where: str) -> TableLayout:
        meta = json.loads(data)
        if meta.get("format") != FORMAT or meta.get("version") != VERSION:
            raise ValueError(
                f"{where} is not a {FORMAT} version {VERSION} metadata file (it says format "
                f"{meta.get('format')!r}, version {meta.get('version')!r}); this dstream "
                "cannot append to that table: write to another path"
            )
        return TableLayout(json.dumps(meta["schema"], sort_keys=True))


def read_schema_json(fs: FileSystem, table: str) -> str | None:
    """The schema (StructType JSON) of the table at ``table``; None if there is none yet."""
    meta = join(table, META_NAME)
    if not fs.exists(meta):
        return None
    return TableLayout.from_bytes(fs.read_bytes(meta), meta).schema_json


def ensure_table(fs: FileSystem, table: str, schema_json: str | None, operation: str) -> str:
    """The table's schema, creating the table with ``schema_json`` if it does not exist.

    An existing table keeps its schema: a different ``schema_json`` is refused, naming both.
    A path that exists with other content than a dstream table is refused (dstream will not
    mix its intervals into data it did not write)."""
    have = read_schema_json(fs, table)
    if have is None:
        if fs.exists(table) and [n for n in fs.list_names(table) if not n.startswith(".")]:
            raise FileExistsError(
                f"{operation}: {table} exists and is not a dstream table (no {META_NAME}); "
                "choose a new or empty directory for the table"
            )
        if schema_json is None:
            raise ValueError(
                f"{operation}: the table {table} does not exist yet, so its schema is needed: "
                "pass schema='word string, count long' (a DDL string) or a StructType"
            )
        fs.mkdirs(table)
        data = TableLayout(schema_json).to_bytes()
        publish(fs, join(table, META_NAME), lambda tmp: fs.write_bytes(tmp, data))
        have = read_schema_json(fs, table)  # another writer may have created it meanwhile
        assert have is not None
    if schema_json is not None and _canonical(schema_json) != _canonical(have):
        raise ValueError(
            f"{operation}: schema {_simple(schema_json)} differs from the table {table}'s "
            f"{_simple(have)} ({META_NAME}); pass the table's schema (or schema=None to use "
            "it), or write to a new path"
        )
    return have


def _canonical(schema_json: str) -> Any:
    return json.loads(schema_json)


def _simple(schema_json: str) -> str:
    fields = json.loads(schema_json).get("fields", [])
    return "<" + ", ".join(f"{f['name']} {_type_name(f['type'])}" for f in fields) + ">"


def _type_name(t: Any) -> str:
    return t if isinstance(t, str) else str(t.get("type", t))


def committed_intervals(fs: FileSystem, table: str) -> list[int]:
    """The intervals (ms) committed into the table, in order."""
    found = []
    for name in fs.list_names(table) if fs.exists(table) else []:
        digits = name[len(_PREFIX) :]
        if (
            name.startswith(_PREFIX)
            and digits.isdigit()
            and fs.exists(join(join(table, name), COMMIT_MARKER))
        ):
            found.append(int(digits))
    return sorted(found)


def commit_table_interval(
    fs: FileSystem, table: str, time_ms: int, write: Callable[[str], None], epoch: int = 0
) -> bool:
    """Commit interval ``time_ms``'s rows, written by ``write(tmp_dir)``, exactly once.
    Returns False, writing nothing, if the interval is committed already."""
    return commit_interval(fs, interval_dir(table, time_ms), time_ms, write, epoch)
