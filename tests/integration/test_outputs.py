"""Output operations: foreachRDD, pprint and exactly-once saveAsTextFiles."""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from dstream import Time
from dstream.storage.commits import COMMIT_MARKER

from .conftest import Harness


def read_outputs(directory: Path, prefix: str) -> dict[str, list[str]]:
    result = {}
    for name in sorted(os.listdir(directory)):
        if name.startswith(prefix):
            lines: list[str] = []
            for part in sorted((directory / name).glob("part-*")):
                lines.extend(part.read_text().splitlines())
            result[name] = sorted(lines)
    return result


def test_foreach_rdd_gets_time_and_rdd(harness: Any) -> None:
    h: Harness = harness(batch_ms=500)
    seen: list[tuple[Time, list[int]]] = []
    h.ssc.queueStream([[1], [2]]).foreachRDD(lambda t, rdd: seen.append((t, rdd.collect())))
    h.ssc.start()
    h.run_batches(2)
    assert seen == [(Time(500), [1]), (Time(1000), [2])]
    assert seen[0][0].isoformat() == datetime.fromtimestamp(0.5).isoformat()  # as PySpark's


def test_save_as_text_files_writes_each_interval_once(harness: Any, tmp_path: Path) -> None:
    prefix = str(tmp_path / "out" / "words")
    h: Harness = harness()
    h.ssc.queueStream([["a", "b"], [], ["c"]]).saveAsTextFiles(prefix, "txt")
    h.ssc.start()
    h.run_batches(3)
    h.ssc.awaitTerminationOrTimeout(0)
    first = read_outputs(tmp_path / "out", "words")
    assert first == {"words-1000.txt": ["a", "b"], "words-2000.txt": [], "words-3000.txt": ["c"]}
    assert all((tmp_path / "out" / n / COMMIT_MARKER).exists() for n in first)
    assert sorted(os.listdir(tmp_path / "out")) == sorted(first)  # no temporary leftovers
    stamp = os.stat(tmp_path / "out" / "words-1000.txt" / COMMIT_MARKER).st_mtime_ns

    # The same program again over the same intervals (as after a recovery), with other
    # data: committed intervals are not written a second time.
    h2: Harness = harness()
    h2.ssc.queueStream([["X"], ["Y"], ["Z"], ["d"]]).saveAsTextFiles(prefix, "txt")
    h2.ssc.start()
    h2.run_batches(4)
    h2.ssc.awaitTerminationOrTimeout(0)
    second = read_outputs(tmp_path / "out", "words")
    assert second == {**first, "words-4000.txt": ["d"]}
    assert os.stat(tmp_path / "out" / "words-1000.txt" / COMMIT_MARKER).st_mtime_ns == stamp


def test_save_as_text_files_refuses_to_overwrite_foreign_data(harness: Any, tmp_path: Path) -> None:
    (tmp_path / "c-1000").mkdir()
    (tmp_path / "c-1000" / "mine.txt").write_text("keep")
    h: Harness = harness()
    h.ssc.queueStream([["a"]]).saveAsTextFiles(str(tmp_path / "c"))
    h.ssc.start()
    h.run_batches(1)
    with pytest.raises(Exception, match="exists but was not committed by dstream"):
        h.ssc.awaitTerminationOrTimeout(0)
    assert (tmp_path / "c-1000" / "mine.txt").read_text() == "keep"


def test_save_as_text_files_validates_its_prefix(harness: Any) -> None:
    stream = harness().ssc.queueStream([["a"]])
    with pytest.raises(ValueError, match=r"saveAsTextFiles\(\) prefix '' must be a non-empty path"):
        stream.saveAsTextFiles("")


def test_save_calls_the_sink_once_per_interval_and_logs_the_commit(
    harness: Any, tmp_path: Path
) -> None:
    written: list[tuple[int, list[str]]] = []

    def sink(time: Time, rdd: Any) -> None:
        written.append((time.ms, sorted(rdd.collect())))

    h: Harness = harness()
    h.ssc.checkpoint(str(tmp_path))
    h.ssc.queueStream([["a"], ["b", "c"]]).save(sink, name="db")
    h.ssc.start()
    h.run_batches(2)
    assert written == [(1000, ["a"]), (2000, ["b", "c"])]
    assert sorted(os.listdir(tmp_path / "outputs" / "db")) == ["1000", "2000"]
    with pytest.raises(
        ValueError, match=r"save\(\) name 'a/b' must be a non-empty string without '/'"
    ):
        harness().ssc.queueStream([[1]]).save(sink, name="a/b")
