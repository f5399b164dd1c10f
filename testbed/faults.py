"""Executor failures for real: one process, one ``local-cluster`` SparkContext (separate
executor JVMs), several runs of a streaming workload on a ManualClock, executor JVMs killed
with SIGKILL in the middle of an interval. Prints one JSON object per run.

    python -m testbed.faults wordcount --intervals 45 --kill 0 --kill 1@25 --kill 2@25

``--kill N@I`` is a run in which N executor JVMs are killed 0.2 s after interval I started
(``--kill 0``: no failure). With ``--kill-node`` (a standalone master) each one's Worker
dies with it, as when a machine is lost: nothing replaces it, so such a run must be the
last. Each run reports every interval's output, its processing time, which executors were
killed and which are alive at the end. tests/cluster compares the runs' outputs;
bench/paper/faults.py plots their processing times (the paper's Figures 10-12).

Spark allows one SparkContext per process, hence a process of its own. This module must be
run, not imported, by code that already has a SparkContext.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import operator
import os
import signal
import sys
import tempfile
import threading
import time
from collections import Counter
from typing import Any

from dstream.scheduler.engine import engine_of
from testbed.processes import process_tree

B = 1000  # ms per interval
# A word of about a third of the records (rank 3 of the rate source's vocabulary): every
# interval counts a different number, so a lost or doubled partition shows. ("the", used
# before, is not in the vocabulary: every count was 0.)
GREP_WORD = "rihal"
GREP_SEED = 6
WORDCOUNT_SEED = 5


def wordcount(ssc: Any, args: argparse.Namespace) -> Any:
    """Word counts over a sliding 30 s window with the inverse (a state stream)."""
    pairs = (
        ssc.rateStream(args.rate, numPartitions=args.partitions, seed=WORDCOUNT_SEED)
        .flatMap(str.split)
        .map(lambda w: (w, 1))
    )
    counts = pairs.reduceByKeyAndWindow(
        operator.add, operator.sub, args.window, 1, args.state_partitions or args.partitions
    )
    counts.checkpoint(args.checkpoint)
    if args.strategy != "checkpoint":
        # replicate checkpoints at its own default, ten times less often.
        copies = args.copies if args.strategy == "replicate" else None
        counts.recoveryStrategy(args.strategy, copies=copies)
    return counts


# The strategies workload: the same windowed word count under each recovery strategy, and
# a running total (updateStateByKey, checkpointed), tagged by name in one output.
STRATEGY_WINDOWS = ("checkpoint", "replay", "replicate")


def strategies(ssc: Any, args: argparse.Namespace) -> Any:
    """A program mixing recovery strategies (``recoveryStrategy``): a windowed word count
    with the inverse under each of them, and a running total; one output, each record
    ``[name, word, count]``."""
    pairs = (
        ssc.rateStream(args.rate, numPartitions=args.partitions, seed=WORDCOUNT_SEED)
        .flatMap(str.split)
        .map(lambda w: (w, 1))
    )
    tagged = []
    for kind in STRATEGY_WINDOWS:
        counts = pairs.reduceByKeyAndWindow(
            operator.add, operator.sub, args.window, 1, args.state_partitions or args.partitions
        )
        counts.setName(kind).checkpoint(args.checkpoint)
        if kind == "replicate":
            counts.recoveryStrategy(kind, every=args.checkpoint, copies=2)
        else:
            counts.recoveryStrategy(kind)
        tagged.append(counts.map(lambda kv, k=kind: [k, kv[0], kv[1]]))
    totals = pairs.updateStateByKey(lambda new, old: (old or 0) + sum(new))
    totals.setName("total").checkpoint(args.checkpoint)
    tagged.append(totals.map(lambda kv: ["total", kv[0], kv[1]]))
    return ssc.union(*tagged)


def strategies_oracle(intervals: int, window_s: int, rate: int = 2000, partitions: int = 6) -> Any:
    """What :func:`strategies` outputs on a run from time 0."""
    windows = wordcount_oracle(intervals, window_s, rate, partitions)["outputs"]
    outputs: dict[str, Any] = {}
    total: Counter[str] = Counter()
    for t, lines in interval_lines(WORDCOUNT_SEED, intervals, rate, partitions):
        total.update(w for line in lines for w in line.split())
        tagged = [[k, w, n] for k in STRATEGY_WINDOWS for w, n in windows[str(t)]]
        outputs[str(t)] = sorted(tagged + [["total", w, n] for w, n in total.items()])
    return {"outputs": outputs}


def keyed(ssc: Any, args: argparse.Namespace) -> Any:
    """Running word counts (updateStateByKey) in ``--state-partitions`` partitions: the
    elastic state that ``--rescale N@I`` changes while the run goes on."""
    pairs = (
        ssc.rateStream(args.rate, numPartitions=args.partitions, seed=WORDCOUNT_SEED)
        .flatMap(str.split)
        .map(lambda w: (w, 1))
    )
    totals = pairs.updateStateByKey(
        lambda new, old: (old or 0) + sum(new),
        numPartitions=args.state_partitions or args.partitions,
    )
    totals.setName("totals").checkpoint(args.checkpoint)
    if args.run_theta is not None:
        totals.approximateRecovery(args.run_theta)
    return totals


def keyed_oracle(intervals: int, rate: int = 2000, partitions: int = 6) -> dict[str, Any]:
    """What :func:`keyed` outputs on a run from time 0: the running counts."""
    outputs: dict[str, Any] = {}
    total: Counter[str] = Counter()
    for t, lines in interval_lines(WORDCOUNT_SEED, intervals, rate, partitions):
        total.update(w for line in lines for w in line.split())
        outputs[str(t)] = sorted([w, n] for w, n in total.items())
    return {"outputs": outputs}


def approx(ssc: Any, args: argparse.Namespace) -> Any:
    """Running word counts (the rate source's words, Zipf-like) under
    ``approximateRecovery(maxDivergence=Θ)``, one state per ``--approx-theta`` (in one
    program, so every state sees the same kills), each record ``[Θ, word, count]``."""
    pairs = (
        ssc.rateStream(args.rate, numPartitions=args.partitions, seed=WORDCOUNT_SEED)
        .flatMap(str.split)
        .map(lambda w: (w, 1))
    )
    tagged = []
    for theta in args.approx_theta:
        totals = pairs.updateStateByKey(
            lambda new, old: (old or 0) + sum(new),
            numPartitions=args.state_partitions or args.partitions,
        )
        totals.setName(f"theta={theta:g}").checkpoint(args.checkpoint)
        totals.approximateRecovery(theta)
        tagged.append(totals.map(lambda kv, t=theta: [t, kv[0], kv[1]]))
    return ssc.union(*tagged)


def grep(ssc: Any, args: argparse.Namespace) -> Any:
    """Records containing a word, counted per interval (stateless). With ``--task-ms``
    every task also waits that long first, as a task reading from a slow store would: the
    straggler runs need tasks whose length is set by the work, not by scheduling noise."""
    lines = ssc.rateStream(args.rate, numPartitions=args.partitions, seed=GREP_SEED)
    if args.task_ms:
        lines = lines.mapPartitions(_after_ms(args.task_ms), preservesPartitioning=True)
    return lines.filter(lambda line: GREP_WORD in line.split()).count()


def interval_lines(seed: int, intervals: int, rate: int, partitions: int) -> Any:
    """``(batch ms, the interval's records)`` of a run from time 0 of the rate source with
    ``seed``, in plain Python from the source's own generator (what its tasks generate)."""
    from dstream.sources.rate import partition_lines, records_in_interval

    for i in range(1, intervals + 1):
        t = i * B
        total = records_in_interval(rate, t, B)
        parts = (partition_lines(seed, t, p, partitions, total, 100) for p in range(partitions))
        yield t, [line for part in parts for line in part]


def grep_oracle(intervals: int, rate: int = 2000, partitions: int = 6) -> dict[str, Any]:
    """What :func:`grep` outputs on a run from time 0: ``outputs`` (interval -> [count])
    and ``saved`` (the ``--save`` directories' lines). Tests compare a faulty run with it
    instead of running the workload a second time."""
    outputs, saved = {}, {}
    for t, lines in interval_lines(GREP_SEED, intervals, rate, partitions):
        count = sum(GREP_WORD in line.split() for line in lines)
        outputs[str(t)] = [count]
        saved[f"interval-{t}"] = [str(count)]
    return {"outputs": outputs, "saved": saved}


def wordcount_oracle(
    intervals: int, window_s: int, rate: int = 2000, partitions: int = 6
) -> dict[str, Any]:
    """What :func:`wordcount` outputs on a run from time 0 (``outputs``: interval ->
    sorted [word, count] of the window ending there, keys with no count left dropped, as
    the engine drops them)."""
    per_interval: list[Counter[str]] = []
    outputs: dict[str, Any] = {}
    for t, lines in interval_lines(WORDCOUNT_SEED, intervals, rate, partitions):
        per_interval.append(Counter(w for line in lines for w in line.split()))
        window = sum(per_interval[-window_s:], Counter())
        outputs[str(t)] = sorted([w, n] for w, n in window.items() if n)
    return {"outputs": outputs}


def _after_ms(ms: int) -> Any:
    """A partition function that passes its records on after ``ms`` of waiting (on the
    executor's wall clock, which SIGSTOP does not stop: a stopped task finishes late)."""

    def wait_then_pass(records: Any) -> Any:
        time.sleep(ms / 1000)
        return records

    return wait_then_pass


WORKLOADS = {
    "wordcount": wordcount,
    "grep": grep,
    "strategies": strategies,
    "keyed": keyed,
    "approx": approx,
}


class Slower(threading.Thread):
    """Slows one executor for real: SIGSTOP its process tree for ``duty`` of every
    ``period_s``, SIGCONT for the rest, until stopped (then it is left running)."""

    def __init__(self, sc: Any, executor_index: int, duty: float, period_s: float = 0.2) -> None:
        super().__init__(name="dstream-slower", daemon=True)
        self.sc, self.index, self.duty, self.period_s = sc, executor_index, duty, period_s
        self.done = threading.Event()
        self.executor: str | None = None

    def run(self) -> None:
        from testbed.processes import executor_pids_of

        pids = executor_pids_of(self.sc)
        self.executor = sorted(pids, key=int)[self.index]
        while not self.done.is_set():
            tree = process_tree(pids[self.executor])  # workers come and go
            self._signal(tree, signal.SIGSTOP)
            self.done.wait(self.period_s * self.duty)
            self._signal(tree, signal.SIGCONT)
            self.done.wait(self.period_s * (1 - self.duty))

    @staticmethod
    def _signal(pids: list[int], sig: int) -> None:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)

    def stop(self) -> None:
        self.done.set()
        self.join()


def state_holders(sc: Any) -> dict[str, int]:
    """Executor id -> how many partitions it holds of the newest cached RDD (a state stream's
    latest state, when the kill comes early in the next interval), from Spark's status store
    (what the UI's storage page shows)."""
    cached = sc._jsc.sc().statusStore().rddList(True)
    rdds = [cached.apply(i) for i in range(cached.size())]
    newest = max(rdds, key=lambda r: r.id(), default=None)
    held: dict[str, int] = {}
    if newest is None or newest.partitions().isEmpty():
        return held
    partitions = newest.partitions().get()
    for i in range(partitions.size()):
        executors = partitions.apply(i).executors()
        for j in range(executors.size()):
            executor = str(executors.apply(j))
            held[executor] = held.get(executor, 0) + 1
    return held


def executor_count(sc: Any) -> int:
    return int(sc._jsc.sc().getExecutorMemoryStatus().size()) - 1  # minus the driver


def cluster_conf(
    master: str,
    name: str,
    executor_mb: int,
    parallelism: int,
    speculation: bool = False,
    decommission: bool = False,
) -> Any:
    """The SparkConf of a fault run: dstream's recommended settings, no UI, the driver on
    loopback, executors of ``executor_mb`` MB, ``parallelism`` partitions by default."""
    from dstream.sparkconf import recommended_conf

    return (
        recommended_conf(master, name, speculation=speculation, decommission=decommission)
        .set("spark.ui.enabled", "false")
        .set("spark.driver.host", "127.0.0.1")
        .set("spark.executor.memory", f"{executor_mb}m")
        .set("spark.default.parallelism", str(parallelism))
    )


def wait_for_executors(sc: Any, n: int, timeout_s: float = 120) -> None:
    """Until n executors are registered with the driver (a cluster starts them lazily, and
    replaces killed ones within seconds)."""
    from testbed.processes import executor_pids_of

    deadline = time.monotonic() + timeout_s
    pause = threading.Event()
    while executor_count(sc) < n or len(executor_pids_of(sc)) < n:
        if time.monotonic() > deadline:
            raise RuntimeError(f"fewer than {n} executors registered after {timeout_s} s")
        pause.wait(0.1)


def run(sc: Any, args: argparse.Namespace, kill: tuple[int, int], root: str) -> dict[str, Any]:
    from dstream import Duration, ManualClock, StreamingContext, StreamingListener, Time
    from dstream.scheduler.shim import TaskEnd, TaskStart
    from dstream.settings import AvoidancePolicy, StreamingSettings
    from testbed.processes import executor_pids_of, standalone_worker_of

    how_many, at = kill
    kill_at = {ms * B for ms in [at, *args.also_kill_at]}
    rescale_points = {i for _, i in args.rescale}
    rescale_after = dict((i, n) for n, i in args.rescale) if args.run_rescales else {}
    clock = ManualClock(0)
    avoidance = (
        AvoidancePolicy(
            window=args.avoid_window,
            strikes=args.avoid_strikes,
            cooldown=Duration(int(args.avoid_cooldown * 1000)),
        )
        if args.avoid
        else None
    )
    settings = StreamingSettings(
        pipelining_depth=args.depth,
        executor_avoidance=avoidance,
        state_replicas=args.run_replicas,
    )
    ssc = StreamingContext(sc, Duration(B), clock=clock, settings=settings)
    ssc.checkpoint(root)
    out: dict[int, Any] = {}
    stream = WORKLOADS[args.workload](ssc, args)
    stream.foreachRDD(lambda t, rdd: out.__setitem__(t.ms, sorted(rdd.collect())))
    if args.save:
        stream.saveAsTextFiles(os.path.join(root, "out", "interval"))
    killed: list[str] = []
    # Wall time of each interval: the clock is manual, so the listener's delays are all 0;
    # intervals run one at a time, so advancing the clock to completion is the interval.
    processing: dict[int, int] = {}
    # Bytes of each interval's cached state (one copy): what a second copy in memory takes.
    state_bytes: dict[int, dict[str, int]] = {}

    def kill_executors() -> None:
        pids = executor_pids_of(sc)
        chosen = sorted(pids, key=int)
        if args.kill_target == "state":
            # The executors holding the previous interval's state (most partitions first).
            held = state_holders(sc)
            chosen = sorted((e for e in held if e in pids), key=lambda e: -held[e])
        for executor_id in chosen[:how_many]:
            victims = [pids[executor_id]]
            if args.kill_node:
                # The whole "node": its Worker first (so it cannot start a replacement),
                # then the executor JVM and its Python daemon and workers.
                worker = standalone_worker_of(pids[executor_id])
                if worker is None:
                    raise RuntimeError(
                        f"--kill-node: executor {executor_id}'s parent is not a standalone "
                        "Worker; it needs --master spark://... (local-cluster's Workers run "
                        "inside the driver)"
                    )
                victims = process_tree(worker)
            for pid in victims:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            killed.append(executor_id)
        print(f"killed {killed} at {time.strftime('%H:%M:%S')}", file=sys.stderr, flush=True)

    class Faults(StreamingListener):
        def onBatchStarted(self, batchStarted: Any) -> None:
            if how_many and batchStarted.batchInfo().batchTime().ms in kill_at:
                # Let the interval's tasks get going, then kill executor JVMs mid-job.
                threading.Timer(args.kill_delay, kill_executors).start()

    ssc.addStreamingListener(Faults())
    slower = Slower(sc, 0, args.slow) if args.slow else None
    ssc.start()
    feed = ssc.executor_monitor.subscribe()
    # --breakdown: this run's jobs start after every earlier run's (the same SparkContext).
    first_job = _next_job_id(sc) if args.breakdown else 0
    windows: dict[int, tuple[int, int]] = {}  # interval ms -> its wall clock, epoch ms
    prepare_ms: dict[int, int] = {}  # interval ms -> rescale()'s own time before it
    began, began_epoch = time.monotonic(), time.time()
    if slower is not None:
        slower.start()
    try:
        for i in range(1, args.intervals + 1):
            started, started_epoch = time.perf_counter(), time.time()
            clock.advance(B)
            if not ssc.wait_for_batch(Time(i * B), 300):
                raise RuntimeError(f"interval {i} did not complete")
            processing[i * B] = round((time.perf_counter() - started) * 1000)
            windows[i * B] = (int(started_epoch * 1000), int(time.time() * 1000))
            if args.measure_state:
                state_bytes[i * B] = _state_bytes(ssc, Time(i * B))
            # Every run pauses at the same place (a rescaled run after its rescale()).
            settle = args.settle_after_rescale if i in rescale_points else 0.0
            if i in rescale_after:
                # rescale() prepares the new count before the next interval (the driver's
                # time between intervals, not in the next interval's processing time).
                prepared = time.perf_counter()
                stream.rescale(rescale_after[i])
                prepare_ms[(i + 1) * B] = round((time.perf_counter() - prepared) * 1000)
            if settle:  # the next interval after a pause
                threading.Event().wait(settle)
        engine_of(ssc).bus.wait_until_empty(30)
        ssc.awaitTerminationOrTimeout(0)  # raises if an interval failed
    finally:
        if slower is not None:
            slower.stop()
        ssc.stop(stopSparkContext=False)
    breakdown = {}
    if args.breakdown:
        from testbed.breakdown import collect

        wanted = {ms * B for ms in args.breakdown_at} or set(windows)
        chosen = {ms: w for ms, w in windows.items() if ms in wanted}
        breakdown = collect(sc.uiWebUrl, sc.applicationId, chosen, first_job)
        for ms, prepared_ms in prepare_ms.items():
            breakdown.setdefault(str(ms), {})["rescale_prepare_ms"] = prepared_ms
    if args.restart_intervals:
        out.update(restarted(sc, args, root, settings, processing))
    # Bytes each named state wrote to checkpoints over the run (replay: none).
    from dstream.streams.state_base import StateStream

    def state_name(state: Any) -> str:  # setName() names the stream the operator returned
        views = (v.user_name for v in engine_of(ssc).graph.streams if v.checkpoint_target is state)
        return state.user_name or next((n for n in views if n), state.label)

    states = [s for s in engine_of(ssc).graph.streams if isinstance(s, StateStream)]
    partitions = {str(ms): [s.partitions_at(Time(ms)) for s in states] for ms in sorted(processing)}
    checkpoint_bytes = {
        state_name(s): s._checkpoint_bytes_total
        for s in engine_of(ssc).graph.streams
        if isinstance(s, StateStream)
    }
    from dstream.streams.keyed_state import StateDStream

    approximate = {
        state_name(s): {
            "copy_bytes": s._tracker.copy_bytes,
            "restored_partitions": s._tracker.restored,
            "restores": sorted(s._tracker.restore_log),
            "max_divergence": s.approximate.max_divergence,
        }
        for s in states
        if isinstance(s, StateDStream) and s.approximate is not None
    }
    stragglers: dict[str, list[str]] = {}
    for ms in processing:
        tasks = ssc.executor_monitor.tasks_of(Time(ms))
        if tasks is not None and tasks.stragglers:
            stragglers[str(ms)] = sorted(tasks.stragglers)
    actions = [
        {
            "kind": a.kind,
            "executor": a.executor,
            "host": a.host,
            "target": a.target,
            "after_s": round(a.at_ms / 1000 - began_epoch, 1),
        }
        for a in ssc.executor_monitor.actions
    ]
    saved: dict[str, list[str]] = {}
    if args.save:
        for name in sorted(os.listdir(os.path.join(root, "out"))):
            directory = os.path.join(root, "out", name)
            lines: list[str] = []
            for part in sorted(os.listdir(directory)):
                if part.startswith("part-"):
                    with open(os.path.join(directory, part)) as f:
                        lines.extend(f.read().splitlines())
            saved[name] = sorted(lines)
    events = feed.poll()
    starts = [e for e in events if isinstance(e, TaskStart)]
    ends = [e for e in events if isinstance(e, TaskEnd)]
    # Per interval (its job group ends in the batch time): tasks run, and stages that had to
    # be run again (attempt > 0: their map outputs were lost with an executor).
    tasks_by_interval: dict[str, int] = {}
    retried_stages: dict[str, set[int]] = {}
    for start in starts:
        t = (start.job_group or "").rsplit("-", 1)[-1]
        tasks_by_interval[t] = tasks_by_interval.get(t, 0) + 1
        if start.stage_attempt > 0:
            retried_stages.setdefault(t, set()).add(start.stage_id)
    by_executor: dict[str, int] = {}
    for end in ends:
        if end.successful:
            by_executor[end.executor_id] = by_executor.get(end.executor_id, 0) + 1
    return {
        "workload": args.workload,
        "executors": args.executors,
        "checkpoint_s": args.checkpoint,
        "kill": list(kill),
        "killed": killed,
        "slowed": None if slower is None else slower.executor,
        "speculation": args.speculation,
        "outputs": {str(t): v for t, v in sorted(out.items())},
        "saved": saved,
        "processing_ms": {str(t): v for t, v in sorted(processing.items())},
        "executors_after": sorted(executor_pids_of(sc), key=int),
        "seconds": time.monotonic() - began,
        "tasks": len(starts),
        "speculative_tasks": sum(e.speculative for e in starts),
        "speculative_won": sum(e.speculative and e.successful for e in ends),
        "succeeded_by_executor": dict(sorted(by_executor.items())),
        "started_by_executor": dict(sorted(Counter(e.executor_id for e in starts).items())),
        "hosts": sorted({e.host for e in starts}),
        "tasks_by_interval": tasks_by_interval,
        "retried_stages_by_interval": {t: len(v) for t, v in retried_stages.items()},
        "depth": args.depth,
        "executor_actions": actions,
        "stragglers_by_interval": stragglers,
        "checkpoint_bytes": checkpoint_bytes,
        "partitions_by_interval": partitions,
        "theta": args.run_theta,
        "state_replicas": args.run_replicas,
        "approximate": approximate,
        "state_bytes_by_interval": {str(t): v for t, v in sorted(state_bytes.items())},
        "breakdown": breakdown,
    }


def _next_job_id(sc: Any) -> int:
    """The id the next Spark job gets (those before it are earlier runs')."""
    from testbed.breakdown import job_ids

    return max(job_ids(sc.uiWebUrl, sc.applicationId), default=-1) + 1


def _state_bytes(ssc: Any, time: Any) -> dict[str, int]:
    """The bytes one copy of each state of ``time`` takes in executor memory, by name."""
    from dstream.streams.state_base import StateStream
    from dstream.streams.surviving import sizes

    out = {}
    for s in engine_of(ssc).graph.streams:
        if isinstance(s, StateStream):
            rdd = s.state_rdd(time)
            if rdd is not None:
                out[s.user_name or s.label] = sum(sizes(rdd))
    return out


def restarted(
    sc: Any, args: argparse.Namespace, root: str, settings: Any, processing: dict[int, int]
) -> dict[int, Any]:
    """The program resumed from ``root`` by ``getOrCreate`` after the run (its graph
    rebuilt, its states bound to the journal's, at the partition counts the journal
    recorded), run ``--restart-intervals`` more intervals: their outputs."""
    from dstream import Duration, ManualClock, StreamingContext, Time

    clock = ManualClock(args.intervals * B)
    out: dict[int, Any] = {}

    def setup() -> Any:
        ssc = StreamingContext(sc, Duration(B), clock=clock, settings=settings)
        ssc.checkpoint(root)
        stream = WORKLOADS[args.workload](ssc, args)
        stream.foreachRDD(lambda t, rdd: out.__setitem__(t.ms, sorted(rdd.collect())))
        return ssc

    ssc = StreamingContext.getOrCreate(root, setup, sc, clock=clock, rebuildGraph=True)
    ssc.start()
    try:
        for i in range(args.intervals + 1, args.intervals + args.restart_intervals + 1):
            started = time.perf_counter()
            clock.advance(B)
            if not ssc.wait_for_batch(Time(i * B), 300):
                raise RuntimeError(f"interval {i} after the restart did not complete")
            processing[i * B] = round((time.perf_counter() - started) * 1000)
        ssc.awaitTerminationOrTimeout(0)
    finally:
        ssc.stop(stopSparkContext=False)
    return out


def _per_run(values: list[Any], index: int, default: Any) -> Any:
    """The value of run ``index`` of an option given once per run (the last for the rest)."""
    return values[min(index, len(values) - 1)] if values else default


def parse_kill(text: str) -> tuple[int, int]:
    if text == "0":
        return (0, 0)
    n, sep, at = text.partition("@")
    if not sep or not n.isdigit() or not at.isdigit():
        raise argparse.ArgumentTypeError(f"--kill {text!r}: expected N@INTERVAL (e.g. 1@25) or 0")
    return (int(n), int(at))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("workload", choices=sorted(WORKLOADS))
    p.add_argument("--intervals", type=int, default=45)
    p.add_argument("--rate", type=int, default=2000, help="records per second")
    p.add_argument("--partitions", type=int, default=6, help="input partitions")
    p.add_argument("--task-ms", type=int, default=0, help="grep: each task waits this long")
    p.add_argument("--state-partitions", type=int, default=None, help="window state partitions")
    p.add_argument("--window", type=int, default=30, help="window length, seconds")
    p.add_argument("--checkpoint", type=int, default=10, help="state checkpoint interval, s")
    p.add_argument(
        "--state-replicas",
        type=int,
        action="append",
        default=[],
        help="copies of the state in memory (once per --kill run; the last for the rest)",
    )
    p.add_argument(
        "--theta",
        action="append",
        default=[],
        help="keyed: approximateRecovery(maxDivergence=THETA), once per --kill run (the "
        "last for the rest); 'exact' for none",
    )
    p.add_argument(
        "--approx-theta",
        action="append",
        type=float,
        default=[],
        help="approx: a state under approximateRecovery(maxDivergence=THETA) (repeatable)",
    )
    p.add_argument(
        "--measure-state", action="store_true", help="the bytes of each interval's state"
    )
    p.add_argument(
        "--strategy",
        default="checkpoint",
        choices=["checkpoint", "replay", "replicate", "auto"],
        help="wordcount: the window's recoveryStrategy",
    )
    p.add_argument("--copies", type=int, default=2, help="--strategy replicate: copies")
    p.add_argument(
        "--rescale",
        action="append",
        type=parse_kill,
        default=[],
        help="N@I: after interval I, rescale the state to N partitions",
    )
    p.add_argument(
        "--rescale-every-other",
        action="store_true",
        help="only the odd runs (1, 3, ...) rescale: each rescaled run next to an unrescaled "
        "one on the same executors, under the same load",
    )
    p.add_argument(
        "--settle-after-rescale",
        type=float,
        default=0.0,
        help="seconds to wait after rescale() before the next interval, and at the same "
        "place in a run that does not rescale (does its preparation slow the interval after "
        "it?)",
    )
    p.add_argument(
        "--restart-intervals",
        type=int,
        default=0,
        help="then stop the context and resume the program from its checkpoint directory "
        "(getOrCreate, as a restarted driver does, on the same cluster) for this many more "
        "intervals; their outputs join the run's",
    )
    p.add_argument(
        "--also-kill-at",
        action="append",
        type=int,
        default=[],
        help="in runs that kill, kill as many executors at this interval too",
    )
    p.add_argument("--executors", type=int, default=3)
    p.add_argument("--executor-mb", type=int, default=768)
    p.add_argument("--kill-delay", type=float, default=0.2, help="seconds into the interval")
    p.add_argument("--kill", action="append", type=parse_kill, default=[], help="N@I, or 0")
    p.add_argument(
        "--kill-target",
        choices=["first", "state"],
        default="first",
        help="kill the first N executors, or those holding the stream's last state",
    )
    p.add_argument(
        "--kill-node",
        action="store_true",
        help="kill each chosen executor's standalone Worker too: a lost node, not replaced",
    )
    p.add_argument("--master", default=None, help="default: local-cluster[EXECUTORS,1,MB]")
    p.add_argument("--slow", type=float, default=0.0, help="SIGSTOP duty of executor 0, 0-1")
    p.add_argument("--speculation", action="store_true", help="Spark speculation, tuned")
    p.add_argument("--save", action="store_true", help="also saveAsTextFiles; report them")
    p.add_argument("--depth", type=int, default=1, help="timestep pipelining depth")
    p.add_argument("--avoid", action="store_true", help="avoid executors that keep straggling")
    p.add_argument("--avoid-window", type=int, default=5, help="intervals judged")
    p.add_argument("--avoid-strikes", type=int, default=3, help="slow intervals to be avoided")
    p.add_argument("--avoid-cooldown", type=float, default=30.0, help="seconds avoided")
    p.add_argument(
        "--breakdown",
        action="store_true",
        help="each interval's jobs and stages with their task metrics (Spark's UI and its "
        "REST API on; testbed.breakdown)",
    )
    p.add_argument(
        "--breakdown-at",
        type=int,
        action="append",
        default=[],
        help="with --breakdown: only this interval (repeatable; default every interval)",
    )
    p.add_argument("--log-level", default="ERROR", help="Spark's log level")
    p.add_argument("--conf", action="append", default=[], help="KEY=VALUE Spark setting")
    args = p.parse_args(argv)
    if not args.kill:
        args.kill = [(0, 0)]
    if args.kill_node and any(n for n, _ in args.kill[:-1]):
        p.error("--kill-node: only the last run may lose nodes (nothing replaces them)")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark import SparkContext

    master = args.master or f"local-cluster[{args.executors},1,{args.executor_mb}]"
    conf = cluster_conf(
        master,
        f"dstream-faults-{args.workload}",
        args.executor_mb,
        args.partitions,
        speculation=args.speculation,
    )
    if args.breakdown:  # the task metrics come from the UI's REST API
        conf.set("spark.ui.enabled", "true").set("spark.ui.retainedJobs", "5000")
        conf.set("spark.ui.retainedStages", "10000").set("spark.ui.retainedTasks", "500000")
    for setting in args.conf:
        key, _, value = setting.partition("=")
        conf.set(key, value)
    sc = SparkContext(conf=conf)
    sc.setLogLevel(args.log_level)
    try:
        wait_for_executors(sc, args.executors)
        for index, kill in enumerate(args.kill):
            args.run_theta = _per_run(args.theta, index, None)
            if args.run_theta is not None:
                args.run_theta = None if args.run_theta == "exact" else float(args.run_theta)
            args.run_replicas = _per_run(args.state_replicas, index, 1)
            # --rescale-every-other: runs 0, 2, ... never rescale (paired comparisons).
            args.run_rescales = not (args.rescale_every_other and index % 2 == 0)
            with tempfile.TemporaryDirectory(prefix="dstream-faults-") as root:
                result = run(sc, args, kill, root)
            print(json.dumps(result), flush=True)
            if kill is not args.kill[-1]:
                wait_for_executors(sc, args.executors)  # replacements joined before the next
    finally:
        sc.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
