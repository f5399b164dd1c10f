"""The lease on a checkpoint directory when two drivers race for it (dstream.storage.ownership):
a driver paused between its lease check and its next metadata record finds, on resuming,
that a newer driver wrote that record's number; it stops with FencedError naming that
driver, not with an unexplained refused rename. (Seen once in a fresh-clone run of
tests/recovery/test_two_drivers.py: its SIGSTOP fell inside that window.)"""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

from dstream.storage.filesystem import LocalFileSystem, RenameError
from dstream.storage.journal import MetadataJournal
from dstream.storage.ownership import FencedError, claim

from .test_journal import RECORD


def test_a_record_written_first_by_a_newer_driver_fences_the_older_one(tmp_path: Path) -> None:
    fs, directory = LocalFileSystem(), str(tmp_path / "ckpt")
    fs.mkdirs(directory)
    old, new = MetadataJournal(fs, directory), MetadataJournal(fs, directory)
    old.check_directory(create=True)
    lease = claim(fs, directory)
    lease.check("writing a metadata record")  # the old driver checks, then is paused...
    newer = claim(fs, directory)  # ...a new driver takes over and writes the next record
    new.write(RECORD)
    fenced = pytest.raises(FencedError, match=f"another driver took over .* epoch {newer.epoch}")
    with fenced, lease.fenced("writing a metadata record"):
        old.write(RECORD)  # the same record number: the rename is refused


def test_a_refused_write_without_a_newer_driver_stays_what_it_is(tmp_path: Path) -> None:
    fs, directory = LocalFileSystem(), str(tmp_path / "ckpt")
    fs.mkdirs(directory)
    lease = claim(fs, directory)
    with pytest.raises(RenameError) as refused, lease.fenced("writing a metadata record"):
        raise RenameError(errno.EEXIST, "cannot write x: the destination exists")
    assert refused.value.errno == errno.EEXIST
