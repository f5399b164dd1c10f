"""Test helpers for streaming programs: drive a StreamingContext with a ManualClock and
compare what each interval produced with what was expected.

>>> run_operation(sc, [[1, 2], [3]], lambda s: s.map(lambda x: x * 10), [[10, 20], [30]])
... # doctest: +SKIP
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from dstream.clock import ManualClock
from dstream.context import StreamingContext
from dstream.settings import StreamingSettings
from dstream.time import Duration, Time

if TYPE_CHECKING:
    from pyspark import RDD, SparkContext

    from dstream.dstream import DStream

__all__ = ["BatchCollector", "normalize", "run_operation"]


class BatchCollector:
    """Collects every interval's records of a stream, keyed by batch time."""

    def __init__(self, stream: DStream[Any]) -> None:
        self.batches: dict[Time, list[Any]] = {}
        self._lock = threading.Lock()
        stream.foreachRDD(self._collect)

    def _collect(self, time: Time, rdd: RDD[Any]) -> None:
        records = rdd.collect()
        with self._lock:
            self.batches[time] = records

    def in_order(self) -> list[list[Any]]:
        with self._lock:
            return [self.batches[t] for t in sorted(self.batches)]


def _sort_key(value: Any) -> Any:
    return (type(value).__name__, repr(value))


def normalize(batch: Sequence[Any]) -> list[Any]:
    """Order-insensitive form of one interval's records (values inside groups are sorted)."""

    def norm(record: Any) -> Any:
        if isinstance(record, tuple):
            return tuple(norm(x) for x in record)
        if isinstance(record, list):
            return [norm(x) for x in record]
        if type(record).__name__ == "ResultIterable":
            return sorted((norm(x) for x in record), key=_sort_key)
        return record

    try:
        return sorted(norm(r) for r in batch)
    except TypeError:
        return sorted((norm(r) for r in batch), key=_sort_key)


def run_operation(
    sc: SparkContext,
    input_batches: Sequence[Sequence[Any]] | Sequence[Sequence[Sequence[Any]]],
    operation: Callable[..., DStream[Any]],
    expected_batches: Sequence[Sequence[Any]] | None = None,
    *,
    num_inputs: int = 1,
    batch_ms: int = 1000,
    num_batches: int | None = None,
    partitions: int = 2,
    ordered: bool = False,
    settings: StreamingSettings | None = None,
    timeout_s: float = 120.0,
) -> list[list[Any]]:
    """Feed ``input_batches`` (one list of records per interval) through ``operation`` on a
    ManualClock and return each interval's output; compare with ``expected_batches`` if
    given. With ``num_inputs=2``, ``input_batches`` is a pair of such lists and ``operation``
    takes two streams (joins, unions)."""
    clock = ManualClock(0)
    ssc = StreamingContext(sc, Duration(batch_ms), clock=clock, settings=settings)
    per_input = [input_batches] if num_inputs == 1 else list(input_batches)
    streams = [
        ssc.queueStream([sc.parallelize(list(b), partitions) for b in batches])
        for batches in per_input
    ]
    collector = BatchCollector(operation(*streams))
    n = (
        num_batches
        if num_batches is not None
        else (
            len(expected_batches)
            if expected_batches is not None
            else max(len(b) for b in per_input)
        )
    )
    errors: list[BaseException] = []
    ssc.start()
    try:
        for _ in range(n):
            clock.advance(batch_ms)
        if not ssc.wait_for_batch(Time(n * batch_ms), timeout_s):
            raise TimeoutError(f"the {n} batches did not complete within {timeout_s} s")
        try:
            ssc.awaitTerminationOrTimeout(0)
        except Exception as exc:
            errors.append(exc)
    finally:
        ssc.stop(stopSparkContext=False)
    if errors:
        raise errors[0]
    output = collector.in_order()
    result = [list(b) if ordered else normalize(b) for b in output]
    if expected_batches is not None:
        expected = [list(b) if ordered else normalize(b) for b in expected_batches]
        if result != expected:
            lines = [
                f"interval {i + 1}: got {g!r}, expected {e!r}"
                for i, (g, e) in enumerate(zip(result, expected, strict=False))
                if g != e
            ]
            if len(result) != len(expected):
                lines.append(f"got {len(result)} intervals, expected {len(expected)}")
            raise AssertionError("stream output differs:\n" + "\n".join(lines))
    return result
