"""The program saved and restored as one symmetric pair on the graph (issue #59):
``DStreamGraph.snapshot()`` is what the metadata journal keeps, ``restore()`` runs it in
place of the program a new driver's code defined, bound to that driver's graph."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dstream import Duration, ManualClock, StreamingContext
from dstream.streams.graph import graph_of


def program(sc: Any, directory: Path) -> StreamingContext:
    ssc = StreamingContext(sc, Duration(1000), clock=ManualClock(0))
    words = ssc.textFileStream(str(directory)).flatMap(str.split).map(lambda w: (w, 1))
    words.reduceByKey(lambda a, b: a + b).foreachRDD(lambda t, rdd: None)
    words.count().foreachRDD(lambda t, rdd: None)
    ssc.remember(5)
    return ssc


def test_a_snapshot_restores_the_program_into_a_new_graph(sc: Any, tmp_path: Path) -> None:
    saved = graph_of(program(sc, tmp_path))
    data = saved.snapshot()
    fresh = graph_of(StreamingContext(sc, Duration(1000), clock=ManualClock(0)))
    fresh.restore(data)

    assert [type(s).__name__ for s in fresh.streams] == [type(s).__name__ for s in saved.streams]
    assert [s.id for s in fresh.inputs] == [s.id for s in saved.inputs]
    assert [s.id for s in fresh.outputs] == [s.id for s in saved.outputs]
    assert fresh.remember_duration == saved.remember_duration
    assert all(s.graph is fresh for s in fresh.streams)
    assert not set(map(id, fresh.streams)) & set(map(id, saved.streams))
    # Saving the restored program gives the same program again.
    assert len(fresh.snapshot()) > 0
    again = graph_of(StreamingContext(sc, Duration(1000), clock=ManualClock(0)))
    again.restore(fresh.snapshot())
    assert [type(s).__name__ for s in again.streams] == [type(s).__name__ for s in saved.streams]
