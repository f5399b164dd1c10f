"""Joining a stream with a table refreshed by a batch job: the stream never waits for a
reload, and each interval joins with one whole version of the table."""

from __future__ import annotations

import threading
from typing import Any

from dstream.tables import RefreshedTable
from dstream.testing.streams import BatchCollector

from .conftest import Harness


def test_intervals_join_the_newest_loaded_version_and_never_wait_for_a_load(
    harness: Any,
) -> None:
    h: Harness = harness()
    sc = h.ssc.sparkContext
    loads: list[int] = []
    slow_load, reloading = threading.Event(), threading.Event()
    later_loads = threading.Event()

    def load() -> Any:
        version = len(loads) + 1
        loads.append(version)
        if version == 2:
            reloading.set()
            assert slow_load.wait(120)  # the second load is a long batch job
        if version >= 3:
            # The clock passed the third load's due time while the second one ran: hold it
            # back so the last intervals show which version they joined, not a race.
            later_loads.wait(120)
        return sc.parallelize([("k", f"v{version}"), ("j", f"v{version}")], 2)

    table = RefreshedTable(load, every=2, clock=h.clock)
    keys = h.ssc.queueStream([[("k", i)] for i in range(8)])
    joined = keys.transform(lambda rdd: rdd.join(table.current()))
    got = BatchCollector(joined)
    h.ssc.start()
    h.run_batches(2)  # the reload is due after 2 s: it starts, and blocks...
    assert reloading.wait(60)
    h.run_batches(2)  # ...while the stream goes on with the version it has
    assert loads == [1, 2] and table.version == 1
    slow_load.set()
    assert table.wait_for_version(2, 60)
    h.run_batches(2)
    table.close()
    later_loads.set()
    versions = [{v for _, (_, v) in batch} for batch in got.in_order()]
    # Every interval ran meanwhile (none waited for the load), each with one whole version.
    assert versions[:4] == [{"v1"}] * 4 and versions[4:] == [{"v2"}] * 2
