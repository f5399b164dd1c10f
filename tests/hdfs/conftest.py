"""One real HDFS mini cluster (2 DataNodes, replication 2, WebHDFS) for the whole session.

Every test in this directory gets the ``hdfs`` marker, so ``pytest -m "not hdfs"`` skips
them. They need the JVM side built (``make minicluster``); without it the fixture fails with
the command to build it rather than skipping silently.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest

from testbed.hdfs import MiniHdfsCluster
from tests.conftest import SERVICES

HERE = Path(__file__).parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # A conftest hook sees the whole session's items: mark only the ones under this directory.
    for item in items:
        if item.path.is_relative_to(HERE):
            item.add_marker(pytest.mark.hdfs)


@pytest.fixture
def hdfs_cluster() -> MiniHdfsCluster:
    """Shared by the tests of this session that follow one another (tests/conftest.py's
    SERVICES)."""
    cluster: MiniHdfsCluster = SERVICES.get(
        "hdfs_cluster", lambda: MiniHdfsCluster(datanodes=2, replication=2)
    )
    return cluster


@pytest.fixture
def hdfs_sc(sc: Any, hdfs_cluster: MiniHdfsCluster) -> Any:
    """The session SparkContext, told what a cluster's hdfs-site.xml would tell it: the
    replication our 2 DataNodes allow, and where the NameNode serves WebHDFS (which the
    tasks that write state checkpoints use)."""
    conf = sc._jsc.hadoopConfiguration()
    conf.set("dfs.replication", "2")
    conf.set("dfs.namenode.http-address", urlparse(hdfs_cluster.webhdfs_uri).netloc)
    return sc
