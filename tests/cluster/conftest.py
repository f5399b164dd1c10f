"""The standalone cluster (3 one-core workers, distinct hosts to Spark) the straggler and
deploy tests share: started once for the fault runs' worker, ~10 s less per module."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from testbed.standalone import StandaloneCluster


@pytest.fixture(scope="session")
def cluster() -> Iterator[StandaloneCluster]:
    with StandaloneCluster(workers=3, cores=1, memory_mb=1024) as c:
        yield c
