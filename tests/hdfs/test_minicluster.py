"""The HDFS mini cluster against itself, WebHDFS, Hadoop's FileSystem API and Spark. No mocks."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

import pytest

from testbed.hdfs import MiniHdfsCluster, MiniHdfsError


def unique(name: str) -> str:
    """A fresh HDFS path: the cluster is shared by the whole session."""
    return f"/tests/{name}-{uuid.uuid4().hex[:8]}"


def wait_for(
    what: str, probe: Callable[[], Any], ok: Callable[[Any], bool], timeout_s: float = 60.0
) -> Any:
    """Polls ``probe()`` until ``ok(result)``; fails with the last result after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    # Never set: wait() is just a bounded pause between polls. The NameNode re-evaluates
    # heartbeats only every few seconds, so polling flat out would only burn the CPU that the
    # cluster needs.
    pause = threading.Event()
    while True:
        result = probe()
        if ok(result):
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s:.0f} s waiting for {what}: {result}")
        pause.wait(0.2)


@pytest.fixture
def fs(sc: Any, hdfs_cluster: MiniHdfsCluster) -> Any:
    """Hadoop's FileSystem for the mini cluster, in the driver JVM (via py4j)."""
    conf = sc._jsc.hadoopConfiguration()
    # The writing client picks the replication; its default (3) exceeds our 2 DataNodes and
    # would leave everything Spark writes under-replicated.
    conf.set("dfs.replication", "2")
    return sc._jvm.org.apache.hadoop.fs.Path(hdfs_cluster.uri).getFileSystem(conf)


def jpath(sc: Any, cluster: MiniHdfsCluster, path: str) -> Any:
    return sc._jvm.org.apache.hadoop.fs.Path(cluster.uri + path)


def replica_count(sc: Any, fs: Any, cluster: MiniHdfsCluster, path: str) -> int:
    """DataNodes the NameNode lists for the file's first block."""
    status = fs.getFileStatus(jpath(sc, cluster, path))
    locations = fs.getFileBlockLocations(status, 0, status.getLen())
    return len(locations[0].getNames())


def test_ready_and_status(hdfs_cluster: MiniHdfsCluster) -> None:
    assert hdfs_cluster.uri.startswith("hdfs://127.0.0.1:")
    assert hdfs_cluster.webhdfs_uri.startswith("http://127.0.0.1:")
    status = hdfs_cluster.status()
    assert status["event"] == "status"
    assert status["live_datanodes"] == 2
    assert [dn["running"] for dn in status["datanodes"]] == [True, True]


def test_webhdfs_write_then_read(hdfs_cluster: MiniHdfsCluster) -> None:
    client = hdfs_cluster.client()
    path = unique("roundtrip") + "/data.bin"
    data = bytes(range(256)) * 1000
    client.write(path, data=data)
    with client.read(path) as reader:
        assert reader.read() == data
    assert client.status(path)["length"] == len(data)


def test_files_are_replicated_twice(sc: Any, fs: Any, hdfs_cluster: MiniHdfsCluster) -> None:
    client = hdfs_cluster.client()
    path = unique("replicated") + "/f.txt"
    client.write(path, data=b"two copies\n")
    assert client.status(path)["replication"] == 2
    # Not just the target: the NameNode really lists two DataNodes for the block (they
    # report a block once it is written, and the write only returns after the pipeline acked).
    assert replica_count(sc, fs, hdfs_cluster, path) == 2


def test_rename_semantics(sc: Any, fs: Any, hdfs_cluster: MiniHdfsCluster) -> None:
    """What a checkpoint writer can rely on (Hadoop's FileSystem.rename on HDFS):

    - onto a name that does not exist: atomic, returns true, the temp name is gone;
    - onto an existing *file*: returns false and changes nothing (no overwrite; the
      overwriting variant is FileContext.rename(..., Options.Rename.OVERWRITE));
    - onto an existing *directory*: returns true and moves the source *inside* it.
    """
    client = hdfs_cluster.client()
    base = unique("rename")
    client.write(f"{base}/part.tmp", data=b"first")
    client.write(f"{base}/other.tmp", data=b"second")
    client.makedirs(f"{base}/dir")

    def p(name: str) -> Any:
        return jpath(sc, hdfs_cluster, f"{base}/{name}")

    # Temp file onto a fresh name.
    assert fs.rename(p("part.tmp"), p("part")) is True
    assert not fs.exists(p("part.tmp"))
    with client.read(f"{base}/part") as reader:
        assert reader.read() == b"first"

    # Onto an existing file: false, both files untouched.
    assert fs.rename(p("other.tmp"), p("part")) is False
    with client.read(f"{base}/part") as reader:
        assert reader.read() == b"first"
    with client.read(f"{base}/other.tmp") as reader:
        assert reader.read() == b"second"

    # Onto an existing directory: true, and the file lands inside it under its own name.
    assert fs.rename(p("other.tmp"), p("dir")) is True
    assert not fs.exists(p("other.tmp"))
    assert fs.isDirectory(p("dir"))
    with client.read(f"{base}/dir/other.tmp") as reader:
        assert reader.read() == b"second"


