"""Downloads of state files go to a private directory of the executor's application, and
every state file is checked against the SHA-256 its writer recorded (no Spark: the WebHDFS
client is replaced by a fake that serves files from a dict)."""

from __future__ import annotations

import hashlib
import os
import pickle
import re
import stat
import tempfile
from pathlib import Path
from typing import Any

import pytest

from dstream.storage import taskfs
from dstream.storage.taskfs import WebHdfsTaskFiles

SNAPSHOT = "hdfs://nn:8020/ckpt/state-3/1000/part-00000.sqlite"


class FakeWebHdfs:
    def __init__(self, files: dict[str, bytes]) -> None:
        self.files = files

    def download(self, hdfs_path: str, local_path: str, overwrite: bool = False) -> str:
        Path(local_path).write_bytes(self.files[hdfs_path])
        return local_path


@pytest.fixture
def webhdfs(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> tuple[WebHdfsTaskFiles, Path]:
    """A WebHDFS handle as a task on an executor sees it: SPARK_LOCAL_DIRS names the
    executor's block manager directory (Spark creates it with mode 0755)."""
    blockmgr = tmp_path / "blockmgr-6c1f"
    blockmgr.mkdir(mode=0o755)
    monkeypatch.setenv("SPARK_LOCAL_DIRS", str(blockmgr))
    fake = FakeWebHdfs({"/ckpt/state-3/1000/part-00000.sqlite": b"snapshot bytes"})
    monkeypatch.setattr(WebHdfsTaskFiles, "_client", lambda self: fake)
    return WebHdfsTaskFiles("http://nn:9870", "me"), blockmgr


def test_downloads_are_kept_in_a_private_directory_of_the_application(
    webhdfs: tuple[WebHdfsTaskFiles, Path],
) -> None:
    files, blockmgr = webhdfs
    local = Path(files.local_copy(SNAPSHOT))
    assert local.read_bytes() == b"snapshot bytes"
    assert not str(local).startswith(os.path.join(tempfile.gettempdir(), "dstream-hdfs-cache"))
    # The cache is a directory of its own inside the executor's block manager directory,
    # which only this user can enter.
    cache = local.parent
    while cache.parent != blockmgr:
        cache = cache.parent
        assert cache != cache.parent, f"{local} is not inside {blockmgr}"
    st = os.lstat(cache)
    assert stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid()
    assert stat.S_IMODE(st.st_mode) == 0o700


@pytest.mark.parametrize("loose", ["mode", "symlink"])
def test_a_cache_directory_others_could_write_is_refused(
    webhdfs: tuple[WebHdfsTaskFiles, Path], tmp_path: Path, loose: str
) -> None:
    files, blockmgr = webhdfs
    planted = blockmgr / "dstream-cache"
    if loose == "mode":
        planted.mkdir()
        planted.chmod(0o777)
    else:
        (tmp_path / "elsewhere").mkdir(mode=0o700)
        planted.symlink_to(tmp_path / "elsewhere")
    with pytest.raises(PermissionError, match=rf"private directory {planted} .*mode 0700"):
        files.local_copy(SNAPSHOT)


def test_a_download_that_does_not_match_its_digest_is_refused(
    webhdfs: tuple[WebHdfsTaskFiles, Path],
) -> None:
    from dstream.storage.integrity import TamperedFileError

    files, blockmgr = webhdfs
    good = hashlib.sha256(b"snapshot bytes").hexdigest()
    assert Path(files.local_copy(SNAPSHOT, good)).read_bytes() == b"snapshot bytes"
    with pytest.raises(TamperedFileError, match=rf"{SNAPSHOT} does not match the SHA-256"):
        files.local_copy(SNAPSHOT, hashlib.sha256(b"what the writer wrote").hexdigest())
    kept = [p for p in blockmgr.rglob("*") if p.is_file()]
    assert len(kept) == 1  # the refused download was not kept


def test_without_spark_local_dirs_a_process_private_directory_is_used(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("SPARK_LOCAL_DIRS", raising=False)
    path = taskfs.task_cache_dir()
    st = os.lstat(path)
    assert stat.S_IMODE(st.st_mode) == 0o700 and st.st_uid == os.getuid()
    assert os.path.basename(path) != "dstream-hdfs-cache"
    assert taskfs.task_cache_dir() == path  # one per process


# ---- track() snapshots: opened only if their content matches the recorded digest ----------
class Exploit:
    """What an attacker would plant: unpickling it creates ``marker``."""

    def __init__(self, marker: Path) -> None:
        self.marker = str(marker)

    def __reduce__(self) -> Any:
        return (os.mkdir, (self.marker,))


def snapshot_of(tmp_path: Path, state: dict[str, int]) -> Any:
    from dstream.tasks.track_state import TrackFunctions, compact, fold

    fns = TrackFunctions(lambda k, e: e, lambda k, s, e: s + e, 60_000, 1000)
    events = [(k, ((0, i), v)) for i, (k, v) in enumerate(state.items())]
    delta = fold(0, None, None, None, [(1000, events)], fns)
    _, snapshot = compact(delta, str(tmp_path / "state-1" / "1000"))
    return snapshot, fns


def tamper(path: str, marker: Path) -> None:
    import sqlite3

    with sqlite3.connect(path) as db:
        db.execute("UPDATE state SET s = ?", (pickle.dumps(Exploit(marker)),))
    db.close()


@pytest.mark.parametrize("how", ["in place", "replaced"])
def test_a_changed_snapshot_is_refused_before_anything_is_unpickled(
    tmp_path: Path, how: str
) -> None:
    from dstream.storage.integrity import TamperedFileError
    from dstream.tasks.track_state import fold, view

    snapshot, fns = snapshot_of(tmp_path, {"k": 1})
    assert Path(snapshot.path).name == f"part-00000-{snapshot.sha256}.sqlite"
    assert hashlib.sha256(Path(snapshot.path).read_bytes()).hexdigest() == snapshot.sha256
    # Read once as the engine does (this process now knows the file as verified) ...
    delta = fold(0, None, 1000, snapshot, [(2000, [("k", ((0, 0), 2))])], fns)
    assert dict(view(delta)) == {"k": 3}
    # ... then someone changes it: rewritten in place, or replaced by another file.
    marker = tmp_path / "pwned"
    if how == "in place":
        tamper(snapshot.path, marker)
    else:
        planted = tmp_path / "planted.sqlite"
        planted.write_bytes(Path(snapshot.path).read_bytes())
        tamper(str(planted), marker)
        os.replace(planted, snapshot.path)
    with pytest.raises(TamperedFileError, match=rf"{re.escape(snapshot.path)} does not match"):
        fold(0, None, 1000, snapshot, [(2000, [("k", ((0, 0), 2))])], fns)
    assert not marker.exists()


def test_the_manifest_records_one_digest_per_partition() -> None:
    from dstream.storage.snapshots import decode_manifest, encode_manifest

    digests = [hashlib.sha256(bytes([i])).hexdigest() for i in range(3)]
    assert decode_manifest(encode_manifest(digests), "m", 3) == digests
    with pytest.raises(ValueError, match=r"/c/_COMPLETE records no snapshot checksums.*earlier"):
        decode_manifest(b"", "/c/_COMPLETE", 3)  # a checkpoint of an earlier version
    for bad in (encode_manifest(digests[:2]), encode_manifest(["0" * 63, *digests[1:]]), b"{"):
        with pytest.raises(ValueError, match=r"/c/_COMPLETE is not a manifest of 3 snapshot"):
            decode_manifest(bad, "/c/_COMPLETE", 3)
