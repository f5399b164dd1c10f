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

States are pickles, so a snapshot is trusted only after its content matched the SHA-256 its
writer recorded (:mod:`dstream.storage.integrity`): :func:`write_table` returns the digest,
which names the published file and goes into the checkpoint's ``_COMPLETE`` manifest
(:func:`encode_manifest`); a reader opens a snapshot only through
:func:`~dstream.storage.integrity.open_verified` with that digest.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping

from dstream.storage.integrity import VerifiedFile, sha256_file
from dstream.storage.taskfs import TaskFiles

__all__ = ["StateTable", "decode_manifest", "encode_manifest", "write_table"]

_SCHEMA = (
    "CREATE TABLE state (k BLOB PRIMARY KEY, s BLOB NOT NULL, t INTEGER NOT NULL) WITHOUT ROWID",
    "CREATE INDEX state_by_time ON state (t)",
    "CREATE TABLE meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL)",
)
_CHUNK = 500  # SQLite's default limit on bound parameters is 999


class StateTable:
    """Read-only view of one verified snapshot file (or of an empty snapshot when ``file`` is
    None); closing the table closes the file."""

    def __init__(self, file: VerifiedFile | None) -> None:
        self._file = file
        self._db: sqlite3.Connection | None = None
        if file is not None:
            # immutable=1: no locking, no journal; the file never changes once published.
            # file.path opens the very file whose digest was checked.
            self._db = sqlite3.connect(f"file:{file.path}?mode=ro&immutable=1", uri=True)

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None
        if self._file is not None:
            self._file.close()
            self._file = None

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
    path_for: Callable[[str], str],
    base: str | None,
    changes: Mapping[bytes, tuple[bytes, int] | None],
) -> tuple[str, str]:
    """Publish the snapshot ``base`` + ``changes`` (``None`` deletes a key); returns its path
    and the hex SHA-256 of its content.

    ``base`` is a local file to start from (a verified one:
    :attr:`~dstream.storage.integrity.VerifiedFile.path`); the new snapshot is built in a
    private local temporary file, hashed, and published through ``files`` at
    ``path_for(sha256)`` only when complete. A file already there (a retried or speculative
    task built the same bytes) stands.
    """
    # A private directory (mode 0700, random name): nobody else can put a file or a symlink
    # where the snapshot is built.
    workdir = tempfile.mkdtemp(prefix="dstream-snapshot-")
    tmp = os.path.join(workdir, "snapshot.sqlite")
    try:
        if base is not None:
            shutil.copyfile(base, tmp)
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
        sha256 = sha256_file(tmp)
        path = path_for(sha256)
        files.publish_file(path, tmp)
        return path, sha256
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


_MANIFEST_FORMAT = "dstream-snapshots/1"
_HEX_SHA256 = re.compile(r"[0-9a-f]{64}")


def encode_manifest(digests: list[str]) -> bytes:
    """The ``_COMPLETE`` file of a snapshot checkpoint: the SHA-256 of each partition's
    snapshot, in partition order (written by the driver once every snapshot is published)."""
    return json.dumps({"format": _MANIFEST_FORMAT, "sha256": digests}).encode()


def decode_manifest(data: bytes, path: str, partitions: int) -> list[str]:
    """The digests ``encode_manifest`` wrote; an error naming ``path`` for anything else."""
    try:
        manifest = json.loads(data)
        ok = manifest.get("format") == _MANIFEST_FORMAT
        digests = manifest.get("sha256") if ok else None
    except (ValueError, AttributeError):
        digests = None
    if not data:
        raise ValueError(
            f"{path} records no snapshot checksums: the checkpoint was written by an earlier "
            "dstream that did not checksum track() snapshots; start from a new checkpoint "
            "directory"
        )
    if (
        not isinstance(digests, list)
        or len(digests) != partitions
        or not all(isinstance(d, str) and _HEX_SHA256.fullmatch(d) for d in digests)
    ):
        raise ValueError(
            f"{path} is not a manifest of {partitions} snapshot checksums (corrupt, or written "
            "by someone else); the checkpoint directory must be writable only by this "
            "program's user"
        )
    return digests
