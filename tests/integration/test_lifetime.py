"""A StreamingContext the program dropped, stopped or never started, is freed with its
graph and streams (a shell or a test session creates many over one SparkContext). The
registry that finds a context's graph (dstream.streams.graph.graph_of) held the graph, which
refers to its context, as the value of a weak key: no context was ever freed."""

from __future__ import annotations

import gc
import weakref
from typing import Any

from dstream import ManualClock, StreamingContext
from dstream.scheduler.engine import engine_of


def test_a_dropped_context_is_freed_with_its_graph(sc: Any) -> None:
    ssc = StreamingContext(sc, 1, clock=ManualClock(0))
    stream = ssc.queueStream([[1, 2]]).map(lambda x: x * 2)
    stream.foreachRDD(lambda rdd: None)
    stream.createOrReplaceTempView("lifetime_view")  # the API's views live on the graph
    ssc.start()
    ssc.stop(stopSparkContext=False)
    context, graph = weakref.ref(ssc), weakref.ref(engine_of(ssc).graph)
    del ssc, stream
    gc.collect()
    assert context() is None and graph() is None


def test_a_context_never_started_is_freed(sc: Any) -> None:
    ssc = StreamingContext(sc, 1, clock=ManualClock(0))
    ssc.queueStream([[1]]).pprint()
    context = weakref.ref(ssc)
    del ssc
    gc.collect()
    assert context() is None
