"""Tentative, then exact, for real: two queries on a cluster (the testbed's standalone cluster
of 3 one-core workers, or local-cluster), the executors of two of the three workers killed
with SIGKILL mid-run, and what each output delivered recorded interval by interval. Prints
one JSON object.

    python -m testbed.tentative --master spark://127.0.0.1:7077 --seconds 30 --kill-at 15

The program, on the system clock (2 s intervals), reads the rate source (Zipf-like words):

- *top-k* (priority 2): the 20 words with the highest running count (``updateStateByKey``
  over 3 partitions, checkpointed every ``--checkpoint`` s), ``foreachRDD(tentative=True)``;
- *trending* (priority 1): each interval's word counts joined with a 10 s window of them (a
  window with an inverse, 3 partitions, checkpointed likewise): ``(word, (now, window))``,
  ``foreachRDD(tentative=True)``.

For each output and interval the run reports the tentative result (its records, fidelity,
and when it arrived, wall ms after the interval's end) and the exact one (records, arrival,
and how many times the output was called with it: once, for exactly-once delivery; when
its call began), and for
each call the order in which it began and returned among all calls (``*_seq``). With
``--save DIR`` the top-k state is also saved with ``saveAsTextFiles(tentative=True)`` and
the run lists what is left in ``DIR`` (committed intervals; a tentative directory left
behind would be there too).
:func:`oracle` computes the exact answers from the rate source's own generator.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import logging
import math
import os
import signal
import sys
import threading
import time
from collections import Counter
from operator import add, sub
from typing import Any

TOP, RATE, PARTITIONS, SEED, WINDOW_S = 20, 300, 3, 11, 10


def words_of(line: str) -> list[str]:
    return line.split()


def oracle(
    times_ms: list[int],
    zero_ms: int,
    rate: int = RATE,
    batch_ms: int = 2000,
    window_s: int = WINDOW_S,
) -> dict[str, dict[int, Any]]:
    """The exact top-k and trending results of each interval of ``times_ms`` (a run from
    ``zero_ms``), from the rate source's generator."""
    from dstream.sources.rate import partition_lines, records_in_interval

    per: dict[int, Counter[str]] = {}
    last = max(times_ms)
    for t in range(zero_ms + batch_ms, last + 1, batch_ms):
        total = records_in_interval(rate, t, batch_ms)
        lines = [
            line
            for p in range(PARTITIONS)
            for line in partition_lines(SEED, t, p, PARTITIONS, total, 100)
        ]
        per[t] = Counter(w for line in lines for w in words_of(line))
    totals: Counter[str] = Counter()
    top: dict[int, Any] = {}
    trending: dict[int, Any] = {}
    for t in sorted(per):
        totals.update(per[t])
        if t in times_ms:
            top[t] = sorted(totals.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)[:TOP]
            window = sum((per[u] for u in per if t - window_s * 1000 < u <= t), Counter())
            trending[t] = {w: (n, window[w]) for w, n in per[t].items()}
    return {"top": top, "trending": trending}


def accuracy(kind: str, tentative: Any, exact: Any, weights: str = "records") -> float:
    """How much of the exact answer a tentative one holds. Top-k: the share of the exact
    top words' counts that the tentative top-k gives them. Trending (a join): per word, the
    share of the pairs a record-level join would give (now x window), weighted by the
    geometric mean of the word's records on the two sides, as PPA's model weighs a join's
    partitions (``weights="pairs"``: by the word's pairs, a·b, which puts the weight on
    the most frequent words quadratically: with these Zipf-like words one word holds two
    thirds of the pairs, and the measure says mostly whether its partition was lost)."""
    if kind == "top":
        held = dict(map(tuple, tentative))
        want = sum(n for _, n in exact)
        return sum(min(held.get(w, 0), n) for w, n in exact) / want if want else 1.0
    got = {w: tuple(v) for w, v in tentative.items()}
    total = share = 0.0
    for w, (a, b) in exact.items():
        weight = a * b if weights == "pairs" else math.sqrt(a * b)
        total += weight
        if w in got and a and b:
            share += weight * min(got[w][0], a) / a * min(got[w][1], b) / b
    return share / total if total else 1.0


