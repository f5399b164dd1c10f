"""The driver's metadata journal: what a restarted driver needs to carry on.

Every interval the driver writes a record — the graph and the user functions, the batch
interval, the last checkpoint of every state stream, the files each input interval read,
pending and completed intervals — to a temporary file and renames it into place (atomic on
POSIX and on HDFS). Records are numbered; the reader takes the newest one whose checksum is
right and falls back to older ones if the newest is torn or corrupt. A rename that fails is
an error, never a log line. Only the newest few records are kept, and a record is deleted
only after a newer one is durable.

::

    <checkpoint dir>/DSTREAM                 {"format": 1}: this directory is ours
    <checkpoint dir>/metadata/record-000000000042
    <checkpoint dir>/metadata/record-000000000043   (newest)
    <checkpoint dir>/previous/before-epoch-000000000004/metadata/...   (a program set aside)

A record file is ``MAGIC | version (u16) | length (u64) | sha256(payload) | payload``; the
payload is one :class:`JournalRecord`, checked field by field when it is read.
"""

from __future__ import annotations

import errno
import hashlib
import json
import logging
import pickle
import struct
from dataclasses import asdict, dataclass, fields
from typing import Any

from dstream.errors import DStreamError
from dstream.storage.filesystem import FileSystem, RenameError, join, publish

__all__ = [
    "FORMAT_VERSION",
    "CheckpointDirectoryError",
    "CorruptRecordError",
    "JournalRecord",
    "MetadataJournal",
    "decode_record",
    "encode_record",
]

log = logging.getLogger(__name__)

MAGIC = b"DSTRJRNL"
# 2: the journal record is a typed JournalRecord, and the program's classes moved to
# dstream.api / dstream.streams / dstream.tasks (a format-1 graph names the old modules).
FORMAT_VERSION = 2
_HEADER = struct.Struct("<8sHQ32s")
MARKER = "DSTREAM"
PREVIOUS = "previous"  # programs a new one replaced in this directory (MetadataJournal.set_aside)
_PREFIX = "record-"


class CheckpointDirectoryError(DStreamError, ValueError):
    """A checkpoint directory that is not ours, unreadable, or from an incompatible version.
    dstream never writes into such a directory."""


class CorruptRecordError(DStreamError, ValueError):
    """One metadata record is torn or corrupt (the reader then tries an older one)."""


def encode_record(payload: bytes) -> bytes:
    return (
        _HEADER.pack(MAGIC, FORMAT_VERSION, len(payload), hashlib.sha256(payload).digest())
        + payload
    )


def decode_record(data: bytes, name: str = "record") -> bytes:
    if len(data) < _HEADER.size:
        raise CorruptRecordError(f"{name}: {len(data)} bytes, shorter than a record header (torn)")
    magic, version, length, digest = _HEADER.unpack_from(data)
    if magic != MAGIC:
        raise CorruptRecordError(f"{name}: not a dstream metadata record")
    if version != FORMAT_VERSION:
        raise CheckpointDirectoryError(
            f"{name} was written by an incompatible dstream (record format {version}, this "
            f"dstream reads format {FORMAT_VERSION}); use that version to recover it, or a new "
            "checkpoint directory to start afresh"
        )
    payload = data[_HEADER.size :]
    if len(payload) != length:
        raise CorruptRecordError(f"{name}: {len(payload)} of {length} payload bytes (torn)")
    if hashlib.sha256(payload).digest() != digest:
        raise CorruptRecordError(f"{name}: checksum mismatch (corrupt)")
    return payload


