"""A stream's record as a row of a table's schema, in the task (``saveToTable``).

A record that does not fit raises, naming the record, the schema and what was wrong; the
stream's per-record step that calls this is covered by ``bad_records``: the interval fails
(``"fail"``) or the record is set aside (``"quarantine"``), and no interval is half written.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from typing import Any

__all__ = ["UniqueKeys", "row_fitter", "unique_keys"]


def row_fitter(schema_json: str) -> Callable[[Any], tuple[Any, ...]]:
    """``fit(record) -> tuple`` for the schema (StructType JSON). What a record may be:

    * a ``pyspark.sql.Row`` with field names, or a dict: taken by name, every field of the
      schema present and no other;
    * a tuple or list (or a Row without names): by position, one value per field;
    * with a one-field schema, any other value: the field's value (``lines.saveToTable(path,
      "line string")``).

    Each value is checked against its field's type and nullability (PySpark's own rule, as
    ``createDataFrame(..., verifySchema=True)`` applies it)."""
    from pyspark.sql.types import Row, StructType, _make_type_verifier

    schema = StructType.fromJson(json.loads(schema_json))
    names = tuple(schema.names)
    verify = _make_type_verifier(schema)
    simple = schema.simpleString()

    def values_of(record: Any) -> tuple[Any, ...]:
        if isinstance(record, Row) and hasattr(record, "__fields__"):
            record = record.asDict()
        if isinstance(record, dict):
            missing = [n for n in names if n not in record]
            extra = [str(k) for k in record if k not in names]
            if missing or extra:
                wrong = [f"no field {', '.join(missing)}"] if missing else []
                wrong += [f"fields {', '.join(extra)} not in the schema"] if extra else []
                raise ValueError(
                    f"record {_short(record)} does not fit the table's schema {simple}: "
                    + "; ".join(wrong)
                )
            return tuple(record[n] for n in names)
        if isinstance(record, (tuple, list)):
            if len(record) != len(names):
                raise ValueError(
                    f"record {_short(record)} has {len(record)} values; the table's schema "
                    f"{simple} has {len(names)} fields"
                )
            return tuple(record)
        if len(names) == 1:
            return (record,)
        raise ValueError(
            f"record {_short(record)} is a {type(record).__name__}; the table's schema "
            f"{simple} takes a tuple, a list, a dict or a Row per record"
        )

    def fit(record: Any) -> tuple[Any, ...]:
        values = values_of(record)
        try:
            verify(values)
        except (TypeError, ValueError) as exc:
            raise type(exc)(
                f"record {_short(record)} does not fit the table's schema {simple}: {exc}"
            ) from None
        return values

    return fit


def _short(record: Any) -> str:
    text = repr(record)
    return text if len(text) <= 200 else text[:197] + "..."


class UniqueKeys:
    """An upsert table's rule in the task: one row per key in an interval. ``key_of(row)``
    is a fitted row's key; called on a partition of ``(key, row)`` pairs in which every row
    of a key meets (partitioned by key), it yields the rows and raises on a key's second
    row, naming the key, that row and the fix (keys only are kept: a partition's rows
    stream through)."""

    def __init__(self, names: tuple[str, ...], key: tuple[str, ...], table: str, time_ms: int):
        self.positions = tuple(names.index(k) for k in key)
        self.key = key
        self.table = table
        self.time_ms = time_ms

    def key_of(self, row: tuple[Any, ...]) -> tuple[Any, ...]:
        return tuple(row[i] for i in self.positions)

    def __call__(self, pairs: Iterable[tuple[tuple[Any, ...], tuple[Any, ...]]]) -> Iterator[Any]:
        seen: set[tuple[Any, ...]] = set()
        for key, row in pairs:
            if key in seen:
                shown = ", ".join(f"{n}={v!r}" for n, v in zip(self.key, key, strict=True))
                raise ValueError(
                    f"saveToTable(): interval {self.time_ms} ms has two rows of key {shown} "
                    f"for the upsert table {self.table} (the second: {_short(row)}); an "
                    "upsert table takes at most one row per key per interval: reduce the "
                    "stream by key first (e.g. reduceByKey), or write with mode='append'"
                )
            seen.add(key)
            yield row


def unique_keys(schema_json: str, key: tuple[str, ...], table: str, time_ms: int) -> UniqueKeys:
    """The one-row-per-key check of an upsert table's interval ``time_ms``."""
    names = tuple(f["name"] for f in json.loads(schema_json)["fields"])
    return UniqueKeys(names, key, table, time_ms)
