"""A pyspark.streaming program runs on dstream by changing its import, with the same output."""

from __future__ import annotations

import threading
import warnings
from typing import Any

PROGRAM = """
from {module} import StreamingContext

def build(sc, batches, sink):
    ssc = StreamingContext(sc, 0.5)
    lines = ssc.queueStream([sc.parallelize(b, 2) for b in batches])
    words = lines.flatMap(lambda line: line.split(" ")).filter(lambda w: w)
    counts = words.map(lambda w: (w, 1)).reduceByKey(lambda a, b: a + b)
    longest = words.map(lambda w: (len(w), w)).reduce(max)
    counts.foreachRDD(lambda t, rdd: sink.add("counts", sorted(rdd.collect())))
    longest.foreachRDD(lambda rdd: sink.add("longest", rdd.collect()))
    return ssc
"""

BATCHES = [["to be or not to be", "that is"], ["the question"], ["be be be"]]


class Sink:
    def __init__(self, wanted: int) -> None:
        self.got: dict[str, list[Any]] = {"counts": [], "longest": []}
        self.lock = threading.Lock()
        self.full = threading.Event()
        self.wanted = wanted

    def add(self, key: str, value: Any) -> None:
        with self.lock:
            self.got[key].append(value)
            if all(len(v) >= self.wanted for v in self.got.values()):
                self.full.set()


def run(sc: Any, module: str) -> dict[str, list[Any]]:
    namespace: dict[str, Any] = {}
    exec(PROGRAM.format(module=module), namespace)
    sink = Sink(len(BATCHES))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # pyspark.streaming is deprecated
        ssc = namespace["build"](sc, BATCHES, sink)
    ssc.start()
    try:
        assert sink.full.wait(120), f"{module}: only {sink.got} after 120 s"
    finally:
        ssc.stop(stopSparkContext=False, stopGraceFully=False)
    return {k: v[: len(BATCHES)] for k, v in sink.got.items()}


def test_the_same_program_gives_the_same_output_on_both_engines(sc: Any) -> None:
    ours = run(sc, "dstream")
    theirs = run(sc, "pyspark.streaming")
    assert ours == theirs
    assert ours["counts"][2] == [("be", 3)]
    assert ours["longest"][0] == [(4, "that")]
