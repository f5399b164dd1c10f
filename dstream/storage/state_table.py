"""Snapshots of keyed state: one SQLite file per state partition.

``track()`` keeps most of its state here and only its recent changes in RDDs (see
:mod:`dstream.tasks.track_state`). A snapshot is immutable once written; a newer one is
made by copying the file (a plain file copy, at disk speed, with no Python per key) and
applying the changes since, in one transaction. Reading needs no full load: a task looks up
the keys that received events, and finds keys that timed out through an index on the time
of their last event — so an interval costs what its active keys cost, however many idle keys
the snapshot holds.

Rows are ``(key, state, last)``: the pickled key (its canonical bytes), the pickled state,
and the batch time (ms) of the key's last event.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import tempfile
from collections.abc import Iterable, Iterator, Mapping

from dstream.storage.taskfs import TaskFiles

__all__ = ["StateTable", "write_table"]

_SCHEMA = (
    "CREATE TABLE state (k BLOB PRIMARY KEY, s BLOB NOT NULL, t INTEGER NOT NULL) WITHOUT ROWID",
    "CREATE INDEX state_by_time ON state (t)",
    "CREATE TABLE meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL)",
)
_CHUNK = 500  # SQLite's default limit on bound parameters is 999


class StateTable:
    """Read-only view of one snapshot file (or of an empty snapshot when ``path`` is None)."""

    def __init__(self, path: str | None) -> None:
        self.path = path
        self._db: sqlite3.Connection | None = None
        if path is not None:
            # immutable=1: no locking, no journal; the file never changes once published.
            self._db = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    def __enter__(self) -> StateTable:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def lookup(self, keys: Iterable[bytes]) -> dict[bytes, tuple[bytes, int]]:
        """``{key: (state, last)}`` for those of ``keys`` present in the snapshot."""
        if self._db is None:
            return {}
        found: dict[bytes, tuple[bytes, int]] = {}
        wanted = list(keys)
        for i in range(0, len(wanted), _CHUNK):
            chunk = wanted[i : i + _CHUNK]
            marks = ",".join("?" * len(chunk))
            for k, s, t in self._db.execute(
                f"SELECT k, s, t FROM state WHERE k IN ({marks})", chunk
            ):
                found[k] = (s, t)
        return found

    def last_between(self, after_ms: int, upto_ms: int) -> list[bytes]:
        """Keys whose last event time is in ``(after_ms, upto_ms]`` (uses the time index)."""
        if self._db is None or upto_ms <= after_ms:
            return []
        rows = self._db.execute("SELECT k FROM state WHERE t > ? AND t <= ?", (after_ms, upto_ms))
        return [k for (k,) in rows]

    def scan(self) -> Iterator[tuple[bytes, bytes, int]]:
        if self._db is None:
            return iter(())
        return iter(self._db.execute("SELECT k, s, t FROM state"))

    def count(self) -> int:
        """Number of keys (recorded when the snapshot was written: O(1))."""
        if self._db is None:
            return 0
        (n,) = self._db.execute("SELECT value FROM meta WHERE name = 'rows'").fetchone()
        return int(n)


def write_table(
    files: TaskFiles,
    path: str,
    base: str | None,
    changes: Mapping[bytes, tuple[bytes, int] | None],
) -> bool:
    """Publish the snapshot ``base`` + ``changes`` (``None`` deletes a key) at ``path``.

    ``base`` is a local file (see :meth:`TaskFiles.local_copy`); the new snapshot is built
    in a local temporary file and published through ``files`` only when complete. Returns
    False if ``path`` already exists (a retried or speculative task: the content is
    deterministic, so the first copy stands).
    """
    if files.exists(path):
        return False
    fd, tmp = tempfile.mkstemp(prefix=".dstream-snapshot-", suffix=".sqlite")
    os.close(fd)
    try:
        if base is not None:
            shutil.copyfile(base, tmp)
        else:
            os.unlink(tmp)  # SQLite creates it
        db = sqlite3.connect(tmp, isolation_level=None)
        try:
            db.execute("PRAGMA journal_mode=OFF")
            db.execute("PRAGMA synchronous=OFF")  # durability comes from the publish step
            if base is None:
                for stmt in _SCHEMA:
                    db.execute(stmt)
            db.execute("BEGIN")
            upserts = [(k, v[0], v[1]) for k, v in changes.items() if v is not None]
            deletes = [(k,) for k, v in changes.items() if v is None]
            db.executemany("DELETE FROM state WHERE k = ?", deletes)
            db.executemany("INSERT OR REPLACE INTO state (k, s, t) VALUES (?, ?, ?)", upserts)
            db.execute(
                "INSERT OR REPLACE INTO meta (name, value) SELECT 'rows', count(*) FROM state"
            )
            db.execute("COMMIT")
        finally:
            db.close()
        return files.publish_file(path, tmp)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
