"""The standalone cluster (3 one-core workers, distinct hosts to Spark) the straggler and
deploy tests share: started once for the fault runs' worker, ~10 s less per module."""

from __future__ import annotations

import pytest

from testbed.standalone import StandaloneCluster
from tests.conftest import SERVICES


@pytest.fixture
def cluster() -> StandaloneCluster:
    """Shared by the tests of this session that follow one another (tests/conftest.py's
    SERVICES)."""
    shared: StandaloneCluster = SERVICES.get(
        "cluster", lambda: StandaloneCluster(workers=3, cores=1, memory_mb=1024)
    )
    return shared
