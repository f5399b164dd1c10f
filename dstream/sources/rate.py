"""``rateStream``: a deterministic source for demos, tests and benchmarks.

The interval ending at ``t`` holds ``floor(rate * t / 1000) - floor(rate * (t - batch) / 1000)``
records (so the long-run rate is exact for any batch size), split evenly over the partitions;
partition ``p`` generates its records on an executor from the seed ``(seed, t, p)``. Nothing
passes through the driver, and any partition can be regenerated anywhere with identical
content: the input is durable by construction, which is what lineage-based recovery needs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dstream.sources.base import InputDStream, generated_partitions
from dstream.sources.textgen import generate_lines
from dstream.time import Time

if TYPE_CHECKING:
    from pyspark import RDD

    from dstream.streams.graph import DStreamGraph

__all__ = ["RateInputDStream", "partition_lines", "records_in_interval"]


def records_in_interval(rate: int, end_ms: int, batch_ms: int) -> int:
    """How many records the interval ``[end - batch, end)`` holds at ``rate`` records/s."""
    return rate * end_ms // 1000 - rate * (end_ms - batch_ms) // 1000


def partition_lines(
    seed: int, end_ms: int, partition: int, partitions: int, total: int, record_bytes: int
) -> list[str]:
    """Partition ``partition`` of the interval ending at ``end_ms`` holding ``total``
    records (pure: what a task generates, and what a test's oracle computes)."""
    lo, hi = total * partition // partitions, total * (partition + 1) // partitions
    return generate_lines(hash((seed, end_ms, partition)), hi - lo, record_bytes)


class RateInputDStream(InputDStream):
    _counts_in_tasks = False
    durable = True

    def __init__(
        self,
        graph: DStreamGraph,
        records_per_second: int,
        *,
        num_partitions: int,
        seed: int,
        record_bytes: int,
    ) -> None:
        if isinstance(records_per_second, bool) or not isinstance(records_per_second, int):
            raise TypeError(
                f"rateStream() recordsPerSecond must be an int, got {records_per_second!r}"
            )
        if records_per_second < 0:
            raise ValueError(f"rateStream() recordsPerSecond {records_per_second} must be >= 0")
        if not isinstance(num_partitions, int) or num_partitions < 1:
            raise ValueError(f"rateStream() numPartitions {num_partitions!r} must be an int >= 1")
        if not isinstance(record_bytes, int) or record_bytes < 8:
            raise ValueError(f"rateStream() recordBytes {record_bytes!r} must be an int >= 8")
        super().__init__(graph, name="rateStream")
        self._records_per_second = records_per_second
        self._partitions = num_partitions
        self._seed = seed
        self._record_bytes = record_bytes

    def description(self) -> str:
        return f"{self._operator}[{self._records_per_second}/s]"

    def _read(self, time: Time) -> RDD[str]:
        total = records_in_interval(self._records_per_second, time.ms, self.slide_duration.ms)
        self.set_record_count(time, total)
        parts, seed, size, t = self._partitions, self._seed, self._record_bytes, time.ms

        def generate(p: int) -> list[str]:
            return partition_lines(seed, t, p, parts, total, size)

        return generated_partitions(self._graph.sc, parts, generate)
