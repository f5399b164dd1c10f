"""The trust boundary: stored state is pickles, so a state file changed by someone else is
refused (naming the file) before anything in it is unpickled, and tasks keep downloads in a
private (0700) directory of their own application."""

from __future__ import annotations

import os
import pickle
import re
import sqlite3
import stat
import threading
from pathlib import Path
from typing import Any

import pytest

from dstream import StreamingJobError, StreamingListener, StreamingSettings, Time
from dstream.listener import CheckpointInfo
from dstream.storage.checkpoint import MAGIC

from .conftest import Harness

WAIT_S = 60


class Exploit:
    """What an attacker would plant: unpickling it creates ``marker``."""

    def __init__(self, marker: Path) -> None:
        self.marker = str(marker)

    def __reduce__(self) -> Any:
        return (os.mkdir, (self.marker,))


class Checkpoints(StreamingListener):
    def __init__(self) -> None:
        self.done: list[Time] = []
        self._cond = threading.Condition()

    def onCheckpointCompleted(self, checkpoint: CheckpointInfo) -> None:
        with self._cond:
            self.done.append(checkpoint.batch_time)
            self._cond.notify_all()

    def wait(self, time_ms: int) -> bool:
        with self._cond:
            return self._cond.wait_for(lambda: Time(time_ms) in self.done, WAIT_S)


def state_program(harness: Any, ckpt: Path) -> tuple[Harness, Checkpoints]:
    # No retries: the failed interval is reported at once.
    h: Harness = harness(settings=StreamingSettings(output_retries=0))
    h.ssc.checkpoint(str(ckpt))
    done = Checkpoints()
    h.ssc.addStreamingListener(done)
    return h, done


def test_a_tampered_track_snapshot_is_refused_not_unpickled(harness: Any, tmp_path: Path) -> None:
    ckpt, marker = tmp_path / "ckpt", tmp_path / "pwned"
    h, done = state_program(harness, ckpt)
    sc = h.ssc.sparkContext
    events = h.ssc.queueStream([sc.parallelize([("k", 1)], 1), sc.parallelize([("k", 2)], 1)])
    sessions = events.track(lambda k, e: e, lambda k, s, e: s + e, 60, numPartitions=1)
    sessions.checkpoint(1)  # a snapshot after every interval
    sessions.foreachRDD(lambda rdd: rdd.collect())
    h.ssc.start()
    h.run_batches(1)
    assert done.wait(1000), "the snapshot of interval 1 was not written"
    # Someone who can write the checkpoint directory swaps the state for a pickle of theirs.
    snapshots = sorted(ckpt.glob("state-*/1000/*.sqlite"))
    assert len(snapshots) == 1
    snapshot = snapshots[0]
    snapshot.chmod(0o644)
    with sqlite3.connect(snapshot) as db:
        db.execute("UPDATE state SET s = ?", (pickle.dumps(Exploit(marker)),))
    db.close()
    h.clock.advance(1000)  # interval 2 is rebuilt from that snapshot
    h.ssc.wait_for_batch(2000, WAIT_S)
    with pytest.raises(StreamingJobError) as info:
        h.ssc.awaitTerminationOrTimeout(0)
    assert str(snapshot) in str(info.value)
    assert "does not match the SHA-256 its writer recorded" in str(info.value)
    assert not marker.exists(), "the tampered snapshot was unpickled"


def test_a_tampered_checkpoint_partition_is_refused_not_unpickled(
    harness: Any, tmp_path: Path
) -> None:
    ckpt, marker = tmp_path / "ckpt", tmp_path / "pwned"
    h, done = state_program(harness, ckpt)
    sc = h.ssc.sparkContext
    pairs = h.ssc.queueStream([sc.parallelize([("k", 1)], 1), sc.parallelize([("k", 2)], 1)])
    totals = pairs.updateStateByKey(lambda new, old: sum(new) + (old or 0), numPartitions=1)
    totals.checkpoint(1)
    totals.foreachRDD(lambda rdd: rdd.collect())
    h.ssc.start()
    h.run_batches(1)
    assert done.wait(1000)
    part = next(ckpt.glob("state-*/1000/part-00000"))
    header = part.read_bytes()[: len(MAGIC) + 32]  # the magic and the recorded digest, kept
    part.chmod(0o644)
    part.write_bytes(header + pickle.dumps([Exploit(marker)]))
    h.clock.advance(1000)
    h.ssc.wait_for_batch(2000, WAIT_S)
    with pytest.raises(StreamingJobError) as info:
        h.ssc.awaitTerminationOrTimeout(0)
    assert f"{part} is torn or corrupt (checksum mismatch)" in str(info.value)
    assert not marker.exists(), "the tampered checkpoint partition was unpickled"


def test_tasks_keep_downloads_in_a_private_directory_of_their_application(sc: Any) -> None:
    def where(_: Any) -> Any:
        from dstream.storage.taskfs import task_cache_dir

        path = task_cache_dir()
        st = os.lstat(path)
        local_dirs = os.environ.get("SPARK_LOCAL_DIRS", "")
        yield path, stat.S_IMODE(st.st_mode), st.st_uid, stat.S_ISDIR(st.st_mode), local_dirs

    found = sc.parallelize([0, 1], 2).mapPartitions(where).collect()
    for path, mode, uid, is_dir, local_dirs in found:
        assert (mode, uid, is_dir) == (0o700, os.getuid(), True)
        # Inside the block manager directory Spark gives this application's executor (named
        # at random, removed with the executor), not in a shared /tmp path.
        app_dir = local_dirs.split(",")[0]
        assert re.fullmatch(r"blockmgr-[0-9a-f-]{36}", os.path.basename(app_dir)), app_dir
        assert os.path.dirname(path) == app_dir
