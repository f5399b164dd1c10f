"""Output operations: ``foreachRDD``, ``pprint``, ``saveAsTextFiles``, ``saveToTable`` and
``save``. Each registers an :class:`~dstream.streams.output.OutputDStream` with the graph."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from dstream.api.state import StateOps
from dstream.console import stop_progress_bar
from dstream.functions import positional_arity
from dstream.storage.commits import (
    CommitLog,
    commit_interval,
    interval_path,
    tentative_path,
    write_tentative,
)
from dstream.storage.filesystem import filesystem_for
from dstream.streams.output import OutputDStream
from dstream.time import Time

if TYPE_CHECKING:
    from pyspark import RDD

T = TypeVar("T")

__all__ = ["OutputInterval", "OutputOps"]


class OutputOps(StateOps[T]):
    __slots__ = ()

    def foreachRDD(
        self, func: Callable[..., None], tentative: bool | None = None, priority: int = 1
    ) -> None:
        """Run ``func(rdd)`` or ``func(time, rdd)`` on the driver for every interval.

        ``time`` is a :class:`dstream.Time`: integer milliseconds inside, and everything the
        ``datetime`` PySpark passes offers outside (``str``, ``strftime``, ``.hour``, ``+
        timedelta``, comparison with datetimes; local time, as PySpark's).

        With ``tentative=True`` (or ``StreamingSettings(tentative_outputs=True)``), while a
        lost executor's state is recomputed ``func`` is first called with a tentative RDD
        of the interval (``rdd.tentative`` is True, ``rdd.fidelity`` the share of the
        interval's input it reflects), then with the exact one as usual (``rdd.tentative``
        False, ``rdd.fidelity`` 1.0). ``priority`` weighs this output when
        ``replica_budget_mb`` picks which state partitions get a second copy.
        """
        uf = self._user("foreachRDD", func, driver=True)
        arity = positional_arity(uf.fn)
        if arity not in (None, 1, 2):
            raise TypeError(
                f"foreachRDD() takes func(rdd) or func(time, rdd); the function at {uf.site} "
                f"takes {arity} arguments"
            )
        _check_tentative("foreachRDD", tentative, priority)
        user_fn = uf.fn
        call: Callable[[Time, RDD[Any]], None] = (
            (lambda _t, rdd: user_fn(rdd)) if arity == 1 else user_fn
        )
        _output(
            self,
            call,
            name="foreachRDD",
            user_functions=(uf,),
            tentative=tentative,
            tentative_fn=call,
            priority=priority,
        )

    def pprint(self, num: int = 10) -> None:
        """Print the first ``num`` records of every interval."""
        if isinstance(num, bool) or not isinstance(num, int) or num < 0:
            raise ValueError(f"pprint() num {num!r} must be an int >= 0")

        def take_and_print(time: Time, rdd: RDD[Any]) -> None:
            taken = rdd.take(num + 1)
            lines = ["-------------------------------------------"]
            if getattr(rdd, "tentative", False):
                fidelity = getattr(rdd, "fidelity", 0.0)
                lines.append(f"Time: {time} (tentative, fidelity {fidelity:.2f})")
            else:
                lines.append(f"Time: {time}")  # as PySpark's: str() of the local datetime
            lines.append("-------------------------------------------")
            lines.extend(str(record) for record in taken[:num])
            if len(taken) > num:
                lines.append("...")
            print("\n".join(lines) + "\n", flush=True)

        # Spark's console progress bar off from now on: its redraws on stderr would cut
        # through the records printed here (dstream.console).
        stop_progress_bar(self.context().sparkContext)
        _output(self, take_and_print, name="pprint", tentative_fn=take_and_print)

    def saveAsTextFiles(
        self,
        prefix: str,
        suffix: str | None = None,
        tentative: bool | None = None,
        priority: int = 1,
    ) -> None:
        """Save each interval as text at ``prefix-<time ms>[.suffix]``, exactly once.

        The interval is written to a hidden temporary directory and renamed into place; an
        interval whose output is already committed is not written again (after a recovery,
        a recomputation or a speculative job).

        With ``tentative=True`` (or ``StreamingSettings(tentative_outputs=True)``), while a
        lost executor's state is recomputed a tentative result of the interval is written
        first at ``prefix.tentative-<time ms>[.suffix]``, its fidelity in the JSON file
        ``_DSTREAM_TENTATIVE`` inside; the exact interval is committed as usual and the
        tentative directory then deleted. ``priority``: as for ``foreachRDD``.
        """
        if not isinstance(prefix, str) or not prefix:
            raise ValueError(
                f"saveAsTextFiles() prefix {prefix!r} must be a non-empty path string, "
                "e.g. '/data/out/counts' or 'hdfs://nn:8020/out/counts'"
            )
        if suffix is not None and not isinstance(suffix, str):
            raise TypeError(f"saveAsTextFiles() suffix must be a string or None, got {suffix!r}")

        _check_tentative("saveAsTextFiles", tentative, priority)
        graph = self._node.graph

        def save(time: Time, rdd: RDD[Any]) -> None:
            path = interval_path(prefix, suffix, time.ms)
            fs = filesystem_for(path, rdd.context)
            lease = graph.runtime.lease
            commit_interval(
                fs, path, time.ms, rdd.saveAsTextFile, 0 if lease is None else lease.epoch
            )
            if getattr(rdd, "tentative", None) is False:  # an output that gives tentatives
                superseded = tentative_path(prefix, suffix, time.ms)
                if fs.exists(superseded):
                    fs.delete(superseded)

        def save_tentative(time: Time, rdd: RDD[Any]) -> None:
            path = tentative_path(prefix, suffix, time.ms)
            info = {"time_ms": time.ms, "fidelity": getattr(rdd, "fidelity", None)}
            write_tentative(filesystem_for(path, rdd.context), path, rdd.saveAsTextFile, info)

        _output(
            self,
            save,
            name="saveAsTextFiles",
            tentative=tentative,
            tentative_fn=save_tentative,
            priority=priority,
            text_target=(prefix, suffix),
        )

    def saveToTable(
        self,
        path: str,
        schema: object = None,
        mode: str | None = None,
        key: str | list[str] | None = None,
    ) -> None:
        """Write each interval's records into the Parquet table at ``path``, exactly once.

        ``schema``: the rows' columns, a DDL string (``"word string, count long"``) or a
        ``StructType``; None uses the existing table's. A record is a ``Row`` or a dict
        (by name), a tuple or a list (by position), or with a one-column schema the value.
        Each interval is one partition of the table, ``batch_ms=<interval ms>``, written
        hidden and renamed into place: in the table whole or not at all, never twice (after
        a driver or executor failure, a retry or a replay). Spark reads it as a table while
        the stream runs, from any session: ``SELECT ... FROM parquet.`<path>` `` (listed at
        every query) or :func:`dstream.read_table` (columns and ``batch_ms``). A record that
        does not fit the schema follows ``StreamingSettings(bad_records=...)``: its
        interval fails, or it is set aside. Tentative results never reach the table.

        ``mode="append"`` (a new table's default): every interval's rows are the table.
        ``mode="upsert"`` with ``key`` (a column or a list of columns): each interval holds
        that interval's changed rows, at most one per key (a second fails the interval),
        and the table's current view (``read_table(spark, path)``) is each key's newest
        row: ``totals.saveToTable(path, "word string, count long", mode="upsert",
        key="word")``. The mode and key are the table's: reopening it with others is
        refused; None uses the table's. See docs/tables.md.
        """
        from dstream.api.table_output import save_to_table

        save_to_table(self, path, schema, mode, key)

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
        graph = self._node.graph
        slide = self._node.slide_duration
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


def _output(
    parent: OutputOps[Any], fn: Callable[[Time, RDD[Any]], None], **kwargs: Any
) -> OutputDStream:
    return OutputDStream(parent._node, fn, **kwargs)


def _check_tentative(operation: str, tentative: object, priority: object) -> None:
    if tentative is not None and not isinstance(tentative, bool):
        raise TypeError(
            f"{operation}() tentative={tentative!r} must be True, False or None (None: "
            "StreamingSettings.tentative_outputs decides)"
        )
    if isinstance(priority, bool) or not isinstance(priority, int) or priority < 1:
        raise ValueError(
            f"{operation}() priority={priority!r} must be an int >= 1 (how much this output's "
            "fidelity counts when replica_budget_mb is spent), e.g. priority=2"
        )