@dataclass(frozen=True)
class JournalRecord:
    """What a restarted driver needs to carry on, as of one moment of the running program.

    ``generated_ms``/``completed_ms``: the last interval generated, and the interval up to
    which every interval is done; ``pending_ms`` were generated and not complete (they are
    run again); ``failed_ms`` are done but failed (their output still failed after its
    retries): never counted as completed. ``graph`` is the pickled program (streams and user
    functions, written once at start), ``names`` each stream's journal name (to rebind
    changed code), ``streams`` what each stream must carry over (the files each interval
    read, a state's last checkpoint). ``settings`` (a pickled StreamingSettings) and
    ``spark_conf`` (the SparkContext's settings, driver-specific ones left out) come back
    with the program; ``epoch`` is the writing driver's lease on the directory.
    """

    batch_ms: int
    zero_ms: int
    generated_ms: int | None
    completed_ms: int | None
    pending_ms: tuple[int, ...]
    failed_ms: tuple[int, ...]
    graph: bytes
    names: dict[int, str]
    streams: dict[int, dict[str, Any]]
    spark_master: str
    spark_app: str
    spark_conf: tuple[tuple[str, str], ...]
    settings: bytes
    epoch: int

    def to_payload(self) -> bytes:
        return pickle.dumps(asdict(self), protocol=5)

    @classmethod
    def from_payload(cls, payload: bytes, name: str = "record") -> JournalRecord:
        """The record in ``payload``; :class:`CorruptRecordError` names the first field that is
        missing or of the wrong type."""
        try:
            raw = pickle.loads(payload)
        except Exception as exc:
            raise CorruptRecordError(f"{name}: payload does not unpickle ({exc})") from exc
        if not isinstance(raw, dict):
            raise CorruptRecordError(f"{name}: payload is a {type(raw).__name__}, not a record")
        for field in fields(cls):
            if field.name not in raw:
                raise CorruptRecordError(f"{name}: the record has no field {field.name!r}")
            if not _CHECKS[field.name](raw[field.name]):
                raise CorruptRecordError(
                    f"{name}: field {field.name!r} is {raw[field.name]!r:.200}, not {field.type}"
                )
        return cls(**{f.name: raw[f.name] for f in fields(cls)})


def _opt_int(v: object) -> bool:
    return v is None or (isinstance(v, int) and not isinstance(v, bool))


def _str_pair(v: object) -> bool:
    return isinstance(v, tuple) and len(v) == 2 and all(isinstance(x, str) for x in v)


def _int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


_CHECKS: dict[str, Any] = {
    "batch_ms": lambda v: _int(v) and v > 0,
    "zero_ms": _int,
    "generated_ms": _opt_int,
    "completed_ms": _opt_int,
    "pending_ms": lambda v: isinstance(v, tuple) and all(_int(x) for x in v),
    "failed_ms": lambda v: isinstance(v, tuple) and all(_int(x) for x in v),
    "spark_conf": lambda v: (
        isinstance(v, tuple)
        and all(
            isinstance(kv, tuple) and len(kv) == 2 and all(isinstance(x, str) for x in kv)
            for kv in v
        )
    ),
    "settings": lambda v: isinstance(v, bytes),
    "epoch": lambda v: _int(v) and v >= 0,
    "graph": lambda v: isinstance(v, bytes),
    "names": lambda v: (
        isinstance(v, dict) and all(_int(k) and isinstance(n, str) for k, n in v.items())
    ),
    "streams": lambda v: (
        isinstance(v, dict) and all(_int(k) and isinstance(s, dict) for k, s in v.items())
    ),
    "spark_master": lambda v: isinstance(v, str),
    "spark_app": lambda v: isinstance(v, str),
}


@dataclass(frozen=True)
class Record:
    seq: int
    record: JournalRecord


