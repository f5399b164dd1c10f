"""Progress records per batch (the shape Structured Streaming users know) and the one-line
console display, with the run's real numbers and times as people read them."""

from __future__ import annotations

import json
import os
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from dstream.scheduler.engine import engine_of
from dstream.scheduler.progress import ConsoleProgress
from dstream.time import human_time

from .conftest import Harness

B = 1000


def test_progress_records_describe_each_batch(harness: Any, tmp_path: Path) -> None:
    h: Harness = harness()
    h.ssc.checkpoint(str(tmp_path / "ckpt"))
    indir = tmp_path / "in"
    indir.mkdir()
    for i, words in enumerate(["a b c", "a a"]):
        (indir / f"{i}.txt").write_text(words.replace(" ", "\n") + "\n")
        os.utime(indir / f"{i}.txt", ns=((i * B + 100) * 1_000_000,) * 2)
    pairs = h.ssc.textFileStream(str(indir)).map(lambda w: (w, 1))
    totals = pairs.updateStateByKey(lambda new, old: sum(new) + (old or 0)).setName("totals")
    totals.checkpoint(1).foreachRDD(lambda rdd: rdd.count())
    assert h.ssc.lastProgress is None
    h.ssc.start()
    h.run_batches(1)
    engine_of(h.ssc).checkpointer.wait_idle(60)
    h.run_batches(1)
    engine_of(h.ssc).bus.wait_until_empty(60)
    last = h.ssc.lastProgress
    assert last is not None and json.loads(json.dumps(last)) == last  # JSON-serialisable
    assert [p["batchId"] for p in h.ssc.recentProgress] == [1000, 2000]
    assert last["batchTime"] == datetime.fromtimestamp(2).strftime("%Y-%m-%d %H:%M:%S.000")
    assert last["timestamp"] == "1970-01-01T00:00:02.000Z"
    assert last["numInputRows"] == 2 and last["inputRowsPerSecond"] == 2.0
    assert last["durationMs"]["processing"] >= 0 and last["backlog"] == 0 and not last["failed"]
    (source,) = last["sources"]
    assert source["description"] == f"textFileStream[{indir}]"
    assert source["numInputRows"] == 2 and source["files"] == [str(indir / "1.txt")]
    (state,) = last["stateOperators"]
    assert state["name"] == "totals" and state["operator"].startswith("updateStateByKey at ")
    # The newest checkpoint published: the first interval's, or the second's when its
    # asynchronous write finished before the interval completed (seen under load).
    assert state["lastCheckpoint"] in (human_time(1000), human_time(2000))
    assert state["lineageDepth"] == 1  # interval 2 was built on interval 1's checkpoint
    assert isinstance(state["memoryUsedBytes"], int) and state["memoryUsedBytes"] > 0
    (output,) = last["outputs"]
    assert output["name"].startswith("foreachRDD at test_progress.py:")
    assert output["attempts"] == 1 and output["failure"] is None


def test_the_console_line(harness: Any, capsys: pytest.CaptureFixture[str]) -> None:
    h: Harness = harness()
    h.ssc.addStreamingListener(ConsoleProgress())
    h.ssc.queueStream([[1, 2, 3]]).foreachRDD(lambda rdd: rdd.count())
    h.ssc.start()
    h.run_batches(1)
    engine_of(h.ssc).bus.wait_until_empty(60)
    line = capsys.readouterr().out.strip()
    assert line.startswith(f"[{human_time(1000)}]  3 rows  ")
    assert " rows/s  processing " in line and " ms  delay " in line


def test_a_state_named_through_the_stream_its_operator_returned_goes_by_that_name(
    harness: Any, tmp_path: Path
) -> None:
    """setName() on a window's or track()'s result names its state in the journal, in
    `dstream status`, in progress records, in checkpoint events and in the `state.<name>`
    metrics alike (issue #61: the last three showed the operator and its call site)."""
    from operator import add, sub

    from dstream import StreamingListener
    from dstream.scheduler.coordinator import journal_names
    from dstream.scheduler.webui import state_metric_names

    h: Harness = harness()
    h.ssc.checkpoint(str(tmp_path / "ckpt"))
    pairs = h.ssc.queueStream([[("a", 1), ("b", 1)], [("a", 1)]])
    window = pairs.reduceByKeyAndWindow(add, sub, 2).setName("recent words")
    sessions = pairs.track(lambda k, e: e, lambda k, s, e: s + e, 3).setName("sessions")
    totals = pairs.updateStateByKey(lambda new, old: sum(new) + (old or 0))
    for stream in (window, sessions, totals):
        stream.checkpoint(1).foreachRDD(lambda rdd: rdd.count())
    checkpointed: set[str | None] = set()

    class Checkpoints(StreamingListener):
        def onCheckpointCompleted(self, info: Any) -> None:
            checkpointed.add(info.name)

    h.ssc.addStreamingListener(Checkpoints())
    h.ssc.start()
    h.run_batches(2)
    engine = engine_of(h.ssc)
    engine.checkpointer.wait_idle(60)
    engine.bus.wait_until_empty(60)
    last = h.ssc.lastProgress
    assert last is not None
    names = [s["name"] for s in last["stateOperators"]]
    assert names[:2] == ["recent words", "sessions"], names
    assert names[2].startswith("updateStateByKey at test_progress.py:")  # no name given
    assert state_metric_names(names)[:2] == ["recent_words", "sessions"]
    journaled = journal_names(engine.graph.streams)
    states = [s for s in engine.graph.streams if s.is_state]
    assert [journaled[s._id] for s in states][:2] == names[:2]
    assert {"recent words", "sessions"} <= checkpointed
