"""The engine with everything on a real HDFS: input directory, state checkpoints and track()
snapshots (written by tasks through WebHDFS), the metadata journal (driver, Hadoop's
FileContext) and outputs. Each run is compared with the same program on the local file
system without faults: equal output means nothing was lost or doubled."""

from __future__ import annotations

import posixpath
import uuid
from pathlib import Path
from typing import Any

import pytest
from hdfs.util import HdfsError

from dstream import ManualClock, StreamingContext, Time
from dstream.errors import HaltedError
from dstream.scheduler.engine import engine_of
from dstream.storage.filesystem import HadoopFileSystem, RenameError
from dstream.storage.taskfs import WebHdfsTaskFiles, task_files_for
from testbed.hdfs import MiniHdfsCluster
from tests.integration.test_recovery import T0, TEXTS, B, expected_outputs, program, run
from tests.recovery.harness import expected
from tests.recovery.harness import run as run_with_kills

# Eight intervals: state checkpoints at 2, 4, 6 and 8 (every 2), a 3 s window that slides
# past the first files, and room for a crash after interval 4 and two intervals down.
TOTAL = 8


class Place:
    """A fresh directory tree on the mini cluster, seen through WebHDFS."""

    def __init__(self, cluster: MiniHdfsCluster, name: str) -> None:
        self.cluster = cluster
        self.client = cluster.client()
        self.base = f"/tests/{name}-{uuid.uuid4().hex[:8]}"

    def uri(self, name: str) -> str:
        return f"{self.cluster.uri}{self.base}/{name}"

    def make_dirs(self) -> None:
        for name in ("in", "out", "ckpt"):
            self.client.makedirs(f"{self.base}/{name}")

    def put_input(self, name: str, text: str) -> None:
        hidden = f"{self.base}/in/.{name}"
        self.client.write(hidden, data=text.encode())
        self.client.rename(hidden, f"{self.base}/in/{name}")

    def put(self, i: int) -> None:
        """File i lands in interval i (as tests.integration.test_recovery.put does locally)."""
        hidden = f"{self.base}/in/.f{i:02d}"
        self.client.write(hidden, data=(TEXTS[i - 1] + "\n").encode())
        self.client.set_times(hidden, modification_time=T0 + (i - 1) * B + 500)
        self.client.rename(hidden, f"{self.base}/in/f{i:02d}.txt")

    def names(self, name: str) -> list[str]:
        try:
            return list(self.client.list(f"{self.base}/{name}"))
        except HdfsError:
            return []

    def read_text(self, path: str) -> str:
        with self.client.read(f"{self.base}/{path}") as reader:
            return str(reader.read().decode())

    def outputs(self) -> dict[str, list[str]]:
        result = {}
        for name in sorted(self.names("out")):
            lines: list[str] = []
            for part in sorted(self.names(f"out/{name}")):
                if part.startswith("part-"):
                    lines.extend(self.read_text(f"out/{name}/{part}").splitlines())
            result[name] = sorted(lines)
        return result

    def walk(self, name: str) -> list[str]:
        root = f"{self.base}/{name}"
        return [
            posixpath.relpath(posixpath.join(d, f), root)
            for d, _, files in self.client.walk(root)
            for f in files
        ]

    poll_s = 0.02


def filled_place(cluster: MiniHdfsCluster, name: str) -> Place:
    """A fresh tree on HDFS whose input directory holds files 1..TOTAL."""
    place = Place(cluster, name)
    place.make_dirs()
    for i in range(1, TOTAL + 1):
        place.put(i)
    return place


@pytest.fixture(scope="module")
def reference() -> dict[str, list[str]]:
    """The program's outputs without faults (computed in Python)."""
    result = expected_outputs(TOTAL)
    assert len(result) == 4 * TOTAL
    return result


