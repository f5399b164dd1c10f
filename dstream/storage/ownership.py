"""Which driver owns a checkpoint directory: a lease taken at start, checked before every
write that another driver's work could collide with.

::

    <checkpoint dir>/owners/epoch-000000000007   {"pid": ..., "host": ..., "started_ms": ...}

A driver that starts takes the next epoch: it publishes ``epoch-(N+1)`` where N is the highest
on disk (:func:`dstream.storage.filesystem.publish` refuses if another driver took that number
first; it then tries the next). Before every metadata record, every output job and every
deletion of old checkpoints it checks that no higher epoch exists. A driver that was paused
(a stopped VM, a long GC, SIGSTOP) and resumes after another one took over therefore stops at
its next write with :class:`FencedError`, naming the driver that owns the directory, instead
of writing records, committing outputs or deleting files under the new owner (Flink's
checkpoint fencing, Kafka's producer epochs). The check and the write are not one atomic
step: what remains is a window of one write, which the no-replace renames of the journal and
of output commits close (the second writer's rename is refused), and which ``save`` sinks
close by being idempotent per interval.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from dstream.errors import DStreamError
from dstream.storage.filesystem import FileSystem, RenameError, join, publish

__all__ = ["FencedError", "Lease", "claim", "owners_on_record"]

log = logging.getLogger(__name__)

_PREFIX = "epoch-"
_KEEP = 5  # epochs kept on disk (a stale driver needs only to see one higher than its own)


class FencedError(DStreamError, RuntimeError):
    """Another driver took over the checkpoint directory: this one must stop."""


def _epochs(fs: FileSystem, owners: str) -> list[int]:
    found = []
    for name in fs.list_names(owners):
        if name.startswith(_PREFIX) and name[len(_PREFIX) :].isdigit():
            found.append(int(name[len(_PREFIX) :]))
    return sorted(found)


def _path(owners: str, epoch: int) -> str:
    return join(owners, f"{_PREFIX}{epoch:012d}")


@dataclass(frozen=True)
class Lease:
    """This driver's epoch on ``directory``."""

    fs: FileSystem
    directory: str
    epoch: int

    @property
    def _owners(self) -> str:
        return join(self.directory, "owners")

    def check(self, what: str) -> None:
        """Raise :class:`FencedError` if a newer driver owns the directory."""
        newest = max(_epochs(self.fs, self._owners), default=self.epoch)
        if newest > self.epoch:
            raise FencedError(
                f"another driver took over checkpoint directory {self.directory} "
                f"({_describe(self.fs, _path(self._owners, newest))}, epoch {newest}); this "
                f"driver (epoch {self.epoch}, pid {os.getpid()}) stops before {what}. Stop one "
                "of the two: only one driver may run a program's checkpoint directory"
            )

    @contextmanager
    def fenced(self, what: str) -> Iterator[None]:
        """Around a no-replace write made after :meth:`check`: a driver paused between the
        check and the write (SIGSTOP, a long GC) can find that a newer driver wrote that very
        name meanwhile; the refused rename is then reported as the :class:`FencedError` it
        is (naming the newer driver), not as a file that happened to exist."""
        try:
            yield
        except RenameError as exc:
            if exc.errno == errno.EEXIST:
                self.check(what)
            raise

    def release(self) -> None:
        """Remove this driver's epoch: for a start() that failed before its program was
        recorded, so that the directory shows no trace of a program that never ran."""
        self.fs.delete(_path(self._owners, self.epoch))


def owners_on_record(fs: FileSystem, directory: str) -> list[str]:
    """The drivers that took ``directory``, newest first, as people read them (empty when
    none did)."""
    owners = join(directory, "owners")
    if not fs.exists(owners):
        return []
    return [f"epoch {e} ({_describe(fs, _path(owners, e))})" for e in reversed(_epochs(fs, owners))]


def claim(fs: FileSystem, directory: str) -> Lease:
    """Take the next epoch on ``directory`` (see the module docstring)."""
    owners = join(directory, "owners")
    fs.mkdirs(owners)
    me = json.dumps(
        {"pid": os.getpid(), "host": socket.gethostname(), "started_ms": int(time.time() * 1000)}
    ).encode()
    epoch = max(_epochs(fs, owners), default=0) + 1
    while not publish(fs, _path(owners, epoch), lambda tmp: fs.write_bytes(tmp, me)):
        epoch += 1  # another driver took this one at the same moment
    held = _epochs(fs, owners)
    if held and max(held) > epoch:
        lease = Lease(fs, directory, epoch)
        lease.check("starting")  # a driver that started after us already owns it
    for old in held[:-_KEEP]:
        fs.delete(_path(owners, old))
    log.info("driver took epoch %d on %s", epoch, directory)
    return Lease(fs, directory, epoch)


def _describe(fs: FileSystem, path: str) -> str:
    try:
        info = json.loads(fs.read_bytes(path))
        started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(info["started_ms"] / 1000))
        return f"pid {info['pid']} on {info['host']}, started {started}"
    except (OSError, ValueError, KeyError, TypeError):
        return "a driver whose details are unreadable"
