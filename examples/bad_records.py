"""One malformed line in a stateful program: by default its interval fails, and so does
every later one (their state depends on it). With bad_records="quarantine" the line is set
aside with its error, interval and operator, and the program goes on.

    python examples/bad_records.py
    spark-submit --master URL examples/bad_records.py
"""

from __future__ import annotations

import time
from typing import Any

from pyspark import SparkConf, SparkContext

from dstream import StreamingContext, StreamingSettings

LINES = [
    ["ann 3", "bob 1"],
    ["ann 2", "bob one"],  # "one" is not a number
    ["cat 5"],
]


def parse(line: str) -> tuple[str, int]:
    user, amount = line.split()
    return user, int(amount)


def main() -> dict[str, Any]:
    sc = SparkContext.getOrCreate(SparkConf().setAppName("bad-records"))
    settings = StreamingSettings(bad_records="quarantine")
    ssc = StreamingContext(sc, 1, settings=settings)
    lines = ssc.queueStream([sc.parallelize(batch, 2) for batch in LINES], default=[])
    totals = lines.map(parse).updateStateByKey(lambda new, old: (old or 0) + sum(new))
    last: dict[str, Any] = {}
    totals.foreachRDD(lambda rdd: last.update(totals=sorted(rdd.collect())))
    ssc.start()
    time.sleep(len(LINES) + 1.5)
    ssc.stop(stopGraceFully=True)
    set_aside = [(str(r.record), r.operator, r.error.splitlines()[-1]) for r in ssc.quarantined()]
    print("totals:", last["totals"])
    print("set aside:", set_aside)
    return {"totals": last["totals"], "quarantined": set_aside}


if __name__ == "__main__":
    main()
