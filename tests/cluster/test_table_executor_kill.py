"""An executor JVM killed -9 in the middle of an interval's table write (``python -m
testbed.table_faults`` on ``local-cluster[2,1,1024]``): the write task holds after handing
half its rows to the Parquet writer, its part file open in the interval's hidden directory,
and its executor is killed. Read back with Spark SQL, the appended table equals the rate
source's lines interval by interval, each interval once, and the upserted running totals
equal the oracle's."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from dstream.storage.filesystem import LocalFileSystem
from dstream.storage.parquet_table import META_NAME, committed_intervals
from testbed.faults import interval_lines
from testbed.table_faults import SEED, B

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.cluster

INTERVALS, KILL_AT, RATE, PARTITIONS = 6, 3, 400, 4


@pytest.mark.full
def test_an_executor_killed_mid_table_write_leaves_each_interval_once(
    sc: object, tmp_path: Path
) -> None:
    args = [sys.executable, "-m", "testbed.table_faults", "--root", str(tmp_path)]
    args += ["--intervals", str(INTERVALS), "--kill-at", str(KILL_AT)]
    args += ["--rate", str(RATE), "--partitions", str(PARTITIONS)]
    proc = subprocess.run(args, check=False, capture_output=True, text=True, timeout=900, cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-5000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert len(result["killed"]) == 1, "no write task was caught mid-write"
    assert result["part_files_at_kill"], "the killed attempt had not opened its part file"
    assert not set(result["killed"]) & set(result["executors_after"])

    oracle = dict(interval_lines(SEED, INTERVALS, RATE, PARTITIONS))
    spark = SparkSession.builder.getOrCreate()
    lines = tmp_path / "lines"
    table: dict[int, Counter[str]] = {}
    for line, batch_ms in spark.sql(f"SELECT line, batch_ms FROM parquet.`{lines}`").collect():
        table.setdefault(batch_ms, Counter())[line] += 1
    assert sorted(table) == [i * B for i in range(1, INTERVALS + 1)]
    for t, want in oracle.items():  # interval by interval, each line once
        assert table[t] == Counter(want), t
    fs = LocalFileSystem()
    assert committed_intervals(fs, str(lines)) == sorted(oracle)
    assert sorted(p.name for p in lines.iterdir()) == sorted(
        [META_NAME, *(f"batch_ms={t}" for t in oracle)]
    )
    killed_interval = lines / f"batch_ms={KILL_AT * B}"
    assert not list(killed_interval.rglob("_temporary"))  # the killed attempt's files went

    totals = spark.sql(
        f"""SELECT word, count FROM (
              SELECT *, row_number() OVER (PARTITION BY word ORDER BY batch_ms DESC) AS newest
              FROM parquet.`{tmp_path / "totals"}`
            ) WHERE newest = 1"""
    ).collect()
    want_totals = Counter(w for ls in oracle.values() for line in ls for w in line.split())
    assert {r["word"]: r["count"] for r in totals} == dict(want_totals)
