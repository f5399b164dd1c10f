"""Output fidelity of a tentative result: PPA's operator output loss model (its Sec. 3.1,
Eqs. 1-4) over the partitions of a D-Stream's RDDs. Pure: no Spark.

A :class:`Loss` describes one interval's RDD of one stream: for each partition, its *rate*
``λ`` (how much input it carries: records folded into a state partition, records of an
interval) and its *information loss* ``IL`` in [0, 1] (the share of that input missing from
the tentative result). How a stream's loss follows from its parents' is the operator's rule:

``narrow``      (map, filter, flatMap, mapValues, a state's view): partition i from partition
                i, so each partition keeps its parent's λ and IL.
``mix``         (a shuffle: reduceByKey, groupByKey, repartition, and any transform the engine
                cannot see into): every output partition draws on every input partition, an
                *independent-input* operator: IL = Σ λ·IL / Σ λ (Eqs. 1 and 3), the same for
                every output partition.
``union``       the parents' partitions side by side (independent inputs).
``correlated``  (join, cogroup and the outer joins): an output record needs both sides, a
                *correlated-input* operator: IL = 1 - Π (1 - IL_side) (Eq. 2), partition by
                partition when the sides are co-partitioned (as a join of two keyed states
                is), else over the sides' overall losses.
``window``      (window(), a window without an inverse): the union of the window's intervals,
                each weighted by its own rate.

The fidelity of an output is Eq. 4: ``OF = 1 - Σ λ·IL / Σ λ`` over its RDD's partitions. All-to-
all shuffles make PPA's tree search over minimal complete trees moot here: behind a shuffle
every output partition depends on every input partition, so what a partition contributes to
the output is its rate's share, which is what these rules carry.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = [
    "Loss",
    "correlated",
    "mix",
    "narrow",
    "output_fidelity",
    "union",
    "window",
]


@dataclass(frozen=True)
class Loss:
    """Per partition: its rate and its information loss."""

    rates: tuple[float, ...]
    lost: tuple[float, ...]

    def __post_init__(self) -> None:
        if len(self.rates) != len(self.lost):
            raise ValueError(f"{len(self.rates)} rates for {len(self.lost)} losses")

    @classmethod
    def none(cls, partitions: int, rate: float = 1.0) -> Loss:
        """An RDD nothing of which is lost (its partitions equally weighted)."""
        return cls((rate,) * partitions, (0.0,) * partitions)

    @property
    def total(self) -> float:
        return sum(self.rates)

    @property
    def overall(self) -> float:
        """The rate-weighted loss of the whole RDD (Eq. 1 over its partitions)."""
        total = self.total
        if total <= 0:
            return 0.0 if not self.lost else sum(self.lost) / len(self.lost)
        return sum(r * il for r, il in zip(self.rates, self.lost, strict=True)) / total

    @property
    def partitions(self) -> int:
        return len(self.rates)


def narrow(parent: Loss) -> Loss:
    return parent


def mix(parents: Sequence[Loss], partitions: int) -> Loss:
    """An independent-input operator whose every output partition reads every input."""
    total = sum(p.total for p in parents)
    if total > 0:
        il = sum(p.total * p.overall for p in parents) / total
    else:
        il = sum(p.overall for p in parents) / max(1, len(parents))
    rate = total / partitions if partitions else 0.0
    return Loss((rate,) * partitions, (il,) * partitions)


def union(parents: Sequence[Loss]) -> Loss:
    return Loss(
        tuple(r for p in parents for r in p.rates), tuple(il for p in parents for il in p.lost)
    )


def correlated(parents: Sequence[Loss]) -> Loss:
    """A join of ``parents``: partition by partition when they are co-partitioned (equal
    partition counts), else one loss for every output partition."""
    if not parents:
        return Loss((), ())
    n = parents[0].partitions
    if all(p.partitions == n for p in parents):
        lost = tuple(1 - math.prod(1 - p.lost[i] for p in parents) for i in range(n))
        rates = tuple(
            math.prod(p.rates[i] for p in parents) ** (1 / len(parents)) for i in range(n)
        )
        return Loss(rates, lost)
    il = 1 - math.prod(1 - p.overall for p in parents)
    rate = math.prod(p.total for p in parents) ** (1 / len(parents)) / n if n else 0.0
    return Loss((rate,) * n, (il,) * n)


def window(intervals: Sequence[Loss], partitions: int) -> Loss:
    """The union of a window's intervals, each weighted by its own rate."""
    return mix(intervals, partitions)


def output_fidelity(loss: Loss) -> float:
    """PPA's Eq. 4: the rate-weighted share of the input that reaches the output."""
    return max(0.0, min(1.0, 1.0 - loss.overall))