def state_holders(streams: Any) -> dict[str, int]:
    """Executor id -> how many partitions it holds of the states' newest completed
    intervals (from the block manager master, as the tentative controller asks it)."""
    from dstream.streams.state_base import StateStream
    from dstream.streams.surviving import holders

    held: Counter[str] = Counter()
    for s in streams:
        if isinstance(s, StateStream):
            rdd = s.state_rdd(s.latest_time())
            blocks = [] if rdd is None else holders(rdd)
            if not blocks or not all(blocks):
                raise RuntimeError(f"{s.label}: a completed state's partitions not held")
            held.update(executor for block in blocks for executor in block)
    return dict(held)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--master", default="local-cluster[3,1,768]")
    p.add_argument("--seconds", type=float, default=30)
    p.add_argument(
        "--kill-at",
        type=float,
        default=15,
        help="kill once the states' interval this many seconds into the stream is done",
    )
    p.add_argument("--kill", type=int, default=2, help="executors killed (0: none)")
    p.add_argument("--checkpoint", type=int, default=4, help="state checkpoint interval, s")
    p.add_argument("--rate", type=int, default=RATE)
    p.add_argument("--batch", type=int, default=2, help="the batch interval, s")
    p.add_argument("--window", type=int, default=WINDOW_S, help="the trending window, s")
    p.add_argument("--tentative", choices=["on", "off"], default="on")
    p.add_argument("--budget-mb", type=float, default=0.0, help="replica_budget_mb")
    p.add_argument("--blind", action="store_true", help="a priority-blind replica plan")
    p.add_argument("--executors", type=int, default=3)
    p.add_argument(
        "--manual", type=int, default=0, help="N intervals back to back on a ManualClock, no kill"
    )
    p.add_argument(
        "--timeline",
        action="store_true",
        help="also report every Spark listener event of the run (bench/engine/tentative_delay.py)",
    )
    p.add_argument(
        "--save",
        default=None,
        help="also saveAsTextFiles(tentative=True) the top-k state under this directory",
    )
    args = p.parse_args(argv)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark import SparkContext

    from dstream import (
        Duration,
        ManualClock,
        StreamingContext,
        StreamingListener,
        StreamingSettings,
    )
    from dstream.scheduler.engine import engine_of
    from dstream.streams.state_base import StateStream
    from testbed.faults import cluster_conf, wait_for_executors
    from testbed.processes import executor_pids_of

    conf = cluster_conf(args.master, "dstream-tentative", 768, PARTITIONS)
    conf.set("spark.scheduler.mode", "FAIR")
    conf.set("spark.executor.cores", "1")
    sc = SparkContext(conf=conf)
    sc.setLogLevel("ERROR")
    result: dict[str, Any] = {"outputs": {"top": {}, "trending": {}}, "killed": []}
    # What the controller decided after each loss (begun, judged quick, nothing lost), for
    # the result: a run without an episode says why.
    decisions: list[str] = []
    t0 = time.time()
    recorder_handler = logging.Handler(logging.INFO)
    recorder_handler.emit = lambda record: decisions.append(  # type: ignore[method-assign]
        f"{record.created - t0:.1f}s {record.getMessage()}"
    )
    # The controller's decisions, and its passes' (a result dropped or failed says why).
    for name in ("dstream.scheduler.recovery_episodes", "dstream.scheduler.tentative_results"):
        controller_log = logging.getLogger(name)
        controller_log.setLevel(logging.INFO)
        controller_log.addHandler(recorder_handler)
    result["controller"] = decisions
    try:
        wait_for_executors(sc, args.executors)
        settings = StreamingSettings(
            tentative_outputs=args.tentative == "on",
            replica_budget_mb=args.budget_mb,
            replica_priorities=not args.blind,
        )
        clock = ManualClock(0) if args.manual else None
        ssc = StreamingContext(sc, args.batch, settings=settings, clock=clock)
        root = f"/tmp/dstream-tentative-{os.getpid()}"
        ssc.checkpoint(root)
        lines = ssc.rateStream(args.rate, numPartitions=PARTITIONS, seed=SEED)
        pairs = lines.flatMap(words_of).map(lambda w: (w, 1))
        totals = pairs.updateStateByKey(lambda new, old: (old or 0) + sum(new), PARTITIONS)
        totals.setName("totals").checkpoint(args.checkpoint)
        window = pairs.reduceByKeyAndWindow(add, sub, args.window, args.batch, PARTITIONS)
        window.setName("window").checkpoint(args.checkpoint)
        now = pairs.reduceByKey(add, PARTITIONS)
        trending = now.join(window, PARTITIONS)
        outputs = result["outputs"]
        lock = threading.Lock()
        # Every call of the outputs gets a number when it begins and when it returns: the
        # order of an interval's tentative and exact calls, whatever the clocks say.
        calls = iter(range(1 << 62))

        def recorder(kind: str) -> Any:
            def record(t: Any, rdd: Any) -> None:
                tentative = bool(getattr(rdd, "tentative", False))
                which = "tentative" if tentative else "exact"
                with lock:
                    slot = outputs[kind].setdefault(
                        str(t.ms), {"exact_calls": 0, "tentative_calls": 0}
                    )
                    slot[f"{which}_calls"] += 1
                    began = next(calls)
                    # When the call began (wall ms after the interval's end): an exact
                    # call begun before a loss closed its interval to tentative results.
                    slot.setdefault(f"{which}_began_ms", int(time.time() * 1000) - t.ms)
                if kind == "top":
                    records: Any = rdd.top(TOP, key=lambda kv: (kv[1], kv[0]))
                else:
                    records = dict(rdd.collect())
                arrived = int(time.time() * 1000) - t.ms
                with lock:
                    slot.setdefault(f"{which}_seq", []).append([began, next(calls)])
                    if tentative:
                        slot["tentative"] = records
                        slot["fidelity"] = rdd.fidelity
                        slot["tentative_after_ms"] = arrived
                    else:
                        slot["exact"] = records
                        slot["exact_after_ms"] = arrived

            return record

        totals.foreachRDD(recorder("top"), tentative=True, priority=2)
        trending.foreachRDD(recorder("trending"), tentative=True, priority=1)
        if args.save:
            totals.saveAsTextFiles(os.path.join(args.save, "totals"), "txt", tentative=True)
        infos: list[dict[str, Any]] = []

        class Tentatives(StreamingListener):
            def onTentativeOutput(self, tentative: Any) -> None:
                infos.append(
                    {
                        "time": tentative.batch_time.ms,
                        "label": tentative.label,
                        "fidelity": tentative.fidelity,
                        "lost": tentative.lost_partitions,
                    }
                )

        ssc.addStreamingListener(Tentatives())
        ssc.start()
        monitor = engine_of(ssc).monitor
        feed = monitor.subscribe() if args.timeline and monitor is not None else None
        result["t0_ms"] = int(t0 * 1000)
        result["group_prefix"] = engine_of(ssc).job_group_prefix
        zero = engine_of(ssc).graph.zero_time
        assert zero is not None
        result["zero_ms"] = zero.ms
        result["batch_ms"] = args.batch * 1000
        result["window_s"] = args.window
        began = time.monotonic()
        if clock is not None:
            # Intervals back to back on a ManualClock: each one's wall time is its work.
            work = []
            for i in range(1, args.manual + 1):
                started = time.perf_counter()
                clock.advance(args.batch * 1000)
                assert ssc.wait_for_batch(zero + Duration(args.batch * 1000 * i), 300)
                work.append(round((time.perf_counter() - started) * 1000))
            result["work_ms"] = work
        elif args.kill:
            # The executors holding the most of the states' newest partitions: killing
            # two that hold none of them loses no state (the scheduler's locality can put
            # every state task on one executor), and there is nothing to be tentative about.
            # At the stream's time, not the wall clock's: on a busy machine the first
            # interval once completed 11 s after the start, and a kill then found no
            # checkpoint and one interval of state.
            batch_ms = args.batch * 1000
            at = zero + Duration(-(-int(args.kill_at * 1000) // batch_ms) * batch_ms)
            assert ssc.wait_for_batch(at, 300), f"the interval at {at} not done in 300 s"
            held = state_holders(engine_of(ssc).graph.streams)
            pids = executor_pids_of(sc)
            result["holders"] = held
            chosen = sorted(pids, key=lambda e: (-held.get(e, 0), int(e)))
            for executor in chosen[: args.kill]:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pids[executor], signal.SIGKILL)
                result["killed"].append(executor)
            result["killed_at_ms"] = int(time.time() * 1000)
            decisions.append(f"{time.time() - t0:.1f}s killed executors {result['killed']}")
        if clock is None:
            threading.Event().wait(max(0.0, args.seconds - (time.monotonic() - began)))
        # Let the exact results of the intervals generated so far arrive.
        last = engine_of(ssc).scheduler
        assert last is not None
        controller = engine_of(ssc).tentative
        if controller is not None and args.kill:
            # Then those of the intervals the episode's passes served: each pass serves the
            # newest interval generated (NewestSlot), later than the run's end when the
            # episode outlasts it, and its tentative result is checked against the exact
            # one only once that has come. The episode ends on the loop as an interval
            # completes: wait interval by interval until it did.
            waited = last.last_generated
            while controller.recovering and waited is not None:
                done = ssc.wait_for_batch(waited, 300)
                assert done, f"the interval at {waited} not done in 300 s"
                waited = waited + Duration(args.batch * 1000)
        generated = last.last_generated
        if generated is not None:
            ssc.wait_for_batch(generated, 300)
            result["completed_ms"] = generated.ms  # every output of it and before it ran
        from dstream.streams.surviving import sizes

        result["state_bytes"] = {}
        for s in engine_of(ssc).graph.streams:
            if isinstance(s, StateStream) and generated is not None:
                rdd = s.state_rdd(s.latest_time())
                if rdd is not None:
                    result["state_bytes"][s.user_name or s.label] = sum(sizes(rdd))
        if feed is not None:
            result["events"] = [
                {"type": type(e).__name__, **dataclasses.asdict(e)} for e in feed.poll()
            ]
        ssc.stop(stopSparkContext=False)
        controller = engine_of(ssc).tentative
        result["episodes"] = 0 if controller is None else controller.episodes
        result["listener"] = infos
        result["replicated"] = {
            s.user_name or s.label: sorted(s.replicated)
            for s in engine_of(ssc).graph.streams
            if isinstance(s, StateStream) and s.replicated
        }
        result["processing_ms"] = [p["durationMs"]["processing"] for p in ssc.recentProgress]
        if args.save:
            # What saveAsTextFiles left: the committed intervals and any tentative directory.
            result["saved"] = sorted(os.listdir(args.save))
    finally:
        sc.stop()
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
