"""Paths on a cluster whose default file system is HDFS: a path without a scheme means HDFS
to the driver as it does to Spark's executors, and file names with glob characters or
commas are read exactly, through Hadoop and through WebHDFS."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from dstream import ManualClock, StreamingContext
from testbed.hdfs import MiniHdfsCluster
from tests.hdfs.test_engine_on_hdfs import TOTAL, Place, filled_place, reference
from tests.integration.test_recovery import T0, B, program, run

__all__ = ["reference"]  # the module's fixture, shared with test_engine_on_hdfs


@pytest.fixture
def hdfs_default(hdfs_sc: Any, hdfs_cluster: MiniHdfsCluster) -> Iterator[Any]:
    """The session SparkContext with fs.defaultFS set to the mini cluster (as
    spark.hadoop.fs.defaultFS or a cluster's core-site.xml would), restored afterwards."""
    conf = hdfs_sc._jsc.hadoopConfiguration()
    before = conf.get("fs.defaultFS")
    conf.set("fs.defaultFS", hdfs_cluster.uri)
    try:
        yield hdfs_sc
    finally:
        conf.set("fs.defaultFS", before)


def test_plain_paths_read_and_write_the_default_file_system(
    hdfs_default: Any, hdfs_cluster: MiniHdfsCluster, reference: dict[str, list[str]]
) -> None:
    place = filled_place(hdfs_cluster, "plain-paths")
    # Input, outputs and the checkpoint directory (journal, state checkpoints written by
    # tasks, track() snapshots) all given as /tests/...: they must all be on HDFS.
    in_dir, out, ckpt = (f"{place.base}/{name}" for name in ("in", "out", "ckpt"))
    clock = ManualClock(T0)
    ssc = program(hdfs_default, clock, in_dir, out, ckpt)
    try:
        run(ssc, clock, TOTAL)
    finally:
        ssc.stop(stopSparkContext=False)
    assert not os.path.exists(place.base)  # nothing went to the driver's local disk
    assert place.outputs() == reference
    checkpoint_files = place.walk("ckpt")
    assert any(p.startswith("metadata/") for p in checkpoint_files), checkpoint_files
    assert any(p.startswith("state-") for p in checkpoint_files), checkpoint_files


NAMES = ["a[1].txt", "b{x,y}.txt", "c*.txt", "d?.txt", "e\\f.txt", "g,h.txt", "i{j.txt", "k#l.txt"]
DECOYS = ["a1.txt", "bx.txt", "by.txt", "cX.txt", "dZ.txt", "ef.txt", "g", "h.txt", "ij.txt"]


def test_names_with_glob_characters_are_read_exactly_on_hdfs(
    hdfs_sc: Any, hdfs_cluster: MiniHdfsCluster
) -> None:
    place = Place(hdfs_cluster, "exact-names")
    place.make_dirs()
    for decoy in DECOYS:  # before start: never new, so any of their lines is wrong
        hidden = f"{place.base}/in/.{decoy}"
        place.client.write(hidden, data=f"decoy {decoy}\n".encode())
        place.client.set_times(hidden, modification_time=T0 - 5000)
        place.client.rename(hidden, f"{place.base}/in/{decoy}")
    clock = ManualClock(T0)
    ssc = StreamingContext(hdfs_sc, B / 1000, clock=clock)
    lines: list[str] = []
    batches: list[str] = []
    ssc.textFileStream(place.uri("in")).foreachRDD(lambda rdd: lines.extend(rdd.collect()))
    ssc.textBatchStream(place.uri("in")).records().foreachRDD(
        lambda rdd: batches.extend(rdd.collect())
    )
    for name in NAMES:
        hidden = f"{place.base}/in/.{name}"
        place.client.write(hidden, data=f"file {name}\n".encode())
        place.client.set_times(hidden, modification_time=T0 + 100)
        place.client.rename(hidden, f"{place.base}/in/{name}")
    try:
        run(ssc, clock, 1)
    finally:
        ssc.stop(stopSparkContext=False)
    expected = sorted(f"file {name}" for name in NAMES)
    assert sorted(lines) == expected
    assert sorted(batches) == expected
