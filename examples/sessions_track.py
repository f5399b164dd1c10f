"""Sessions with track() (the paper's state-tracking operator): each user's session starts
at its first event, counts its events, ends at a "logout" or after 3 seconds without events;
every interval prints how many sessions are active. An interval costs what its active and
expiring sessions cost, not what all sessions cost.

    python examples/sessions_track.py
    spark-submit --master URL examples/sessions_track.py

The input is a queue of one batch of (user, event) pairs per interval, so the output is the
same on every run.
"""

from __future__ import annotations

import time
from typing import Any

from pyspark import SparkConf, SparkContext

from dstream import StreamingContext

BATCHES = [
    [("ann", "play"), ("bob", "play")],
    [("ann", "seek"), ("cat", "play")],
    [("bob", "logout")],
    [("cat", "pause")],
    [],
    [],
    [],
    [("ann", "play")],
    [],
]


def main() -> list[tuple[Any, list[tuple[str, int]]]]:
    sc = SparkContext.getOrCreate(SparkConf().setAppName("sessions"))
    ssc = StreamingContext(sc, 1)
    events = ssc.queueStream([sc.parallelize(batch, 2) for batch in BATCHES], default=[])

    def start(user: str, event: str) -> int:
        return 1  # events in the session

    def update(user: str, count: int, event: str) -> int | None:
        return None if event == "logout" else count + 1

    sessions = events.track(start, update, timeout="3s")
    seen: list[tuple[Any, list[tuple[str, int]]]] = []
    sessions.foreachRDD(lambda time, rdd: seen.append((time, sorted(rdd.collect()))))
    sessions.foreachRDD(lambda time, rdd: print(time, seen[-1][1]))
    ssc.start()
    time.sleep(len(BATCHES) + 1.5)
    ssc.stop(stopGraceFully=True)
    return seen


if __name__ == "__main__":
    main()
