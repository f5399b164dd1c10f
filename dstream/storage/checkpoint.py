"""State checkpoints: every partition of a state RDD is written by its own task and read back
by its own task, so a checkpoint keeps the state's partitioning and reading it costs no
shuffle.

Layout, under the checkpoint directory::

    state-<stream>/<batch ms>/part-00000 ... part-<n-1>, _COMPLETE

A partition file is written under a hidden temporary name and renamed into place without
replacing anything (a retried or speculative task finds the file there and stops: the
content is deterministic). The driver writes ``_COMPLETE`` once the whole write job has
succeeded; only then is the checkpoint used, recorded in the metadata journal, and older
checkpoints become deletable.

A file is ``MAGIC | sha256(payload) | payload`` where the payload is the pickled list of
the partition's records, so a torn or corrupted file is detected, never silently read, and a
payload changed by someone who cannot also rewrite the header is refused before it is
unpickled (:mod:`dstream.storage.integrity` says what that does and does not protect
against: the digest is not keyed, so whoever can rewrite the whole file can fake it).
"""

from __future__ import annotations

import hashlib
import pickle
from typing import Any

from dstream.storage.taskfs import TaskFiles

__all__ = [
    "COMPLETE",
    "CorruptCheckpointError",
    "checkpoint_dir",
    "partition_path",
    "read_partition",
    "write_partition",
]

MAGIC = b"DSTRSTA1"
COMPLETE = "_COMPLETE"


class CorruptCheckpointError(OSError):
    """A checkpoint file that is torn, truncated or not ours."""


def checkpoint_dir(root: str, stream_key: str, time_ms: int) -> str:
    return f"{root.rstrip('/')}/state-{stream_key}/{time_ms}"


def partition_path(directory: str, partition: int) -> str:
    return f"{directory}/part-{partition:05d}"


def encode(records: list[Any]) -> bytes:
    payload = pickle.dumps(records, protocol=5)
    return MAGIC + hashlib.sha256(payload).digest() + payload


def decode(data: bytes, path: str) -> list[Any]:
    if len(data) < len(MAGIC) + 32 or not data.startswith(MAGIC):
        raise CorruptCheckpointError(f"{path} is not a dstream state checkpoint (bad header)")
    digest, payload = data[len(MAGIC) : len(MAGIC) + 32], data[len(MAGIC) + 32 :]
    if hashlib.sha256(payload).digest() != digest:
        raise CorruptCheckpointError(f"{path} is torn or corrupt (checksum mismatch)")
    records: list[Any] = pickle.loads(payload)
    return records


def write_partition(files: TaskFiles, path: str, records: list[Any]) -> bool:
    """Write one partition (runs in a task). False if it was already written."""
    return files.publish(path, encode(records))


def read_partition(files: TaskFiles, path: str) -> list[Any]:
    """Read one partition back (runs in a task)."""
    return decode(files.read_bytes(path), path)