@pytest.mark.full  # make test: the driver killed with everything on HDFS (below) resumes
def test_a_restarted_driver_resumes_from_hdfs(
    hdfs_sc: Any, hdfs_cluster: MiniHdfsCluster, reference: dict[str, list[str]]
) -> None:
    place = filled_place(hdfs_cluster, "resume")
    args = (place.uri("in"), place.uri("out"), place.uri("ckpt"))

    clock = ManualClock(T0)
    first = program(hdfs_sc, clock, *args)
    run(first, clock, 4)
    engine_of(first).checkpointer.wait_idle(60)
    first.stop(stopSparkContext=False)  # abandoned as a crash would: nothing more is written

    # What the first driver left on HDFS: its journal, complete state checkpoints (pickled
    # partitions, and SQLite snapshots for track()), and committed outputs.
    files = place.walk("ckpt")
    assert any(f.startswith("metadata/record-") for f in files), files
    complete = {posixpath.dirname(f) for f in files if f.endswith("/_COMPLETE")}
    assert any(f.endswith("part-00000") and posixpath.dirname(f) in complete for f in files)
    assert any(f.endswith(".sqlite") for f in files), files
    assert not [f for f in files if ".tmp-" in f], "temporary files left behind"

    clock2 = ManualClock(T0 + 6 * B)  # down for two intervals

    def setup() -> StreamingContext:
        raise AssertionError("the program must be restored, not set up again")

    resumed = StreamingContext.getOrCreate(place.uri("ckpt"), setup, hdfs_sc, clock=clock2)
    assert engine_of(resumed).restored_from is not None
    run(resumed, clock2, TOTAL)
    resumed.stop(stopSparkContext=False)
    assert place.outputs() == reference


def test_a_datanode_lost_mid_run_loses_nothing(
    hdfs_sc: Any, hdfs_cluster: MiniHdfsCluster, reference: dict[str, list[str]]
) -> None:
    place = filled_place(hdfs_cluster, "dn-loss")
    clock = ManualClock(T0)
    ssc = program(hdfs_sc, clock, place.uri("in"), place.uri("out"), place.uri("ckpt"))
    try:
        run(ssc, clock, 4)
        # Crash a DataNode: until the NameNode declares it dead (~11 s), it still hands it
        # out for new blocks and WebHDFS redirects; every write and read must get around it.
        hdfs_cluster.stop_datanode(1)
        for t in range(5, TOTAL + 1):
            clock.advance(B)
            assert ssc.wait_for_batch(Time(T0 + t * B), 180), f"interval {t}"
        ssc.awaitTerminationOrTimeout(0)  # raises if any interval failed
        engine_of(ssc).checkpointer.wait_idle(120)
        assert engine_of(ssc).checkpointer.completed, (
            "no checkpoint was written while a DataNode was down"
        )
    finally:
        ssc.stop(stopSparkContext=False)
        hdfs_cluster.restart_datanode(1)
    assert place.outputs() == reference


def test_renames_that_fail_on_hdfs_are_errors(hdfs_sc: Any, hdfs_cluster: MiniHdfsCluster) -> None:
    place = Place(hdfs_cluster, "rename")
    c = place.client
    c.write(f"{place.base}/a", data=b"a")
    c.write(f"{place.base}/b", data=b"b")
    c.makedirs(f"{place.base}/dir")
    fs = HadoopFileSystem(hdfs_sc, place.uri(""))
    # Hadoop's FileSystem.rename would move "a" *into* dir and return true; FileContext with
    # Rename.NONE refuses both an existing file and an existing directory.
    for target in ("b", "dir"):
        with pytest.raises(RenameError, match=rf"cannot rename .*/a to .*/{target}: the dest"):
            fs.rename(place.uri("a"), place.uri(target))
    assert (
        place.read_text("b") == "b"
        and place.names("dir") == []
        and place.names("")
        == [
            "a",
            "b",
            "dir",
        ]
    )
    # A task publishing a file that another attempt already published: False, nothing changed.
    files = task_files_for(place.uri(""), hdfs_sc)
    assert isinstance(files, WebHdfsTaskFiles)
    assert files.publish(place.uri("b"), b"other") is False
    assert place.read_text("b") == "b"
    assert files.publish(place.uri("c"), b"c") is True and place.read_text("c") == "c"
    assert not [n for n in place.names("") if ".tmp-" in n]