def test_spark_reads_and_writes_hdfs(sc: Any, fs: Any, hdfs_cluster: MiniHdfsCluster) -> None:
    client = hdfs_cluster.client()
    base = unique("spark")
    client.write(f"{base}/in.txt", data=b"a\nb\nc\n")
    assert sc.textFile(hdfs_cluster.uri + f"{base}/in.txt").collect() == ["a", "b", "c"]

    # And the other way: Spark's commit protocol (temp dirs + renames) on HDFS.
    sc.parallelize(range(10), 2).saveAsTextFile(hdfs_cluster.uri + f"{base}/out")
    assert "_SUCCESS" in client.list(f"{base}/out")
    assert sorted(int(x) for x in sc.textFile(hdfs_cluster.uri + f"{base}/out").collect()) == list(
        range(10)
    )


# make test-full: the engine's own DataNode-loss test (test_engine_on_hdfs) stops one too.
@pytest.mark.full
def test_stopped_datanode_keeps_file_readable(
    sc: Any, fs: Any, hdfs_cluster: MiniHdfsCluster
) -> None:
    client = hdfs_cluster.client()
    path = unique("dn-loss") + "/f.txt"
    lines = [f"line {i}" for i in range(1000)]
    client.write(path, data=("\n".join(lines) + "\n").encode())
    assert replica_count(sc, fs, hdfs_cluster, path) == 2

    stopped = hdfs_cluster.stop_datanode(1)
    try:
        assert stopped["datanodes"][1]["running"] is False
        # Right after the "crash" the NameNode still lists both replicas; the DFS client skips
        # the one that refuses connections and reads the other.
        assert sc.textFile(hdfs_cluster.uri + path).collect() == lines

        # The NameNode counts it dead once its heartbeats are overdue (about 11 s here, see
        # MiniHdfs.java) ...
        status = wait_for(
            "the NameNode to declare datanode 1 dead",
            hdfs_cluster.status,
            lambda s: s["live_datanodes"] == 1,
        )
        assert status["dead_datanodes"] == 1
        # ... and drops its replicas at its next heartbeat scan (one every 5 s, hard-coded).
        wait_for(
            "the NameNode to drop the dead replica",
            lambda: replica_count(sc, fs, hdfs_cluster, path),
            lambda n: n == 1,
        )
        with client.read(path) as reader:  # WebHDFS now redirects to the live DataNode
            assert reader.read().decode().splitlines() == lines
    finally:
        # Leave the shared cluster as we found it, whatever failed above.
        restarted = hdfs_cluster.restart_datanode(1)

    # restart_datanode returns once the NameNode lists it as live again.
    assert restarted["live_datanodes"] == 2
    assert restarted["datanodes"][1]["running"] is True
    # Its block report brings the second replica back.
    wait_for(
        "the restarted datanode to report its replica",
        lambda: replica_count(sc, fs, hdfs_cluster, path),
        lambda n: n == 2,
    )
    with client.read(path) as reader:
        assert reader.read().decode().splitlines() == lines


def test_unknown_command_is_an_error(hdfs_cluster: MiniHdfsCluster) -> None:
    answer = hdfs_cluster.command("frobnicate 3")
    assert answer["event"] == "error"
    assert "frobnicate" in answer["message"]
    for valid in ("stop-datanode", "restart-datanode", "status", "shutdown"):
        assert valid in answer["message"]

    with pytest.raises(MiniHdfsError, match="out of range"):
        hdfs_cluster.stop_datanode(7)
    with pytest.raises(MiniHdfsError, match="is running"):
        hdfs_cluster.restart_datanode(0)
    # The cluster is still answering after errors.
    assert hdfs_cluster.status()["live_datanodes"] == 2
