"""Output operations: ``foreachRDD``, ``pprint`` and ``saveAsTextFiles``. Each registers an
:class:`~dstream.streams.output.OutputDStream` with the graph."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from dstream.api.state import StateOps
from dstream.functions import positional_arity
from dstream.storage.commits import CommitLog, commit_interval, interval_path
from dstream.storage.filesystem import filesystem_for
from dstream.streams.output import OutputDStream
from dstream.time import Time

if TYPE_CHECKING:
    from pyspark import RDD

T = TypeVar("T")

__all__ = ["OutputInterval", "OutputOps"]


class OutputOps(StateOps[T]):
    __slots__ = ()

    def foreachRDD(self, func: Callable[..., None]) -> None:
        """Run ``func(rdd)`` or ``func(time, rdd)`` on the driver for every interval.

        ``time`` is a :class:`dstream.Time`: integer milliseconds inside, and everything the
        ``datetime`` PySpark passes offers outside (``str``, ``strftime``, ``.hour``, ``+
        timedelta``, comparison with datetimes; local time, as PySpark's).
        """
        uf = self._user("foreachRDD", func, driver=True)
        arity = positional_arity(uf.fn)
        if arity not in (None, 1, 2):
            raise TypeError(
                f"foreachRDD() takes func(rdd) or func(time, rdd); the function at {uf.site} "
                f"takes {arity} arguments"
            )
        user_fn = uf.fn
        call: Callable[[Time, RDD[Any]], None] = (
            (lambda _t, rdd: user_fn(rdd)) if arity == 1 else user_fn
        )
        _output(self, call, name="foreachRDD", user_functions=(uf,))

    def pprint(self, num: int = 10) -> None:
        """Print the first ``num`` records of every interval."""
        if isinstance(num, bool) or not isinstance(num, int) or num < 0:
            raise ValueError(f"pprint() num {num!r} must be an int >= 0")

        def take_and_print(time: Time, rdd: RDD[Any]) -> None:
            taken = rdd.take(num + 1)
            lines = ["-------------------------------------------"]
            lines.append(f"Time: {time}")  # as PySpark's: str() of the local datetime
            lines.append("-------------------------------------------")
            lines.extend(str(record) for record in taken[:num])
            if len(taken) > num:
                lines.append("...")
            print("\n".join(lines) + "\n", flush=True)

        _output(self, take_and_print, name="pprint")

    def saveAsTextFiles(self, prefix: str, suffix: str | None = None) -> None:
        """Save each interval as text at ``prefix-<time ms>[.suffix]``, exactly once.

        The interval is written to a hidden temporary directory and renamed into place; an
        interval whose output is already committed is not written again (after a recovery,
        a recomputation or a speculative job).
        """
        if not isinstance(prefix, str) or not prefix:
            raise ValueError(
                f"saveAsTextFiles() prefix {prefix!r} must be a non-empty path string, "
                "e.g. '/data/out/counts' or 'hdfs://nn:8020/out/counts'"
            )
        if suffix is not None and not isinstance(suffix, str):
            raise TypeError(f"saveAsTextFiles() suffix must be a string or None, got {suffix!r}")

        graph = self._node._graph

        def save(time: Time, rdd: RDD[Any]) -> None:
            path = interval_path(prefix, suffix, time.ms)
            fs = filesystem_for(path, rdd.context)
            lease = graph.runtime.lease
            commit_interval(
                fs, path, time.ms, rdd.saveAsTextFile, 0 if lease is None else lease.epoch
            )

        _output(self, save, name="saveAsTextFiles")

    def save(self, sink: Callable[..., None], name: str | None = None) -> None:
        """Write every interval to an external system, exactly once.

        ``sink(time, rdd)`` or ``sink(time, rdd, interval)`` writes one interval. The engine
        keeps a commit log of the intervals whose sink call returned (under the checkpoint
        directory, ``outputs/<name>/``) and does not call the sink again for them — not after
        a driver restart, a recomputation or a retry. What it cannot rule out is a crash (or a
        driver that was paused and is then fenced off) between the sink's write and the
        commit record: the same interval is then written again. So the sink must be
        **atomic and idempotent per interval**: one transaction, or an upsert keyed by
        ``interval.key``, or a write that checks ``interval.key`` first. ``interval``
        (:class:`dstream.api.outputs.OutputInterval`) carries the interval's time, the
        output's name, that stable key and the driver's epoch (higher for a driver that took
        over; a sink that records it can refuse writes from an older one). ``name`` (default
        ``save-<n>``, n = the output's rank) names the log and the key.
        """
        uf = self._user("save", sink, "sink", driver=True)
        if name is not None and (not isinstance(name, str) or not name or "/" in name):
            raise ValueError(f"save() name {name!r} must be a non-empty string without '/'")
        arity = positional_arity(uf.fn)
        if arity not in (None, 2, 3):
            raise TypeError(
                f"save() takes sink(time, rdd) or sink(time, rdd, interval); the function at "
                f"{uf.site} takes {arity} arguments"
            )
        fn = uf.fn
        graph = self._node._graph
        slide = self._node._slide_duration
        logs: dict[str, CommitLog] = {}

        def commit_log(label: str) -> CommitLog:
            if label not in logs:
                root = graph.runtime.checkpoint_dir
                directory = None if root is None else f"{root.rstrip('/')}/outputs/{label}"
                fs = None if directory is None else filesystem_for(directory, graph.sc)
                logs[label] = CommitLog(fs, directory)
            return logs[label]

        # The output's rank among the program's outputs (its index once registered below).
        label = name or f"save-{len(graph.outputs)}"

        def write_once(time: Time, rdd: RDD[Any]) -> None:
            log = commit_log(label)
            if log.is_committed(time.ms):
                return
            if arity == 2:
                fn(time, rdd)
            else:
                lease = graph.runtime.lease
                epoch = 0 if lease is None else lease.epoch
                fn(time, rdd, OutputInterval(time, label, f"{label}/{time.ms}", epoch))
            # Intervals 100 slides back are complete, and never redone after a restart (which
            # redoes only the intervals after the journal's last completed one).
            log.commit(time.ms, keep_after_ms=time.ms - 100 * slide.ms)

        _output(self, write_once, name="save", user_functions=(uf,))


@dataclass(frozen=True)
class OutputInterval:
    """Which interval a ``save`` sink is writing: ``time``, the output's ``name``, ``key``
    (``"<name>/<time ms>"``, stable across retries and restarts: the idempotency key) and the
    writing driver's ``epoch`` on the checkpoint directory (0 without one)."""

    time: Time
    name: str
    key: str
    epoch: int


def _output(parent: OutputOps[Any], fn: Callable[[Time, RDD[Any]], None], **kwargs: Any) -> None:
    OutputDStream(parent._node, fn, **kwargs)
