"""kill -9 of the driver while an interval is being committed into a table (saveToTable),
once and three times (`make test-full`; `make test` checks the table in its chaos run),
while input keeps arriving: read back with Spark SQL, the table holds every input line exactly once, and each interval's rows are exactly
the lines that interval read (its ``lines-<ms>`` text output, committed exactly once by the
same program: tests/recovery/test_chaos.py), each interval in the table once; nothing
half-written is left behind.

apps/recoverable.py runs with ``--table only``: the lines as text (the oracle) and the lines
appended to ``out/table``. A commit in progress is a hidden ``.batch_ms=<ms>.tmp-...``
directory in the table: the driver is killed the moment one is seen, whether Spark is still
writing its part files or the rename is next."""

from __future__ import annotations

import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from testbed.drivers import App, LocalStorage, wait_for
from tests.recovery.harness import CommittedLines, expected, input_lines, write_inputs

pytestmark = [pytest.mark.slow]


def table_commit_in_progress(storage: LocalStorage) -> bool:
    return any(n.startswith(".batch_ms=") for n in storage.names("out/table"))


def committed_table_intervals(storage: LocalStorage) -> set[int]:
    return {
        int(n.split("=", 1)[1])
        for n in storage.names("out/table")
        if n.startswith("batch_ms=") and "_DSTREAM_COMMIT" in storage.names(f"out/table/{n}")
    }


# In `make test-full`: `make test`'s chaos run (tests/recovery/test_chaos.py) writes the same
# table through two driver kills and an executor kill, and its fault worker is the suite's
# critical path (this run took 48 s of it on a fresh clone).
@pytest.mark.full
@pytest.mark.parametrize("kills", [1, 3])
def test_driver_killed_mid_table_commit_leaves_each_interval_once(
    sc: Any, tmp_path: Path, kills: int
) -> None:
    storage = LocalStorage(tmp_path)
    storage.make_dirs()
    app = App(storage, ["--table", "only"])
    try:
        app.start()
        done = threading.Event()
        writer = threading.Thread(target=write_inputs, args=(storage, input_lines(), done))
        writer.start()
        for _ in range(kills):
            wait_for(lambda: table_commit_in_progress(storage), 120, "a table commit", 0.002)
            app.kill9()
            app.start()
        writer.join()
        want = expected()[0]
        lines = CommittedLines(storage)
        wait_for(lambda: set(lines()) == set(want), 300, "all input as lines", 0.5)
        wait_for(
            lambda: set(lines.read) <= {f"lines-{t}" for t in committed_table_intervals(storage)},
            120,
            "the table to hold every interval the lines were committed in",
            0.5,
        )
    finally:
        app.kill9()
    assert app.restored == [False] + [True] * kills
    assert lines() == want  # the oracle itself: every input line once

    spark = SparkSession.builder.getOrCreate()
    rows = spark.sql(f"SELECT line, batch_ms FROM parquet.`{tmp_path / 'out' / 'table'}`")
    table: dict[int, Counter[str]] = {}
    for line, batch_ms in rows.collect():
        table.setdefault(batch_ms, Counter())[line] += 1
    assert sum(table.values(), Counter()) == want  # every input line exactly once
    for name, text in lines.read.items():  # interval by interval
        t = int(name.rsplit("-", 1)[1])
        assert table.get(t, Counter()) == Counter(text), t
    assert set(table) <= committed_table_intervals(storage)
    # A killed commit's hidden directory is cleared when its interval is redone: none is
    # left for a committed interval (the last kill, after the checks, may leave one behind).
    hidden = [n for n in storage.names("out/table") if n.startswith(".batch_ms=")]
    left = {int(n[len(".batch_ms=") :].split(".tmp-")[0]) for n in hidden}
    assert left & set(table) == set()
