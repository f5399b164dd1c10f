"""A Parquet table a stream appends to, one interval at a time and each interval exactly once,
that Spark reads as a table (``spark.read.parquet(path)``, ``SELECT ... FROM parquet.`path```).

Why not Delta Lake or Iceberg: neither has a release that runs on Spark 4.3 (docs/tables.md
says what was tried). This format keeps their promise for a streaming writer with what every
Spark reader already understands, a partitioned Parquet directory::

    table/_dstream_table.json                    schema, mode (and key), version (written once)
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

Both modes write the same way: an upsert table's intervals hold each interval's changed
rows (one per key), and its current view, each key's row of the newest interval, is a
query (``row_number() OVER (PARTITION BY key ORDER BY batch_ms DESC) = 1``), never a
rewrite of committed files.
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
    "APPEND",
    "FORMAT",
    "META_NAME",
    "MODES",
    "PARTITION_COLUMN",
    "UPSERT",
    "TableLayout",
    "check_mode",
    "commit_table_interval",
    "committed_intervals",
    "ensure_table",
    "interval_dir",
    "read_layout",
    "read_schema_json",
]

FORMAT = "dstream-parquet-table"
VERSION = 2  # version 1: append tables, without mode and key
META_NAME = "_dstream_table.json"
PARTITION_COLUMN = "batch_ms"  # the interval's batch time, ms: one partition per interval
_PREFIX = f"{PARTITION_COLUMN}="


def interval_dir(table: str, time_ms: int) -> str:
    """Where interval ``time_ms``'s rows are once committed: ``<table>/batch_ms=<ms>``."""
    return join(table, f"{_PREFIX}{time_ms}")


APPEND, UPSERT = "append", "upsert"
MODES = (APPEND, UPSERT)


@dataclass(frozen=True)
class TableLayout:
    """A table's metadata file: the schema of its rows (Spark's StructType JSON, without the
    partition column), its mode and, for an upsert table, its key columns.

    ``append``: every interval's rows, all of them the table. ``upsert``: every interval's
    rows are that interval's changed keys (at most one row per key); the table's current
    view is each key's row of the newest interval that has one. An append table keeps the
    format's version 1 file (readable by dstream before modes); an upsert table is version
    2, which a dstream without modes refuses rather than appending to it as a log."""

    schema_json: str
    mode: str = APPEND
    key: tuple[str, ...] = ()

    def to_bytes(self) -> bytes:
        meta: dict[str, Any] = {"format": FORMAT, "version": 1}
        if self.mode != APPEND:
            meta |= {"version": VERSION, "mode": self.mode, "key": list(self.key)}
        meta["partition_column"] = PARTITION_COLUMN
        return json.dumps({**meta, "schema": json.loads(self.schema_json)}, indent=1).encode()

    @staticmethod
    def from_bytes(data: bytes, where: str) -> TableLayout:
        meta = json.loads(data)
        if meta.get("format") != FORMAT or meta.get("version") not in (1, VERSION):
            raise ValueError(
                f"{where} is not a {FORMAT} version 1 or {VERSION} metadata file (it says "
                f"format {meta.get('format')!r}, version {meta.get('version')!r}); this "
                "dstream cannot append to that table: write to another path"
            )
        return TableLayout(
            json.dumps(meta["schema"], sort_keys=True),
            meta.get("mode", APPEND),
            tuple(meta.get("key", ())),
        )


def read_layout(fs: FileSystem, table: str) -> TableLayout | None:
    """The metadata of the table at ``table``; None if there is none yet."""
    meta = join(table, META_NAME)
    if not fs.exists(meta):
        return None
    return TableLayout.from_bytes(fs.read_bytes(meta), meta)


def read_schema_json(fs: FileSystem, table: str) -> str | None:
    """The schema (StructType JSON) of the table at ``table``; None if there is none yet."""
    layout = read_layout(fs, table)
    return None if layout is None else layout.schema_json


def ensure_table(
    fs: FileSystem,
    table: str,
    schema_json: str | None,
    operation: str,
    mode: str | None = None,
    key: tuple[str, ...] | None = None,
) -> TableLayout:
    """The table's layout, creating the table with ``schema_json``, ``mode`` (default
    append) and ``key`` if it does not exist.

    An existing table keeps its schema, mode and key: a different one is refused, naming
    both (None: the table's). A path that exists with other content than a dstream table is
    refused (dstream will not mix its intervals into data it did not write)."""
    layout = read_layout(fs, table)
    if layout is None:
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
        wanted = TableLayout(schema_json, mode or APPEND, key or ())
        check_mode(wanted, operation)
        fs.mkdirs(table)
        data = wanted.to_bytes()
        publish(fs, join(table, META_NAME), lambda tmp: fs.write_bytes(tmp, data))
        layout = read_layout(fs, table)  # another writer may have created it meanwhile
        assert layout is not None
    if schema_json is not None and _canonical(schema_json) != _canonical(layout.schema_json):
        raise ValueError(
            f"{operation}: schema {_simple(schema_json)} differs from the table {table}'s "
            f"{_simple(layout.schema_json)} ({META_NAME}); pass the table's schema (or "
            "schema=None to use it), or write to a new path"
        )
    if (mode is not None and mode != layout.mode) or (key is not None and key != layout.key):
        raise ValueError(
            f"{operation}: {_mode_text(mode or layout.mode, key)} differs from the table "
            f"{table}'s {_mode_text(layout.mode, layout.key)} ({META_NAME}); pass the "
            "table's (or leave mode and key out to use them), or write to a new path"
        )
    return layout


def check_mode(layout: TableLayout, operation: str) -> None:
    """Refuses a mode other than append and upsert, a key without upsert, an upsert without
    a key and a key naming no column of the schema, naming the value and the fix."""
    names = [f["name"] for f in json.loads(layout.schema_json).get("fields", [])]
    if layout.mode not in MODES:
        raise ValueError(
            f"{operation} mode {layout.mode!r} must be 'append' (every interval's rows) or "
            "'upsert' (each interval's changed rows of a key, the table's view the newest)"
        )
    if layout.mode == APPEND and layout.key:
        raise ValueError(
            f"{operation} key {list(layout.key)} is for mode='upsert'; pass mode='upsert' "
            "to merge rows by key, or no key to append (read_table(spark, path, key=...) "
            "merges an append table on read)"
        )
    if layout.mode == UPSERT:
        unknown = [k for k in layout.key if k not in names]
        if not layout.key or unknown or len(set(layout.key)) != len(layout.key):
            raise ValueError(
                f"{operation} mode='upsert' needs key= one or more distinct columns of the "
                f"schema ({', '.join(names)}) that identify a row, got "
                f"{list(layout.key)}; e.g. key='word'"
            )
        types = {f["name"]: f["type"] for f in json.loads(layout.schema_json)["fields"]}
        nested = [k for k in layout.key if not isinstance(types[k], str)]
        if nested:
            raise ValueError(
                f"{operation} key column {nested[0]!r} is a {_type_name(types[nested[0]])}; "
                "an upsert key is made of atomic columns (string, numbers, date, ...): "
                "key the table on those"
            )


def _mode_text(mode: str, key: tuple[str, ...] | None) -> str:
    return f"mode={mode!r}" + (f" key={list(key)}" if key else "")


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
