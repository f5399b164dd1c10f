"""Exactly-once interval output on the local file system: write to a hidden temporary
directory, rename it into place without replacing anything."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dstream.storage.commits import COMMIT_MARKER, CommitLog, commit_interval, interval_path
from dstream.storage.filesystem import LocalFileSystem, RenameError


def writer(content: str, calls: list[str]):  # type: ignore[no-untyped-def]
    def write(tmp: str) -> None:
        calls.append(tmp)
        os.makedirs(tmp)
        Path(tmp, "part-00000").write_text(content)

    return write


def test_interval_path_matches_pyspark_streaming() -> None:
    assert interval_path("out/c", None, 12345) == "out/c-12345"
    assert interval_path("out/c", "txt", 12345) == "out/c-12345.txt"


def test_an_interval_is_committed_once(tmp_path: Path) -> None:
    fs = LocalFileSystem()
    final = str(tmp_path / "out" / "counts-1000.txt")
    calls: list[str] = []
    assert commit_interval(fs, final, 1000, writer("first", calls)) is True
    assert Path(final, "part-00000").read_text() == "first"
    assert Path(final, COMMIT_MARKER).exists()
    # A recomputation of the same interval writes nothing.
    assert commit_interval(fs, final, 1000, writer("second", calls)) is False
    assert Path(final, "part-00000").read_text() == "first"
    assert len(calls) == 1
    assert os.listdir(tmp_path / "out") == ["counts-1000.txt"]


def test_a_failed_write_leaves_nothing_behind_and_can_be_retried(tmp_path: Path) -> None:
    fs = LocalFileSystem()
    final = str(tmp_path / "c-1000")

    def broken(tmp: str) -> None:
        os.makedirs(tmp)
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        commit_interval(fs, final, 1000, broken)
    assert os.listdir(tmp_path) == []
    assert commit_interval(fs, final, 1000, writer("ok", [])) is True


def test_a_crashed_attempt_temp_dir_is_cleared(tmp_path: Path) -> None:
    fs = LocalFileSystem()
    (tmp_path / ".c-1000.tmp-deadbeef").mkdir()
    (tmp_path / ".c-1000.tmp-deadbeef" / "part-00000").write_text("half")
    assert commit_interval(fs, str(tmp_path / "c-1000"), 1000, writer("ok", [])) is True
    assert sorted(os.listdir(tmp_path)) == ["c-1000"]


def test_a_foreign_directory_is_never_overwritten(tmp_path: Path) -> None:
    (tmp_path / "c-1000").mkdir()
    (tmp_path / "c-1000" / "precious").write_text("keep")
    with pytest.raises(FileExistsError, match="not committed by dstream"):
        commit_interval(LocalFileSystem(), str(tmp_path / "c-1000"), 1000, writer("x", []))
    assert (tmp_path / "c-1000" / "precious").read_text() == "keep"


def test_a_concurrent_commit_wins_and_ours_is_dropped(tmp_path: Path) -> None:
    fs = LocalFileSystem()
    final = str(tmp_path / "c-1000")

    def racing(tmp: str) -> None:
        writer("loser", [])(tmp)
        # Another attempt commits the same interval while we write.
        assert commit_interval(fs, final, 1000, writer("winner", [])) is True

    assert commit_interval(fs, final, 1000, racing) is False
    assert Path(final, "part-00000").read_text() == "winner"
    assert os.listdir(tmp_path) == ["c-1000"]


def test_local_rename_refuses_to_replace(tmp_path: Path) -> None:
    fs = LocalFileSystem()
    (tmp_path / "a").write_text("a")
    (tmp_path / "b").write_text("b")
    with pytest.raises(RenameError, match="destination exists"):
        fs.rename(str(tmp_path / "a"), str(tmp_path / "b"))
    (tmp_path / "d1").mkdir()
    (tmp_path / "d2").mkdir()  # even an empty directory, which POSIX rename would replace
    with pytest.raises(RenameError, match="destination exists"):
        fs.rename(str(tmp_path / "d1"), str(tmp_path / "d2"))
    fs.rename(str(tmp_path / "a"), str(tmp_path / "c"))
    assert (tmp_path / "c").read_text() == "a"
    with pytest.raises(RenameError):
        fs.rename(str(tmp_path / "missing"), str(tmp_path / "z"))


def test_local_listing_skips_hidden_files_and_directories(tmp_path: Path) -> None:
    for name in ["a.txt", ".tmp", "_SUCCESS"]:
        (tmp_path / name).write_text("x")
    (tmp_path / "sub").mkdir()
    files = LocalFileSystem().list_files(str(tmp_path))
    assert [os.path.basename(f.path) for f in files] == ["a.txt"]
    assert files[0].size == 1
    assert files[0].modified_ms == os.stat(tmp_path / "a.txt").st_mtime_ns // 1_000_000


def test_commit_log_records_intervals_durably(tmp_path: Path) -> None:
    log = CommitLog(LocalFileSystem(), str(tmp_path / "log"))
    assert not log.is_committed(1000)
    log.commit(1000, keep_after_ms=0)
    log.commit(2000, keep_after_ms=0)
    log.commit(2000, keep_after_ms=0)  # a second commit of the same interval is harmless
    reopened = CommitLog(LocalFileSystem(), str(tmp_path / "log"))
    assert reopened.is_committed(1000) and reopened.is_committed(2000)
    memory = CommitLog(None, None)
    memory.commit(5, keep_after_ms=0)
    assert memory.is_committed(5) and not memory.is_committed(6)


@pytest.mark.parametrize("slide_ms", [1000, 3000, 7000, 101_000])
def test_the_commit_log_stays_bounded_whatever_the_slide(tmp_path: Path, slide_ms: int) -> None:
    """Pruning follows the number of commits, not the interval's time: a slide that does not
    divide 100 batches (the old rule pruned at times that were multiples of 100 batches) is
    pruned as often as any other."""
    for fs, directory in ((LocalFileSystem(), str(tmp_path / f"log-{slide_ms}")), (None, None)):
        log = CommitLog(fs, directory, prune_every=10)
        for i in range(1, 36):
            t = i * slide_ms
            log.commit(t, keep_after_ms=t - 10 * slide_ms)
        kept = [t for t in range(slide_ms, 36 * slide_ms, slide_ms) if log.is_committed(t)]
        # Pruned at the 30th commit: everything before commit 20 is gone, the rest is there.
        assert kept == [i * slide_ms for i in range(20, 36)], (fs, kept)
