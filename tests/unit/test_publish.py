"""publish(): the one commit every file dstream writes goes through (journal records, output
intervals, the commit log, checkpoints and snapshots written by tasks)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dstream.storage.filesystem import LocalFileSystem, publish


def names(directory: Path) -> list[str]:
    return sorted(os.listdir(directory))


def test_a_file_appears_whole_under_its_name(tmp_path: Path) -> None:
    fs = LocalFileSystem()
    target = str(tmp_path / "record")
    seen: list[str] = []

    def write(tmp: str) -> None:
        seen.append(tmp)
        assert names(tmp_path) == []  # nothing visible under the final name yet
        fs.write_bytes(tmp, b"content")

    assert publish(fs, target, write)
    assert names(tmp_path) == ["record"] and (tmp_path / "record").read_bytes() == b"content"
    assert os.path.basename(seen[0]).startswith(".record.tmp-")  # hidden while written


def test_an_existing_target_is_left_alone(tmp_path: Path) -> None:
    (tmp_path / "record").write_bytes(b"first")
    fs = LocalFileSystem()
    assert not publish(fs, str(tmp_path / "record"), lambda tmp: fs.write_bytes(tmp, b"second"))
    assert names(tmp_path) == ["record"] and (tmp_path / "record").read_bytes() == b"first"


def test_losing_a_race_returns_false_and_leaves_no_temporary(tmp_path: Path) -> None:
    fs = LocalFileSystem()
    target = tmp_path / "out"

    def write(tmp: str) -> None:
        os.makedirs(tmp)
        (Path(tmp) / "part-0").write_text("ours")
        os.makedirs(target)  # another attempt commits while we write
        (target / "part-0").write_text("theirs")

    assert not publish(fs, str(target), write)
    assert names(tmp_path) == ["out"] and (target / "part-0").read_text() == "theirs"


def test_a_failed_write_raises_and_leaves_nothing(tmp_path: Path) -> None:
    fs = LocalFileSystem()

    def write(tmp: str) -> None:
        fs.write_bytes(tmp, b"half")
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        publish(fs, str(tmp_path / "record"), write)
    assert names(tmp_path) == []