class MetadataJournal:
    def __init__(self, fs: FileSystem, directory: str, keep: int = 3) -> None:
        self.fs = fs
        self._fs = fs
        self.directory = directory.rstrip("/")
        self.meta = join(self.directory, "metadata")
        self._keep = keep
        self._next_seq = 0

    # ---- ownership ----------------------------------------------------------------------------
    def check_directory(self, create: bool) -> None:
        """Refuse a directory that is not ours or is from an incompatible version; with
        ``create``, claim an empty (or missing) one."""
        fs, marker = self._fs, join(self.directory, MARKER)
        try:
            if fs.exists(marker):
                try:
                    info = json.loads(fs.read_bytes(marker))
                    version = int(info["format"])
                except (ValueError, KeyError, TypeError) as exc:
                    raise CheckpointDirectoryError(
                        f"{marker} is unreadable ({exc}); this directory was not written by "
                        "dstream, or was damaged: choose another checkpoint directory"
                    ) from exc
                if version != FORMAT_VERSION:
                    raise CheckpointDirectoryError(
                        f"checkpoint directory {self.directory} has format {version}; this "
                        f"dstream uses format {FORMAT_VERSION}. Recover it with the dstream that "
                        "wrote it, or choose a new checkpoint directory"
                    )
                return
            names = fs.list_names(self.directory) if fs.exists(self.directory) else []
        except OSError as exc:
            raise CheckpointDirectoryError(
                f"checkpoint directory {self.directory} cannot be read: {exc}"
            ) from exc
        if names:
            shown = ", ".join(sorted(names)[:5])
            raise CheckpointDirectoryError(
                f"{self.directory} is not a dstream checkpoint directory: it holds other files "
                f"({shown}) and no {MARKER} marker. dstream will not write into it; choose an "
                "empty or new directory"
            )
        if create:
            fs.mkdirs(self.meta)
            fs.write_bytes(marker, json.dumps({"format": FORMAT_VERSION}).encode())

    def holds_records(self) -> bool:
        """Whether a program left metadata records here (readable or not)."""
        return bool(self._seqs())

    def set_aside(self, name: str) -> str:
        """Move the program whose records are here out of the way of a new one: everything
        in the directory but the marker, the owners' epochs (the fencing of every driver
        that ran here stays), Spark's own ``rdd-checkpoints`` (named per SparkContext) and
        earlier programs set aside goes to ``previous/<name>/``, the metadata first. Returns
        that directory.

        A driver of the old program still running, paused between its lease check and its
        write (ownership's window of one write), can still write one record after the move,
        numbered one past the records moved; this journal numbers its records after that,
        so such a record is never the newest, and it is deleted with the older ones."""
        seqs = self._seqs()
        target = join(join(self.directory, PREVIOUS), name)
        self._fs.mkdirs(target)
        kept = {MARKER, "owners", PREVIOUS, "rdd-checkpoints", "metadata"}
        rest = sorted(n for n in self._fs.list_names(self.directory) if n not in kept)
        moving = ["metadata", *rest]
        for entry in moving:
            source = join(self.directory, entry)
            if self._fs.exists(source):
                self._fs.rename(source, join(target, entry))
        self._fs.mkdirs(self.meta)
        self._next_seq = max(seqs, default=-1) + 2
        return target

    # ---- records --------------------------------------------------------------------------------
    def _seqs(self) -> list[int]:
        seqs = []
        for name in self._fs.list_names(self.meta):
            if name.startswith(_PREFIX) and name[len(_PREFIX) :].isdigit():
                seqs.append(int(name[len(_PREFIX) :]))
        return sorted(seqs, reverse=True)

    def _path(self, seq: int) -> str:
        return join(self.meta, f"{_PREFIX}{seq:012d}")

    def read_latest(self) -> Record | None:
        """The newest valid record (None when there is none at all)."""
        seqs = self._seqs()
        problems = []
        for seq in seqs:
            path = self._path(seq)
            try:
                record = JournalRecord.from_payload(
                    decode_record(self._fs.read_bytes(path), path), path
                )
            except CorruptRecordError as exc:
                log.warning("skipping metadata record: %s", exc)
                problems.append(str(exc))
                continue
            except OSError as exc:
                problems.append(f"{path}: {exc}")
                continue
            self._next_seq = max(seqs) + 1
            return Record(seq, record)
        if seqs:
            raise CheckpointDirectoryError(
                f"no readable metadata record in {self.meta}: " + "; ".join(problems)
            )
        return None

    def write(self, record: JournalRecord) -> int:
        """Write the next record durably (temporary file, then rename); returns its number."""
        payload = record.to_payload()
        seq = self._next_seq
        self._next_seq += 1
        final = self._path(seq)
        data = encode_record(payload)
        if not publish(self._fs, final, lambda tmp: self._fs.write_bytes(tmp, data)):
            # Never a silent failure: something else writes this directory.
            raise RenameError(errno.EEXIST, f"cannot write {final}: the destination exists")
        for old in self._seqs()[self._keep :]:
            self._fs.delete(self._path(old))
        return seq

    def delete_stale_temporaries(self) -> None:
        for name in self._fs.list_names(self.meta):
            if name.startswith(f".{_PREFIX}"):
                self._fs.delete(join(self.meta, name))