def test_a_journal_rename_that_fails_on_hdfs_stops_the_program(
    hdfs_sc: Any, hdfs_cluster: MiniHdfsCluster
) -> None:
    place = Place(hdfs_cluster, "journal")
    place.make_dirs()
    place.put(1)
    clock = ManualClock(T0)
    ssc = program(hdfs_sc, clock, place.uri("in"), place.uri("out"), place.uri("ckpt"))
    try:
        run(ssc, clock, 1)
        seqs = [int(n.split("-")[1]) for n in place.names("ckpt/metadata") if n[0] == "r"]
        squatter = f"ckpt/metadata/record-{max(seqs) + 1:012d}"
        place.client.write(f"{place.base}/{squatter}", data=b"not a record")
        clock.advance(B)
        with pytest.raises(HaltedError, match=r"stopped generating.*the destination exists"):
            ssc.awaitTerminationOrTimeout(60)
        assert place.read_text(squatter) == "not a record"
    finally:
        ssc.stop(stopSparkContext=False)


def test_unreachable_webhdfs_is_explained(hdfs_sc: Any, hdfs_cluster: MiniHdfsCluster) -> None:
    conf = hdfs_sc._jsc.hadoopConfiguration()
    conf.set("dstream.webhdfs.url", "http://127.0.0.1:9")  # nothing listens on port 9
    try:
        with pytest.raises(ValueError, match=r"through WebHDFS, but http://127.0.0.1:9 does not"):
            task_files_for(f"{hdfs_cluster.uri}/x", hdfs_sc)
    finally:
        conf.unset("dstream.webhdfs.url")


@pytest.mark.slow
@pytest.mark.parametrize(
    "kills",
    [
        # The kills that meet HDFS's own renames: a state checkpoint's and an output's.
        ["checkpoint", "commit"],
        pytest.param(["checkpoint", "random", "commit"], marks=pytest.mark.full),
    ],
)
def test_killing_the_driver_with_everything_on_hdfs(
    hdfs_cluster: MiniHdfsCluster, kills: list[str]
) -> None:
    place = Place(hdfs_cluster, f"driver-kill-{len(kills)}")
    webhdfs = Path(hdfs_cluster.webhdfs_uri.split("://", 1)[1]).as_posix()
    conf = [
        *("--conf", f"spark.hadoop.dfs.namenode.http-address={webhdfs}"),
        *("--conf", "spark.hadoop.dfs.replication=2"),
        # Three outputs committed on HDFS take about 1.5 s an interval on this machine.
        *("--batch", "2s", "--checkpoint-every", "4s"),
    ]
    got_lines, got_totals, restored = run_with_kills(place, kills, conf)
    want_lines, want_totals = expected()
    assert restored == [False] + [True] * len(kills)
    assert got_lines == want_lines
    assert got_totals == want_totals
    # What the drivers kept on HDFS: the journal, complete state checkpoints (pickled
    # partitions, and SQLite snapshots for track()) that the restarts read.
    files = place.walk("ckpt")
    assert any(f.startswith("metadata/record-") for f in files), files
    complete = {posixpath.dirname(f) for f in files if f.endswith("/_COMPLETE")}
    assert any(f.endswith("part-00000") and posixpath.dirname(f) in complete for f in files)
    assert any(f.endswith(".sqlite") for f in files), files


def test_the_columnar_reader_reads_hdfs_through_webhdfs(
    hdfs_sc: Any, hdfs_cluster: MiniHdfsCluster
) -> None:
    """textBatchStream's tasks read byte ranges through WebHDFS: the same lines, interval by
    interval, as textFileStream reading the same directory through Hadoop."""
    from dstream.testing.streams import BatchCollector

    place = Place(hdfs_cluster, "columnar")
    place.make_dirs()
    for i in range(1, 4):
        place.put(i)
    # A bigger file in interval 2: cut into ranges that end inside lines and inside \r\n.
    hidden = f"{place.base}/in/.big"
    data = b"".join(b"line %d ka\r\n" % n for n in range(5000)) + b"no newline"
    place.client.write(hidden, data=data)
    place.client.set_times(hidden, modification_time=T0 + B + 700)
    place.client.rename(hidden, f"{place.base}/in/big.txt")

    clock = ManualClock(T0)
    ssc = StreamingContext(hdfs_sc, B / 1000, clock=clock)
    expected = BatchCollector(ssc.textFileStream(place.uri("in")))
    got = BatchCollector(ssc.textBatchStream(place.uri("in")).records())
    try:
        run(ssc, clock, 3)
    finally:
        ssc.stop(stopSparkContext=False)
    assert [len(b) for b in expected.in_order()] == [1, 5002, 1]
    assert [sorted(b) for b in got.in_order()] == [sorted(b) for b in expected.in_order()]
